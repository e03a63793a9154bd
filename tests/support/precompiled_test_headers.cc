// The translation unit that owns the test programs' precompiled headers
// (GRAFT_PRECOMPILE_HEADERS, tests/CMakeLists.txt): it compiles them once.

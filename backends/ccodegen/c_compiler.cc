// Runs the system C compiler on generated source. No shell is involved: the
// compiler is found on PATH by hand and started with posix_spawn and an argv
// array, in a private (0700) temporary folder that is removed afterwards.
// Its stdout and stderr go to a file whose text becomes the error message
// when it fails.
#include <spawn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "graft/backends/ccodegen.h"
#include "graft/core/error.h"
#include "temp_dir.h"

extern char** environ;

namespace graft::backends {

namespace {

bool is_executable_file(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

/// `name` resolved like execvp would: as given when it holds a '/', else on PATH.
std::string resolve_program(const std::string& name) {
  if (name.empty()) return {};
  if (name.find('/') != std::string::npos) return is_executable_file(name) ? name : std::string();
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (is_executable_file(candidate)) return candidate;
  }
  return {};
}

/// GCC links libgomp, graft's own OpenMP runtime; other compilers would bring
/// a second runtime into the process, so their modules stay single-threaded.
bool compiler_is_gcc(const std::string& compiler) {
  std::error_code ec;
  std::string real = std::filesystem::canonical(compiler, ec).filename().string();
  if (ec) real = std::filesystem::path(compiler).filename().string();
  return real.find("gcc") != std::string::npos || real == "cc";
}

std::string read_text(const std::string& path, size_t limit) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() > limit) text = text.substr(0, limit) + "\n[...]";
  return text;
}

}  // namespace

std::string find_c_compiler() {
  if (const char* cc = std::getenv("CC"); cc && *cc) return resolve_program(cc);
  for (const char* name : {"cc", "gcc", "clang"})
    if (std::string found = resolve_program(name); !found.empty()) return found;
  return {};
}

std::string compile_c_to_shared_object(const std::string& source, const std::string& what) {
  std::string compiler = find_c_compiler();
  if (compiler.empty()) {
    const char* cc = std::getenv("CC");
    if (cc && *cc) fail(ErrorKind::unsupported, "ccodegen: CC='", cc, "' is not an executable program");
    fail(ErrorKind::unsupported, "ccodegen: no C compiler found (set CC, or put cc, gcc or clang on PATH)");
  }
  TempDir dir("graft-ccodegen");
  const std::string c_path = dir.path() + "/module.c", so_path = dir.path() + "/module.so",
                    log_path = dir.path() + "/compiler.log";
  {
    std::ofstream out(c_path, std::ios::binary);
    out << source;
    if (!out) fail(ErrorKind::io, "ccodegen: cannot write ", c_path);
  }
  std::vector<std::string> args = {compiler, "-O3", "-march=native", "-shared", "-fPIC", "-std=c99",
                                   // Same results; lets sqrtf/floorf inline instead of calling libm.
                                   "-fno-math-errno", "-fno-trapping-math"};
  if (compiler_is_gcc(compiler)) args.push_back("-fopenmp");
  for (const char* tail : {"-o", so_path.c_str(), c_path.c_str(), "-lm"}) args.push_back(tail);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, compiler.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) fail(ErrorKind::unsupported, "ccodegen: cannot start ", compiler, ": ", std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) fail(ErrorKind::internal, "ccodegen: waitpid failed: ", std::strerror(errno));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string how = WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                        : "signal " + std::to_string(WTERMSIG(status));
    fail(ErrorKind::internal, "ccodegen: ", compiler, " failed on ", what, " (", how, "): ", read_text(log_path, 4000));
  }
  std::string bytes = read_text(so_path, SIZE_MAX);
  if (bytes.empty()) fail(ErrorKind::internal, "ccodegen: ", compiler, " wrote no shared object for ", what);
  return bytes;
}

}  // namespace graft::backends

// Running the built `graft` tool from a test: its exit code, stdout and
// stderr (captured through files in a folder the test owns).
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace graft::testing {

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Runs `<build>/bin/graft ARGS` (ARGS as a shell would split them) with no
/// stdin; `scratch` holds the captured output.
inline CliResult run_graft(const std::string& args, const std::filesystem::path& scratch) {
  const std::filesystem::path out = scratch / "stdout", err = scratch / "stderr";
  std::string command = "'" + std::string(GRAFT_BINARY_DIR) + "/bin/graft' " + args + " >'" + out.string() + "' 2>'" +
                        err.string() + "' </dev/null";
  int status = std::system(command.c_str());
  return CliResult{WIFEXITED(status) ? WEXITSTATUS(status) : 128, read_text(out), read_text(err)};
}

}  // namespace graft::testing

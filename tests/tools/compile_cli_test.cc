// graft compile / info / run on a .graft artifact, run as processes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "graft/runtime/artifact.h"

namespace {

namespace fs = std::filesystem;

struct Result {
  int exit_code = -1;
  std::string out, err;
};

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class CompileCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("graft_compile_cli_test_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ASSERT_EQ(graft("zoo mlp -o " + path("mlp.onnx")).exit_code, 0);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static std::string path(const std::string& name) { return "'" + (dir_ / name).string() + "'"; }
  static Result graft(const std::string& args) {
    static int counter = 0;
    ++counter;
    fs::path out = dir_ / ("out_" + std::to_string(counter)), err = dir_ / ("err_" + std::to_string(counter));
    std::string command = "'" + std::string(GRAFT_BINARY_DIR) + "/bin/graft' " + args + " >'" + out.string() + "' 2>'" +
                          err.string() + "' </dev/null";
    int status = std::system(command.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), read_text(out), read_text(err)};
  }
  static std::string checksum_line(const std::string& out) {
    size_t at = out.find("checksum:");
    return at == std::string::npos ? "" : out.substr(at, out.find('\n', at) - at);
  }
  static inline fs::path dir_;
};

TEST_F(CompileCliTest, CompileInfoAndRunMatchTheOnnxModel) {
  Result compiled = graft("compile " + path("mlp.onnx") + " -o " + path("mlp.graft") + " --shape input=3,784");
  ASSERT_EQ(compiled.exit_code, 0) << compiled.err;
  EXPECT_NE(compiled.out.find("wrote"), std::string::npos) << compiled.out;

  Result info = graft("info " + path("mlp.graft"));
  ASSERT_EQ(info.exit_code, 0) << info.err;
  std::string format = "format " + std::to_string(graft::runtime::kArtifactFormatVersion);
  for (const std::string& needle : {format, std::string("x86_64"), std::string("input: float32[3,784]"),
                                    std::string("weights"), std::string("modules:")})
    EXPECT_NE(info.out.find(needle), std::string::npos) << needle << " not in " << info.out;

  fs::create_directories(dir_ / "elsewhere");
  fs::copy_file(dir_ / "mlp.graft", dir_ / "elsewhere" / "copy.graft");
  Result from_artifact = graft("run " + path("elsewhere/copy.graft"));
  ASSERT_EQ(from_artifact.exit_code, 0) << from_artifact.err;
  Result from_onnx = graft("run " + path("mlp.onnx") + " --shape input=3,784");
  ASSERT_EQ(from_onnx.exit_code, 0) << from_onnx.err;
  EXPECT_EQ(checksum_line(from_artifact.out), checksum_line(from_onnx.out));
  EXPECT_FALSE(checksum_line(from_artifact.out).empty());
}

TEST_F(CompileCliTest, CcodegenModulesAndEmittedC) {
  if (std::system("command -v cc >/dev/null 2>&1") != 0) GTEST_SKIP() << "no C compiler";
  Result compiled = graft("compile " + path("mlp.onnx") + " -o " + path("cc.graft") +
                          " --shape input=2,784 --backends ccodegen,ref --emit-c " + path("c_files"));
  ASSERT_EQ(compiled.exit_code, 0) << compiled.err;
  EXPECT_NE(compiled.out.find("(ccodegen): ccodegen"), std::string::npos) << compiled.out;
  bool any_c = false;
  for (const auto& entry : fs::directory_iterator(dir_ / "c_files")) any_c = any_c || entry.path().extension() == ".c";
  EXPECT_TRUE(any_c);
  Result from_artifact = graft("run " + path("cc.graft"));
  ASSERT_EQ(from_artifact.exit_code, 0) << from_artifact.err;
  EXPECT_NE(from_artifact.out.find("output 'output': float32[2,10]"), std::string::npos) << from_artifact.out;
}

TEST_F(CompileCliTest, DamagedArtifactsAreOneLineErrors) {
  ASSERT_EQ(graft("compile " + path("mlp.onnx") + " -o " + path("d.graft") + " --shape input=1,784").exit_code, 0);
  std::string bytes = read_text(dir_ / "d.graft");
  bytes[bytes.size() / 2] ^= 0x10;
  std::ofstream(dir_ / "damaged.graft", std::ios::binary) << bytes;
  Result r = graft("run " + path("damaged.graft"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("checksum mismatch"), std::string::npos) << r.err;
  Result symbolic = graft("compile " + path("mlp.onnx") + " -o " + path("s.graft"));
  EXPECT_EQ(symbolic.exit_code, 2);
  EXPECT_NE(symbolic.err.find("--shape input="), std::string::npos) << symbolic.err;
  // --backends is read as graft run and graft partition read it: an empty name is an error, not skipped.
  Result empty_name = graft("compile " + path("mlp.onnx") + " -o " + path("e.graft") + " --shape input=1,784 --backends ref,,dnnl");
  EXPECT_EQ(empty_name.exit_code, 2);
  EXPECT_NE(empty_name.err.find("--backends 'ref,,dnnl' has an empty name"), std::string::npos) << empty_name.err;
  EXPECT_FALSE(fs::exists(dir_ / "e.graft"));
}

}  // namespace

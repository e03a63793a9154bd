// `graft run --profile` and `--trace`, run as a process on the zoo's mlp: the
// text report's sections, and a Chrome trace that parses and holds one
// complete event per node per profiled run.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "graft/frontend/load_model.h"
#include "graft/runtime/session.h"

namespace {

namespace fs = std::filesystem;

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class ProfileCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("graft_profile_cli_test_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    mlp_ = (dir_ / "mlp.onnx").string();
    ASSERT_EQ(graft("zoo mlp -o '" + mlp_ + "'").exit_code, 0);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static Result graft(const std::string& args) {
    fs::path out = dir_ / "stdout", err = dir_ / "stderr";
    std::string command = "'" + std::string(GRAFT_BINARY_DIR) + "/bin/graft' " + args + " >'" + out.string() + "' 2>'" +
                          err.string() + "' </dev/null";
    int status = std::system(command.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), slurp(out), slurp(err)};
  }

  /// Nodes one profiled run of the mlp times, from an in-process Session
  /// (empty `backends`: the default ones, as the CLI without --backends).
  static size_t nodes_per_run(std::vector<std::string> backends) {
    graft::runtime::SessionOptions options;
    options.profile = true;
    options.backends = std::move(backends);
    std::unique_ptr<graft::runtime::Session> loaded = graft::frontend::load_model(mlp_, options);
    graft::runtime::Session& session = *loaded;
    graft::backend::RunStats stats;
    session.run({graft::Tensor(graft::DType::float32, {1, 784})}, &stats);
    return stats.timings.size();
  }

  static inline fs::path dir_;
  static inline std::string mlp_;
};

TEST_F(ProfileCliTest, PrintsTablesByBackendOpTypeAndNode) {
  Result r = graft("run '" + mlp_ + "' --profile --repeat 3 --backends ref");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("profile: 3 runs, " + std::to_string(nodes_per_run({"ref"})) + " nodes per run"),
            std::string::npos)
      << r.out;
  for (const char* section : {"by backend:", "by op type:", "slowest nodes (", "model nodes", "Gemm", "ref"})
    EXPECT_NE(r.out.find(section), std::string::npos) << section << " missing from:\n" << r.out;

  // With the default backends a subgraph is one timed node standing for several model nodes.
  Result defaults = graft("run '" + mlp_ + "' --profile");
  ASSERT_EQ(defaults.exit_code, 0) << defaults.err;
  EXPECT_NE(defaults.out.find("profile: 1 run, " + std::to_string(nodes_per_run({})) + " nodes per run"),
            std::string::npos)
      << defaults.out;

  Result single = graft("run '" + mlp_ + "' --profile --profile-top 1");
  ASSERT_EQ(single.exit_code, 0) << single.err;
  EXPECT_NE(single.out.find("profile: 1 run, "), std::string::npos) << single.out;
  EXPECT_NE(single.out.find("slowest nodes (1 of "), std::string::npos) << single.out;
}

TEST_F(ProfileCliTest, TraceHasOneCompleteEventPerNodePerRun) {
  std::string trace_path = (dir_ / "trace.json").string();
  Result r = graft("run '" + mlp_ + "' --repeat 2 --trace '" + trace_path + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("by op type:"), std::string::npos) << "--trace alone prints no table";
  EXPECT_NE(r.out.find("wrote trace"), std::string::npos) << r.out;
  nlohmann::json trace = nlohmann::json::parse(slurp(trace_path));
  size_t node_events = 0, run_events = 0;
  std::map<int, double> last_end_per_run;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    ASSERT_TRUE(e.contains("ts") && e.contains("dur") && e.contains("pid") && e.contains("tid")) << e.dump();
    if (e.at("cat") == "node") {
      ++node_events;
      // Nodes of one run follow each other on the timeline.
      int run = e.at("args").at("run").get<int>();
      double ts = e.at("ts").get<double>();
      if (last_end_per_run.count(run)) {
        EXPECT_GE(ts + 1e-3, last_end_per_run[run]) << e.dump();
      }
      last_end_per_run[run] = ts + e.at("dur").get<double>();
    } else if (e.at("cat") == "run") {
      ++run_events;
    }
  }
  EXPECT_EQ(run_events, 2u);
  EXPECT_EQ(node_events, 2 * nodes_per_run({}));
}

TEST_F(ProfileCliTest, BadProfileFlagsAreOneLineErrors) {
  Result r = graft("run '" + mlp_ + "' --trace '" + (dir_ / "no" / "such" / "dir" / "t.json").string() + "'");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("t.json"), std::string::npos) << r.err;
  Result top = graft("run '" + mlp_ + "' --profile --profile-top many");
  EXPECT_EQ(top.exit_code, 2) << top.out;
  EXPECT_NE(top.err.find("--profile-top"), std::string::npos) << top.err;
}

}  // namespace

// The `fuse` backend through a Session: JIT or interpreter, compile counts
// across shapes, injected compile failures, save/load, bad environment.
#include <gtest/gtest.h>

#include <cstdlib>

#include "support/scoped_env.h"
#include <sstream>

#include "codegen_test_util.h"
#include "graft/codegen/compile_cache.h"
#include "graft/codegen/interpreter.h"
#include "graft/backend/backend.h"
#include "graft/backend/buffer_pool.h"

namespace graft::codegen {
namespace {

using graft::testing::close_enough;
using graft::testing::random_of;
using graft::testing::wrap_fused;

/// y = sigmoid(a + b) * a; z = y > b (a: [N, 1, 5], b: [4, 1]).
std::unique_ptr<ir::Graph> sample_graph(int64_t n) {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  ir::Node* a = g->add_input("a", ir::ValueType::of(DType::float32, {n, 1, 5}));
  ir::Node* b = g->add_input("b", ir::ValueType::of(DType::float32, {4, 1}));
  ir::Node* add = g->add_node("Add", {a->output(0), b->output(0)});
  ir::Node* sig = g->add_node("Sigmoid", {add->output(0)});
  ir::Node* mul = g->add_node("Mul", {sig->output(0), a->output(0)});
  ir::Node* gt = g->add_node("Greater", {mul->output(0), b->output(0)});
  g->add_output(mul->output(0), "y");
  g->add_output(gt->output(0), "z");
  ops::infer_types(*g);
  return g;
}

using graft::testing::ScopedEnv;

TEST(FuseBackend, IsRegisteredBetweenDnnlAndRef) {
  const backend::Backend* fuse = backend::find_backend("fuse");
  ASSERT_NE(fuse, nullptr);
  EXPECT_EQ(fuse->default_rank(), 50);
}

TEST(FuseBackend, SessionMatchesUnfusedAndSecondShapeDoesNotRecompile) {
  CompileCache& cache = CompileCache::global();
  cache.clear_memory();
  uint64_t compiles = cache.counters().compiles;
  auto plain = sample_graph(3);
  auto fused = wrap_fused(*plain);
  // One Session whose first input has a symbolic leading dimension: each
  // input shape gets its own plan, and each plan compiles the fused node.
  fused->inputs()[0]->output_types[0].dims[0] = ir::Dim::symbolic("N");
  ops::infer_types(*fused);
  runtime::SessionOptions options;
  options.passes = {"verify"};
  options.num_threads = 2;
  options.fusion = false;
  options.backends = {"ref"};
  runtime::Session session(std::move(fused), options);
  for (int64_t n : {3, 7}) {
    std::vector<Tensor> inputs = {random_of(DType::float32, {n, 1, 5}, 10 + n), random_of(DType::float32, {4, 1}, 20)};
    auto reference_graph = sample_graph(n);  // the unfused graph at the same shape
    std::vector<Tensor> want = graft::testing::run_reference(*reference_graph, inputs);
    std::vector<Tensor> got = session.run(inputs);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_TRUE(close_enough(got[0], want[0], 1e-5, 1e-6));
    EXPECT_TRUE(close_enough(got[1], want[1], 0, 0));
  }
  EXPECT_EQ(session.num_plans(), 2u);
  cache.wait_for_background_compiles();  // fused modules compile on the background thread
  uint64_t expected = CompileCache::global().cpu_key(lower_body(*plain).ir).empty() ? 0 : 1;
  if (std::getenv("GRAFT_JIT") && std::string(std::getenv("GRAFT_JIT")) == "0") expected = 0;
  EXPECT_EQ(cache.counters().compiles - compiles, expected);
}

TEST(FuseBackend, InjectedCompileFailureFallsBackToInterpreter) {
  CompileCache& cache = CompileCache::global();
  cache.clear_memory();
  cache.reset_warning_for_testing();
  cache.set_fail_compiles_for_testing(true);
  auto plain = sample_graph(2);
  std::vector<Tensor> inputs = {random_of(DType::float32, {2, 1, 5}, 1), random_of(DType::float32, {4, 1}, 2)};
  runtime::SessionOptions options;
  options.passes = {"verify"};
  options.num_threads = 2;
  options.fusion = false;
  options.backends = {"ref"};
  ::testing::internal::CaptureStderr();
  runtime::Session first(wrap_fused(*plain), options);
  std::vector<Tensor> got = first.run(inputs);
  runtime::Session second(wrap_fused(*sample_graph(3)), options);
  second.run(std::vector<Tensor>{random_of(DType::float32, {3, 1, 5}, 1), inputs[1]});
  cache.wait_for_background_compiles();  // the compiles (and failures) happen on the background thread
  std::vector<Tensor> after_failure = first.run(inputs);
  std::string err = ::testing::internal::GetCapturedStderr();
  cache.set_fail_compiles_for_testing(false);
  cache.clear_memory();
  std::vector<Tensor> want = graft::testing::run_reference(*plain, inputs);
  for (const auto& result : {got, after_failure}) {
    EXPECT_TRUE(close_enough(result[0], want[0], 1e-6, 1e-7));
    EXPECT_TRUE(close_enough(result[1], want[1], 0, 0));
  }
  if (!cache.cpu_key(lower_body(*plain).ir).empty() && !std::getenv("GRAFT_JIT")) {
    EXPECT_NE(err.find("JIT compilation of a fused kernel failed"), std::string::npos) << err;
    size_t first = err.find("warning");
    EXPECT_EQ(err.find("warning", first + 1), std::string::npos) << "warned twice: " << err;
  }
}

// Fused modules get a runner that interprets until the background compile
// has finished (and compiles only once a run has finished); before and after,
// it computes what the reference does. A runner destroyed with its compile
// still queued or running neither hangs nor leaves the compile behind.
TEST(FuseBackend, BackgroundCompiledRunnerSwitchesToTheKernel) {
  CompileCache& cache = CompileCache::global();
  cache.clear_memory();
  auto plain = sample_graph(3);
  codegen::LoweredKernel kernel = lower_body(*plain);
  std::vector<Tensor> inputs = {random_of(DType::float32, {3, 1, 5}, 5), random_of(DType::float32, {4, 1}, 6)};
  std::vector<Tensor> want = graft::testing::run_reference(*plain, inputs);
  backend::BufferPool pool;
  auto runner = cache.cpu_runner_in_background(kernel.ir);
  std::string before_kind = runner->kind();
  std::vector<Tensor> before = run_kernel(kernel.ir, *runner, inputs, pool);
  cache.wait_for_background_compiles();
  std::vector<Tensor> after = run_kernel(kernel.ir, *runner, inputs, pool);
  for (const auto& got : {before, after}) {
    EXPECT_TRUE(close_enough(got[0], want[0], 1e-5, 1e-6));
    EXPECT_TRUE(close_enough(got[1], want[1], 0, 0));
  }
  bool jit = !cache.cpu_key(kernel.ir).empty() && !std::getenv("GRAFT_JIT");
  if (jit) {
    EXPECT_STREQ(runner->kind(), "llvm") << "before: " << before_kind;
  }
  for (int i = 0; i < 20; ++i) {
    cache.clear_memory();
    auto discarded = cache.cpu_runner_in_background(kernel.ir);
  }
  cache.wait_for_background_compiles();
}

// A Session that is never destroyed may reach exit while its kernel loads or
// compiles in the background: the process must still exit cleanly (it
// crashed about one time in thirty before the worker's exit handler and the
// two-step start). Each child process leaks a session after 1 to 4 runs.
/// `jit_ready`: a first session has loaded the JIT and compiled, so the
/// leaked session's compile starts at once and is in flight at exit;
/// otherwise exit comes while the JIT may still be loading.
[[noreturn]] void leak_a_session_and_exit(int runs, bool jit_ready) {
  runtime::SessionOptions options;
  options.passes = {"verify"};
  options.num_threads = 2;
  options.fusion = false;
  options.backends = {"ref"};
  std::vector<Tensor> inputs = {random_of(DType::float32, {3, 1, 5}, 1), random_of(DType::float32, {4, 1}, 2)};
  if (jit_ready) {
    runtime::Session first(wrap_fused(*sample_graph(3)), options);
    first.run(inputs);
    CompileCache::global().wait_for_background_compiles();
  }
  CompileCache::global().clear_memory();
  auto* leaked = new runtime::Session(wrap_fused(*sample_graph(3)), options);
  for (int r = 0; r < runs; ++r) leaked->run(inputs);
  std::exit(0);
}

TEST(FuseBackend, ExitWithABackgroundCompileInFlightIsClean) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  for (bool jit_ready : {false, true})
    for (int runs = 1; runs <= 3; ++runs)
      for (int attempt = 0; attempt < 3; ++attempt)
        EXPECT_EXIT(leak_a_session_and_exit(runs, jit_ready), ::testing::ExitedWithCode(0), "")
            << runs << " runs, JIT ready " << jit_ready;
}

TEST(FuseBackend, JitDisabledByEnvironmentUsesInterpreter) {
  ScopedEnv jit("GRAFT_JIT", "0");
  auto runner = CompileCache::global().cpu_runner(lower_body(*sample_graph(2)).ir);
  EXPECT_STREQ(runner->kind(), "interpreter");
}

TEST(FuseBackend, InvalidEnvironmentValuesNameTheVariable) {
  auto ir = lower_body(*sample_graph(2)).ir;
  {
    ScopedEnv jit("GRAFT_JIT", "yes");
    try {
      CompileCache::global().cpu_runner(ir);
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("GRAFT_JIT"), std::string::npos);
    }
  }
  if (CompileCache::global().cpu_key(ir).empty()) GTEST_SKIP() << "built without LLVM";
  ScopedEnv dir("GRAFT_CACHE_DIR", "/proc/version");
  try {
    CompileCache::global().cpu_runner(ir);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("GRAFT_CACHE_DIR"), std::string::npos);
  }
}

TEST(FuseBackend, SavedModuleLoadsAndRuns) {
  auto plain = sample_graph(2);
  auto module = backend::get_backend("fuse").compile(*plain, {});
  std::ostringstream saved;
  module->save(saved);
  std::istringstream in(saved.str());
  auto loaded = backend::load_module("fuse", in, *plain);
  std::vector<Tensor> inputs = {random_of(DType::float32, {2, 1, 5}, 3), random_of(DType::float32, {4, 1}, 4)};
  backend::BufferPool pool;
  backend::ModuleRunContext context{pool, 2};
  std::vector<Tensor> got = loaded->run(inputs, context);
  std::vector<Tensor> want = graft::testing::run_reference(*plain, inputs);
  EXPECT_TRUE(close_enough(got[0], want[0], 1e-5, 1e-6));
  std::string bytes = saved.str();
  for (size_t cut : {size_t(2), size_t(9), bytes.size() / 2}) {
    std::istringstream truncated(bytes.substr(0, cut));
    EXPECT_THROW(backend::load_module("fuse", truncated, *plain), Error) << cut;
  }
}

}  // namespace
}  // namespace graft::codegen

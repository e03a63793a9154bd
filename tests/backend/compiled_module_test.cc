// The module path of the runtime: a graft.Subgraph node assigned to a backend
// is compiled at plan time (once per input-shape signature) and run through
// its CompiledModule; with the `ref` backend it runs its body.
#include <gtest/gtest.h>

#include <atomic>
#include <sstream>

#include "graft/ir/graph.h"
#include "graft/backend/backend.h"
#include "graft/runtime/session.h"
#include "support/graph_runner.h"

namespace graft {
namespace {

std::atomic<int> compiles{0};

/// Runs Relu(x) + 1 by hand, to prove the module (not the body) ran.
class PlusOneReluModule final : public backend::CompiledModule {
 public:
  std::string type_key() const override { return "test-plus-one"; }
  std::vector<Tensor> run(std::span<const Tensor> inputs, backend::ModuleRunContext& context) const override {
    Tensor out = context.pool.allocate(DType::float32, inputs[0].shape());
    const float* x = inputs[0].data<float>();
    float* y = out.data<float>();
    for (int64_t i = 0; i < out.numel(); ++i) y[i] = (x[i] > 0 ? x[i] : 0) + 1.0f;
    return {out};
  }
};

class PlusOneBackend final : public backend::Backend {
 public:
  std::string name() const override { return "test-plus-one"; }
  bool in_default_order() const override { return false; }
  std::unique_ptr<backend::CompiledModule> compile(const ir::Graph& subgraph,
                                                   const backend::CompileOptions&) const override {
    EXPECT_TRUE(subgraph.inputs()[0]->output_types[0].is_concrete());
    ++compiles;
    return std::make_unique<PlusOneReluModule>();
  }
};
GRAFT_REGISTER_BACKEND(PlusOneBackend);

/// Compiles inputs of up to four elements and declines longer ones, as a
/// backend does whose limits depend on the shape.
class ShortOnlyBackend final : public backend::Backend {
 public:
  std::string name() const override { return "test-short-only"; }
  bool in_default_order() const override { return false; }
  std::unique_ptr<backend::CompiledModule> compile(const ir::Graph& subgraph,
                                                   const backend::CompileOptions&) const override {
    if (subgraph.inputs()[0]->output_types[0].dims[0].value > 4)
      fail(ErrorKind::unsupported, "test-short-only compiles at most 4 elements");
    return std::make_unique<PlusOneReluModule>();
  }
};
GRAFT_REGISTER_BACKEND(ShortOnlyBackend);

/// x -> graft.Subgraph{ Relu } -> y, the node assigned to `backend`.
std::unique_ptr<ir::Graph> subgraph_model(const std::string& backend) {
  auto body = std::make_shared<ir::Graph>();
  ir::Node* in = body->add_input("b_x", ir::ValueType::of_dtype(DType::float32));
  body->add_output(body->add_node("Relu", {in->output(0)}, 1, "relu")->output(0), "b_y");
  auto g = std::make_unique<ir::Graph>();
  ir::Node* x = g->add_input("x", ir::ValueType{DType::float32, true, {ir::Dim::symbolic("n")}});
  ir::Node* sub = g->add_node("Subgraph", {x->output(0)}, 1, "sub0", "graft");
  sub->subgraph = body;
  sub->backend = backend;
  g->add_output(sub->output(0), "y");
  return g;
}

TEST(CompiledModule, SubgraphNodeRunsThroughItsBackendsModulePerShape) {
  compiles = 0;
  runtime::SessionOptions options;
  options.passes = {"verify", "infer"};
  runtime::Session session(subgraph_model("test-plus-one"), options);
  Tensor x = testing::random_tensor({5}, 1);
  Tensor y = session.run(std::vector<Tensor>{x})[0];
  for (int64_t i = 0; i < 5; ++i) EXPECT_FLOAT_EQ(y.data<float>()[i], std::max(x.data<float>()[i], 0.f) + 1);
  session.run(std::vector<Tensor>{x});
  EXPECT_EQ(compiles, 1) << "a second run with the same shape must not compile";
  session.run(std::vector<Tensor>{testing::random_tensor({7}, 2)});
  EXPECT_EQ(compiles, 2) << "a new input shape is a new plan";
}

TEST(CompiledModule, DeclinedCompileRunsOnRefAndIsReported) {
  runtime::SessionOptions options;
  options.passes = {"verify", "infer"};
  runtime::Session session(subgraph_model("test-short-only"), options);
  Tensor small = testing::random_tensor({3}, 5);
  Tensor y = session.run(std::vector<Tensor>{small})[0];
  EXPECT_FLOAT_EQ(y.data<float>()[0], std::max(small.data<float>()[0], 0.f) + 1) << "the module ran";
  EXPECT_TRUE(session.compile_fallbacks().empty());

  Tensor large = testing::random_tensor({6}, 6);
  y = session.run(std::vector<Tensor>{large})[0];
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(y.data<float>()[i], std::max(large.data<float>()[i], 0.f)) << "the body ran on ref";
  auto fallbacks = session.compile_fallbacks();
  ASSERT_EQ(fallbacks.size(), 1u);
  EXPECT_EQ(fallbacks[0].node, "sub0");
  EXPECT_EQ(fallbacks[0].backend, "test-short-only");
  EXPECT_NE(fallbacks[0].reason.find("at most 4 elements"), std::string::npos) << fallbacks[0].reason;
  EXPECT_EQ(fallbacks[0].inputs, "float32[6]");
  session.run(std::vector<Tensor>{large});
  EXPECT_EQ(session.compile_fallbacks().size(), 1u) << "a plan is made once";
}

TEST(CompiledModule, RefSubgraphRunsItsBody) {
  runtime::SessionOptions options;
  options.passes = {"verify", "infer"};
  runtime::Session session(subgraph_model("ref"), options);
  Tensor x = testing::random_tensor({6}, 3);
  Tensor y = session.run(std::vector<Tensor>{x})[0];
  ASSERT_EQ(y.shape(), x.shape());
  for (int64_t i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y.data<float>()[i], std::max(x.data<float>()[i], 0.f));
}

TEST(CompiledModule, UnknownBackendNamesTheAvailableOnes) {
  runtime::SessionOptions options;
  options.passes = {"verify", "infer"};
  runtime::Session session(subgraph_model("no-such-backend"), options);
  try {
    session.run(std::vector<Tensor>{testing::random_tensor({2}, 4)});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-backend"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("ref"), std::string::npos);
  }
}

TEST(CompiledModule, LoaderRegistryRestoresRefModules) {
  auto model = subgraph_model("ref");
  std::istringstream empty;
  auto module = backend::load_module("ref", empty, *model->nodes()[1]->subgraph);
  EXPECT_EQ(module->type_key(), "ref");
  EXPECT_THROW(backend::load_module("no-such-type", empty, *model), Error);
}

}  // namespace
}  // namespace graft

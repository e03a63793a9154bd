// ShapeSpecializedModule: a subgraph with shapes known only when it runs is
// compiled by its backend for each distinct set of input shapes (the most
// recently used kept), runs on the reference kernels for shapes the backend
// declines, and survives an artifact round trip of its saved form.
#include <gtest/gtest.h>

#include <atomic>
#include <sstream>

#include "graft/ir/graph.h"
#include "graft/backend/backend.h"
#include "graft/backend/buffer_pool.h"
#include "graft/compiler/shape_specialized_module.h"
#include "support/graph_runner.h"

namespace graft {
namespace {

std::atomic<int> compiles{0};

/// Scales its input by 2 by hand, so that a test sees which module ran.
class TimesTwoModule final : public backend::CompiledModule {
 public:
  std::string type_key() const override { return "test-times-two"; }
  std::vector<Tensor> run(std::span<const Tensor> inputs, backend::ModuleRunContext& context) const override {
    Tensor out = context.pool.allocate(DType::float32, inputs[0].shape());
    for (int64_t i = 0; i < out.numel(); ++i) out.data<float>()[i] = 2 * inputs[0].data<float>()[i];
    return {out};
  }
};

/// Needs concrete shapes; declines inputs of more than 1000 rows.
class ConcreteOnlyBackend final : public backend::Backend {
 public:
  std::string name() const override { return "test-concrete-only"; }
  bool in_default_order() const override { return false; }
  std::unique_ptr<backend::CompiledModule> compile(const ir::Graph& subgraph,
                                                   const backend::CompileOptions&) const override {
    for (const auto& node : subgraph.nodes())
      for (const ir::ValueType& t : node->output_types)
        if (!t.is_concrete()) fail(ErrorKind::unsupported, "test-concrete-only: a type is not concrete");
    if (subgraph.inputs()[0]->output_types[0].dims[0].value > 1000)
      fail(ErrorKind::unsupported, "test-concrete-only: more than 1000 rows");
    ++compiles;
    return std::make_unique<TimesTwoModule>();
  }
};
GRAFT_REGISTER_BACKEND(ConcreteOnlyBackend);

/// x float32[rows, 3] -> MatMul by a [3, 3] identity -> y: a body whose
/// shapes are unknown until rows is, and that computes a product: 18 FLOPs a
/// row for 36 bytes of weight, worth compiling from 128 rows.
std::unique_ptr<ir::Graph> product_body() {
  auto body = std::make_unique<ir::Graph>();
  body->opset_imports[""] = 17;
  ir::ValueType x_type{DType::float32, true, {ir::Dim::symbolic("rows"), ir::Dim::known(3)}};
  ir::Value x = body->add_input("x", x_type)->output(0);
  Tensor eye = Tensor::from_vector<float>({1, 0, 0, 0, 1, 0, 0, 0, 1}, {3, 3});
  ir::Node* mm = body->add_node("MatMul", {x, body->add_constant("eye", eye)->output(0)}, 1, "mm");
  mm->output_types[0] = ir::ValueType{DType::float32, true, {ir::Dim::symbolic("rows"), ir::Dim::known(3)}};
  body->add_output(mm->output(0), "y");
  return body;
}

std::vector<Tensor> run(const backend::CompiledModule& module, const Tensor& x) {
  backend::BufferPool pool;
  backend::ModuleRunContext context{pool, 1, nullptr};
  return module.run(std::vector<Tensor>{x}, context);
}

TEST(ShapeSpecializedModule, WorthSpecializingNeedsUnknownShapesAndAProduct) {
  EXPECT_TRUE(compiler::ShapeSpecializedModule::worth_specializing(*product_body()));
  auto concrete = product_body();
  concrete->inputs()[0]->output_types[0] = ir::ValueType::of(DType::float32, {2, 3});
  for (const auto& node : concrete->nodes())
    if (node->schema().name != "Constant") node->output_types[0] = ir::ValueType::of(DType::float32, {2, 3});
  EXPECT_FALSE(compiler::ShapeSpecializedModule::worth_specializing(*concrete));
  auto relu = std::make_unique<ir::Graph>();
  ir::Value x = relu->add_input("x", ir::ValueType{DType::float32, true, {ir::Dim::symbolic("n")}})->output(0);
  relu->add_output(relu->add_node("Relu", {x}, 1, "relu")->output(0), "y");
  EXPECT_FALSE(compiler::ShapeSpecializedModule::worth_specializing(*relu));
}

TEST(ShapeSpecializedModule, CompilesOncePerShapeAndKeepsTheMostRecent) {
  const backend::Backend& backend = backend::get_backend("test-concrete-only");
  compiler::ShapeSpecializedModule module(backend, *product_body(), backend::CompileOptions{});
  const int before = compiles.load();
  const size_t kept = compiler::ShapeSpecializedModule::kMaxSpecializations;
  // kept + 2 shapes, each run twice: one compile per shape.
  const int64_t first = 200, last = first + static_cast<int64_t>(kept) + 1;
  for (int64_t rows = first; rows <= last; ++rows)
    for (int repeat = 0; repeat < 2; ++repeat) {
      Tensor x = testing::random_tensor({rows, 3}, static_cast<uint64_t>(rows));
      Tensor y = run(module, x)[0];
      ASSERT_EQ(y.shape(), x.shape());
      for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(y.data<float>()[i], 2 * x.data<float>()[i]);
    }
  EXPECT_EQ(compiles.load() - before, static_cast<int>(kept) + 2);
  EXPECT_EQ(module.num_compiles(), kept + 2);
  // The most recent shapes are kept; the first two were evicted and compile again.
  run(module, testing::random_tensor({last, 3}, 1));
  EXPECT_EQ(module.num_compiles(), kept + 2);
  run(module, testing::random_tensor({first, 3}, 1));
  EXPECT_EQ(module.num_compiles(), kept + 3);
  EXPECT_EQ(module.num_reference_runs(), 0u);
}

TEST(ShapeSpecializedModule, ShapesThatComputeTooLittleRunOnTheReferenceKernels) {
  const backend::Backend& backend = backend::get_backend("test-concrete-only");
  compiler::ShapeSpecializedModule module(backend, *product_body(), backend::CompileOptions{});
  const int before = compiles.load();
  for (int64_t rows : {1, 4, 100, 4}) {  // 18 FLOPs a row against 36 bytes: below 64 FLOPs a byte
    Tensor x = testing::random_tensor({rows, 3}, 5);
    Tensor y = run(module, x)[0];
    for (int64_t i = 0; i < x.numel(); ++i) ASSERT_FLOAT_EQ(y.data<float>()[i], x.data<float>()[i]);
  }
  EXPECT_EQ(compiles.load(), before);
  EXPECT_EQ(module.num_compiles(), 0u);
  EXPECT_EQ(module.num_reference_runs(), 4u);
  run(module, testing::random_tensor({128, 3}, 5));  // 64 FLOPs a byte
  EXPECT_EQ(module.num_compiles(), 1u);
  EXPECT_EQ(compiles.load(), before + 1);
}

TEST(ShapeSpecializedModule, ShapesTheBackendDeclinesRunOnTheReferenceKernels) {
  const backend::Backend& backend = backend::get_backend("test-concrete-only");
  compiler::ShapeSpecializedModule module(backend, *product_body(), backend::CompileOptions{});
  Tensor x = testing::random_tensor({1001, 3}, 3);
  for (int repeat = 0; repeat < 3; ++repeat) {
    Tensor y = run(module, x)[0];  // the body itself: x times the identity
    ASSERT_EQ(y.shape(), x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) ASSERT_FLOAT_EQ(y.data<float>()[i], x.data<float>()[i]);
  }
  EXPECT_EQ(module.num_compiles(), 1u) << "the decline is remembered";
  EXPECT_EQ(module.num_reference_runs(), 3u);
}

TEST(ShapeSpecializedModule, SavesItsBackendAndLoadsBack) {
  const backend::Backend& backend = backend::get_backend("test-concrete-only");
  auto body = product_body();
  compiler::ShapeSpecializedModule module(backend, *body, backend::CompileOptions{});
  std::ostringstream saved;
  module.save(saved);
  std::istringstream in(saved.str());
  auto loaded = backend::load_module(module.type_key(), in, *body);
  Tensor x = testing::random_tensor({300, 3}, 4);
  Tensor y = run(*loaded, x)[0];
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(y.data<float>()[i], 2 * x.data<float>()[i]);

  std::istringstream unknown("no-such-backend");
  try {
    backend::load_module(module.type_key(), unknown, *body);
    FAIL() << "an unknown backend name should not load";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_model);
    EXPECT_NE(std::string(e.what()).find("no-such-backend"), std::string::npos) << e.what();
  }
  std::istringstream empty("");
  EXPECT_THROW(backend::load_module(module.type_key(), empty, *body), Error);
}

}  // namespace
}  // namespace graft

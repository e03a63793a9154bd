// The dnnl module's guarantees: layouts converted only at the subgraph
// boundary, weights converted once and again when they change, primitives
// built per input shape and kept, concurrent runs, whole zoo models.
#include <sstream>
#include <thread>

#include "dnnl_test_util.h"
#include "graft/frontend/onnx_import.h"
#include "graft/passes/pass.h"
#include "graft/zoo/zoo.h"

namespace graft::testing {
namespace {

// conv -> relu -> conv -> maxpool on 16 channels, weights as constants.
std::unique_ptr<ir::Graph> conv_relu_conv_pool(const Shape& input_shape, Tensor first_weight) {
  auto g = new_graph();
  ir::Node* x = g->add_input("x", ir::ValueType::of(DType::float32, input_shape));
  ir::Node* w1 = g->add_constant("w1", std::move(first_weight));
  ir::Node* w2 = g->add_constant("w2", random_tensor({16, 16, 3, 3}, 12));
  ir::Node* c1 = g->add_node("Conv", {x->output(0), w1->output(0)}, 1, "conv1");
  c1->attributes.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  ir::Node* r = g->add_node("Relu", {c1->output(0)}, 1, "relu");
  ir::Node* c2 = g->add_node("Conv", {r->output(0), w2->output(0)}, 1, "conv2");
  c2->attributes.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  ir::Node* p = g->add_node("MaxPool", {c2->output(0)}, 1, "pool");
  p->attributes.set("kernel_shape", std::vector<int64_t>{2, 2});
  p->attributes.set("strides", std::vector<int64_t>{2, 2});
  g->add_output(p->output(0), "y");
  ops::infer_types(*g);
  return g;
}

TEST(DnnlModule, ReordersOnlyAtTheBoundary) {
  auto g = conv_relu_conv_pool({1, 16, 16, 16}, random_tensor({16, 16, 3, 3}, 11));
  auto stats = expect_dnnl_matches_reference(*g, {random_tensor({1, 16, 16, 16}, 1)});
  EXPECT_EQ(stats.activation_reorders, 2);  // plain -> blocked in, blocked -> plain out
  EXPECT_EQ(stats.primitives, 5);          // reorder, conv+relu, conv, pool, reorder
  EXPECT_EQ(stats.fused_nodes, 1);
}

TEST(DnnlModule, WeightChangedBetweenRunsGivesTheNewResult) {
  Tensor w1 = random_tensor({16, 16, 3, 3}, 11);
  auto g = conv_relu_conv_pool({1, 16, 8, 8}, w1);
  auto module = compile_dnnl(*g);
  std::vector<Tensor> inputs = {random_tensor({1, 16, 8, 8}, 3)};
  std::vector<Tensor> first = run_module(*module, inputs);
  int64_t after_first = dnnl_backend::dnnl_module_stats(*module).weight_conversions;
  EXPECT_EQ(after_first, 2);  // two conv weights (no bias)
  run_module(*module, inputs);
  EXPECT_EQ(dnnl_backend::dnnl_module_stats(*module).weight_conversions, after_first);

  w1.copy_from(random_tensor({16, 16, 3, 3}, 99));  // through the public API: bumps the version
  std::vector<Tensor> second = run_module(*module, inputs);
  EXPECT_EQ(dnnl_backend::dnnl_module_stats(*module).weight_conversions, after_first + 1);
  EXPECT_GT(max_relative_error(second[0], first[0]), 1e-2);
  std::vector<Tensor> want = run_graph(*g, inputs);
  EXPECT_LE(max_relative_error(second[0], want[0]), 1e-4);
}

TEST(DnnlModule, FoldedBatchNormFollowsItsParameters) {
  auto g = new_graph();
  ir::Node* x = g->add_input("x", ir::ValueType::of(DType::float32, {1, 4, 5, 5}));
  ir::Node* w = g->add_constant("w", random_tensor({8, 4, 3, 3}, 1));
  Tensor scale = random_tensor({8}, 2);
  std::vector<ir::Value> bn_inputs;
  ir::Node* conv = g->add_node("Conv", {x->output(0), w->output(0)}, 1, "conv");
  bn_inputs.push_back(conv->output(0));
  bn_inputs.push_back(g->add_constant("scale", scale)->output(0));
  for (int i = 0; i < 2; ++i) bn_inputs.push_back(g->add_constant("p" + std::to_string(i), random_tensor({8}, 3 + i))->output(0));
  Tensor var = Tensor::from_vector<float>(std::vector<float>(8, 0.5f), {8});
  bn_inputs.push_back(g->add_constant("var", var)->output(0));
  ir::Node* bn = g->add_node("BatchNormalization", bn_inputs, 1, "bn");
  g->add_output(bn->output(0));
  ops::infer_types(*g);
  auto module = compile_dnnl(*g);
  std::vector<Tensor> inputs = {random_tensor({1, 4, 5, 5}, 7)};
  run_module(*module, inputs);
  scale.copy_from(random_tensor({8}, 50));
  std::vector<Tensor> got = run_module(*module, inputs);
  EXPECT_LE(max_relative_error(got[0], run_graph(*g, inputs)[0]), 1e-4);
}

TEST(DnnlModule, WeightsFromInputsAreConvertedPerVersion) {
  auto g = new_graph();
  ir::Node* x = g->add_input("x", ir::ValueType::of(DType::float32, {1, 8, 6, 6}));
  ir::Node* w = g->add_input("w", ir::ValueType::of(DType::float32, {8, 8, 3, 3}));
  ir::Node* conv = g->add_node("Conv", {x->output(0), w->output(0)}, 1, "conv");
  g->add_output(conv->output(0));
  ops::infer_types(*g);
  auto module = compile_dnnl(*g);
  Tensor weight = random_tensor({8, 8, 3, 3}, 5);
  std::vector<Tensor> inputs = {random_tensor({1, 8, 6, 6}, 6), weight};
  run_module(*module, inputs);
  run_module(*module, inputs);
  EXPECT_EQ(dnnl_backend::dnnl_module_stats(*module).weight_conversions, 1);
  weight.copy_from(random_tensor({8, 8, 3, 3}, 8));
  std::vector<Tensor> got = run_module(*module, inputs);
  EXPECT_EQ(dnnl_backend::dnnl_module_stats(*module).weight_conversions, 2);
  EXPECT_LE(max_relative_error(got[0], run_graph(*g, inputs)[0]), 1e-4);
}

TEST(DnnlModule, AWeightInputInAFreshTensorIsConvertedAgainWhereverItsStorageLies) {
  // Each run passes the weight in a new tensor, the previous one freed first:
  // its storage often lands where the last one was, at the same first
  // version. A cache keyed by storage and version must still see new bytes
  // (the executor's pool buffers come and go the same way).
  auto g = new_graph();
  ir::Node* x = g->add_input("x", ir::ValueType::of(DType::float32, {1, 8, 6, 6}));
  ir::Node* w = g->add_input("w", ir::ValueType::of(DType::float32, {8, 8, 3, 3}));
  ir::Node* conv = g->add_node("Conv", {x->output(0), w->output(0)}, 1, "conv");
  g->add_output(conv->output(0));
  ops::infer_types(*g);
  auto module = compile_dnnl(*g);
  const Tensor x_value = random_tensor({1, 8, 6, 6}, 6);
  for (uint64_t seed = 20; seed < 28; ++seed) {
    std::vector<Tensor> inputs = {x_value, random_tensor({8, 8, 3, 3}, seed)};
    std::vector<Tensor> got = run_module(*module, inputs);
    EXPECT_LE(max_relative_error(got[0], run_graph(*g, inputs)[0]), 1e-4) << "weight of seed " << seed;
  }
}

TEST(DnnlModule, ModulesOfOneModelShareTheirConvertedWeights) {
  // Two plans' modules of the same subgraph (the same weight storages) at two
  // batch sizes: the second takes the first's conversions; a weight changed
  // through the public API is converted again, once, and both see it.
  Tensor w1 = random_tensor({16, 16, 3, 3}, 21);
  auto small = conv_relu_conv_pool({1, 16, 8, 8}, w1);
  auto large = conv_relu_conv_pool({3, 16, 8, 8}, w1);
  // conv_relu_conv_pool makes its second weight anew: give `large` the same one.
  for (const auto& node : large->nodes())
    if (node->name == "w2")
      for (const auto& other : small->nodes())
        if (other->name == "w2") node->constant_value = other->constant_value;
  auto first = compile_dnnl(*small);
  auto second = compile_dnnl(*large);
  std::vector<Tensor> small_inputs = {random_tensor({1, 16, 8, 8}, 4)},
                      large_inputs = {random_tensor({3, 16, 8, 8}, 5)};
  run_module(*first, small_inputs);
  std::vector<Tensor> got = run_module(*second, large_inputs);
  EXPECT_EQ(dnnl_backend::dnnl_module_stats(*first).weight_conversions, 2);
  EXPECT_EQ(dnnl_backend::dnnl_module_stats(*second).weight_conversions, 0);
  EXPECT_EQ(dnnl_backend::dnnl_module_stats(*second).shared_conversions, 2);
  EXPECT_LE(max_relative_error(got[0], run_graph(*large, large_inputs)[0]), 1e-4);

  w1.copy_from(random_tensor({16, 16, 3, 3}, 77));
  got = run_module(*second, large_inputs);
  EXPECT_EQ(dnnl_backend::dnnl_module_stats(*second).weight_conversions, 1);
  EXPECT_LE(max_relative_error(got[0], run_graph(*large, large_inputs)[0]), 1e-4);
  got = run_module(*first, small_inputs);
  EXPECT_EQ(dnnl_backend::dnnl_module_stats(*first).weight_conversions, 2);
  EXPECT_EQ(dnnl_backend::dnnl_module_stats(*first).shared_conversions, 1);
  EXPECT_LE(max_relative_error(got[0], run_graph(*small, small_inputs)[0]), 1e-4);

  // Another model's weights with equal values are not another module's.
  auto unrelated = conv_relu_conv_pool({1, 16, 8, 8}, random_tensor({16, 16, 3, 3}, 21));
  auto third = compile_dnnl(*unrelated);
  run_module(*third, small_inputs);
  EXPECT_EQ(dnnl_backend::dnnl_module_stats(*third).shared_conversions, 0);
}

TEST(DnnlModule, NewInputShapeBuildsNewPrimitivesAndKeepsTheOld) {
  auto body = conv_relu_conv_pool({1, 16, 8, 8}, random_tensor({16, 16, 3, 3}, 11));
  auto outer = wrap_in_subgraph(*body, "dnnl");
  // The batch and spatial extents are left to the run.
  outer->inputs()[0]->output_types[0] = ir::ValueType{DType::float32, true,
                                                      {ir::Dim::symbolic("n"), ir::Dim::known(16),
                                                       ir::Dim::symbolic("h"), ir::Dim::symbolic("w")}};
  runtime::SessionOptions options;
  options.passes = {"verify", "infer"};
  options.num_threads = 2;
  runtime::Session session(std::move(outer), options);
  int64_t compiles = dnnl_backend::dnnl_compile_count();
  Tensor small = random_tensor({1, 16, 8, 8}, 1), large = random_tensor({2, 16, 12, 12}, 2);
  std::vector<Tensor> small_first = session.run({small});
  EXPECT_EQ(dnnl_backend::dnnl_compile_count(), compiles + 1);
  std::vector<Tensor> large_out = session.run({large});
  EXPECT_EQ(dnnl_backend::dnnl_compile_count(), compiles + 2);
  std::vector<Tensor> small_again = session.run({small});
  EXPECT_EQ(dnnl_backend::dnnl_compile_count(), compiles + 2);
  EXPECT_EQ(session.num_plans(), 2u);
  EXPECT_EQ(large_out[0].shape(), (Shape{2, 16, 6, 6}));
  expect_close(small_again[0], small_first[0], 0, 0);
  // The reference on the large shape.
  auto reference_body = conv_relu_conv_pool({2, 16, 12, 12}, body->nodes()[1]->constant_value);
  EXPECT_LE(max_relative_error(large_out[0], run_graph(*reference_body, {large})[0]), 1e-4);
}

TEST(DnnlModule, ConcurrentRunsAgree) {
  auto g = conv_relu_conv_pool({1, 16, 16, 16}, random_tensor({16, 16, 3, 3}, 11));
  auto module = compile_dnnl(*g, 1);
  std::vector<Tensor> inputs = {random_tensor({1, 16, 16, 16}, 1)};
  std::vector<Tensor> want = run_module(*module, inputs, 1);
  std::vector<std::thread> threads;
  std::vector<double> errors(4, 1.0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) errors[t] = max_relative_error(run_module(*module, inputs, 1)[0], want[0]);
    });
  for (std::thread& t : threads) t.join();
  for (double e : errors) EXPECT_EQ(e, 0.0);
}

TEST(DnnlModule, RefusesWhatItDoesNotSupport) {
  auto g = new_graph();
  ir::Node* x = g->add_input("x", ir::ValueType::of(DType::float32, {2, 3}));
  ir::Node* n = g->add_node("Neg", {x->output(0)}, 1, "neg");
  g->add_output(n->output(0));
  ops::infer_types(*g);
  try {
    compile_dnnl(*g);
    FAIL() << "expected unsupported";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported);
    EXPECT_NE(std::string(e.what()).find("neg"), std::string::npos);
  }
}

// A zoo CNN as one dnnl subgraph (every op is supported) against the reference.
void check_zoo_model(const std::string& name, const Shape& input_shape, double tolerance) {
  auto graph = frontend::load_onnx_from_memory(zoo::build_zoo_model(name, 1));
  passes::PassContext ctx;
  passes::run_pipeline(graph, {"infer", "eliminate-identity", "fold-constants", "eliminate-dead-code"}, ctx);
  graph->inputs()[0]->output_types[0] = ir::ValueType::of(DType::float32, input_shape);
  expect_dnnl_matches_reference(*graph, {random_tensor(input_shape, 3)}, tolerance);
}

TEST(DnnlZoo, Resnet18) { check_zoo_model("resnet18", {1, 3, 64, 64}, 1e-4); }
TEST(DnnlZoo, MobilenetV2) { check_zoo_model("mobilenet_v2", {1, 3, 64, 64}, 1e-4); }
TEST(DnnlZoo, Squeezenet) { check_zoo_model("squeezenet", {1, 3, 64, 64}, 1e-4); }

}  // namespace
}  // namespace graft::testing

namespace graft::testing {
namespace {

// A saved module stores its converted weights (saved_tensors); the loaded
// module runs on them without converting anything, and refuses stored
// weights that do not fit.
TEST(DnnlModule, SavedModuleLoadsAndRunsTheSame) {
  auto g = conv_relu_conv_pool({1, 16, 8, 8}, random_tensor({16, 16, 3, 3}, 11));
  auto module = compile_dnnl(*g);
  std::stringstream saved;
  module->save(saved);
  const std::string bytes = saved.str();
  std::vector<Tensor> converted = module->saved_tensors();
  ASSERT_FALSE(converted.empty());
  EXPECT_EQ(dnnl_backend::dnnl_module_stats(*module).weight_conversions, static_cast<int64_t>(converted.size()))
      << "save() converts every constant weight once";
  EXPECT_FALSE(module->superseded_constants().empty()) << "the conv weights are read only in converted form";

  std::stringstream in(bytes);
  auto loaded = backend::load_module("dnnl", in, *g, converted);
  std::vector<Tensor> inputs = {random_tensor({1, 16, 8, 8}, 2)};
  expect_close(run_module(*loaded, inputs)[0], run_module(*module, inputs)[0], 0, 0);
  EXPECT_EQ(dnnl_backend::dnnl_module_stats(*loaded).weight_conversions, 0) << "loading never reorders a weight";

  std::stringstream without(bytes);
  EXPECT_THROW(backend::load_module("dnnl", without, *g), Error) << "the listed converted weights are missing";
  std::vector<Tensor> wrong = converted;
  wrong[0] = Tensor(DType::uint8, {static_cast<int64_t>(converted[0].nbytes()) + 1});
  std::stringstream again(bytes);
  EXPECT_THROW(backend::load_module("dnnl", again, *g, wrong), Error) << "a stored weight of the wrong size";
  std::stringstream garbage("not a dnnl module");
  EXPECT_THROW(backend::load_module("dnnl", garbage, *g), Error);
}

// A weight kept only in converted form is a placeholder: the module refuses
// to convert from it, rather than computing with zeros. Rewriting all of it
// makes it real again (part of it cannot be rewritten).
TEST(DnnlModule, PlaceholderSourcesAreNeverConverted) {
  auto storage = Storage::placeholder(16 * 16 * 9 * 4);
  Tensor placeholder(DType::float32, {16, 16, 3, 3}, storage);
  auto g = conv_relu_conv_pool({1, 16, 8, 8}, placeholder);
  auto module = compile_dnnl(*g);
  std::vector<Tensor> inputs = {random_tensor({1, 16, 8, 8}, 2)};
  try {
    run_module(*module, inputs);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("only in converted form"), std::string::npos) << e.what();
  }
  Tensor first_half(DType::float32, {8, 16, 3, 3}, storage);
  EXPECT_THROW(first_half.copy_from(random_tensor({8, 16, 3, 3}, 1)), Error);
  EXPECT_TRUE(storage->is_placeholder());
  Tensor w1 = random_tensor({16, 16, 3, 3}, 11);
  placeholder.copy_from(w1);
  EXPECT_FALSE(storage->is_placeholder());
  auto reference = compile_dnnl(*conv_relu_conv_pool({1, 16, 8, 8}, w1));
  expect_close(run_module(*module, inputs)[0], run_module(*reference, inputs)[0], 0, 0);
}

}  // namespace
}  // namespace graft::testing

// The optimizer's update as it runs: each parameter's and state's new value
// computed in the Constant's own buffer (no copy, no allocation of its own),
// and the fused update's kernels each one dense run over their elements (no
// broadcast of a bias's update over a weight's, which sent resnet18's AdamW
// update through the runner's strided, copying path).
#include <gtest/gtest.h>

#include <set>

#include "graft/codegen/kernel_runner.h"
#include "graft/codegen/op_expressions.h"
#include "graft/codegen/output_groups.h"
#include "graft/training/trainer.h"
#include "graft/training/training_graph.h"
#include "support/graph_runner.h"
#include "support/trainer_options.h"
#include "support/training_mlp.h"

namespace graft {
namespace {

using ir::OpId;
using ir::Value;

// The model is testing::training_mlp(): x[8,6] -> Gemm(w1[6,16], b1[16]) ->
// Relu -> Gemm(w2[16,4], b2[4]) -> SoftmaxCrossEntropyLoss, weights and
// biases whose shapes broadcast together. Its batch of 8 for step `seed`:
std::map<std::string, Tensor> batch(uint64_t seed) {
  return testing::training_mlp_batch(8, seed, {}, {.x_seed_base = 200, .label_stride = 5});
}

training::TrainerOptions adamw() {
  training::TrainerOptions o = testing::trainer_options(training::OptimizerKind::adamw, 0.01f, 2);
  o.optimizer.weight_decay = 0.01f;
  o.session.fusion = true;
  return o;
}

const ir::Node* find_constant(const ir::Graph& graph, const std::string& name) {
  for (const auto& n : graph.nodes())
    if (n->op() == OpId::Constant && !n->output_names.empty() && n->output_names[0] == name) return n.get();
  return nullptr;
}

const std::vector<std::string> kUpdated = {"w1", "b1", "w2", "b2", "w1.exp_avg", "w1.exp_avg_sq", "b2.exp_avg_sq"};

TEST(UpdateInPlace, EveryNewValueIsComputedInItsConstantsBuffer) {
  training::Trainer trainer(*testing::training_mlp(), adamw());
  trainer.step(batch(0));  // builds the plan
  const runtime::Session& session = *trainer.session();
  std::map<std::string, Tensor> feed = batch(1);
  feed[training::kLearningRateInput] = Tensor::scalar<float>(0.01f);
  feed[training::kStepInput] = Tensor::scalar<float>(2.0f);
  backend::RunStats stats;
  std::map<std::string, Tensor> outputs = session.run(feed, &stats);
  size_t updated_bytes = 0;
  for (const std::string& name : kUpdated) {
    const ir::Node* constant = find_constant(session.graph(), name);
    ASSERT_NE(constant, nullptr) << name;
    const Tensor& next = outputs.at(name + ".next");
    EXPECT_EQ(next.raw_data(), constant->constant_value.raw_data()) << name << ": copied, not updated in place";
    updated_bytes += next.nbytes();
  }
  EXPECT_GT(updated_bytes, 0u);
}

TEST(UpdateInPlace, StepsInPlaceMatchStepsWithoutFusion) {
  // The same steps with the update computed elsewhere (reference kernels,
  // no fusion: new buffers, copied back by set_weight).
  auto unfused = adamw();
  unfused.session.fusion = false;
  unfused.session.backends = {"ref"};
  auto model = testing::training_mlp();
  training::Trainer in_place(*model, adamw()), copied(*model, unfused);
  for (uint64_t k = 0; k < 5; ++k) EXPECT_NEAR(in_place.step(batch(k)), copied.step(batch(k)), 1e-5) << k;
  for (const char* name : {"w1", "b1", "w2", "b2"})
    testing::expect_close(in_place.parameter(name), copied.parameter(name), 1e-5, 1e-6);
  // parameter() is a copy: a later step leaves it as it was.
  Tensor before = in_place.parameter("w1");
  std::vector<float> kept(before.data<float>(), before.data<float>() + before.numel());
  in_place.step(batch(9));
  EXPECT_EQ(std::vector<float>(before.data<float>(), before.data<float>() + before.numel()), kept);
}

TEST(UpdateInPlace, TheFusedUpdateRunsAsDenseKernels) {
  training::Trainer trainer(*testing::training_mlp(), adamw());
  trainer.step(batch(0));
  const ir::Graph& graph = trainer.session()->graph();
  int update_kernels = 0, update_nodes = 0;
  std::set<std::string> distinct_kernels;
  for (const auto& n : graph.nodes()) {
    if (n->op() != OpId::FusedPointwise) continue;
    bool update = false;
    for (const auto& inner : n->subgraph->nodes()) update = update || inner->name.find(".update.") != std::string::npos;
    if (!update) continue;
    ++update_nodes;
    codegen::LoweredKernel lowered = codegen::lower_body(*n->subgraph);
    distinct_kernels.insert(ir::to_string(lowered.ir));
    std::vector<Shape> input_shapes;
    for (const Value& v : n->inputs) input_shapes.push_back(*graph.type_of(v).concrete_shape());
    for (const Tensor& t : lowered.captured) input_shapes.push_back(t.shape());
    std::vector<Shape> output_shapes = codegen::kernel_output_shapes(lowered.ir, input_shapes);
    codegen::GroupedKernels grouped = codegen::kernels_by_output_group(lowered.ir, output_shapes);
    for (size_t g = 0; g < grouped.groups.size(); ++g) {
      std::vector<Shape> group_shapes;
      for (int32_t o : grouped.groups[g]) group_shapes.push_back(output_shapes[static_cast<size_t>(o)]);
      codegen::LaunchGeometry geometry = codegen::launch_geometry(grouped.kernels[g], input_shapes, group_shapes);
      EXPECT_TRUE(geometry.dense_apart_from_broadcast_inputs())
          << n->describe() << ", outputs of shape " << shape_to_string(group_shapes[0]) << ": "
          << geometry.extents.size() << " dimensions";
      ++update_kernels;
    }
  }
  EXPECT_GE(update_kernels, 4);  // [6,16], [16], [16,4], [4]
  // One fused node per parameter (the shared scalars run apart), all of one
  // kernel: the update compiles once.
  EXPECT_EQ(update_nodes, 4);
  EXPECT_EQ(distinct_kernels.size(), 1u);
}

}  // namespace
}  // namespace graft

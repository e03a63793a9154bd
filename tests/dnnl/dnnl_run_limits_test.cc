// Run limits inside a dnnl subgraph: a whole network can be one dnnl module,
// so its deadline and cancellation flag are checked between primitives, and
// the module runs normally afterwards (docs/security.md).
#include <atomic>
#include <chrono>

#include "dnnl_test_util.h"

namespace graft::testing {
namespace {

// conv -> relu -> conv -> maxpool: one dnnl module of several primitives.
std::unique_ptr<ir::Graph> conv_chain() {
  auto g = new_graph();
  ir::Node* x = g->add_input("x", ir::ValueType::of(DType::float32, {1, 16, 8, 8}));
  ir::Node* w1 = g->add_constant("w1", random_tensor({16, 16, 3, 3}, 31));
  ir::Node* w2 = g->add_constant("w2", random_tensor({16, 16, 3, 3}, 32));
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

std::vector<Tensor> run_with_limits(const backend::CompiledModule& module, const std::vector<Tensor>& inputs,
                                    const backend::RunLimits& limits) {
  backend::BufferPool pool;
  backend::ModuleRunContext context{pool, 2, nullptr, nullptr, &limits};
  return module.run(inputs, context);
}

TEST(DnnlRunLimits, CancelledAndPastDeadlineStopBetweenPrimitivesThenTheModuleRunsAgain) {
  auto g = conv_chain();
  auto module = compile_dnnl(*g);
  ASSERT_GT(dnnl_backend::dnnl_module_stats(*module).primitives, 2);
  std::vector<Tensor> inputs = {random_tensor({1, 16, 8, 8}, 5)};
  std::vector<Tensor> want = run_graph(*g, inputs);

  std::atomic<bool> cancel{true};
  backend::RunLimits cancelled;
  cancelled.cancel = &cancel;
  backend::RunLimits past;
  past.deadline = std::chrono::steady_clock::now() - std::chrono::milliseconds(1);
  for (const backend::RunLimits* limits : {&cancelled, &past}) {
    try {
      run_with_limits(*module, inputs, *limits);
      ADD_FAILURE() << "the module ran past its limits";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::cancelled);
      EXPECT_NE(std::string(e.what()).find("before primitive 2 of"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(limits == &past ? "deadline" : "cancelled"), std::string::npos) << e.what();
    }
  }
  // Limits not reached (or none): the full, right result.
  cancel = false;
  EXPECT_LE(max_relative_error(run_with_limits(*module, inputs, cancelled)[0], want[0]), 1e-4);
  EXPECT_LE(max_relative_error(run_module(*module, inputs)[0], want[0]), 1e-4);
}

}  // namespace
}  // namespace graft::testing

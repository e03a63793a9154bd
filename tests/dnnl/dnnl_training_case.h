// Helpers of the dnnl tests of training steps (dnnl_backward_test,
// dnnl_training_step_test, dnnl_whole_step_test): float32 inputs, random
// constants and named nodes, a loss's gradient graph, a whole graph in a
// Session with dnnl checked against the reference kernels, and the slots a
// dnnl program's steps pass.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "../../backends/dnnl/dnnl_program.h"
#include "dnnl_test_util.h"
#include "graft/autodiff/gradient.h"
#include "graft/runtime/session.h"

namespace graft::testing {

/// A float32 graph input `name` of `shape`.
inline ir::Value float_input(ir::Graph& g, const std::string& name, const Shape& shape) {
  return g.add_input(name, ir::ValueType::of(DType::float32, shape))->output(0);
}

/// A constant `name` of `shape` with random_tensor(shape, seed)'s values.
inline ir::Value random_constant(ir::Graph& g, const std::string& name, const Shape& shape, uint64_t seed) {
  return g.add_constant(name, random_tensor(shape, seed))->output(0);
}

/// A node `name` of `op` on `inputs`; its first output.
inline ir::Value named_node(ir::Graph& g, ir::OpId op, const std::vector<ir::Value>& inputs, const std::string& name) {
  return g.add_node(op, inputs, 1, name)->output(0);
}

/// The training graph of `forward`, whose output "loss" is a scalar: the
/// loss and its gradient with respect to every trainable initializer
/// (types inferred first).
inline std::unique_ptr<ir::Graph> loss_gradient_graph(ir::Graph& forward) {
  ops::infer_types(forward);
  return autodiff::gradient(forward, "loss", autodiff::trainable_initializers(forward, "loss"));
}

/// A graph in a Session with dnnl (dnnl_session_options) and the outputs the
/// reference kernels alone (no fusion) compute for `inputs`, run first: a
/// session may release the weights its clone of the graph shares.
struct DnnlSessionCheck {
  DnnlSessionCheck(const ir::Graph& graph, std::vector<Tensor> inputs)
      : graph(graph),
        inputs(std::move(inputs)),
        want(reference_outputs(graph, this->inputs)),
        session(graph.clone(), dnnl_session_options()) {}

  /// The backend the partition gave each node, by node name.
  std::map<std::string, std::string> backend_of() const {
    std::map<std::string, std::string> backends;
    for (const auto& n : session.partition_report().nodes) backends[n.name] = n.backend;
    return backends;
  }

  /// Runs the session once; expects every output within `tolerance` (max
  /// relative error) of the reference kernels', named in failures.
  void expect_run_matches_reference(double tolerance, const std::string& context = "") {
    std::vector<Tensor> got = session.run(inputs);
    ASSERT_EQ(got.size(), want.size()) << context;
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_LE(max_relative_error(got[i], want[i]), tolerance) << graph.output_names()[i] << context;
  }

  const ir::Graph& graph;
  std::vector<Tensor> inputs;
  std::vector<Tensor> want;  ///< the reference kernels' outputs
  runtime::Session session;

 private:
  static std::vector<Tensor> reference_outputs(const ir::Graph& graph, const std::vector<Tensor>& inputs) {
    runtime::SessionOptions reference;
    reference.backends = {"ref"};
    reference.fusion = false;
    return runtime::Session(graph.clone(), reference).run(inputs);
  }
};

/// The slot (its root, where the slot is a view) that step `label` of
/// `program` passes as argument `arg`; -1, and a test failure, when no step
/// passes it.
inline int step_argument_slot(const dnnl_backend::DnnlProgram& program, const std::string& label, int arg) {
  for (const dnnl_backend::Step& step : program.steps)
    if (step.label == label)
      for (const auto& [argument, slot] : step.args)
        if (argument == arg) return program.slots[slot].root >= 0 ? program.slots[slot].root : slot;
  ADD_FAILURE() << "no step '" << label << "' with argument " << arg;
  return -1;
}

}  // namespace graft::testing

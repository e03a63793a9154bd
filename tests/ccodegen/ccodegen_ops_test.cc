// Every op of the shared op case list (tests/codegen/op_cases.h) in float32,
// with and without broadcasting, compiled by ccodegen and compared with the
// reference kernels, as the fused-op tests compare the JIT and the
// interpreter. ccodegen lowers each op through its pointwise expression, so
// an op that has one runs here with nothing ccodegen-specific written for it.
#include <gtest/gtest.h>

#include "codegen/op_cases.h"
#include "graft/backends/ccodegen.h"
#include "graft/backend/backend.h"

namespace graft::backends {
namespace {

using namespace graft::testing;

TEST(CcodegenOps, EveryFloat32OpOfTheSharedList) {
  if (find_c_compiler().empty()) GTEST_SKIP() << "no C compiler";
  // One graph holding every case (one C compiler run); the cases whose
  // output is not float32 (comparisons, IsNaN) are not ccodegen's.
  ir::Graph g;
  g.opset_imports[""] = 20;
  std::vector<Tensor> inputs;
  std::vector<std::string> labels;
  for (const BuiltCase& c : build_op_cases()) {
    const ir::Node& op = *c.graph->outputs()[0].node;
    if (c.graph->inputs()[0]->output_types[0].dtype != f32 || op.output_types[0].dtype != f32) continue;
    std::vector<ir::Value> values;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      values.push_back(
          g.add_input("x" + std::to_string(inputs.size()), c.graph->inputs()[i]->output_types[0])->output(0));
      inputs.push_back(c.inputs[i]);
    }
    ir::Node* n = g.add_node(op.op(), values, 1, "op" + std::to_string(labels.size()));
    n->attributes = op.attributes;
    n->opset_version = op.opset_version;
    g.add_output(n->output(0), "y" + std::to_string(labels.size()));
    labels.push_back(c.label);
  }
  ops::infer_types(g);
  for (size_t k = 0; k < labels.size(); ++k) {
    CcodegenSupport support = ccodegen_supports(*g.outputs()[k].node);
    EXPECT_TRUE(support.supported) << labels[k] << ": " << support.reason;
  }
  ASSERT_GT(labels.size(), 40u);
  std::vector<Tensor> want = run_reference(g, inputs);
  auto module = backend::get_backend("ccodegen").compile(g, {});
  backend::BufferPool pool;
  backend::ModuleRunContext context{pool, 2, nullptr};
  std::vector<Tensor> got = module->run(inputs, context);
  ASSERT_EQ(got.size(), want.size());
  // The tolerances of ccodegen's other tests; its exp, erf and tanh are
  // vectorizable approximations (graft/codegen/c_kernel_source.h).
  for (size_t k = 0; k < got.size(); ++k) EXPECT_TRUE(close_enough(got[k], want[k], 1e-5, 1e-5)) << labels[k];
}

}  // namespace
}  // namespace graft::backends

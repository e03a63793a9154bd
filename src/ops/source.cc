// Input and Constant: the nodes that bring values into a graph.
#include "graft/ops/op_context.h"

namespace graft::ops {
namespace {

void infer_source(InferContext&) {}  // types are set when the node is created

void input_kernel(KernelContext& ctx) { ctx.fail("graph inputs are fed by the executor, not run"); }

void constant_kernel(KernelContext& ctx) { ctx.set_output(0, ctx.node().constant_value); }

}  // namespace

GRAFT_REGISTER_OP("", "Input", infer_source, input_kernel);
GRAFT_REGISTER_OP("", "Constant", infer_source, constant_kernel);

}  // namespace graft::ops

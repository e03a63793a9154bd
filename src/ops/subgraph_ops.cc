// graft.Subgraph and graft.FusedPointwise: nodes that own a body graph.
// Inference copies the node's input types onto the body's Input nodes, infers
// the body and reads the node's output types off the body's outputs. The
// reference kernel runs the body with graft's executor; backends replace it
// with their CompiledModule at plan time.
#include "graft/ir/graph.h"
#include "graft/ops/type_inference.h"
#include "graft/ops/op_context.h"

namespace graft::ops {
namespace {

const ir::Graph& body_of(const ir::Node& node) {
  if (!node.subgraph) fail(ErrorKind::invalid_model, node.describe(), ": has no body graph");
  return *node.subgraph;
}

void infer_body_node(InferContext& ctx) {
  ir::Node& node = const_cast<ir::Node&>(ctx.node());
  if (!node.subgraph) ctx.fail("has no body graph");
  ir::Graph& body = *node.subgraph;
  if (body.inputs().size() != ctx.num_inputs())
    ctx.fail("body has ", body.inputs().size(), " inputs, the node has ", ctx.num_inputs());
  if (body.outputs().size() != ctx.num_outputs())
    ctx.fail("body has ", body.outputs().size(), " outputs, the node has ", ctx.num_outputs());
  for (size_t i = 0; i < ctx.num_inputs(); ++i) body.inputs()[i]->output_types[0] = ctx.input_type(i);
  ops::infer_types(body);
  for (size_t i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, body.type_of(body.outputs()[i]));
}

void run_body_node(KernelContext& ctx) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) inputs.push_back(ctx.input(i));
  std::vector<Tensor> outputs = ctx.run_subgraph(body_of(ctx.node()), inputs);
  if (outputs.size() != ctx.num_outputs()) ctx.fail("body produced ", outputs.size(), " outputs");
  for (size_t i = 0; i < outputs.size(); ++i) ctx.set_output(i, std::move(outputs[i]));
}

}  // namespace

GRAFT_REGISTER_OP("graft", "Subgraph", infer_body_node, run_body_node);
GRAFT_REGISTER_OP("graft", "FusedPointwise", infer_body_node, run_body_node);

}  // namespace graft::ops

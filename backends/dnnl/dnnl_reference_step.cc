// Nodes on graft's reference kernels inside a dnnl program. A training
// step's loss (SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss) and its
// gradient have no oneDNN primitive; on `ref` they sat between the forward's
// dnnl subgraph and the backward's, and every activation the backward reads
// crossed that boundary written plain and was converted back. Here the
// node's float32 inputs are converted to plain (the scores: [batch, classes],
// small), its other inputs (the targets) are handed over as the bytes they
// are, the op's reference kernel runs with the run's buffer pool for its own
// allocations, and its outputs are copied into plain slots of the arena.
#include "dnnl_reference_step.h"

#include <cstring>

#include "dnnl_emitters.h"

namespace graft::dnnl_backend {

int emit_on_reference_kernel(Builder& b, uint32_t id) {
  const ir::Node& node = b.graph().node(id);
  auto graph = std::make_shared<ir::Graph>();
  graph->opset_imports = node.graph().opset_imports;
  std::vector<ir::Value> inputs;
  std::vector<std::pair<int, int>> args;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (!b.has_input(node, i)) {
      inputs.push_back({});
      continue;
    }
    const ir::ValueType& type = node.graph().type_of(node.inputs[i]);
    inputs.push_back(graph->add_input("input" + std::to_string(i), type)->output(0));
    int slot = b.slot_of(b.input(node, i));
    if (type.dtype == DType::float32) slot = b.as_plain(slot, node.name);
    args.push_back({static_cast<int>(i), slot});
  }
  auto step = std::make_shared<ReferenceStep>();
  step->node = graph->copy_node(node, inputs);
  step->graph = std::move(graph);
  int first = -1;
  for (int k = 0; k < node.num_outputs(); ++k) {
    int slot = b.add_slot(plain_desc(dims_of(node.output_types[static_cast<size_t>(k)])));
    args.push_back({kReferenceOutputArgument + k, slot});
    b.set_slot(id, static_cast<uint32_t>(k), slot);
    if (k == 0) first = slot;
  }
  b.add_reference_step(std::move(step), std::move(args), node.name);
  return first;
}

void run_reference_step(const ReferenceStep& step, std::span<void* const> inputs, std::span<void* const> outputs,
                        ops::OutputAllocator& allocator, int num_threads) {
  const ir::Node& node = *step.node;
  std::vector<Tensor> tensors(node.inputs.size());
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (!node.inputs[i]) continue;
    const ir::ValueType& type = step.graph->type_of(node.inputs[i]);
    Shape shape = type.concrete_shape().value();
    const size_t bytes = static_cast<size_t>(shape_numel(shape)) * dtype_size(type.dtype);
    // The bytes belong to the run (arena, module input or weight): borrowed, never freed here.
    auto storage = std::make_shared<Storage>(inputs[i], bytes, [] {});
    tensors[i] = Tensor(type.dtype, std::move(shape), std::move(storage));
  }
  ops::KernelContext context(node, std::move(tensors), std::vector<bool>(node.inputs.size(), false), allocator,
                             num_threads);
  node.schema().kernel(context);
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Tensor& out = context.outputs().at(k);
    const ir::ValueType& want = node.output_types[k];
    if (!out.is_defined() || out.dtype() != want.dtype || out.shape() != want.concrete_shape().value())
      fail(ErrorKind::internal, "dnnl backend: the reference kernel of ", node.describe(), " returned output ", k,
           " as ", out.is_defined() ? out.type_string() : std::string("nothing"), ", expected ", want.to_string());
    std::memcpy(outputs[k], out.raw_data(), out.nbytes());
  }
}

}  // namespace graft::dnnl_backend

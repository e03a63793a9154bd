// Lowering a subgraph to a oneDNN program: the driver of compile().
//
// Two phases over the topological order:
//  1. Grouping (dnnl_grouping.cc). Every Conv, ConvTranspose, MatMul and Gemm
//     anchors a group and grows down a chain of single-consumer nodes it can
//     absorb: a BatchNormalization right after a Conv (folded into the
//     weights), pointwise ops (eltwise post-ops, x*sigmoid(x) as swish),
//     Add/Mul/Sub/Div with a constant or another activation (binary
//     post-ops; a residual Add of an activation of the same shape as a sum
//     post-op).
//  2. Emission. A group is emitted at the position of its last node (all of
//     its outside inputs are computed by then); other nodes are emitted on
//     their own, each by the emitter of its op family (dnnl_emitters.h).
//     Activations keep the layout the producing primitive chose
//     (format_tag::any); a reorder is inserted only where a consumer needs
//     another layout, and conversions are cached per (slot, layout)
//     (dnnl_builder.cc). Module inputs are plain; module outputs are written
//     plain.
// A sum post-op writes in place into the residual's buffer when that value has
// no other reader left; otherwise the residual is added as a binary post-op
// (dnnl_post_ops.cc). Each node or group's steps run on one OpenMP thread
// when the cost model (dnnl_cost_model.cc) finds them small.
#include "dnnl_program.h"

#include <cstdio>
#include <cstdlib>

#include "dnnl_cost_model.h"
#include "dnnl_emitters.h"
#include "dnnl_int8.h"
#include "dnnl_support.h"
#include "dnnl_threads.h"

namespace graft::dnnl_backend {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using ir::OpId;

void check_support(const ir::IndexedGraph& graph) {
  for (uint32_t id = 0; id < graph.num_nodes(); ++id) {
    const ir::Node& node = graph.node(id);
    if (is_weight_source(node)) continue;
    SupportResult r = dnnl_supports(node);
    if (!r) fail(ErrorKind::unsupported, "dnnl backend: ", node.describe(), ": ", r.reason);
    for (const ir::ValueType& t : node.output_types)
      if (!t.is_concrete())
        fail(ErrorKind::unsupported, "dnnl backend: ", node.describe(), ": output type ", t.to_string(),
             " is not concrete at compile time");
  }
}

std::string group_label(const ir::IndexedGraph& graph, const Group& g) {
  std::string label;
  for (uint32_t m : g.members) label += (label.empty() ? "" : "+") + graph.node(m).name;
  return label;
}

// Emits a group's anchor with its post-ops; returns the slot of the group's result.
int emit_anchor(Builder& b, const Group& g) {
  const ir::Node& anchor = b.graph().node(g.anchor);
  std::string label = group_label(b.graph(), g);
  switch (anchor.op()) {
    case OpId::Conv:
      return emit_conv(b, g, label);
    case OpId::ConvTranspose:
      return emit_conv_transpose(b, g, label);
    case OpId::BatchNormalization:
      return emit_batch_norm(b, anchor, true);
    default:
      return emit_matmul(b, g, label);
  }
}

void emit_group(Builder& b, const Group& g) {
  int result = emit_anchor(b, g);
  for (uint32_t m : g.members) b.mark_emitted(m);
  b.set_slot(g.last, 0, result);
}

// Emits node `id` with the emitter of its op family; returns the slot of its output 0.
int emit_by_op(Builder& b, uint32_t id) {
  const ir::Node& node = b.graph().node(id);
  switch (node.op()) {
    case OpId::MaxPool:
    case OpId::AveragePool:
      return emit_pool(b, node);
    case OpId::GlobalAveragePool:
    case OpId::GlobalMaxPool:
      return emit_global_pool(b, node);
    case OpId::BatchNormalization:
      return emit_batch_norm(b, node);
    case OpId::LRN:
      return emit_lrn(b, node);
    case OpId::Softmax:
      return emit_softmax(b, node);
    case OpId::LayerNormalization:
      return emit_layer_norm(b, node);
    case OpId::Concat:
      return emit_concat(b, node);
    case OpId::Flatten:
    case OpId::Reshape:
      return emit_reshape(b, node);
    case OpId::Transpose:
      return emit_transpose(b, node);
    case OpId::Slice:
      return emit_slice(b, node);
    case OpId::Split:
      return emit_split(b, id);
    case OpId::Gather:
      return emit_gather(b, node);
    case OpId::LSTM:
    case OpId::GRU:
      return emit_recurrent(b, id);
    case OpId::Resize:
      return emit_resize(b, node);
    case OpId::ReduceSum:  // a bias gradient's sum over leading axes streams once on the reference kernel
      return sums_leading_axes_only(node) ? emit_on_reference_kernel(b, id) : emit_reduce_sum(b, node);
    case OpId::ConvInputGrad:
      return emit_conv_input_grad(b, node);
    case OpId::ConvWeightGrad:
      return emit_conv_weight_grad(b, node);
    case OpId::MaxPoolGrad:
    case OpId::AveragePoolGrad:
      return emit_pool_grad(b, node);
    case OpId::BatchNormalizationGrad:
      return emit_batch_norm_grad(b, id);
    case OpId::LayerNormalizationGrad:
      return emit_layer_norm_grad(b, id);
    case OpId::Greater:
      return emit_relu_mask(b, id);
    case OpId::Where:
      return emit_relu_gradient(b, node);
    case OpId::Sum:
      return emit_sum(b, node);
    case OpId::Expand:
      return emit_expand(b, node);
    default:
      break;
  }
  if (const OpSupport* row = dnnl_op_support(node.op()); row && row->reference_kernel)
    return emit_on_reference_kernel(b, id);
  if (binary_algorithm(node.op()) != algorithm::undef) return emit_binary(b, node);
  if (std::vector<PostOp> ops = eltwise_post_ops(node); !ops.empty()) return emit_eltwise(b, node, ops);
  fail(ErrorKind::unsupported, "dnnl backend: ", node.describe(), " has no lowering");
}

void emit_node(Builder& b, uint32_t id) { b.set_slot(id, 0, emit_by_op(b, id)); }

// Module outputs are plain: a value already in a plain buffer of its own
// becomes the output; any other is reordered into one. A buffer that other
// steps read through views (a MatMul's result that the backward reads
// reshaped, a LayerNorm's input read flattened) becomes the output too:
// views resolve their bytes through their root at run time, so they read
// the output tensor, and a copy of it (a same-layout reorder per output,
// about 25 ms of a BERT training step) is saved.
void write_outputs(Builder& b) {
  DnnlProgram& program = b.program();
  const auto& outputs = b.graph().outputs();
  std::vector<int> claimed(program.slots.size(), 0);
  for (size_t k = 0; k < outputs.size(); ++k) {
    Dims d = b.dims(outputs[k]);
    program.output_shapes.push_back(
        b.graph().node(outputs[k].node_id).output_types[outputs[k].index].concrete_shape().value());
    int slot = b.slot_of(outputs[k]);
    Slot& s = program.slots[slot];
    if (s.kind == SlotKind::arena && s.root < 0 && is_plain(s.desc) && s.desc.dims() == d && claimed[slot] == 0) {
      s.kind = SlotKind::output;
      s.index = static_cast<int>(k);
      claimed[slot] = 1;
      continue;
    }
    int out = b.add_slot(plain_desc(d), SlotKind::output, static_cast<int>(k));
    double bytes_moved = 2.0 * static_cast<double>(product(d, 0, d.size())) * sizeof(float);
    b.with_threads_for(bytes_moved / kBytesPerMicrosecond, [&] {
      int from = b.desc(slot).dims() == d ? slot : b.view(b.as_plain(slot, "output"), plain_desc(d));
      b.add_reorder(from, out, "output " + std::to_string(k));
    });
  }
}

DnnlProgram lower(const ir::Graph& subgraph) {
  Builder b(subgraph);
  const ir::IndexedGraph& graph = b.graph();
  check_support(graph);
  b.bind_inputs();
  const Grouping grouping = form_groups(graph, b.output_entries());
  for (const Group& g : grouping.groups) b.program().fused_nodes += static_cast<int>(g.members.size()) - 1;
  for (uint32_t id = 0; id < graph.num_nodes(); ++id) {
    const ir::Node& node = graph.node(id);
    if (is_weight_source(node)) continue;
    // A fake quantization int8 products read through their quantized source
    // (dnnl_int8.cc); float32 readers of its Mul get it dequantized here.
    if (grouping.folded_into_int8[id]) {
      if (const std::shared_ptr<QuantizedSource>& source = grouping.dequantized_at[id])
        b.with_threads_for(node_microseconds(graph, node),
                           [&] { b.set_slot(id, 0, dequantized_source(b, *source, node.name)); });
      continue;
    }
    if (grouping.gelu_gradient_steps[id]) {  // computed by the eltwise backward at the product
      b.mark_emitted(id);
      continue;
    }
    if (const std::shared_ptr<const GeluGradient>& gelu = grouping.gelu_gradients[id]) {
      b.with_threads_for(node_microseconds(graph, node), [&] { b.set_slot(id, 0, emit_gelu_gradient(b, *gelu)); });
      b.mark_emitted(id);
      continue;
    }
    if (const std::shared_ptr<Uint8Node>& u = grouping.uint8_nodes[id]) {  // dnnl_int8.cc
      b.with_threads_for(node_microseconds(graph, node), [&] { emit_uint8_node(b, id, *u); });
      b.mark_emitted(id);
      continue;
    }
    if (grouping.group_of[id] >= 0) {
      const Group& g = grouping.groups[grouping.group_of[id]];
      if (g.last == id) b.with_threads_for(group_microseconds(graph, g), [&] { emit_group(b, g); });
      continue;
    }
    b.with_threads_for(node_microseconds(graph, node), [&] { emit_node(b, id); });
    b.mark_emitted(id);
  }
  write_outputs(b);
  return b.take_program();
}

// "acdb[1,64,56,56]" style summary of a descriptor, for GRAFT_DNNL_VERBOSE.
std::string describe(const memory::desc& d) {
  std::string out = is_plain(d) ? "plain" : "blocked";
  out += "[";
  for (size_t i = 0; i < d.dims().size(); ++i) out += (i ? "," : "") + std::to_string(d.dims()[i]);
  out += "]";
  if (d.data.format_kind == dnnl_blocked) {
    out += "s(";
    for (int i = 0; i < d.data.ndims; ++i)
      out += (i ? "," : "") + std::to_string(d.data.format_desc.blocking.strides[i]);
    out += ")";
    if (d.data.format_desc.blocking.inner_nblks > 0)
      out += "b" + std::to_string(d.data.format_desc.blocking.inner_blks[0]);
  }
  return out;
}

}  // namespace

DnnlProgram build_program(const ir::Graph& subgraph) {
  try {
    DnnlProgram program = lower(subgraph);
    plan_arena(program);
    if (const char* env = std::getenv("GRAFT_DNNL_VERBOSE"); env && std::string(env) == "1")
      for (const Step& step : program.steps) {
        std::string line =
            "graft dnnl: " + step.label + " [" + step.implementation + (step.threads == 1 ? ", 1 thread]" : "]");
        for (const auto& [arg, slot] : step.args)
          line += " " + std::to_string(arg) + ":" + describe(program.slots[slot].desc);
        std::fprintf(stderr, "%s\n", line.c_str());
      }
    return program;
  } catch (const dnnl::error& e) {
    fail(ErrorKind::unsupported, "dnnl backend: oneDNN refused the subgraph: ", e.what());
  }
}

}  // namespace graft::dnnl_backend

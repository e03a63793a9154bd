// The cost model that picks a step's OpenMP threads. A step whose estimated
// single-thread time is below serial_step_microseconds() runs on the calling
// thread alone (dnnl_threads.h says why). The estimates are rough on
// purpose: a convolution or matmul costs its multiply-adds at
// kFlopsPerMicrosecond plus the bytes its post-ops write; every other step
// costs the bytes it reads and writes at kBytesPerMicrosecond (constants
// excluded: they stay in cache across runs). They run a few times above
// measured times on AVX-512 (figures in docs/dnnl.md).
#include "dnnl_cost_model.h"

#include "dnnl_threads.h"

namespace graft::dnnl_backend {
namespace {

using ir::Entry;
using ir::OpId;

double elements(const ir::ValueType& t) {
  Dims d = dims_of(t);
  return static_cast<double>(product(d, 0, d.size()));
}

bool has_input(const ir::Node& n, size_t i) { return i < n.inputs.size() && n.inputs[i]; }

Dims input_dims(const ir::IndexedGraph& graph, const ir::Node& n, size_t i) {
  Entry e = graph.entry_of(n.inputs[i]);
  return dims_of(graph.node(e.node_id).output_types[e.index]);
}

}  // namespace

double node_microseconds(const ir::IndexedGraph& graph, const ir::Node& node) {
  // A convolution's gradients do the forward's multiply-adds: d_y's elements
  // times a filter's (w is input 1 of ConvInputGrad, input 2 of ConvWeightGrad).
  if (node.op() == OpId::ConvInputGrad || node.op() == OpId::ConvWeightGrad) {
    Dims w = input_dims(graph, node, node.op() == OpId::ConvInputGrad ? 1 : 2);
    Dims dy = input_dims(graph, node, 0);
    return 2 * static_cast<double>(product(dy, 0, dy.size())) * static_cast<double>(product(w, 1, w.size())) /
           kFlopsPerMicrosecond;
  }
  double bytes = 0;
  for (const ir::ValueType& t : node.output_types) bytes += elements(t) * sizeof(float);
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (!has_input(node, i)) continue;
    Entry e = graph.entry_of(node.inputs[i]);
    const ir::Node& producer = graph.node(e.node_id);
    if (!is_constant(producer)) bytes += elements(producer.output_types[e.index]) * sizeof(float);
  }
  return bytes / kBytesPerMicrosecond;
}

double group_microseconds(const ir::IndexedGraph& graph, const Group& g) {
  const ir::Node& anchor = graph.node(g.anchor);
  const OpId op = anchor.op();
  double out = elements(anchor.output_types[0]);
  double flops = 0;
  if ((op == OpId::Conv || op == OpId::ConvTranspose) && has_input(anchor, 1)) {
    Dims w = input_dims(graph, anchor, 1);
    double per_filter = static_cast<double>(product(w, 1, w.size()));
    if (op == OpId::Conv) {
      flops = 2 * out * per_filter;
    } else {
      Dims x = input_dims(graph, anchor, 0);
      flops = 2 * static_cast<double>(product(x, 0, x.size())) * per_filter;
    }
  } else if (op == OpId::MatMul || op == OpId::Gemm) {
    Dims a = input_dims(graph, anchor, 0);
    int64_t k = a.empty() ? 1 : a.back();
    if (op == OpId::Gemm && anchor.attributes.get_int("transA", 0) != 0 && a.size() == 2) k = a[0];
    flops = 2 * out * static_cast<double>(k);
  } else {
    return node_microseconds(graph, anchor);
  }
  return flops / kFlopsPerMicrosecond +
         out * sizeof(float) * static_cast<double>(g.members.size()) / kBytesPerMicrosecond;
}

}  // namespace graft::dnnl_backend

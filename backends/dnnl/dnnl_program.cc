// Lowering a subgraph to a oneDNN program.
//
// Two phases over the topological order:
//  1. Grouping. Every Conv, ConvTranspose, MatMul and Gemm anchors a group and
//     grows down a chain of single-consumer nodes it can absorb: a
//     BatchNormalization right after a Conv (folded into the weights), pointwise
//     ops (eltwise post-ops, x*sigmoid(x) as swish), Add/Mul/Sub/Div with a
//     constant or another activation (binary post-ops; a residual Add of an
//     activation of the same shape as a sum post-op).
//  2. Emission. A group is emitted at the position of its last node (all of
//     its outside inputs are computed by then); other nodes are emitted on
//     their own. Activations keep the layout the producing primitive chose
//     (format_tag::any); a reorder is inserted only where a consumer needs
//     another layout, and conversions are cached per (slot, layout). Module
//     inputs are plain; module outputs are written plain.
// A sum post-op writes in place into the residual's buffer when that value has
// no other reader left; otherwise the residual is added as a binary post-op.
#include "dnnl_program.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <type_traits>

#include "dnnl_support.h"
#include "dnnl_threads.h"
#include "graft/ir/graph.h"
#include "graft/ir/indexed_graph.h"
#include "graft/ops/broadcast.h"
#include "graft/ops/conv_util.h"

namespace graft::dnnl_backend {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using Dims = memory::dims;
using ir::Entry;
using ir::OpId;

memory::dims row_major_strides(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

memory::desc plain_desc(const Dims& dims) { return memory::desc(dims, memory::data_type::f32, row_major_strides(dims)); }
// A strided descriptor whose size-1 dimensions carry the stride a row-major
// layout would give them: they address nothing, but oneDNN compares strides
// when it matches formats, and a transpose that only moves a size-1
// dimension (batch 1) must still read as the plain layout it is; otherwise a
// binary op between it and a plain tensor falls back to oneDNN's reference
// implementation (100x slower).
memory::desc strided_desc(const Dims& dims, Dims strides) {
  for (size_t i = dims.size(); i-- > 0;)
    if (dims[i] == 1) strides[i] = i + 1 < dims.size() ? strides[i + 1] * dims[i + 1] : 1;
  return memory::desc(dims, memory::data_type::f32, strides);
}
memory::desc any_desc(const Dims& dims) { return memory::desc(dims, memory::data_type::f32, memory::format_tag::any); }

Dims dims_of(const ir::ValueType& type) {
  Dims dims;
  for (const ir::Dim& d : type.dims) dims.push_back(d.value);
  if (dims.empty()) dims.push_back(1);
  return dims;
}

// `dims` with leading ones up to `rank`.
Dims expand_rank(Dims dims, size_t rank) {
  while (dims.size() < rank) dims.insert(dims.begin(), 1);
  return dims;
}

int64_t product(const Dims& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t d = begin; d < end; ++d) n *= dims[d];
  return n;
}

bool is_plain(const memory::desc& desc) { return desc == plain_desc(desc.dims()); }
// The outer strides of a blocked-format descriptor, one per dimension.
Dims strides_of(const memory::desc& desc) {
  const auto& blocking = desc.data.format_desc.blocking;
  return Dims(blocking.strides, blocking.strides + desc.data.ndims);
}

// Plain or strided (any order of dimensions), without inner blocks.
bool is_unblocked(const memory::desc& desc) {
  return desc.data.format_kind == dnnl_blocked && desc.data.format_desc.blocking.inner_nblks == 0 &&
         desc.data.offset0 == 0;
}

// One node absorbed into an anchor.
struct PostOp {
  enum class Kind { fold_batch_norm, eltwise, binary, sum };
  Kind kind = Kind::eltwise;
  const ir::Node* node = nullptr;
  algorithm alg = algorithm::undef;
  float alpha = 0, beta = 0;
  Entry other;  // the second operand of binary / sum
  bool expand = false;  // binary of a batched matmul: a constant broadcast to the full shape first (broadcast_constant)
};

struct Group {
  uint32_t anchor = 0;
  std::vector<PostOp> post_ops;
  std::vector<uint32_t> members;  // anchor first
  uint32_t last = 0;              // node whose output the group computes
};

// Eltwise post-ops of a pointwise node (HardSigmoid needs two); empty when not pointwise.
std::vector<PostOp> eltwise_ops(const ir::Node& node) {
  const ir::Attributes& a = node.attributes;
  auto one = [&](algorithm alg, float alpha = 0, float beta = 0) {
    return std::vector<PostOp>{PostOp{PostOp::Kind::eltwise, &node, alg, alpha, beta, {}}};
  };
  switch (node.op()) {
    case OpId::Relu: return one(algorithm::eltwise_relu);
    case OpId::LeakyRelu: return one(algorithm::eltwise_relu, a.get_float("alpha", 0.01f));
    case OpId::Sigmoid: return one(algorithm::eltwise_logistic);
    case OpId::Tanh: return one(algorithm::eltwise_tanh);
    case OpId::Elu: return one(algorithm::eltwise_elu, a.get_float("alpha", 1.0f));
    case OpId::HardSwish: return one(algorithm::eltwise_hardswish);
    case OpId::Exp: return one(algorithm::eltwise_exp);
    case OpId::Abs: return one(algorithm::eltwise_abs);
    case OpId::Sqrt: return one(algorithm::eltwise_sqrt);
    case OpId::Round: return one(algorithm::eltwise_round);  // half to even, as ONNX's Round
    case OpId::Gelu:
      return one(a.get_string("approximate", "none") == "tanh" ? algorithm::eltwise_gelu_tanh
                                                                : algorithm::eltwise_gelu_erf);
    case OpId::HardSigmoid: {
      std::vector<PostOp> ops = one(algorithm::eltwise_linear, a.get_float("alpha", 0.2f), a.get_float("beta", 0.5f));
      ops.push_back(PostOp{PostOp::Kind::eltwise, &node, algorithm::eltwise_clip, 0.0f, 1.0f, {}});
      return ops;
    }
    case OpId::Clip: {
      float lo = -INFINITY, hi = INFINITY;
      if (node.opset_version < 11) {
        lo = a.get_float("min", lo);
        hi = a.get_float("max", hi);
      } else {
        if (node.inputs.size() > 1 && node.inputs[1]) lo = node.inputs[1].node->constant_value.value_as_double(0);
        if (node.inputs.size() > 2 && node.inputs[2]) hi = node.inputs[2].node->constant_value.value_as_double(0);
      }
      return one(algorithm::eltwise_clip_v2, lo, hi);
    }
    default: return {};
  }
}

algorithm binary_algorithm(OpId op) {
  switch (op) {
    case OpId::Add: return algorithm::binary_add;
    case OpId::Mul: return algorithm::binary_mul;
    case OpId::Sub: return algorithm::binary_sub;
    case OpId::Div: return algorithm::binary_div;
    default: return algorithm::undef;
  }
}

bool is_constant(const ir::Node& n) { return n.op() == OpId::Constant; }
bool is_input(const ir::Node& n) { return n.op() == OpId::Input; }

// Whether oneDNN picked its reference code ("ref:any", ...) for `pd`: correct
// but 10-100x slower than its jit kernels.
bool on_reference_code(const dnnl::primitive_desc_base& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}
bool is_scalar_constant(const ir::Node& n) { return is_constant(n) && n.constant_value.numel() == 1; }

// oneDNN 2.6's jit post-op injectors give every eltwise post-op of one
// algorithm the parameters of the first: conv -> x * 3 -> relu -> x * 0.5
// computed x * 3 twice (a fake quantization's divide by its scale and multiply
// back, lower-quantize-dequantize, came out 2500 times too large). A group's
// chain therefore ends before an eltwise post-op whose algorithm it already
// holds with other parameters; that op then runs as a primitive of its own.
bool clashes_with_chain(const Group& g, const PostOp& p) {
  if (p.kind != PostOp::Kind::eltwise) return false;
  for (const PostOp& q : g.post_ops)
    if (q.kind == PostOp::Kind::eltwise && q.alg == p.alg && (q.alpha != p.alpha || q.beta != p.beta)) return true;
  return false;
}

// A binary op with a one-element constant as an eltwise_linear (alpha * x + beta); false when not expressible.
bool scalar_as_linear(OpId op, int constant_position, float c, float& alpha, float& beta) {
  if (op == OpId::Add) { alpha = 1; beta = c; return true; }
  if (op == OpId::Mul) { alpha = c; beta = 0; return true; }
  if (op == OpId::Sub && constant_position == 1) { alpha = 1; beta = -c; return true; }
  if (op == OpId::Sub && constant_position == 0) { alpha = -1; beta = c; return true; }
  if (op == OpId::Div && constant_position == 1 && c != 0) { alpha = 1 / c; beta = 0; return true; }
  return false;
}

class Builder {
 public:
  explicit Builder(const ir::Graph& graph) : graph_(graph), indexed_(graph) {
    program_.engine = dnnl::engine(dnnl::engine::kind::cpu, 0);
  }

  DnnlProgram build() {
    check_support();
    entry_slot_.assign(indexed_.num_entries(), -1);
    emitted_.assign(indexed_.num_nodes(), false);
    group_of_.assign(indexed_.num_nodes(), -1);
    is_output_.assign(indexed_.num_entries(), false);
    for (Entry e : indexed_.outputs()) is_output_[indexed_.entry_id(e)] = true;
    for (size_t i = 0; i < graph_.inputs().size(); ++i) {
      const ir::Node& in = *graph_.inputs()[i];
      int slot = add_slot(plain_desc(dims_of(in.output_types[0])), SlotKind::input, static_cast<int>(i));
      program_.input_slots.push_back(slot);
      entry_slot_[indexed_.entry_id(indexed_.id_of(in), 0)] = slot;
    }
    form_groups();
    for (uint32_t id = 0; id < indexed_.num_nodes(); ++id) {
      const ir::Node& node = indexed_.node(id);
      if (is_input(node) || is_constant(node)) continue;
      if (group_of_[id] >= 0) {
        const Group& g = groups_[group_of_[id]];
        if (g.last == id) with_threads_for(group_microseconds(g), [&] { emit_group(g); });
        continue;
      }
      with_threads_for(node_microseconds(node), [&] { emit_node(id); });
      emitted_[id] = true;
    }
    write_outputs();
    return std::move(program_);
  }

 private:
  // ---- threads per step ----
  // Emits the steps of one node or group with one OpenMP thread when its
  // estimated single-thread time is below serial_step_microseconds() (they
  // are then created for, and run with, one thread), else with the compile's.
  template <typename Emit>
  void with_threads_for(double microseconds, Emit emit) {
    size_t first = program_.steps.size();
    const bool serial = microseconds < serial_limit_;
    {
      ScopedOmpThreads threads(serial ? 1 : 0);
      emit();
    }
    if (serial)
      for (size_t i = first; i < program_.steps.size(); ++i) program_.steps[i].threads = 1;
  }

  static double elements(const ir::ValueType& t) {
    Dims d = dims_of(t);
    return static_cast<double>(product(d, 0, d.size()));
  }

  // A memory-bound step: the bytes of its outputs and of its non-constant inputs.
  double node_microseconds(const ir::Node& node) const {
    double bytes = 0;
    for (const ir::ValueType& t : node.output_types) bytes += elements(t) * sizeof(float);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (!has_input(node, i)) continue;
      const ir::Node& producer = indexed_.node(input(node, i).node_id);
      if (!is_constant(producer)) bytes += elements(producer.output_types[input(node, i).index]) * sizeof(float);
    }
    return bytes / kBytesPerMicrosecond;
  }

  // Multiply-adds of the anchor (convolution, matmul) plus its post-ops' bytes.
  double group_microseconds(const Group& g) const {
    const ir::Node& anchor = indexed_.node(g.anchor);
    const OpId op = anchor.op();
    double out = elements(anchor.output_types[0]);
    double flops = 0;
    if ((op == OpId::Conv || op == OpId::ConvTranspose) && has_input(anchor, 1)) {
      Dims w = dims(input(anchor, 1));
      double per_filter = static_cast<double>(product(w, 1, w.size()));
      if (op == OpId::Conv) {
        flops = 2 * out * per_filter;
      } else {
        Dims x = dims(input(anchor, 0));
        flops = 2 * static_cast<double>(product(x, 0, x.size())) * per_filter;
      }
    } else if (op == OpId::MatMul || op == OpId::Gemm) {
      Dims a = dims(input(anchor, 0));
      int64_t k = a.empty() ? 1 : a.back();
      if (op == OpId::Gemm && anchor.attributes.get_int("transA", 0) != 0 && a.size() == 2) k = a[0];
      flops = 2 * out * static_cast<double>(k);
    } else {
      return node_microseconds(anchor);
    }
    return flops / kFlopsPerMicrosecond + out * sizeof(float) * static_cast<double>(g.members.size()) / kBytesPerMicrosecond;
  }

  // ---- support ----
  void check_support() {
    for (uint32_t id = 0; id < indexed_.num_nodes(); ++id) {
      const ir::Node& node = indexed_.node(id);
      if (is_input(node) || is_constant(node)) continue;
      SupportResult r = dnnl_supports(node);
      if (!r) fail(ErrorKind::unsupported, "dnnl backend: ", node.describe(), ": ", r.reason);
      for (const ir::ValueType& t : node.output_types)
        if (!t.is_concrete())
          fail(ErrorKind::unsupported, "dnnl backend: ", node.describe(), ": output type ", t.to_string(),
               " is not concrete at compile time");
    }
  }

  // Primitive attributes are handles: every primitive gets its own, with a user-mode scratchpad.
  static dnnl::primitive_attr new_attr() {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
  }

  // ---- slots ----
  int add_slot(const memory::desc& desc, SlotKind kind = SlotKind::arena, int index = -1) {
    // A buffer of its own starts at its first byte; only views carry offsets.
    GRAFT_CHECK(desc.data.offset0 == 0, "dnnl: a new buffer with an offset descriptor");
    Slot s;
    s.desc = desc;
    s.kind = kind;
    s.index = index;
    program_.slots.push_back(s);
    converted_.emplace_back();
    return static_cast<int>(program_.slots.size()) - 1;
  }

  // A view of `slot`'s bytes with another descriptor of the same size.
  // `slot` read through `desc`. oneDNN calls two descriptors equal when they
  // lay out the same bytes (cdab and acdb of a batch of 1); `exact` makes a
  // view unless `desc` is spelled the same, for primitives whose fast paths
  // compare how formats are spelled.
  int view(int slot, const memory::desc& desc, bool exact = false) {
    if (exact ? std::memcmp(&program_.slots[slot].desc.data, &desc.data, sizeof(desc.data)) == 0
              : program_.slots[slot].desc == desc)
      return slot;
    GRAFT_CHECK(desc.data.offset0 != 0 || desc.get_size() <= program_.slots[slot].desc.get_size(),
                "dnnl view larger than its slot");
    int root = program_.slots[slot].root >= 0 ? program_.slots[slot].root : slot;
    Slot s;
    s.desc = desc;
    s.kind = program_.slots[root].kind;
    s.index = program_.slots[root].index;
    s.root = root;
    program_.slots.push_back(s);
    converted_.emplace_back();
    int v = static_cast<int>(program_.slots.size()) - 1;
    program_.slots[root].has_views = true;
    return v;
  }

  int add_weight(Weight w) {
    if (!w.identity) {
      dnnl::reorder::primitive_desc pd(program_.engine, w.plain, program_.engine, w.desc);
      w.convert = dnnl::reorder(pd);
    }
    program_.weights.push_back(std::move(w));
    return add_slot(program_.weights.back().identity ? program_.weights.back().plain : program_.weights.back().desc,
                    SlotKind::weight, static_cast<int>(program_.weights.size()) - 1);
  }

  WeightSource source_of(Entry e) {
    const ir::Node& n = indexed_.node(e.node_id);
    WeightSource s;
    if (is_constant(n)) {
      s.constant = n.constant_value;
    } else if (is_input(n)) {
      s.input = program_.slots[entry_slot_[indexed_.entry_id(e)]].index;
    } else {
      fail(ErrorKind::unsupported, "dnnl backend: ", n.describe(), " produces a weight; weights must be constants or inputs");
    }
    return s;
  }
  bool is_source(Entry e) const {
    const ir::Node& n = indexed_.node(e.node_id);
    return is_constant(n) || is_input(n);
  }

  // The slot of a value; constants become identity weights in plain layout.
  int slot_of(Entry e) {
    uint32_t id = indexed_.entry_id(e);
    if (entry_slot_[id] >= 0) return entry_slot_[id];
    const ir::Node& n = indexed_.node(e.node_id);
    if (!is_constant(n)) fail(ErrorKind::internal, "dnnl backend: value of ", n.describe(), " used before it is computed");
    Weight w;
    w.sources = {source_of(e)};
    w.plain = w.desc = plain_desc(dims_of(n.output_types[0]));
    w.identity = true;
    w.label = n.name;
    entry_slot_[id] = add_weight(std::move(w));
    return entry_slot_[id];
  }
  // The constant `e` broadcast (numpy rules) to `out`, as a weight in plain
  // layout: built when weights are converted and again when the constant's
  // version changes, like any weight.
  int broadcast_constant(Entry e, const Dims& out, const std::string& label) {
    Dims from = expand_rank(dims(e), out.size());
    Weight w;
    w.sources = {source_of(e)};
    w.plain = w.desc = plain_desc(out);
    w.label = label + ".broadcast";
    w.fill = [from, out](const std::vector<Tensor>& s, float* dst) {
      const float* src = s[0].data<float>();
      ops::broadcast_for_each<1>(out, {&from}, [&](int64_t at, const std::array<int64_t, 1>& in, int64_t count,
                                                   const std::array<int64_t, 1>& step) {
        for (int64_t k = 0; k < count; ++k) dst[at + k] = src[in[0] + k * step[0]];
      });
    };
    return add_weight(std::move(w));
  }
  Dims dims(Entry e) const { return dims_of(indexed_.node(e.node_id).output_types[e.index]); }
  Entry input(const ir::Node& n, size_t i) const { return indexed_.entry_of(n.inputs[i]); }
  bool has_input(const ir::Node& n, size_t i) const { return i < n.inputs.size() && n.inputs[i]; }

  // `slot` converted to `desc` (a cached reorder, or a cached weight conversion).
  int as_desc(int slot, const memory::desc& desc, const std::string& label) {
    if (program_.slots[slot].desc == desc) return slot;
    for (const auto& [d, s] : converted_[slot])
      if (d == desc) return s;
    int result;
    const Slot& from = program_.slots[slot];
    if (from.kind == SlotKind::weight) {
      const Weight& source = program_.weights[from.index];
      Weight w;
      w.sources = source.sources;
      w.plain = source.identity ? source.plain : source.desc;
      w.desc = desc;
      w.label = label;
      GRAFT_CHECK(source.identity, "dnnl: converting a converted weight");
      result = add_weight(std::move(w));
    } else {
      result = add_slot(desc);
      add_reorder(slot, result, label);
    }
    converted_[slot].push_back({desc, result});
    return result;
  }
  // `slot` itself when its descriptor covers its bytes densely from offset 0
  // (plain, blocked, or a permutation), else a plain copy: the views of a
  // Slice, Split or Gather, whose descriptors primitives would copy to their
  // destinations.
  int dense(int slot, const std::string& label) {
    const memory::desc& d = program_.slots[slot].desc;
    int64_t elements = product(d.dims(), 0, d.dims().size());
    if (d.data.offset0 == 0 && d.get_size() == static_cast<size_t>(elements) * sizeof(float)) return slot;
    return as_plain(slot, label);
  }
  int as_plain(int slot, const std::string& label) { return as_desc(slot, plain_desc(program_.slots[slot].desc.dims()), label); }

  void add_reorder(int from, int to, const std::string& label) {
    dnnl::reorder::primitive_desc pd(program_.engine, program_.slots[from].desc, program_.engine,
                                     program_.slots[to].desc, new_attr());
    if (program_.slots[from].desc != program_.slots[to].desc) ++program_.activation_reorders;
    add_step(dnnl::reorder(pd), pd, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}, "reorder for " + label);
  }

  void add_step(dnnl::primitive primitive, const dnnl::primitive_desc_base& pd, std::vector<std::pair<int, int>> args,
                const std::string& label) {
    Step s;
    s.primitive = std::move(primitive);
    s.args = std::move(args);
    s.scratchpad = pd.scratchpad_desc();
    s.label = label;
    s.implementation = pd.impl_info_str();
    program_.steps.push_back(std::move(s));
  }

  // ---- grouping ----
  bool is_anchor(const ir::Node& n) const {
    const OpId op = n.op();
    return op == OpId::Conv || op == OpId::ConvTranspose || op == OpId::MatMul || op == OpId::Gemm;
  }

  // The single consumer of node `id`'s output 0 that reads it exactly once, or -1.
  int64_t only_consumer(uint32_t id) const {
    auto consumers = indexed_.consumers(id);
    if (consumers.size() != 1) return -1;
    int uses = 0;
    for (Entry e : indexed_.inputs(consumers[0])) uses += e.node_id == id ? 1 : 0;
    return uses == 1 ? static_cast<int64_t>(consumers[0]) : int64_t{-1};
  }

  void form_groups() {
    for (uint32_t id = 0; id < indexed_.num_nodes(); ++id) {
      if (!is_anchor(indexed_.node(id)) || group_of_[id] >= 0) continue;
      Group g;
      g.anchor = g.last = id;
      g.members = {id};
      grow(g);
      add_group(std::move(g));
    }
    // A standalone BatchNormalization followed by Relu: one primitive (fuse_norm_relu).
    for (uint32_t id = 0; id < indexed_.num_nodes(); ++id) {
      if (indexed_.node(id).op() != OpId::BatchNormalization || group_of_[id] >= 0) continue;
      if (is_output_[indexed_.entry_id(id, 0)]) continue;
      int64_t next = only_consumer(id);
      if (next < 0 || indexed_.node(next).op() != OpId::Relu || group_of_[next] >= 0) continue;
      Group g;
      g.anchor = id;
      g.last = static_cast<uint32_t>(next);
      g.members = {id, g.last};
      add_group(std::move(g));
    }
  }

  void add_group(Group g) {
    int index = static_cast<int>(groups_.size());
    for (uint32_t m : g.members) group_of_[m] = index;
    program_.fused_nodes += static_cast<int>(g.members.size()) - 1;
    groups_.push_back(std::move(g));
  }

  void grow(Group& g) {
    const ir::Node& anchor = indexed_.node(g.anchor);
    while (true) {
      uint32_t cur = g.last;
      if (is_output_[indexed_.entry_id(cur, 0)]) return;
      Dims cur_dims = dims_of(indexed_.node(cur).output_types[0]);
      auto consumers = indexed_.consumers(cur);
      if (consumers.size() == 2 && try_swish(g, cur, consumers[0], consumers[1])) continue;
      int64_t next = only_consumer(cur);
      if (next < 0) return;
      uint32_t cid = static_cast<uint32_t>(next);
      const ir::Node& c = indexed_.node(cid);
      if (group_of_[cid] >= 0) return;
      const OpId op = c.op();
      if (op == OpId::BatchNormalization && anchor.op() == OpId::Conv && g.post_ops.empty() && all_sources(cid, 1, 5)) {
        g.post_ops.push_back(PostOp{PostOp::Kind::fold_batch_norm, &c, algorithm::undef, 0, 0, {}});
      } else if (std::vector<PostOp> ops = eltwise_ops(c); !ops.empty()) {
        for (const PostOp& p : ops)
          if (clashes_with_chain(g, p)) return;
        for (PostOp& p : ops) g.post_ops.push_back(p);
      } else if (binary_algorithm(op) != algorithm::undef) {
        int position = indexed_.inputs(cid)[0].node_id == cur ? 0 : 1;
        Entry other = indexed_.inputs(cid)[1 - position];
        if (dims_of(c.output_types[0]) != cur_dims) return;
        const ir::Node& on = indexed_.node(other.node_id);
        float alpha, beta;
        if (is_scalar_constant(on) &&
            scalar_as_linear(op, 1 - position, static_cast<float>(on.constant_value.value_as_double(0)), alpha, beta)) {
          PostOp linear{PostOp::Kind::eltwise, &c, algorithm::eltwise_linear, alpha, beta, {}};
          if (clashes_with_chain(g, linear)) return;
          g.post_ops.push_back(linear);
        } else {
          if (position != 0 && (op == OpId::Sub || op == OpId::Div)) return;
          bool same_shape = dims(other) == cur_dims;
          PostOp::Kind kind = op == OpId::Add && same_shape && !is_constant(on) ? PostOp::Kind::sum : PostOp::Kind::binary;
          // brgemm's batched matmul takes binary operands that are full,
          // scalar or per output column; another broadcast (swin's position
          // bias [1,heads,49,49] over the windows) sends it to oneDNN's
          // reference matmul, 100x slower. A constant operand is broadcast
          // once, when weights are converted; an activation stays outside.
          bool expand = false;
          if ((anchor.op() == OpId::MatMul || anchor.op() == OpId::Gemm) && cur_dims.size() > 2 && !same_shape) {
            int64_t numel = product(dims(other), 0, dims(other).size());
            bool per_column = numel == cur_dims.back() && dims(other).back() == cur_dims.back();
            if (numel != 1 && !per_column) {
              if (!is_constant(on)) return;
              expand = true;
            }
          }
          g.post_ops.push_back(PostOp{kind, &c, binary_algorithm(op), 0, 0, other, expand});
        }
      } else {
        return;
      }
      g.members.push_back(cid);
      g.last = cid;
    }
  }

  bool all_sources(uint32_t id, size_t begin, size_t end) const {
    auto inputs = indexed_.inputs(id);
    for (size_t i = begin; i < end; ++i)
      if (i >= inputs.size() || !inputs[i].present() || !is_source(inputs[i])) return false;
    return true;
  }

  // cur -> Sigmoid s -> Mul(cur, s): swish.
  bool try_swish(Group& g, uint32_t cur, uint32_t a, uint32_t b) {
    for (int swap = 0; swap < 2; ++swap) {
      uint32_t s = swap ? b : a, m = swap ? a : b;
      if (indexed_.node(s).op() != OpId::Sigmoid || indexed_.node(m).op() != OpId::Mul) continue;
      if (group_of_[s] >= 0 || group_of_[m] >= 0) continue;
      if (only_consumer(s) != static_cast<int64_t>(m)) continue;
      auto mi = indexed_.inputs(m);
      bool ok = (mi[0].node_id == cur && mi[1].node_id == s) || (mi[0].node_id == s && mi[1].node_id == cur);
      if (!ok || is_output_[indexed_.entry_id(s, 0)]) continue;
      g.post_ops.push_back(PostOp{PostOp::Kind::eltwise, &indexed_.node(m), algorithm::eltwise_swish, 1.0f, 0, {}});
      g.members.push_back(s);
      g.members.push_back(m);
      g.last = m;
      return true;
    }
    return false;
  }

  // ---- emission of groups ----
  std::string group_label(const Group& g) const {
    std::string label;
    for (uint32_t m : g.members) label += (label.empty() ? "" : "+") + indexed_.node(m).name;
    return label;
  }

  // Post-ops into `ops`; binary operands into `binary_args`; the in-place sum target into `sum_slot`.
  // A residual that cannot take the result in place is first copied into a
  // buffer of `preferred_dst` (the layout the anchor picks on its own).
  // A full-shape binary operand (a residual that cannot be a sum: the sum
  // must come first) is read in `preferred_dst`'s layout and `dst_preferred`
  // set, so that the anchor writes that layout too: given a binary operand
  // in one layout and a destination left to it, oneDNN's convolutions fall
  // back to a gemm on plain layouts (20x slower on efficientnet_v2's fused
  // MBConv blocks, conv -> SiLU -> + input).
  // The post-ops of the group's first `count`, in the primitive's attributes.
  void build_post_ops(const Group& g, size_t count, const Dims& dst_dims, dnnl::post_ops& ops,
                      std::vector<std::pair<int, int>>& binary_args, int& sum_slot, int anchor_input_slot,
                      const memory::desc& preferred_dst, const std::string& label, bool& dst_preferred) {
    int index = 0;
    for (size_t k = 0; k < count; ++k) {
      const PostOp& p = g.post_ops[k];
      switch (p.kind) {
        case PostOp::Kind::fold_batch_norm:
          continue;
        case PostOp::Kind::eltwise:
          ops.append_eltwise(1.0f, p.alg, p.alpha, p.beta);
          break;
        case PostOp::Kind::sum: {
          int other = slot_of(p.other);
          if (index == 0 && sum_slot == -1 && can_write_in_place(p.other, other, anchor_input_slot, g)) {
            ops.append_sum(1.0f);
            sum_slot = other;
            entry_slot_[indexed_.entry_id(p.other)] = -1;  // dead from here on
            break;
          }
          if (index == 0 && sum_slot == -1 && preferred_dst.dims() == dst_dims) {
            ops.append_sum(1.0f);
            sum_slot = add_slot(preferred_dst);
            add_reorder(other, sum_slot, label);
            break;
          }
          [[fallthrough]];
        }
        case PostOp::Kind::binary: {
          int other = dense(slot_of(p.other), label);
          Dims od = expand_rank(dims(p.other), dst_dims.size());
          int src1;
          if (program_.slots[other].desc.dims() == od && od == dst_dims) {
            src1 = other;
            if (preferred_dst.dims() == dst_dims && sum_slot == -1) {
              src1 = as_desc(other, preferred_dst, label);
              dst_preferred = true;
            }
          } else {
            src1 = view(as_plain(other, label), plain_desc(od));
          }
          ops.append_binary(p.alg, program_.slots[src1].desc);
          binary_args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1, src1});
          break;
        }
      }
      ++index;
    }
  }

  // The residual's buffer may take the result when nothing reads the value after this group.
  bool can_write_in_place(Entry residual, int slot, int anchor_input_slot, const Group& g) const {
    const Slot& s = program_.slots[slot];
    if (s.kind != SlotKind::arena || s.root >= 0 || s.has_views || slot == anchor_input_slot) return false;
    if (is_output_[indexed_.entry_id(residual)]) return false;
    for (uint32_t c : indexed_.consumers(residual.node_id)) {
      if (std::find(g.members.begin(), g.members.end(), c) != g.members.end()) continue;
      if (!emitted_[c]) return false;
    }
    for (size_t i = 0; i < entry_slot_.size(); ++i)
      if (entry_slot_[i] == slot && i != indexed_.entry_id(residual)) return false;
    return true;
  }

  void emit_group(const Group& g) {
    const ir::Node& anchor = indexed_.node(g.anchor);
    std::string label = group_label(g);
    int result;
    switch (anchor.op()) {
      case OpId::Conv: result = emit_conv(g, label); break;
      case OpId::ConvTranspose: result = emit_conv_transpose(g, label); break;
      case OpId::BatchNormalization: result = emit_batch_norm(anchor, true); break;
      default: result = emit_matmul(g, label); break;
    }
    for (uint32_t m : g.members) emitted_[m] = true;
    entry_slot_[indexed_.entry_id(g.last, 0)] = result;
  }

  // Finishes an anchor: post-ops, input conversion, destination; returns the
  // destination slot. The anchor's step is the last; its first `fused`
  // post-ops are in it, and the caller runs the rest (apply_post_ops) once it
  // has added the step's weights.
  // `fall_back`, when given, is called once if oneDNN has no implementation
  // for what make_desc asks (say, a Winograd convolution with these post-ops):
  // it switches make_desc to a choice that always exists.
  template <typename Primitive, typename MakeDesc>
  int finish_anchor(const Group& g, const std::string& label, const Dims& dst_dims, int src_slot, MakeDesc make_desc,
                    typename Primitive::primitive_desc& pd, size_t& fused,
                    const std::function<bool()>& fall_back = {}) {
    using PrimitiveDesc = typename Primitive::primitive_desc;
    auto create = [&](const memory::desc& src, const memory::desc& dst, const dnnl::primitive_attr& attr) {
      try {
        return PrimitiveDesc(make_desc(src, dst), attr, program_.engine);
      } catch (const dnnl::error&) {
        if (!fall_back || !fall_back()) throw;
        return PrimitiveDesc(make_desc(src, dst), attr, program_.engine);
      }
    };
    dnnl::post_ops ops;
    std::vector<std::pair<int, int>> binary_args;
    int sum_slot = -1;
    memory::desc src_any = any_desc(program_.slots[src_slot].desc.dims());
    PrimitiveDesc without_post_ops = create(src_any, any_desc(dst_dims), new_attr());
    memory::desc preferred_dst = without_post_ops.dst_desc();
    bool dst_preferred = false;
    fused = post_ops_with_jit_code<Primitive>(g, dst_dims, src_any, preferred_dst, without_post_ops, create);
    build_post_ops(g, fused, dst_dims, ops, binary_args, sum_slot, src_slot, preferred_dst, label, dst_preferred);
    dnnl::primitive_attr attr = new_attr();
    attr.set_post_ops(ops);
    memory::desc dst_md = sum_slot >= 0 ? program_.slots[sum_slot].desc
                          : dst_preferred ? preferred_dst
                                          : any_desc(dst_dims);
    pd = create(src_any, dst_md, attr);
    int src = as_desc(src_slot, pd.src_desc(), label);
    int dst = sum_slot >= 0 ? sum_slot : add_slot(pd.dst_desc());
    std::vector<std::pair<int, int>> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}};
    for (auto& a : binary_args) args.push_back(a);
    if (sum_slot >= 0) converted_[sum_slot].clear();  // its old value is gone
    add_step(Primitive(pd), pd, std::move(args), label);
    return dst;
  }

  // How many of the group's post-ops go into the anchor's primitive: all,
  // unless oneDNN then has only its reference code where the bare primitive
  // has jit code. oneDNN 2.6's convolutions have no jit code for a binary
  // post-op whose operand has the full output shape (a ConvGRU's gates,
  // sigmoid(conv(x)) * h): RAFT's update block ran 100 times slower. The
  // chain is then cut before its last binary post-op, or an earlier one,
  // whichever keeps jit code, and the rest runs as separate primitives
  // (apply_post_ops). The probe uses the operands' descriptors only.
  template <typename Primitive, typename Create>
  size_t post_ops_with_jit_code(const Group& g, const Dims& dst_dims, const memory::desc& src_any,
                                const memory::desc& preferred_dst,
                                const typename Primitive::primitive_desc& without_post_ops, Create& create) {
    const size_t all = g.post_ops.size();
    if (on_reference_code(without_post_ops)) return all;
    auto probe = [&](size_t count) {
      dnnl::post_ops ops;
      bool dst_preferred = false;
      for (size_t k = 0; k < count; ++k) {
        const PostOp& p = g.post_ops[k];
        if (p.kind == PostOp::Kind::fold_batch_norm) continue;
        if (p.kind == PostOp::Kind::eltwise) {
          ops.append_eltwise(1.0f, p.alg, p.alpha, p.beta);
          continue;
        }
        if (p.kind == PostOp::Kind::sum && k == 0) {
          ops.append_sum(1.0f);
          continue;
        }
        // As build_post_ops: an operand of the output's shape in the
        // layout the bare primitive prefers, which the output then takes.
        Dims od = expand_rank(dims(p.other), dst_dims.size());
        const bool full = od == dst_dims && preferred_dst.dims() == dst_dims;
        ops.append_binary(p.alg, full ? preferred_dst : plain_desc(od));
        dst_preferred = dst_preferred || full;
      }
      dnnl::primitive_attr attr = new_attr();
      attr.set_post_ops(ops);
      try {
        return !on_reference_code(create(src_any, dst_preferred ? preferred_dst : any_desc(dst_dims), attr));
      } catch (const dnnl::error&) {
        return false;
      }
    };
    if (probe(all)) return all;
    for (size_t cut = all; cut-- > 0;) {
      const PostOp::Kind kind = g.post_ops[cut].kind;
      if ((kind == PostOp::Kind::binary || (kind == PostOp::Kind::sum && cut > 0)) && probe(cut)) return cut;
    }
    return all;
  }

  // Runs the group's post-ops from `first` on as separate primitives on
  // `src` (what post_ops_with_jit_code left out of the anchor); returns the
  // slot of the result.
  int apply_post_ops(const Group& g, size_t first, int src, const std::string& label) {
    for (size_t k = first; k < g.post_ops.size(); ++k) {
      const PostOp& p = g.post_ops[k];
      if (p.kind == PostOp::Kind::fold_batch_norm) continue;
      if (p.kind == PostOp::Kind::eltwise) {
        src = emit_eltwise(*p.node, {p}, src);
        continue;
      }
      // binary, or a sum that was not the first post-op: an elementwise add.
      src = dense(src, label);
      const memory::desc d0 = program_.slots[src].desc;  // a copy: adding slots moves them
      int src1 = operand_like(p.other, d0, label);
      dnnl::binary::primitive_desc pd(dnnl::binary::desc(p.alg, d0, program_.slots[src1].desc, d0), new_attr(),
                                      program_.engine);
      int dst = add_slot(pd.dst_desc());
      add_step(dnnl::binary(pd), pd, {{DNNL_ARG_SRC_0, src}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, dst}}, label);
      src = dst;
    }
    return src;
  }

  const ir::Node* folded_batch_norm(const Group& g) const {
    for (const PostOp& p : g.post_ops)
      if (p.kind == PostOp::Kind::fold_batch_norm) return p.node;
    return nullptr;
  }

  // Conv weights (BN folded in) and bias as weights in the layouts of `pd`.
  void conv_weights(const Group& g, const ir::Node& conv, const Dims& w_dims, const memory::desc& w_desc,
                    const memory::desc& b_desc, int& w_slot, int& b_slot) {
    const ir::Node* bn = folded_batch_norm(g);
    bool has_bias = has_input(conv, 2);
    std::vector<WeightSource> sources = {source_of(input(conv, 1))};
    if (has_bias) sources.push_back(source_of(input(conv, 2)));
    size_t bn_first = sources.size();
    float epsilon = 1e-5f;
    if (bn) {
      for (size_t i = 1; i < 5; ++i) sources.push_back(source_of(input(*bn, i)));
      epsilon = bn->attributes.get_float("epsilon", 1e-5f);
    }
    int64_t out_channels = dims(input(conv, 1))[0];
    int64_t per_channel = product(dims(input(conv, 1)), 1, dims(input(conv, 1)).size());
    auto scale_of = [bn_first, epsilon](const std::vector<Tensor>& s, int64_t o) {
      return s[bn_first].data<float>()[o] / std::sqrt(s[bn_first + 3].data<float>()[o] + epsilon);
    };
    Weight w;
    w.sources = sources;
    w.plain = plain_desc(w_dims);
    w.desc = w_desc;
    w.label = conv.name;
    if (bn)
      w.fill = [=](const std::vector<Tensor>& s, float* out) {
        const float* src = s[0].data<float>();
        for (int64_t o = 0; o < out_channels; ++o) {
          float k = scale_of(s, o);
          for (int64_t i = 0; i < per_channel; ++i) out[o * per_channel + i] = src[o * per_channel + i] * k;
        }
      };
    w_slot = add_weight(std::move(w));
    b_slot = -1;
    if (!has_bias && !bn) return;
    Weight b;
    b.sources = sources;
    b.plain = plain_desc({out_channels});
    b.desc = b_desc;
    b.label = conv.name + ".bias";
    b.fill = [=](const std::vector<Tensor>& s, float* out) {
      for (int64_t o = 0; o < out_channels; ++o) {
        float bias = has_bias ? s[1].data<float>()[o] : 0.0f;
        if (bn) bias = (bias - s[bn_first + 2].data<float>()[o]) * scale_of(s, o) + s[bn_first + 1].data<float>()[o];
        out[o] = bias;
      }
    };
    b_slot = add_weight(std::move(b));
  }

  // Winograd's minimal filtering (F(2x2,3x3) or F(4x4,3x3), oneDNN picks)
  // does 2.25-4x fewer multiplications than a direct 3x3 convolution, but
  // transforms every input and output tile and stores the weights 1.8-4x
  // larger. It wins where the output is large next to the weights: measured
  // on resnet50's stride-1 3x3 layers (2 threads, AMD Zen 5), 28% faster at
  // 56x56 and 28x28, 21% at 14x14, 5% at 7x7, where the weights are 7-28x
  // larger too. Hence: 3x3, stride 1, undilated, ungrouped, output at least
  // 28x28. oneDNN has Winograd only for some ISAs and post-ops; the
  // convolution falls back to direct where it has none.
  // The weights' transform, done once at the first run, is slow in oneDNN
  // (about 0.2 us per input-output channel pair): 215 ms for the 2048 -> 512
  // convolution of torchvision's FCN head, whose run it shortened by 3 ms
  // (fcn_resnet50's first run 390 -> 171 ms without it). Hence also at most
  // 256 x 256 channel pairs (13 ms).
  static bool prefers_winograd(const std::vector<int64_t>& kernel, const Dims& strides, const Dims& dilates,
                               int64_t group, const Dims& dst_dims, const Dims& w_dims) {
    if (kernel.size() != 2 || kernel[0] != 3 || kernel[1] != 3 || group != 1) return false;
    for (size_t d = 0; d < 2; ++d)
      if (strides[d] != 1 || dilates[d] != 0) return false;
    if (w_dims[0] * w_dims[1] > 256 * 256) return false;
    return dst_dims[2] * dst_dims[3] >= 28 * 28;
  }

  int emit_conv(const Group& g, const std::string& label) {
    const ir::Node& conv = indexed_.node(g.anchor);
    Dims x_dims = dims(input(conv, 0)), w_dims = dims(input(conv, 1));
    Dims dst_dims = dims_of(conv.output_types[0]);
    size_t spatial = x_dims.size() - 2;
    std::vector<int64_t> kernel(w_dims.begin() + 2, w_dims.end());
    ops::conv::WindowAttributes attrs = ops::conv::read_window_attributes(conv, spatial, kernel, false);
    Dims strides, dilates, pad_l, pad_r;
    for (size_t d = 0; d < spatial; ++d) {
      ops::conv::ResolvedDim r = ops::conv::resolve_dim(conv, attrs, d, x_dims[2 + d]);
      strides.push_back(attrs.strides[d]);
      dilates.push_back(attrs.dilations[d] - 1);
      pad_l.push_back(r.pad_begin);
      pad_r.push_back(r.pad_end);
    }
    int64_t group = conv.attributes.get_int("group", 1);
    Dims wd = w_dims;
    if (group > 1) {
      wd = {group, w_dims[0] / group};
      wd.insert(wd.end(), w_dims.begin() + 1, w_dims.end());
    }
    bool bias = has_input(conv, 2) || folded_batch_norm(g);
    int src_slot = slot_of(input(conv, 0));
    memory::desc w_any = any_desc(wd), b_any = any_desc({w_dims[0]});
    algorithm alg = prefers_winograd(kernel, strides, dilates, group, dst_dims, w_dims) ? algorithm::convolution_winograd
                                                                                : algorithm::convolution_direct;
    auto make = [&](const memory::desc& src, const memory::desc& dst) {
      if (bias)
        return dnnl::convolution_forward::desc(prop_kind::forward_inference, alg, src, w_any, b_any, dst, strides,
                                               dilates, pad_l, pad_r);
      return dnnl::convolution_forward::desc(prop_kind::forward_inference, alg, src, w_any, dst, strides, dilates,
                                             pad_l, pad_r);
    };
    auto fall_back_to_direct = [&alg] {
      if (alg == algorithm::convolution_direct) return false;
      alg = algorithm::convolution_direct;
      return true;
    };
    // The weights' slots depend on the layouts the primitive picks: build the
    // primitive first with placeholders, then fill in the weight arguments.
    dnnl::convolution_forward::primitive_desc pd;
    size_t fused = 0;
    int dst = finish_anchor<dnnl::convolution_forward>(g, label, dst_dims, src_slot, make, pd, fused,
                                                       fall_back_to_direct);
    int w_slot, b_slot;
    conv_weights(g, conv, wd, pd.weights_desc(), bias ? pd.bias_desc() : memory::desc(), w_slot, b_slot);
    Step& s = program_.steps.back();
    s.args.push_back({DNNL_ARG_WEIGHTS, w_slot});
    if (b_slot >= 0) s.args.push_back({DNNL_ARG_BIAS, b_slot});
    return apply_post_ops(g, fused, dst, label);
  }

  // A ConvTranspose whose kernel equals its stride (no padding, dilation or
  // groups) writes each input pixel into its own kh x kw block of the output:
  // one product [N*H*W, C_in] x [C_in, C_out*kh*kw] and a reorder that moves
  // the blocks into place. oneDNN 2.6's deconvolution ran Mask R-CNN's mask
  // head upsampling (256 -> 256 channels, 2x2 stride 2, 100 regions of 14x14)
  // at 39 GFLOP/s, 263 ms; as a product it is brgemm's. Eltwise post-ops
  // only (they commute with the reorder); -1 when the node is not such a case.
  int emit_conv_transpose_as_matmul(const Group& g, const std::string& label) {
    const ir::Node& node = indexed_.node(g.anchor);
    Dims x_dims = dims(input(node, 0)), w_dims = dims(input(node, 1));
    Dims dst_dims = dims_of(node.output_types[0]);
    if (x_dims.size() != 4 || w_dims.size() != 4 || node.attributes.get_int("group", 1) != 1) return -1;
    const std::string auto_pad = node.attributes.get_string("auto_pad", "NOTSET");
    if (auto_pad != "NOTSET" && auto_pad != "VALID") return -1;
    const Dims kernel = {w_dims[2], w_dims[3]};
    auto all_equal = [](const std::vector<int64_t>& v, int64_t x) {
      return std::all_of(v.begin(), v.end(), [x](int64_t e) { return e == x; });
    };
    if (node.attributes.get_ints("strides", std::vector<int64_t>{1, 1}) != kernel) return -1;
    if (auto_pad == "NOTSET" && !all_equal(node.attributes.get_ints("pads", std::vector<int64_t>(4, 0)), 0)) return -1;
    if (!all_equal(node.attributes.get_ints("dilations", std::vector<int64_t>(2, 1)), 1)) return -1;
    if (!all_equal(node.attributes.get_ints("output_padding", std::vector<int64_t>(2, 0)), 0)) return -1;
    const int64_t n = x_dims[0], c_in = x_dims[1], h = x_dims[2], w = x_dims[3];
    const int64_t c_out = w_dims[1], kh = kernel[0], kw = kernel[1], block = kh * kw;
    if (w_dims[0] != c_in || dst_dims != Dims{n, c_out, h * kh, w * kw}) return -1;
    dnnl::post_ops ops;
    for (const PostOp& p : g.post_ops) {
      if (p.kind != PostOp::Kind::eltwise) return -1;
      ops.append_eltwise(1.0f, p.alg, p.alpha, p.beta);
    }
    const int64_t rows = n * h * w, columns = c_out * block;
    dnnl::primitive_attr attr = new_attr();
    attr.set_post_ops(ops);
    const bool bias = has_input(node, 2);
    memory::desc src_md = plain_desc({rows, c_in}), dst_md = plain_desc({rows, columns});
    memory::desc w_any = any_desc({c_in, columns}), b_md = plain_desc({1, columns});
    dnnl::matmul::primitive_desc pd(
        bias ? dnnl::matmul::desc(src_md, w_any, b_md, dst_md) : dnnl::matmul::desc(src_md, w_any, dst_md), attr,
        program_.engine);
    // Channels-last input: its bytes are the [N*H*W, C_in] rows.
    memory::desc channels_last({n, c_in, h, w}, memory::data_type::f32, memory::format_tag::nhwc);
    int src = view(as_desc(slot_of(input(node, 0)), channels_last, label), src_md);
    Weight weight;
    weight.sources = {source_of(input(node, 1))};
    weight.plain = plain_desc({c_in, columns});  // ONNX's [C_in, C_out, kh, kw]
    weight.desc = pd.weights_desc();
    weight.identity = weight.plain == weight.desc;
    weight.label = node.name;
    int w_slot = add_weight(std::move(weight));
    int product = add_slot(dst_md);
    std::vector<std::pair<int, int>> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w_slot}, {DNNL_ARG_DST, product}};
    if (bias) {
      Weight b;
      b.sources = {source_of(input(node, 2))};
      b.plain = b_md;
      b.desc = b_md;
      b.label = node.name + ".bias";
      b.fill = [c_out, block](const std::vector<Tensor>& sources, float* out) {
        const float* values = sources[0].data<float>();
        for (int64_t c = 0; c < c_out; ++c) std::fill(out + c * block, out + (c + 1) * block, values[c]);
      };
      args.push_back({DNNL_ARG_BIAS, add_weight(std::move(b))});
    }
    add_step(dnnl::matmul(pd), pd, std::move(args), label);
    // Row (n, y, x) holds the blocks [C_out, kh, kw] of output pixels
    // (n, :, y*kh + i, x*kw + j): read as [N, C_out, H, kh, W, kw], it is
    // the plain output once reordered.
    const Dims blocks = {n, c_out, h, kh, w, kw};
    const Dims strides = {h * w * columns, block, w * columns, kw, columns, 1};
    int scattered = view(product, memory::desc(blocks, memory::data_type::f32, strides));
    int out = add_slot(plain_desc(blocks));
    add_reorder(scattered, out, label);
    return view(out, plain_desc(dst_dims));
  }

  int emit_conv_transpose(const Group& g, const std::string& label) {
    if (int result = emit_conv_transpose_as_matmul(g, label); result >= 0) return result;
    const ir::Node& node = indexed_.node(g.anchor);
    Dims x_dims = dims(input(node, 0)), w_dims = dims(input(node, 1));
    Dims dst_dims = dims_of(node.output_types[0]);
    size_t spatial = x_dims.size() - 2;
    int64_t group = node.attributes.get_int("group", 1);
    std::vector<int64_t> pads = node.attributes.get_ints("pads", std::vector<int64_t>(2 * spatial, 0));
    if (node.attributes.get_string("auto_pad", "NOTSET") == "VALID") pads.assign(2 * spatial, 0);
    std::vector<int64_t> output_padding = node.attributes.get_ints("output_padding", std::vector<int64_t>(spatial, 0));
    std::vector<int64_t> st = node.attributes.get_ints("strides", std::vector<int64_t>(spatial, 1));
    std::vector<int64_t> dl = node.attributes.get_ints("dilations", std::vector<int64_t>(spatial, 1));
    Dims strides, dilates, pad_l, pad_r;
    for (size_t d = 0; d < spatial; ++d) {
      strides.push_back(st[d]);
      dilates.push_back(dl[d] - 1);
      pad_l.push_back(pads[d]);
      pad_r.push_back(pads[spatial + d] - output_padding[d]);
    }
    // ONNX stores [C_in, C_out/group, k...]; oneDNN wants [group, C_out/group, C_in/group, k...].
    int64_t in_per_group = w_dims[0] / group, out_per_group = w_dims[1];
    int64_t k = product(w_dims, 2, w_dims.size());
    Dims kernel_dims(w_dims.begin() + 2, w_dims.end());
    Dims kernel_strides = row_major_strides(kernel_dims);
    Dims wd, ws;
    if (group > 1) {
      wd = {group, out_per_group, in_per_group};
      ws = {in_per_group * out_per_group * k, k, out_per_group * k};
    } else {
      wd = {out_per_group, in_per_group};
      ws = {k, out_per_group * k};
    }
    wd.insert(wd.end(), kernel_dims.begin(), kernel_dims.end());
    ws.insert(ws.end(), kernel_strides.begin(), kernel_strides.end());
    bool bias = has_input(node, 2);
    int64_t out_channels = out_per_group * group;
    memory::desc w_any = any_desc(wd), b_any = any_desc({out_channels});
    auto make = [&](const memory::desc& src, const memory::desc& dst) {
      if (bias)
        return dnnl::deconvolution_forward::desc(prop_kind::forward_inference, algorithm::deconvolution_direct, src,
                                                 w_any, b_any, dst, strides, dilates, pad_l, pad_r);
      return dnnl::deconvolution_forward::desc(prop_kind::forward_inference, algorithm::deconvolution_direct, src,
                                               w_any, dst, strides, dilates, pad_l, pad_r);
    };
    int src_slot = slot_of(input(node, 0));
    dnnl::deconvolution_forward::primitive_desc pd;
    size_t fused = 0;
    int dst = finish_anchor<dnnl::deconvolution_forward>(g, label, dst_dims, src_slot, make, pd, fused);
    Weight w;
    w.sources = {source_of(input(node, 1))};
    w.plain = memory::desc(wd, memory::data_type::f32, ws);
    w.desc = pd.weights_desc();
    w.label = node.name;
    Step& s = program_.steps.back();
    s.args.push_back({DNNL_ARG_WEIGHTS, add_weight(std::move(w))});
    if (bias) {
      Weight b;
      b.sources = {source_of(input(node, 2))};
      b.plain = plain_desc({out_channels});
      b.desc = pd.bias_desc();
      b.label = node.name + ".bias";
      b.identity = b.plain == b.desc;
      int b_slot = add_weight(std::move(b));
      program_.steps.back().args.push_back({DNNL_ARG_BIAS, b_slot});
    }
    return apply_post_ops(g, fused, dst, label);
  }

  // Whether every binary operand of the group's post-ops is a row vector or
  // the full result, so that the product may run on rows flattened to 2-D.
  bool collapsible_post_ops(const Group& g, const Dims& dst_dims) const {
    for (const PostOp& p : g.post_ops) {
      if (p.kind == PostOp::Kind::eltwise) continue;
      Dims od = expand_rank(dims(p.other), dst_dims.size());
      if (od.size() != dst_dims.size()) return false;
      bool row = product(od, 0, od.size() - 1) == 1;
      if (!row && od != dst_dims) return false;
    }
    return true;
  }

  // MatMul and Gemm; Gemm's C becomes the first (binary add) post-op.
  int emit_matmul(const Group& g, const std::string& label) {
    const ir::Node& node = indexed_.node(g.anchor);
    bool gemm = node.op() == OpId::Gemm;
    Dims a_dims = dims(input(node, 0)), b_dims = dims(input(node, 1));
    Dims dst_dims = dims_of(node.output_types[0]);
    size_t rank = dst_dims.size();
    bool trans_a = gemm && node.attributes.get_int("transA", 0) != 0;
    bool trans_b = gemm && node.attributes.get_int("transB", 0) != 0;
    float alpha = gemm ? node.attributes.get_float("alpha", 1.0f) : 1.0f;
    float beta = gemm ? node.attributes.get_float("beta", 1.0f) : 1.0f;

    // Operands as strided views of rank `rank` (transposed: the last two dims
    // swapped). Unblocked layouts, plain or strided like a Transpose's view,
    // are read in place; blocked ones are reordered to plain first.
    auto operand = [&](Entry e, bool transposed, int& slot) {
      slot = slot_of(e);
      if (!is_unblocked(program_.slots[slot].desc)) slot = as_plain(slot, label);
      const memory::desc& from = program_.slots[slot].desc;
      Dims d = from.dims();
      Dims st = strides_of(from);
      while (d.size() < rank) {
        st.insert(st.begin(), d[0] * st[0]);
        d.insert(d.begin(), 1);
      }
      if (transposed) {
        std::swap(d[rank - 1], d[rank - 2]);
        std::swap(st[rank - 1], st[rank - 2]);
      }
      memory::desc md(d, memory::data_type::f32, st);
      slot = view(slot, md);
      return md;
    };
    int a_slot, b_slot;
    memory::desc a_md = operand(input(node, 0), trans_a, a_slot);
    Entry b_entry = input(node, 1);
    memory::desc b_md = operand(b_entry, trans_b, b_slot);
    bool b_packed = is_source(b_entry) && product(b_md.dims(), 0, rank - 2) == 1;

    // x[..., M, K] times a constant [K, N]: one 2-D product of (batch * M) rows,
    // so that oneDNN packs the weight once into its blocked layout.
    int dst_root = -1;
    if (b_packed && rank > 2 && !gemm && is_plain(a_md) && collapsible_post_ops(g, dst_dims)) {
      int64_t rows = product(dst_dims, 0, rank - 1);
      int64_t k = a_md.dims()[rank - 1], n = dst_dims[rank - 1];
      a_slot = view(a_slot, plain_desc({rows, k}));
      const auto* st = b_md.data.format_desc.blocking.strides;
      b_md = memory::desc({k, n}, memory::data_type::f32, {st[rank - 2], st[rank - 1]});
      a_md = program_.slots[a_slot].desc;
      dst_root = add_slot(plain_desc(dst_dims));
      dst_dims = {rows, n};
      rank = 2;
    }
    dnnl::post_ops ops;
    std::vector<std::pair<int, int>> binary_args;
    int post_index = 0;
    if (gemm && has_input(node, 2)) {
      Entry c = input(node, 2);
      Dims cd = expand_rank(dims(c), 2);
      int c_slot;
      if (is_source(c)) {
        Weight w;
        w.sources = {source_of(c)};
        w.plain = w.desc = plain_desc(cd);
        w.label = node.name + ".C";
        w.identity = beta == 1.0f;
        if (!w.identity)
          w.fill = [beta](const std::vector<Tensor>& s, float* out) {
            const float* src = s[0].data<float>();
            for (int64_t i = 0; i < s[0].numel(); ++i) out[i] = beta * src[i];
          };
        c_slot = add_weight(std::move(w));
      } else {
        c_slot = view(as_plain(slot_of(c), label), plain_desc(cd));
      }
      ops.append_binary(algorithm::binary_add, program_.slots[c_slot].desc);
      binary_args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(post_index) | DNNL_ARG_SRC_1, c_slot});
      ++post_index;
    }
    // Post-ops of the group after C. Sums become binary adds here (matmul's dst is plain).
    for (const PostOp& p : g.post_ops) {
      if (p.kind == PostOp::Kind::eltwise) {
        ops.append_eltwise(1.0f, p.alg, p.alpha, p.beta);
      } else if (p.expand) {
        int src1 = broadcast_constant(p.other, dst_dims, label);
        ops.append_binary(p.alg, program_.slots[src1].desc);
        binary_args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(post_index) | DNNL_ARG_SRC_1, src1});
      } else {
        int other = slot_of(p.other);
        Dims od = expand_rank(dims(p.other), std::max(rank, dims(p.other).size()));
        if (od.size() > rank) od = {product(od, 0, od.size() - 1) == 1 ? 1 : dst_dims[0], od.back()};
        int src1 = view(as_plain(other, label), plain_desc(od));
        ops.append_binary(p.alg, program_.slots[src1].desc);
        binary_args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(post_index) | DNNL_ARG_SRC_1, src1});
      }
      ++post_index;
    }
    dnnl::primitive_attr attr = new_attr();
    attr.set_post_ops(ops);
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    memory::desc dst_md = plain_desc(dst_dims);
    memory::desc b_query = b_packed ? any_desc(b_md.dims()) : b_md;
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_query, dst_md), attr, program_.engine);
    // oneDNN's brgemm matmul reads batched operands only in plain layouts;
    // strided views (attention's Q, K and V, transposed heads) send it to the
    // jit gemm fallback, which generates its kernels on first use (about 20 ms
    // once per process, all of it in the time to first inference). Copying
    // such an activation to plain costs microseconds per run: done whenever
    // it lets brgemm take the product.
    if (rank > 2 && std::string(pd.impl_info_str()).rfind("brg", 0) != 0) {
      bool a_copy = !is_plain(a_md), b_copy = !b_packed && !is_source(b_entry) && !is_plain(b_md);
      memory::desc a_plain = a_copy ? plain_desc(a_md.dims()) : a_md;
      memory::desc b_plain = b_copy ? plain_desc(b_md.dims()) : b_query;
      if (a_copy || b_copy) {
        dnnl::matmul::primitive_desc plain_pd(dnnl::matmul::desc(a_plain, b_plain, dst_md), attr, program_.engine, true);
        if (plain_pd && std::string(plain_pd.impl_info_str()).rfind("brg", 0) == 0) {
          if (a_copy) {
            int copy = add_slot(a_plain);
            add_reorder(a_slot, copy, label);
            a_slot = copy;
          }
          if (b_copy) {
            int copy = add_slot(b_plain);
            add_reorder(b_slot, copy, label);
            b_slot = copy;
          }
          pd = plain_pd;
        }
      }
    }
    if (b_packed) {
      Weight w;
      w.sources = {source_of(b_entry)};
      w.plain = b_md;
      w.desc = pd.weights_desc();
      w.label = node.name + ".B";
      b_slot = add_weight(std::move(w));
    }
    int dst = dst_root >= 0 ? view(dst_root, pd.dst_desc()) : add_slot(pd.dst_desc());
    std::vector<std::pair<int, int>> args = {{DNNL_ARG_SRC, a_slot}, {DNNL_ARG_WEIGHTS, b_slot}, {DNNL_ARG_DST, dst}};
    for (auto& a : binary_args) args.push_back(a);
    add_step(dnnl::matmul(pd), pd, std::move(args), label);
    return dst_root >= 0 ? dst_root : dst;
  }

  // ---- emission of single nodes ----
  void emit_node(uint32_t id) {
    const ir::Node& node = indexed_.node(id);
    int result;
    switch (node.op()) {
      case OpId::MaxPool:
      case OpId::AveragePool: result = emit_pool(node); break;
      case OpId::GlobalAveragePool:
      case OpId::GlobalMaxPool: result = emit_global_pool(node); break;
      case OpId::BatchNormalization: result = emit_batch_norm(node); break;
      case OpId::LRN: result = emit_lrn(node); break;
      case OpId::Softmax: result = emit_softmax(node); break;
      case OpId::LayerNormalization: result = emit_layer_norm(node); break;
      case OpId::Concat: result = emit_concat(node); break;
      case OpId::Flatten:
      case OpId::Reshape: result = emit_reshape(node); break;
      case OpId::Transpose: result = emit_transpose(node); break;
      case OpId::Slice: result = emit_slice(node); break;
      case OpId::Split: result = emit_split(id); break;
      case OpId::Gather: result = emit_gather(node); break;
      case OpId::LSTM:
      case OpId::GRU: result = emit_recurrent(id); break;
      case OpId::Resize: result = emit_resize(node); break;
      default:
        if (binary_algorithm(node.op()) != algorithm::undef) result = emit_binary(node);
        else if (std::vector<PostOp> ops = eltwise_ops(node); !ops.empty()) result = emit_eltwise(node, ops);
        else fail(ErrorKind::unsupported, "dnnl backend: ", node.describe(), " has no lowering");
    }
    entry_slot_[indexed_.entry_id(id, 0)] = result;
  }

  // LSTM and GRU (one direction) on oneDNN's recurrent primitives. ONNX
  // stores W as [1, G*H, I], R as [1, G*H, H] and B as [1, 2*G*H] (input then
  // recurrence biases), gates in its own order (LSTM: input, output, forget,
  // cell; GRU: update, reset, hidden); oneDNN wants [layer, direction, I,
  // gate, H] in its order (LSTM: input, forget, cell, output; GRU: update,
  // reset, output) and one bias per gate, plus a fourth for the
  // linear-before-reset GRU, whose recurrence bias of the hidden gate stays
  // inside the reset product. The weights are converted once like a
  // convolution's.
  int emit_recurrent(uint32_t id) {
    const ir::Node& node = indexed_.node(id);
    const bool lstm = node.op() == OpId::LSTM;
    const bool linear_before_reset = !lstm && node.attributes.get_int("linear_before_reset", 0) != 0;
    const int64_t gates = lstm ? 4 : 3, bias_gates = linear_before_reset ? 4 : gates;
    Dims x = dims(input(node, 0));
    const int64_t steps = x[0], batch = x[1], input_size = x[2];
    const int64_t hidden = dims(input(node, 1))[1] / gates;
    const auto direction = node.attributes.get_string("direction", "forward") == "reverse"
                               ? dnnl::rnn_direction::unidirectional_right2left
                               : dnnl::rnn_direction::unidirectional_left2right;
    // oneDNN's gate g is ONNX's gate onnx_gate[g].
    const std::vector<int64_t> onnx_gate = lstm ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 1, 2};
    int src = view(as_plain(slot_of(input(node, 0)), node.name), plain_desc({steps, batch, input_size}));
    const memory::desc state_desc = plain_desc({1, 1, batch, hidden}), none;
    auto state = [&](size_t i) {
      if (!has_input(node, i)) return -1;
      return view(as_plain(slot_of(input(node, i)), node.name), state_desc);
    };
    const int h0 = state(5), c0 = lstm ? state(6) : -1;
    const memory::desc w_any = any_desc({1, 1, input_size, gates, hidden}), r_any = any_desc({1, 1, hidden, gates, hidden});
    const memory::desc bias_desc = plain_desc({1, 1, bias_gates, hidden}), y_desc = plain_desc({steps, batch, hidden});
    const memory::desc h0_desc = h0 >= 0 ? state_desc : none;
    memory::desc w_desc, r_desc, b_desc, y_out, h_out, c_out;
    dnnl::primitive primitive;
    dnnl::primitive_desc_base pd_base;
    // Creates the primitive of type Rnn from its descriptor's arguments and
    // reads off the layouts it picked.
    auto create = [&]<typename Rnn>(std::type_identity<Rnn>, auto&&... desc_args) {
      typename Rnn::primitive_desc pd(typename Rnn::desc(prop_kind::forward_inference, direction, desc_args...),
                                      new_attr(), program_.engine);
      w_desc = pd.weights_layer_desc();
      r_desc = pd.weights_iter_desc();
      b_desc = pd.bias_desc();
      y_out = pd.dst_layer_desc();
      h_out = pd.dst_iter_desc();
      if constexpr (std::is_same_v<Rnn, dnnl::lstm_forward>) c_out = pd.dst_iter_c_desc();
      primitive = Rnn(pd);
      pd_base = pd;
    };
    const memory::desc& x_desc = program_.slots[src].desc;
    if (lstm)
      create(std::type_identity<dnnl::lstm_forward>{}, x_desc, h0_desc, c0 >= 0 ? state_desc : none, w_any, r_any,
             bias_desc, y_desc, state_desc, state_desc);
    else if (linear_before_reset)
      create(std::type_identity<dnnl::lbr_gru_forward>{}, x_desc, h0_desc, w_any, r_any, bias_desc, y_desc, state_desc);
    else
      create(std::type_identity<dnnl::gru_forward>{}, x_desc, h0_desc, w_any, r_any, bias_desc, y_desc, state_desc);
    // [G*H, K] in ONNX's gate order -> [K, G, H] in oneDNN's.
    auto gates_weight = [&](size_t i, int64_t k, const memory::desc& desc, const std::string& label) {
      Weight w;
      w.sources = {source_of(input(node, i))};
      w.plain = plain_desc({1, 1, k, gates, hidden});
      w.desc = desc;
      w.label = label;
      w.fill = [=](const std::vector<Tensor>& s, float* out) {
        const float* in = s[0].data<float>();
        for (int64_t g = 0; g < gates; ++g)
          for (int64_t h = 0; h < hidden; ++h) {
            const float* row = in + (onnx_gate[static_cast<size_t>(g)] * hidden + h) * k;
            for (int64_t j = 0; j < k; ++j) out[(j * gates + g) * hidden + h] = row[j];
          }
      };
      return add_weight(std::move(w));
    };
    const int w_slot = gates_weight(1, input_size, w_desc, node.name + ".W");
    const int r_slot = gates_weight(2, hidden, r_desc, node.name + ".R");
    const bool has_bias = has_input(node, 3);
    Weight b;
    b.sources = {source_of(input(node, has_bias ? 3 : 1))};  // W only stands in for an absent bias (zeros)
    b.plain = bias_desc;
    b.desc = b_desc;
    b.label = node.name + ".B";
    b.fill = [=](const std::vector<Tensor>& s, float* out) {
      for (int64_t g = 0; g < bias_gates; ++g)
        for (int64_t h = 0; h < hidden; ++h) {
          float value = 0;
          if (has_bias) {
            const float* bias = s[0].data<float>();
            const int64_t onnx = onnx_gate[static_cast<size_t>(std::min(g, gates - 1))];
            const float input_bias = bias[onnx * hidden + h], recurrence_bias = bias[(gates + onnx) * hidden + h];
            if (!linear_before_reset || g < 2) value = input_bias + recurrence_bias;
            else value = g == 2 ? input_bias : recurrence_bias;
          }
          out[g * hidden + h] = value;
        }
    };
    const int b_slot = add_weight(std::move(b));
    const int y = add_slot(y_out), y_h = add_slot(h_out);
    std::vector<std::pair<int, int>> args = {{DNNL_ARG_SRC_LAYER, src},       {DNNL_ARG_WEIGHTS_LAYER, w_slot},
                                             {DNNL_ARG_WEIGHTS_ITER, r_slot}, {DNNL_ARG_BIAS, b_slot},
                                             {DNNL_ARG_DST_LAYER, y},         {DNNL_ARG_DST_ITER, y_h}};
    int y_c = -1;
    if (lstm) {
      y_c = add_slot(c_out);
      args.push_back({DNNL_ARG_DST_ITER_C, y_c});
    }
    if (h0 >= 0) args.push_back({DNNL_ARG_SRC_ITER, h0});
    if (c0 >= 0) args.push_back({DNNL_ARG_SRC_ITER_C, c0});
    add_step(primitive, pd_base, std::move(args), node.name);
    // Y is [steps, 1, batch, hidden]; Y_h (and Y_c) [1, batch, hidden].
    if (node.num_outputs() > 1) entry_slot_[indexed_.entry_id(id, 1)] = view(y_h, plain_desc({1, batch, hidden}));
    if (node.num_outputs() > 2 && lstm) entry_slot_[indexed_.entry_id(id, 2)] = view(y_c, plain_desc({1, batch, hidden}));
    return view(y, plain_desc({steps, 1, batch, hidden}));
  }

  // Resize over the spatial dimensions (dnnl_support.cc says which modes):
  // oneDNN's resampling reads and writes the activation's blocked layout.
  int emit_resize(const ir::Node& node) {
    Dims out = dims_of(node.output_types[0]);
    int src = dense(slot_of(input(node, 0)), node.name);
    algorithm alg = node.attributes.get_string("mode", "nearest") == "linear" ? algorithm::resampling_linear
                                                                             : algorithm::resampling_nearest;
    dnnl::resampling_forward::primitive_desc pd(
        dnnl::resampling_forward::desc(prop_kind::forward_inference, alg, program_.slots[src].desc, any_desc(out)),
        new_attr(), program_.engine);
    int dst = add_slot(pd.dst_desc());
    add_step(dnnl::resampling_forward(pd), pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, node.name);
    return dst;
  }

  int emit_eltwise(const ir::Node& node, const std::vector<PostOp>& ops, int src = -1) {
    if (src < 0) src = slot_of(input(node, 0));
    src = dense(src, node.name);
    for (const PostOp& p : ops) {
      dnnl::eltwise_forward::primitive_desc pd(
          dnnl::eltwise_forward::desc(prop_kind::forward_inference, p.alg, program_.slots[src].desc, p.alpha, p.beta),
          new_attr(), program_.engine);
      int dst = add_slot(pd.dst_desc());
      add_step(dnnl::eltwise_forward(pd), pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, node.name);
      src = dst;
    }
    return src;
  }

  // The second operand of a binary op whose first is read through `like`:
  // of the same shape, in that layout (spelled as `like` is); broadcast, a
  // plain view of the rank of `like`. `like` is a copy: adding slots moves
  // the slot descriptors it may come from.
  int operand_like(Entry e, memory::desc like, const std::string& label) {
    const Dims d = expand_rank(dims(e), like.dims().size());
    int slot = slot_of(e);
    if (d == like.dims()) return view(as_desc(slot, like, label), like, true);
    return view(as_plain(slot, label), plain_desc(d));
  }

  int emit_binary(const ir::Node& node) {
    const OpId op = node.op();
    Dims out = dims_of(node.output_types[0]);
    Entry a = input(node, 0), b = input(node, 1);
    // A one-element constant operand is an eltwise_linear.
    for (int position = 0; position < 2; ++position) {
      Entry c = position == 0 ? a : b, x = position == 0 ? b : a;
      const ir::Node& cn = indexed_.node(c.node_id);
      float alpha, beta;
      if (dims(x) == out && is_scalar_constant(cn) &&
          scalar_as_linear(op, position, static_cast<float>(cn.constant_value.value_as_double(0)), alpha, beta))
        return emit_eltwise(node, {PostOp{PostOp::Kind::eltwise, &node, algorithm::eltwise_linear, alpha, beta, {}}},
                            slot_of(x));
    }
    if (dims(a) != out) std::swap(a, b);  // commutative (the checker guarantees it)
    int src0 = dense(slot_of(a), node.name);
    Dims bd = expand_rank(dims(b), out.size());
    int src1 = operand_like(b, program_.slots[src0].desc, node.name);
    auto make = [&](const memory::desc& d0, const memory::desc& d1) {
      return dnnl::binary::primitive_desc(dnnl::binary::desc(binary_algorithm(op), d0, d1, d0), new_attr(),
                                          program_.engine);
    };
    dnnl::binary::primitive_desc pd = make(program_.slots[src0].desc, program_.slots[src1].desc);
    // A broadcast oneDNN's jit binary has no code for (over a middle
    // dimension: swin's window masks [1,64,1,49,49] over the heads): a
    // constant operand is broadcast once, then both operands are full.
    if (bd != out && on_reference_code(pd) && is_constant(indexed_.node(b.node_id))) {
      dnnl::binary::primitive_desc full = make(program_.slots[src0].desc, plain_desc(out));
      if (!on_reference_code(full)) {
        src1 = broadcast_constant(b, out, node.name);
        pd = full;
      }
    }
    // oneDNN's jit binary broadcasts a per-channel operand over channel blocks
    // of its vector width only: with the 8-channel blocks a convolution picks
    // for channel counts that are not multiples of 16 (regnet's 48, 104, 208,
    // 440) on AVX-512, it falls back to its reference code (0.85 ms instead
    // of 10 us for a squeeze-excitation scale of [1,440,7,7]). Channels-last
    // takes the jit path for any channel count; the reorder costs microseconds.
    if (bd != out && out.size() >= 3 && out.size() <= 5 && on_reference_code(pd)) {
      memory::desc channels_last(out, memory::data_type::f32,
                                 out.size() == 3 ? memory::format_tag::acb
                                 : out.size() == 4 ? memory::format_tag::acdb
                                                   : memory::format_tag::acdeb);
      dnnl::binary::primitive_desc alternative = make(channels_last, program_.slots[src1].desc);
      if (!on_reference_code(alternative)) {
        src0 = as_desc(src0, channels_last, node.name);
        pd = alternative;
      }
    }
    int dst = add_slot(pd.dst_desc());
    add_step(dnnl::binary(pd), pd, {{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, dst}}, node.name);
    return dst;
  }

  int emit_pool(const ir::Node& node) {
    bool max = node.op() == OpId::MaxPool;
    Dims x = dims(input(node, 0)), out = dims_of(node.output_types[0]);
    size_t spatial = x.size() - 2;
    ops::conv::WindowAttributes attrs = ops::conv::read_window_attributes(node, spatial, {}, true);
    Dims strides, kernel, dilation, pad_l, pad_r;
    for (size_t d = 0; d < spatial; ++d) {
      ops::conv::ResolvedDim r = ops::conv::resolve_dim(node, attrs, d, x[2 + d]);
      int64_t window = (attrs.kernel[d] - 1) * attrs.dilations[d] + 1;
      int64_t needed = (r.output - 1) * attrs.strides[d] + window - x[2 + d] - r.pad_begin;
      strides.push_back(attrs.strides[d]);
      kernel.push_back(attrs.kernel[d]);
      dilation.push_back(attrs.dilations[d] - 1);
      pad_l.push_back(r.pad_begin);
      pad_r.push_back(std::max(needed, r.pad_end));
    }
    algorithm alg = max ? algorithm::pooling_max
                        : node.attributes.get_int("count_include_pad", 0) ? algorithm::pooling_avg_include_padding
                                                                          : algorithm::pooling_avg_exclude_padding;
    return pool(node, alg, out, strides, kernel, dilation, pad_l, pad_r);
  }

  int emit_global_pool(const ir::Node& node) {
    Dims x = dims(input(node, 0)), out = dims_of(node.output_types[0]);
    size_t spatial = x.size() - 2;
    Dims kernel(x.begin() + 2, x.end()), ones(spatial, 1), zeros(spatial, 0);
    algorithm alg = node.op() == OpId::GlobalMaxPool ? algorithm::pooling_max : algorithm::pooling_avg_exclude_padding;
    return pool(node, alg, out, ones, kernel, zeros, zeros, zeros);
  }

  int pool(const ir::Node& node, algorithm alg, const Dims& out, const Dims& strides, const Dims& kernel,
           const Dims& dilation, const Dims& pad_l, const Dims& pad_r) {
    int src = dense(slot_of(input(node, 0)), node.name);
    dnnl::pooling_v2_forward::primitive_desc pd(
        dnnl::pooling_v2_forward::desc(prop_kind::forward_inference, alg, program_.slots[src].desc, any_desc(out),
                                       strides, kernel, dilation, pad_l, pad_r),
        new_attr(), program_.engine);
    src = as_desc(src, pd.src_desc(), node.name);
    int dst = add_slot(pd.dst_desc());
    add_step(dnnl::pooling_v2_forward(pd), pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, node.name);
    return dst;
  }

  // A 1-D per-channel parameter (constant or activation) as a plain slot of `n` elements.
  int vector_slot(Entry e, int64_t n, const std::string& label) { return view(as_plain(slot_of(e), label), plain_desc({n})); }

  int emit_batch_norm(const ir::Node& node, bool fuse_relu = false) {
    int src = dense(slot_of(input(node, 0)), node.name);
    int64_t channels = dims(input(node, 0))[1];
    auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
                 dnnl::normalization_flags::use_shift;
    if (fuse_relu) flags = flags | dnnl::normalization_flags::fuse_norm_relu;
    dnnl::batch_normalization_forward::primitive_desc pd(
        dnnl::batch_normalization_forward::desc(prop_kind::forward_inference, program_.slots[src].desc,
                                                node.attributes.get_float("epsilon", 1e-5f), flags),
        new_attr(), program_.engine);
    int dst = add_slot(pd.dst_desc());
    add_step(dnnl::batch_normalization_forward(pd), pd,
             {{DNNL_ARG_SRC, src},
              {DNNL_ARG_DST, dst},
              {DNNL_ARG_SCALE, vector_slot(input(node, 1), channels, node.name)},
              {DNNL_ARG_SHIFT, vector_slot(input(node, 2), channels, node.name)},
              {DNNL_ARG_MEAN, vector_slot(input(node, 3), channels, node.name)},
              {DNNL_ARG_VARIANCE, vector_slot(input(node, 4), channels, node.name)}},
             node.name);
    return dst;
  }

  int emit_lrn(const ir::Node& node) {
    int src = dense(slot_of(input(node, 0)), node.name);
    const ir::Attributes& a = node.attributes;
    dnnl::lrn_forward::primitive_desc pd(
        dnnl::lrn_forward::desc(prop_kind::forward_inference, algorithm::lrn_across_channels, program_.slots[src].desc,
                                a.get_int("size"), a.get_float("alpha", 1e-4f), a.get_float("beta", 0.75f),
                                a.get_float("bias", 1.0f)),
        new_attr(), program_.engine);
    int dst = add_slot(pd.dst_desc());
    add_step(dnnl::lrn_forward(pd), pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, node.name);
    return dst;
  }

  int emit_softmax(const ir::Node& node) {
    Dims x = dims(input(node, 0));
    int64_t rank = static_cast<int64_t>(x.size());
    int64_t axis = node.attributes.get_int("axis", node.opset_version >= 13 ? -1 : 1);
    if (axis < 0) axis += rank;
    Dims shape = x;
    if (node.opset_version < 13) {  // coerced to 2-D at `axis`
      shape = {product(x, 0, axis), product(x, axis, x.size())};
      axis = 1;
    }
    int src = view(as_plain(slot_of(input(node, 0)), node.name), plain_desc(shape));
    dnnl::softmax_forward::primitive_desc pd(
        dnnl::softmax_forward::desc(prop_kind::forward_inference, program_.slots[src].desc, static_cast<int>(axis)),
        new_attr(), program_.engine);
    int dst = add_slot(pd.dst_desc());
    add_step(dnnl::softmax_forward(pd), pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, node.name);
    return view(dst, plain_desc(x));
  }

  int emit_layer_norm(const ir::Node& node) {
    Dims x = dims(input(node, 0));
    int64_t rank = static_cast<int64_t>(x.size());
    int64_t axis = node.attributes.get_int("axis", -1);
    if (axis < 0) axis += rank;
    Dims shape(x.begin(), x.begin() + axis);
    int64_t inner = product(x, axis, x.size());
    shape.push_back(inner);
    if (shape.size() == 1) shape.insert(shape.begin(), 1);
    int src = view(as_plain(slot_of(input(node, 0)), node.name), plain_desc(shape));
    bool shift = has_input(node, 2);
    auto flags = dnnl::normalization_flags::use_scale;
    if (shift) flags = flags | dnnl::normalization_flags::use_shift;
    dnnl::layer_normalization_forward::primitive_desc pd(
        dnnl::layer_normalization_forward::desc(prop_kind::forward_inference, program_.slots[src].desc,
                                                node.attributes.get_float("epsilon", 1e-5f), flags),
        new_attr(), program_.engine);
    int dst = add_slot(pd.dst_desc());
    std::vector<std::pair<int, int>> args = {{DNNL_ARG_SRC, src},
                                             {DNNL_ARG_DST, dst},
                                             {DNNL_ARG_SCALE, vector_slot(input(node, 1), inner, node.name)}};
    if (shift) args.push_back({DNNL_ARG_SHIFT, vector_slot(input(node, 2), inner, node.name)});
    add_step(dnnl::layer_normalization_forward(pd), pd, std::move(args), node.name);
    return view(dst, plain_desc(x));
  }

  int emit_concat(const ir::Node& node) {
    int64_t rank = static_cast<int64_t>(dims_of(node.output_types[0]).size());
    int64_t axis = node.attributes.get_int("axis");
    if (axis < 0) axis += rank;
    std::vector<int> srcs;
    std::vector<memory::desc> descs;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      srcs.push_back(dense(slot_of(input(node, i)), node.name));
      descs.push_back(program_.slots[srcs.back()].desc);
    }
    dnnl::concat::primitive_desc pd(static_cast<int>(axis), descs, program_.engine, new_attr());
    int dst = add_slot(pd.dst_desc());
    std::vector<std::pair<int, int>> args = {{DNNL_ARG_DST, dst}};
    for (size_t i = 0; i < srcs.size(); ++i) args.push_back({DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), srcs[i]});
    add_step(dnnl::concat(pd), pd, std::move(args), node.name);
    return dst;
  }

  // A Transpose is a strided view: no data moves until a consumer needs another layout.
  int emit_transpose(const ir::Node& node) {
    int src = slot_of(input(node, 0));
    if (!is_unblocked(program_.slots[src].desc)) src = as_plain(src, node.name);
    const memory::desc& from = program_.slots[src].desc;
    Dims d = from.dims();
    Dims st = strides_of(from);
    std::vector<int64_t> perm(d.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(perm.size() - 1 - i);
    perm = node.attributes.get_ints("perm", perm);
    Dims out_dims, out_strides;
    for (int64_t p : perm) {
      out_dims.push_back(d[static_cast<size_t>(p)]);
      out_strides.push_back(st[static_cast<size_t>(p)]);
    }
    return view(src, strided_desc(out_dims, out_strides));
  }

  // A unit-step Slice is a view of part of a plain buffer (a descriptor with an offset).
  int emit_slice(const ir::Node& node) {
    int src = as_plain(slot_of(input(node, 0)), node.name);
    Dims x = program_.slots[src].desc.dims();
    Dims out = dims_of(node.output_types[0]);
    std::vector<int64_t> starts, axes;
    if (node.opset_version < 10) {
      starts = node.attributes.get_ints("starts");
      axes = node.attributes.get_ints("axes", {});
    } else {
      starts = indexed_.node(input(node, 1).node_id).constant_value.to_int64_vector();
      if (has_input(node, 3)) axes = indexed_.node(input(node, 3).node_id).constant_value.to_int64_vector();
    }
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    Dims offsets(x.size(), 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t axis = axes[i] < 0 ? axes[i] + static_cast<int64_t>(x.size()) : axes[i];
      int64_t extent = x[static_cast<size_t>(axis)];
      int64_t start = starts[i] < 0 ? starts[i] + extent : starts[i];
      offsets[static_cast<size_t>(axis)] = std::clamp<int64_t>(start, 0, extent);
    }
    return view(src, program_.slots[src].desc.submemory_desc(out, offsets));
  }

  // Split: each output is an offset view of the plain input.
  int emit_split(uint32_t id) {
    const ir::Node& node = indexed_.node(id);
    int src = as_plain(slot_of(input(node, 0)), node.name);
    Dims x = program_.slots[src].desc.dims();
    int64_t axis = node.attributes.get_int("axis", 0);
    if (axis < 0) axis += static_cast<int64_t>(x.size());
    Dims offsets(x.size(), 0);
    int first = -1;
    for (int k = 0; k < node.num_outputs(); ++k) {
      Dims out = dims_of(node.output_types[k]);
      int v = view(src, program_.slots[src].desc.submemory_desc(out, offsets));
      offsets[static_cast<size_t>(axis)] += out[static_cast<size_t>(axis)];
      if (k == 0) first = v;
      else entry_slot_[indexed_.entry_id(id, static_cast<uint32_t>(k))] = v;
    }
    return first;
  }

  // Gather of one constant index: a view of that plane (the axis dropped for a scalar index).
  int emit_gather(const ir::Node& node) {
    int src = as_plain(slot_of(input(node, 0)), node.name);
    const memory::desc& from = program_.slots[src].desc;
    Dims x = from.dims();
    Dims st = strides_of(from);
    const Tensor& indices = indexed_.node(input(node, 1).node_id).constant_value;
    int64_t axis = node.attributes.get_int("axis", 0);
    if (axis < 0) axis += static_cast<int64_t>(x.size());
    int64_t index = indices.value_as_int64(0);
    if (index < 0) index += x[static_cast<size_t>(axis)];
    if (index < 0 || index >= x[static_cast<size_t>(axis)])
      fail(ErrorKind::invalid_model, "dnnl backend: ", node.describe(), ": index ", indices.value_as_int64(0),
           " is out of range for extent ", x[static_cast<size_t>(axis)]);
    Dims dims, strides;
    for (size_t d = 0; d < x.size(); ++d) {
      if (static_cast<int64_t>(d) == axis && indices.rank() == 0) continue;
      dims.push_back(static_cast<int64_t>(d) == axis ? 1 : x[d]);
      strides.push_back(st[d]);
    }
    if (dims.empty()) {
      dims = {1};
      strides = {1};
    }
    memory::desc md = strided_desc(dims, strides);
    md.data.offset0 = from.data.offset0 + index * st[static_cast<size_t>(axis)];
    return view(src, md);
  }

  int emit_reshape(const ir::Node& node) {
    int src = as_plain(slot_of(input(node, 0)), node.name);
    return view(src, plain_desc(dims_of(node.output_types[0])));
  }

  // ---- outputs ----
  void write_outputs() {
    const auto& outputs = indexed_.outputs();
    std::vector<int> claimed(program_.slots.size(), 0);
    for (size_t k = 0; k < outputs.size(); ++k) {
      Dims d = dims(outputs[k]);
      program_.output_shapes.push_back(indexed_.node(outputs[k].node_id).output_types[outputs[k].index].concrete_shape().value());
      int slot = slot_of(outputs[k]);
      Slot& s = program_.slots[slot];
      if (s.kind == SlotKind::arena && s.root < 0 && !s.has_views && is_plain(s.desc) && s.desc.dims() == d &&
          claimed[slot] == 0) {
        s.kind = SlotKind::output;
        s.index = static_cast<int>(k);
        claimed[slot] = 1;
        continue;
      }
      int out = add_slot(plain_desc(d), SlotKind::output, static_cast<int>(k));
      double bytes_moved = 2.0 * static_cast<double>(product(d, 0, d.size())) * sizeof(float);
      with_threads_for(bytes_moved / kBytesPerMicrosecond, [&] {
        int from = program_.slots[slot].desc.dims() == d ? slot : view(as_plain(slot, "output"), plain_desc(d));
        add_reorder(from, out, "output " + std::to_string(k));
      });
    }
  }

  const ir::Graph& graph_;
  ir::IndexedGraph indexed_;
  DnnlProgram program_;
  const double serial_limit_ = serial_step_microseconds();  // read once per compile (the wait policy)
  std::vector<int> entry_slot_;
  std::vector<std::vector<std::pair<memory::desc, int>>> converted_;
  std::vector<bool> emitted_;
  std::vector<int> group_of_;
  std::vector<bool> is_output_;
  std::vector<Group> groups_;
};

// "acdb[1,64,56,56]" style summary of a descriptor, for GRAFT_DNNL_VERBOSE.
std::string describe(const memory::desc& d) {
  std::string out = is_plain(d) ? "plain" : "blocked";
  out += "[";
  for (size_t i = 0; i < d.dims().size(); ++i) out += (i ? "," : "") + std::to_string(d.dims()[i]);
  out += "]";
  if (d.data.format_kind == dnnl_blocked) {
    out += "s(";
    for (int i = 0; i < d.data.ndims; ++i) out += (i ? "," : "") + std::to_string(d.data.format_desc.blocking.strides[i]);
    out += ")";
    if (d.data.format_desc.blocking.inner_nblks > 0) out += "b" + std::to_string(d.data.format_desc.blocking.inner_blks[0]);
  }
  return out;
}

}  // namespace

DnnlProgram build_program(const ir::Graph& subgraph) {
  try {
    DnnlProgram program = Builder(subgraph).build();
    plan_arena(program);
    if (const char* env = std::getenv("GRAFT_DNNL_VERBOSE"); env && std::string(env) == "1")
      for (const Step& step : program.steps) {
        std::string line = "graft dnnl: " + step.label + " [" + step.implementation +
                           (step.threads == 1 ? ", 1 thread]" : "]");
        for (const auto& [arg, slot] : step.args) line += " " + std::to_string(arg) + ":" + describe(program.slots[slot].desc);
        std::fprintf(stderr, "%s\n", line.c_str());
      }
    return program;
  } catch (const dnnl::error& e) {
    fail(ErrorKind::unsupported, "dnnl backend: oneDNN refused the subgraph: ", e.what());
  }
}

}  // namespace graft::dnnl_backend

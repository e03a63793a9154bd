// Grouping: which nodes become post-ops of a convolution or matmul.
//
// Every Conv, ConvTranspose, MatMul and Gemm, in topological order, anchors a
// group and grows down the chain of nodes that consume its result once and
// alone, while oneDNN can attach them:
//  - a BatchNormalization right after a Conv, its parameters constants or
//    inputs: folded into the convolution's weights and bias;
//  - a pointwise node with an eltwise algorithm (Relu, Clip, Gelu, ...), and
//    cur -> Sigmoid -> Mul(cur, sigmoid) as one swish;
//  - Add/Mul/Sub/Div of an operand of the same result shape: with a
//    one-element constant, alpha * x + beta; a residual Add of an activation
//    of the same shape, a sum post-op; otherwise a binary post-op.
// A chain ends at a subgraph output, at a node with other consumers, and
// before an eltwise post-op whose algorithm it already holds with other
// parameters (oneDNN 2.6's jit post-ops would apply the first parameters to
// both). A BatchNormalization that no convolution took, followed by a Relu,
// becomes one primitive (fuse_norm_relu). A Conv that runs in int8
// (dnnl_int8.cc, found first) anchors a group the same way, without a
// BatchNormalization (its weights are int8 as they are); the fake
// quantization it folds belongs to no group, and a chain ends before it. A
// training-mode BatchNormalization (batch statistics) joins no group, nor
// does a node of a GELU gradient (one eltwise backward at its final product,
// dnnl_gelu_gradient.h).
#include <algorithm>

#include "dnnl_int8.h"
#include "dnnl_post_ops.h"
#include "dnnl_support.h"

namespace graft::dnnl_backend {
namespace {

using dnnl::algorithm;
using ir::Entry;
using ir::OpId;

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

bool is_anchor(const ir::Node& n) {
  const OpId op = n.op();
  return op == OpId::Conv || op == OpId::ConvTranspose || op == OpId::MatMul || op == OpId::Gemm;
}

class GroupFormer {
 public:
  GroupFormer(const ir::IndexedGraph& graph, const std::vector<bool>& is_output)
      : indexed_(graph), is_output_(is_output) {
    result_.group_of.assign(indexed_.num_nodes(), -1);
  }

  Grouping run() {
    find_gelu_gradients();
    Int8Plan int8 = find_int8_convolutions(indexed_, is_output_);
    result_.folded_into_int8 = int8.folded;
    result_.uint8_nodes = int8.uint8_node_of;
    for (uint32_t id = 0; id < indexed_.num_nodes(); ++id) {
      if (!is_anchor(indexed_.node(id)) || result_.group_of[id] >= 0) continue;
      Group g;
      g.anchor = g.last = id;
      g.members = {id};
      g.int8 = int8.convolution_of[id];
      grow(g);
      if (g.int8 && !is_output_[indexed_.entry_id(g.last, 0)]) g.requantize_to = requantized_output(indexed_, int8, g);
      add_group(std::move(g));
    }
    // A standalone BatchNormalization followed by Relu: one primitive (fuse_norm_relu).
    for (uint32_t id = 0; id < indexed_.num_nodes(); ++id) {
      if (indexed_.node(id).op() != OpId::BatchNormalization || result_.group_of[id] >= 0) continue;
      if (is_training_batch_norm(indexed_.node(id))) continue;
      if (is_output_[indexed_.entry_id(id, 0)]) continue;
      int64_t next = only_consumer(id);
      if (next < 0 || indexed_.node(next).op() != OpId::Relu || result_.group_of[next] >= 0) continue;
      Group g;
      g.anchor = id;
      g.last = static_cast<uint32_t>(next);
      g.members = {id, g.last};
      add_group(std::move(g));
    }
    // The fake quantizations left between the groups (dnnl_int8.h); an int8
    // group whose result only such a one reads may write its uint8 form.
    fold_standalone_fake_quantizations(indexed_, is_output_, result_.group_of, int8);
    for (Group& g : result_.groups)
      if (g.int8 && !g.requantize_to && !is_output_[indexed_.entry_id(g.last, 0)])
        g.requantize_to = requantized_output(indexed_, int8, g);
    result_.folded_into_int8 = std::move(int8.folded);
    result_.dequantized_at = std::move(int8.dequantized_at);
    return std::move(result_);
  }

 private:
  Dims dims(Entry e) const { return dims_of(indexed_.node(e.node_id).output_types[e.index]); }

  void add_group(Group g) {
    int index = static_cast<int>(result_.groups.size());
    for (uint32_t m : g.members) result_.group_of[m] = index;
    result_.groups.push_back(std::move(g));
  }

  // The single consumer of node `id`'s output 0 that reads it exactly once, or -1.
  int64_t only_consumer(uint32_t id) const {
    auto consumers = indexed_.consumers(id);
    if (consumers.size() != 1) return -1;
    int uses = 0;
    for (Entry e : indexed_.inputs(consumers[0])) uses += e.node_id == id ? 1 : 0;
    return uses == 1 ? static_cast<int64_t>(consumers[0]) : int64_t{-1};
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
      if (result_.group_of[cid] >= 0 || result_.folded_into_int8[cid]) return;
      if (result_.gelu_gradients[cid] || result_.gelu_gradient_steps[cid]) return;
      const OpId op = c.op();
      if (op == OpId::BatchNormalization && is_training_batch_norm(c)) return;  // batch statistics: not foldable
      if (op == OpId::BatchNormalization && anchor.op() == OpId::Conv && !g.int8 && g.post_ops.empty() &&
          all_sources(cid, 1, 5) && one_per_channel(cid, 1, 5, cur_dims.size() > 1 ? cur_dims[1] : -1)) {
        g.post_ops.push_back(PostOp{PostOp::Kind::fold_batch_norm, &c, algorithm::undef, 0, 0, {}});
      } else if (std::vector<PostOp> ops = eltwise_post_ops(c); !ops.empty()) {
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
          // A second scaling (a fake quantization's multiply back after its
          // divide) as pow(x, 1) * alpha, which oneDNN computes as one
          // multiply: another algorithm, so no clash.
          if (clashes_with_chain(g, linear) && beta == 0.0f)
            linear = PostOp{PostOp::Kind::eltwise, &c, algorithm::eltwise_pow, alpha, 1.0f, {}};
          if (clashes_with_chain(g, linear)) return;
          g.post_ops.push_back(linear);
        } else {
          if (position != 0 && (op == OpId::Sub || op == OpId::Div)) return;
          bool same_shape = dims(other) == cur_dims;
          PostOp::Kind kind =
              op == OpId::Add && same_shape && !is_constant(on) ? PostOp::Kind::sum : PostOp::Kind::binary;
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

  void find_gelu_gradients() {
    const size_t n = indexed_.num_nodes();
    result_.gelu_gradients.assign(n, nullptr);
    result_.gelu_gradient_steps.assign(n, false);
    auto readers = [&](const ir::Node& node) {
      std::vector<const ir::Node*> out;
      for (uint32_t c : indexed_.consumers(indexed_.id_of(node))) out.push_back(&indexed_.node(c));
      return out;
    };
    auto is_output = [&](const ir::Node& node) {
      const uint32_t id = indexed_.id_of(node);
      for (int k = 0; k < node.num_outputs(); ++k)
        if (is_output_[indexed_.entry_id(id, static_cast<uint32_t>(k))]) return true;
      return false;
    };
    for (uint32_t id = 0; id < n; ++id) {
      if (indexed_.node(id).op() != OpId::Mul) continue;
      std::optional<GeluGradient> match = match_gelu_gradient(indexed_.node(id), readers, is_output);
      if (!match) continue;
      for (const ir::Node* step : match->steps) result_.gelu_gradient_steps[indexed_.id_of(*step)] = true;
      result_.gelu_gradients[id] = std::make_shared<const GeluGradient>(std::move(*match));
    }
  }

  bool all_sources(uint32_t id, size_t begin, size_t end) const {
    auto inputs = indexed_.inputs(id);
    for (size_t i = begin; i < end; ++i)
      if (i >= inputs.size() || !inputs[i].present() || !is_weight_source(indexed_.node(inputs[i].node_id)))
        return false;
    return true;
  }

  // Whether inputs begin..end of node `id` are 1-D with `channels` values
  // each (a BatchNormalization's parameters to fold into a convolution).
  bool one_per_channel(uint32_t id, size_t begin, size_t end, int64_t channels) const {
    auto inputs = indexed_.inputs(id);
    for (size_t i = begin; i < end; ++i)
      if (i >= inputs.size() || dims(inputs[i]) != Dims{channels}) return false;
    return true;
  }

  // cur -> Sigmoid s -> Mul(cur, s): swish.
  bool try_swish(Group& g, uint32_t cur, uint32_t a, uint32_t b) {
    for (int swap = 0; swap < 2; ++swap) {
      uint32_t s = swap ? b : a, m = swap ? a : b;
      if (indexed_.node(s).op() != OpId::Sigmoid || indexed_.node(m).op() != OpId::Mul) continue;
      if (result_.group_of[s] >= 0 || result_.group_of[m] >= 0) continue;
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

  const ir::IndexedGraph& indexed_;
  const std::vector<bool>& is_output_;
  Grouping result_;
};

}  // namespace

Grouping form_groups(const ir::IndexedGraph& graph, const std::vector<bool>& is_output) {
  return GroupFormer(graph, is_output).run();
}

const ir::Node* folded_batch_norm(const Group& g) {
  for (const PostOp& p : g.post_ops)
    if (p.kind == PostOp::Kind::fold_batch_norm) return p.node;
  return nullptr;
}

}  // namespace graft::dnnl_backend

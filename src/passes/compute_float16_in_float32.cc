// Computes a model's float16 values in float32, as ONNX Runtime's CPU
// provider does: every node that reads or makes float16 values computes in
// float32 instead, reading float32 values. A Cast to float32 is added where a
// float16 value comes in (a graph input, a node left as it is), a Cast to
// float16 where one goes out (a graph output, a node left as it is). A
// float16 Constant becomes a float32 Constant here, once, rather than a Cast
// every run.
//
// Why: the backends that run convolutions and matrix products fast (dnnl)
// take no float16, and the reference kernels' float16 convolutions are an
// order of magnitude slower than dnnl's float32 ones; with the values in
// float32 between them, dnnl also takes the pointwise ops around them as
// post-ops, where Casts would cut its subgraphs. The results are at least as
// precise: the reference kernels compute each float16 op in float32 too, but
// round its result to float16, which this leaves out between nodes. So a
// float16 model's outputs differ from the reference kernels' by float16
// rounding (tests/passes/compute_float16_in_float32_test.cc), with one
// exception, as in ONNX Runtime: a value beyond float16's range between two
// nodes stays finite here, where float16 would make it infinite.
//
// Ops whose result jumps where an input crosses a value (Floor, Mod,
// comparisons, ArgMax, ThresholdedRelu, ...) read float16 values rounded, as
// the model defines them: the rounding left out could move a value across.
//
// Left as they are, reading float16: control flow (their bodies keep
// float16), Cast and CastLike (their dtype is what they are for: a Cast of a
// float16 value to float32 still rounds it first), ops whose output dtype an
// attribute chooses or that draw random values, and nodes touching
// sequences or optionals. Shape and Size read no values: they read the
// float32 value where a node made one, with no Cast.
#include <algorithm>
#include <iterator>
#include <unordered_map>

#include "graft/ir/graph_rebuilder.h"
#include "graft/passes/pass.h"

namespace graft::passes {
namespace {

bool is_float16_tensor(const ir::ValueType& t) { return t.is_tensor() && t.dtype == DType::float16; }

/// Shape and Size read no values: they take a float32 value where there is
/// one, float16 where not, and need no Cast.
bool reads_only_shapes(const ir::Node& n) {
  return (n.op() == ir::OpId::Shape || n.op() == ir::OpId::Size);
}

/// Ops whose result jumps where an input crosses a value (a rounding, a
/// threshold, another input): a float16 value's rounding, which computing in
/// float32 otherwise leaves out, could move it across. They read float16
/// values rounded, as the model defines them.
bool result_jumps(const ir::Node& n) {
  using ir::OpId;
  static constexpr OpId kJumping[] = {
      OpId::Floor,          OpId::Ceil,  OpId::Round,           OpId::Sign,   OpId::Mod,    OpId::Equal,
      OpId::Less,           OpId::LessOrEqual, OpId::Greater,   OpId::GreaterOrEqual, OpId::IsInf,
      OpId::ThresholdedRelu, OpId::Shrink, OpId::ArgMax,        OpId::ArgMin, OpId::TopK,   OpId::NonMaxSuppression};
  return std::find(std::begin(kJumping), std::end(kJumping), n.op()) != std::end(kJumping);
}

/// Whether node `id` computes in float32.
bool runs_in_float32(const ir::IndexedGraph& g, uint32_t id) {
  const ir::Node& n = g.node(id);
  const ir::OpSchema& s = n.schema();
  if (!s.domain.empty() || s.category == ir::OpCategory::source || s.category == ir::OpCategory::control) return false;
  switch (n.op()) {
    case ir::OpId::Cast:
    case ir::OpId::CastLike:
    case ir::OpId::EyeLike:
    case ir::OpId::ConstantOfShape: return false;
    default: break;
  }
  if (ir::is_random_op(n.op())) return false;
  if (reads_only_shapes(n)) return false;
  if (touches_non_tensor(n)) return false;
  for (const ir::ValueType& t : n.output_types)
    if (is_float16_tensor(t)) return true;
  for (const ir::Entry& e : g.inputs(id))
    if (e.present() && is_float16_tensor(g.node(e.node_id).output_types[e.index])) return true;
  return false;
}

/// `t` (float16) converted to float32, exactly.
Tensor to_float32(const Tensor& t) {
  Tensor out(DType::float32, t.shape());
  const float16_t* from = t.data<float16_t>();
  float* to = out.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) to[i] = static_cast<float>(from[i]);
  return out;
}

}  // namespace

bool compute_float16_in_float32(std::unique_ptr<ir::Graph>& graph, PassContext&) {
  ir::IndexedGraph g(*graph);
  std::vector<bool> upcast(g.num_nodes(), false);
  bool any = false;
  for (uint32_t id = 0; id < g.num_nodes(); ++id) any = (upcast[id] = runs_in_float32(g, id)) || any;
  if (!any) return false;

  ir::GraphRebuilder rebuilder(g);
  ir::Graph& target = rebuilder.target();
  // Per source entry: the float32 value a node computed (not rounded to
  // float16), and the float32 value that holds its float16 value exactly (a
  // Cast of the float16 value, or a float32 Constant), made when first read.
  std::unordered_map<uint32_t, ir::Value> computed_of, exact_of;
  auto as_float32 = [&](ir::Entry e, bool rounded) {
    const uint32_t entry = g.entry_id(e);
    if (!rounded) {
      auto it = computed_of.find(entry);
      if (it != computed_of.end()) return it->second;
    }
    auto it = exact_of.find(entry);
    if (it != exact_of.end()) return it->second;
    const ir::Node& producer = g.node(e.node_id);
    const ir::Value source{&g.mutable_node(e.node_id), static_cast<int>(e.index)};
    const std::string name = g.graph().value_name(source) + (computed_of.count(entry) ? "/rounded" : "/float32");
    ir::Value v;
    if (producer.op() == ir::OpId::Constant) {
      v = target.add_constant(name, to_float32(producer.constant_value))->output(0);
    } else {
      ir::Node* cast = target.add_node("Cast", {rebuilder.map(e)}, 1, name);
      cast->attributes.set("to", int64_t(static_cast<int>(DType::float32)));
      cast->output_types[0] = producer.output_types[e.index];
      cast->output_types[0].dtype = DType::float32;
      cast->output_names[0] = name;
      v = cast->output(0);
    }
    exact_of.emplace(entry, v);
    return v;
  };
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    if (!upcast[id] && reads_only_shapes(g.node(id)) && !g.inputs(id).empty() && g.inputs(id)[0].present()) {
      auto it = computed_of.find(g.entry_id(g.inputs(id)[0]));
      if (it != computed_of.end()) {
        rebuilder.replace(id, target.copy_node(g.node(id), {it->second}));
        continue;
      }
    }
    if (!upcast[id]) {
      rebuilder.copy(id);
      continue;
    }
    const ir::Node& n = g.node(id);
    std::vector<ir::Value> inputs = rebuilder.mapped_inputs(id);
    std::span<const ir::Entry> entries = g.inputs(id);
    const bool rounded = result_jumps(n);
    for (size_t k = 0; k < entries.size(); ++k)
      if (entries[k].present() && is_float16_tensor(g.node(entries[k].node_id).output_types[entries[k].index]))
        inputs[k] = as_float32(entries[k], rounded);
    ir::Node* computed = target.copy_node(n, inputs);
    for (int k = 0; k < computed->num_outputs(); ++k) {
      ir::ValueType& type = computed->output_types[static_cast<size_t>(k)];
      if (!is_float16_tensor(type)) {
        rebuilder.alias(id, static_cast<uint32_t>(k), computed->output(k));
        continue;
      }
      // Readers that take float16 (and graph outputs) read a Cast back, which
      // takes the value's name; eliminate-dead-code drops the unread ones.
      std::string& name = computed->output_names[static_cast<size_t>(k)];
      ir::Node* cast = target.add_node("Cast", {computed->output(k)}, 1, n.name + "/float16");
      cast->attributes.set("to", int64_t(static_cast<int>(DType::float16)));
      cast->output_types[0] = type;
      cast->output_names[0] = name;
      if (!name.empty()) name += "/float32";
      type.dtype = DType::float32;
      rebuilder.alias(id, static_cast<uint32_t>(k), cast->output(0));
      computed_of.emplace(g.entry_id(id, static_cast<uint32_t>(k)), computed->output(k));
    }
  }
  graph = rebuilder.finish();
  return true;
}

}  // namespace graft::passes

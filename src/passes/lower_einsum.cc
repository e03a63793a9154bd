// Lowers the Einsum of two operands that is a batched matrix product, as
// attention blocks write it ("bhid,bhjd->bhij", "bhij,bhjd->bhid"), to
// MatMul with Transposes of the last two axes where needed: the backends
// take MatMul (dnnl on brgemm, reading the transposes as strided views),
// Einsum they do not, and an Einsum inside a block also splits the block's
// subgraph in two. The equation must be explicit ("->"), without ellipsis or
// repeated letters; both operands start with the same batch letters, which
// the output starts with too; then each operand has two letters: one they
// share (summed over) and one of its own, which the output ends with (in
// either order). Anything else is left as it is.
#include <cctype>
#include <optional>
#include <string>

#include "graft/ir/graph_rebuilder.h"
#include "graft/passes/pass.h"
#include "pattern_util.h"

namespace graft::passes {
namespace {

/// How one Einsum lowers: out = MatMul(first', second'), or
/// MatMul(second', first') when swap_operands; an operand is transposed over
/// its last two axes when its flag says so.
struct MatMulForm {
  bool swap_operands = false;      // the output's last two letters are (second's own, first's own)
  bool transpose_first = false;    // first' = first with its last two axes swapped
  bool transpose_second = false;
  size_t rank = 0;
};

std::optional<MatMulForm> matmul_form(const std::string& equation) {
  size_t arrow = equation.find("->");
  size_t comma = equation.find(',');
  if (arrow == std::string::npos || comma == std::string::npos || comma > arrow) return std::nullopt;
  if (equation.find('.') != std::string::npos || equation.find(',', comma + 1) != std::string::npos) return std::nullopt;
  auto strip = [](std::string s) {
    std::string out;
    for (char c : s)
      if (c != ' ') out += c;
    return out;
  };
  const std::string a = strip(equation.substr(0, comma)), b = strip(equation.substr(comma + 1, arrow - comma - 1));
  const std::string out = strip(equation.substr(arrow + 2));
  if (a.size() < 2 || a.size() != b.size() || a.size() != out.size()) return std::nullopt;
  for (const std::string* s : {&a, &b, &out}) {
    for (char c : *s)
      if (!std::isalpha(static_cast<unsigned char>(c))) return std::nullopt;
    for (size_t i = 0; i < s->size(); ++i)
      if (s->find((*s)[i], i + 1) != std::string::npos) return std::nullopt;
  }
  const size_t batch = a.size() - 2;
  if (a.compare(0, batch, b, 0, batch) != 0 || a.compare(0, batch, out, 0, batch) != 0) return std::nullopt;
  const char a0 = a[batch], a1 = a[batch + 1], b0 = b[batch], b1 = b[batch + 1];
  // The summed letter is in both operands' tails, nowhere in the output.
  char k = 0;
  for (char c : {a0, a1})
    if (c == b0 || c == b1) k = c;
  if (!k || out.find(k) != std::string::npos) return std::nullopt;
  const char i = a0 == k ? a1 : a0, j = b0 == k ? b1 : b0;
  if (i == j || i == k || j == k) return std::nullopt;
  MatMulForm form;
  form.rank = a.size();
  if (out[batch] == i && out[batch + 1] == j) {
    form.transpose_first = a0 == k;   // first' = [.., i, k]
    form.transpose_second = b1 == k;  // second' = [.., k, j]
  } else if (out[batch] == j && out[batch + 1] == i) {
    form.swap_operands = true;        // out = second'' @ first'': [.., j, k] @ [.., k, i]
    form.transpose_first = a1 == k;   // first'' = [.., k, i]
    form.transpose_second = b0 == k;  // second'' = [.., j, k]
  } else {
    return std::nullopt;
  }
  return form;
}

}  // namespace

bool lower_einsum(std::unique_ptr<ir::Graph>& graph, PassContext&) {
  ir::IndexedGraph g(*graph);
  std::vector<std::optional<MatMulForm>> forms(g.num_nodes());
  bool any = false;
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    const ir::Node& n = g.node(id);
    if (!pattern::is_op(g, id, ir::OpId::Einsum) || n.inputs.size() != 2 || !n.inputs[0] || !n.inputs[1]) continue;
    const ir::ValueType& ta = graph->type_of(n.inputs[0]);
    const ir::ValueType& tb = graph->type_of(n.inputs[1]);
    if (!dtype_is_float(ta.dtype) || ta.dtype != tb.dtype || !ta.has_rank || !tb.has_rank) continue;
    forms[id] = matmul_form(n.attributes.get_string("equation", ""));
    if (!forms[id] || ta.dims.size() != forms[id]->rank || tb.dims.size() != forms[id]->rank) {
      forms[id].reset();
      continue;
    }
    // Batch extents must be equal where known (Einsum does not broadcast named axes).
    for (size_t d = 0; d + 2 < forms[id]->rank; ++d)
      if (ta.dims[d].is_known() && tb.dims[d].is_known() && ta.dims[d].value != tb.dims[d].value) forms[id].reset();
    any = any || forms[id].has_value();
  }
  if (!any) return false;
  ir::GraphRebuilder rebuilder(g);
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    if (!forms[id]) {
      rebuilder.copy(id);
      continue;
    }
    const MatMulForm& form = *forms[id];
    const ir::Node& einsum = g.node(id);
    std::vector<ir::Value> in = rebuilder.mapped_inputs(id);
    auto last_two_swapped = [&](ir::Value v, const std::string& name) {
      std::vector<int64_t> perm;
      for (size_t d = 0; d < form.rank; ++d) perm.push_back(static_cast<int64_t>(d));
      std::swap(perm[form.rank - 2], perm[form.rank - 1]);
      ir::Node* t = rebuilder.target().add_node("Transpose", {v}, 1, einsum.name + "/" + name);
      t->attributes.set("perm", perm);
      return t->output(0);
    };
    ir::Value first = form.transpose_first ? last_two_swapped(in[0], "TransposeA") : in[0];
    ir::Value second = form.transpose_second ? last_two_swapped(in[1], "TransposeB") : in[1];
    ir::Node* matmul = rebuilder.target().add_node(
        "MatMul", form.swap_operands ? std::vector<ir::Value>{second, first} : std::vector<ir::Value>{first, second}, 1,
        einsum.name + "/MatMul");
    rebuilder.replace(id, matmul);
  }
  graph = rebuilder.finish();
  return true;
}

}  // namespace graft::passes

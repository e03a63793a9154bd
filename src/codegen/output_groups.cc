#include "graft/codegen/output_groups.h"

#include <algorithm>

#include "graft/core/error.h"

namespace graft::codegen {

namespace {

/// Broadcasts `shape` into `space` (right-aligned); false, leaving `space`
/// as it was, when they do not broadcast.
bool broadcast_into(Shape& space, const Shape& shape) {
  const size_t rank = std::max(space.size(), shape.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t a = i < rank - space.size() ? 1 : space[i - (rank - space.size())];
    const int64_t b = i < rank - shape.size() ? 1 : shape[i - (rank - shape.size())];
    if (a != b && a != 1 && b != 1) return false;
    out[i] = a == 1 ? b : a;
  }
  space = std::move(out);
  return true;
}

}  // namespace

std::vector<std::vector<int32_t>> group_outputs_by_iteration_space(std::span<const Shape> output_shapes) {
  std::vector<std::vector<int32_t>> groups;
  std::vector<Shape> spaces;
  for (size_t o = 0; o < output_shapes.size(); ++o) {
    size_t g = 0;
    while (g < groups.size() && !broadcast_into(spaces[g], output_shapes[o])) ++g;
    if (g == groups.size()) {
      groups.emplace_back();
      spaces.push_back(output_shapes[o]);
    }
    groups[g].push_back(static_cast<int32_t>(o));
  }
  return groups;
}

KernelIR kernel_for_outputs(const KernelIR& ir, std::span<const int32_t> outputs) {
  std::vector<bool> needed(ir.exprs.size(), false);
  for (int32_t o : outputs) {
    GRAFT_CHECK(o >= 0 && static_cast<size_t>(o) < ir.outputs.size(), "kernel output ", o, " out of range");
    needed[static_cast<size_t>(ir.outputs[static_cast<size_t>(o)])] = true;
  }
  // Arguments precede their users: one backward sweep marks what is read.
  for (size_t i = ir.exprs.size(); i-- > 0;) {
    if (!needed[i]) continue;
    const Expr& e = ir.exprs[i];
    if (e.op == ExprOp::input || e.op == ExprOp::constant) continue;
    for (int k = 0; k < arity(e.op); ++k) needed[static_cast<size_t>(e.args[k])] = true;
  }
  KernelIR out;
  out.input_dtypes = ir.input_dtypes;
  std::vector<int32_t> renumbered(ir.exprs.size(), -1);
  for (size_t i = 0; i < ir.exprs.size(); ++i) {
    if (!needed[i]) continue;
    Expr e = ir.exprs[i];
    if (e.op != ExprOp::input && e.op != ExprOp::constant)
      for (int k = 0; k < arity(e.op); ++k) e.args[k] = renumbered[static_cast<size_t>(e.args[k])];
    renumbered[i] = out.add(e);
  }
  for (int32_t o : outputs) out.outputs.push_back(renumbered[static_cast<size_t>(ir.outputs[static_cast<size_t>(o)])]);
  return out;
}

}  // namespace graft::codegen

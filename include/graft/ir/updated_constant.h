// Constants whose value changes between runs of one plan: a training step's
// weights and optimizer state, updated in place (DESIGN.md section 9).
#pragma once

#include "graft/ir/graph.h"

namespace graft::ir {

/// A string attribute of a Constant node: the name of the graph output that
/// is its next value (a training step's new weight or optimizer state). The
/// node computing that output may then write it into the constant's buffer
/// when it is the constant's last reader in the run (backend::
/// ModuleRunContext::output_may_overwrite_input); the caller takes the output
/// as the constant's new value, and must bump its version (Session::set_weight
/// does).
inline constexpr const char* kUpdatedByAttribute = "graft_updated_by";

/// True when `node` is a Constant that a training step updates in place
/// (kUpdatedByAttribute): its value is not fixed for the life of a plan, so a
/// compiled kernel must read it from its buffer on every run and never copy it
/// into its code as a literal.
inline bool is_updated_in_place(const Node& node) {
  return node.op() == OpId::Constant && node.attributes.has(kUpdatedByAttribute);
}

}  // namespace graft::ir

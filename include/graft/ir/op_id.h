/// \file
/// OpId: the identity of an op, one enumerator per row of graft/ir/ops.def
/// (generated from it, in its order). Past the importer, code compares OpIds,
/// never op-type strings:
///
///   if (node.op() == OpId::Conv) ...
///
/// Enumerators are spelled as the ops are named (OpId::Conv, OpId::Subgraph
/// for graft.Subgraph); names are unique across domains.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace graft::ir {

enum class OpId : uint16_t {
#define GRAFT_OP(name, domain, category, min_in, max_in, min_out, max_out) name,
#include "graft/ir/ops.def"
#undef GRAFT_OP
};

/// Number of ops in the table (rows of ops.def).
inline constexpr size_t kNumOps = 0
#define GRAFT_OP(name, domain, category, min_in, max_in, min_out, max_out) +1
#include "graft/ir/ops.def"
#undef GRAFT_OP
    ;

/// Position of `id` in the op table: an index for per-op arrays.
constexpr size_t op_index(OpId id) { return static_cast<size_t>(id); }

/// The op's name without its domain ("Conv", "Subgraph").
std::string_view op_name(OpId id);

/// True for the ops whose values are drawn at random (RandomNormal,
/// RandomUniform and their -Like forms): passes never fold them.
constexpr bool is_random_op(OpId id) {
  return id == OpId::RandomNormal || id == OpId::RandomNormalLike || id == OpId::RandomUniform ||
         id == OpId::RandomUniformLike;
}

}  // namespace graft::ir

/// \file
/// Op-level support checkers (TVM "bring your own codegen" style): a backend
/// says, op by op, whether it supports a node (attributes, dtypes, shapes),
/// and if not, why. A backend with checkers and no SubgraphProperty of its own
/// gets a generic one (create_subgraph_property) that grows the largest convex
/// regions of supported nodes, so it gets the fewest, largest subgraphs.
///
///   GRAFT_REGISTER_OP_SUPPORT("dnnl", "Conv", [](const graft::ir::Node& n) {
///     return n.output_types[0].dtype == graft::DType::float32
///                ? graft::partition::Support::yes()
///                : graft::partition::Support::no("only float32");
///   });
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>
#include <string_view>

#include "graft/ir/graph.h"

namespace graft::partition {

/// A checker's answer.
struct Support {
  bool supported = false;
  std::string reason;  ///< why not, when !supported
  static Support yes() { return {true, {}}; }
  static Support no(std::string reason) { return {false, std::move(reason)}; }
};

/// Decides whether a backend supports one node of a given op type.
using SupportChecker = std::function<Support(const ir::Node&)>;
/// Checkers of one backend by op type (Node::op_type(): "Conv", "graft.Subgraph").
using OpSupportTable = std::map<std::string, SupportChecker, std::less<>>;

/// Registers a checker; returns true. Aborts start-up on a duplicate
/// (backend, op type). A name that no backend::Backend has becomes a backend
/// whose modules run with graft's executor (graft/backend/backend.h).
bool register_op_support(std::string backend, std::string op_type, SupportChecker checker);
/// The checkers of `backend`, or nullptr when it registered none.
const OpSupportTable* find_op_support(std::string_view backend);
/// Every backend name that op support checkers were registered under.
std::vector<std::string> op_support_backends();
/// Asks `table` about `node`: its checker's answer, or no ("op X is not
/// supported") when the table has no checker for the op.
Support check_op_support(const OpSupportTable& table, const ir::Node& node);

}  // namespace graft::partition

/// GRAFT_REGISTER_OP_SUPPORT("dnnl", "Conv", checker)
#define GRAFT_REGISTER_OP_SUPPORT(backend, op_type, checker)                                      \
  [[maybe_unused]] static const bool GRAFT_CONCAT(graft_op_support_registered_, __COUNTER__) = \
      ::graft::partition::register_op_support(backend, op_type, checker)

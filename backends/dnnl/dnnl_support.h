/// \file
/// Which nodes the `dnnl` backend takes: one checker per op, answering yes or
/// no with a reason (the TVM BYOC op-support style). The checkers see a node
/// with inferred dtypes and shapes; compile() refuses exactly what they refuse.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graft/partition/subgraph_property.h"

namespace graft::ir {
class Node;
}

namespace graft::dnnl_backend {

/// A checker's answer: supported, or not with the reason why.
struct SupportResult {
  bool supported = false;
  std::string reason;  ///< empty when supported
  static SupportResult yes() { return {true, {}}; }
  static SupportResult no(std::string why) { return {false, std::move(why)}; }
  explicit operator bool() const { return supported; }
};

/// Whether the dnnl backend can run `node` (float32, concrete shapes, an op it
/// knows with attributes it handles).
SupportResult dnnl_supports(const ir::Node& node);

/// The op types dnnl_supports may accept ("Conv", "Relu", ...).
const std::vector<std::string>& dnnl_op_types();

/// What the dnnl backend takes from a graph (dnnl_partition.cc).
std::shared_ptr<const partition::SubgraphProperty> make_dnnl_property();

}  // namespace graft::dnnl_backend

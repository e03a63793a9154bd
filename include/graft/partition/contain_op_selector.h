/// \file
/// ContainOpSelector: the ready-made selector for "this backend runs these op
/// types" (MXNet's ContainOpSelector), optionally with per-op checkers that see
/// the node's attributes, dtypes and shapes; and ContainOpProperty using it.
#pragma once

#include <set>
#include <string>

#include "graft/partition/op_support.h"
#include "graft/partition/subgraph_property.h"

namespace graft::partition {

/// The op types a ContainOpSelector takes, with optional per-op checkers.
struct ContainOpSpec {
  std::set<std::string, std::less<>> op_types;  ///< as Node::op_type() spells them
  OpSupportTable checkers;                       ///< refine some of op_types (optional)
  /// Whether the node's op is in the set and its checker (if any) agrees.
  Support supports(const ir::Node& n) const;
  /// supports(n).supported, without building the reason.
  bool accepts(const ir::Node& n) const;
};

/// Selects every node whose op type is in the set (and whose checker, if the
/// op has one, says yes), and follows every edge to such a node.
class ContainOpSelector : public SubgraphSelector {
 public:
  explicit ContainOpSelector(std::shared_ptr<const ContainOpSpec> spec) : spec_(std::move(spec)) {}
  ContainOpSelector(std::set<std::string, std::less<>> op_types, OpSupportTable checkers = {})
      : spec_(std::make_shared<ContainOpSpec>(ContainOpSpec{std::move(op_types), std::move(checkers)})) {}
  bool Select(const ir::Node& n) override { return spec_->accepts(n); }
  bool SelectInput(const ir::Node&, const ir::Node& producer) override { return spec_->accepts(producer); }
  bool SelectOutput(const ir::Node&, const ir::Node& consumer) override { return spec_->accepts(consumer); }

 private:
  std::shared_ptr<const ContainOpSpec> spec_;
};

/// A property taking the largest convex regions of the given op types.
class ContainOpProperty : public SubgraphProperty {
 public:
  explicit ContainOpProperty(std::set<std::string, std::less<>> op_types, OpSupportTable checkers = {},
                             size_t min_subgraph_size = 1)
      : spec_(std::make_shared<ContainOpSpec>(ContainOpSpec{std::move(op_types), std::move(checkers)})),
        min_size_(min_subgraph_size) {}
  std::unique_ptr<SubgraphSelector> CreateSubgraphSelector() const override {
    return std::make_unique<ContainOpSelector>(spec_);
  }
  size_t MinSubgraphSize() const override { return min_size_; }
  /// The checker's reason, or "op X is not supported".
  std::string ExplainRejection(const ir::Node& n) const override { return spec_->supports(n).reason; }

 protected:
  /// For subclasses whose selector refines ContainOpSelector (a Filter).
  const std::shared_ptr<const ContainOpSpec>& spec() const { return spec_; }

 private:
  std::shared_ptr<const ContainOpSpec> spec_;
  size_t min_size_;
};

}  // namespace graft::partition

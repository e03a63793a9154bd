// The `fuse-pointwise` pass: groups of connected pointwise ops become
// graft.FusedPointwise nodes. The algorithm lives in src/fusion/
// (find_fusion_subsets.cc explains it); this file registers it as a pass.
#include "graft/fusion/fuse_pointwise.h"
#include "graft/passes/pass.h"

namespace graft::passes {

bool fuse_pointwise_pass(std::unique_ptr<ir::Graph>& graph, PassContext&) { return fusion::fuse_pointwise(graph); }

}  // namespace graft::passes

// Registers the dnnl op checkers with the partitioner (TVM BYOC style): the
// generic property then grows the largest convex regions of nodes dnnl
// supports. Partitioning runs before shapes are concrete, so the checkers
// accept symbolic extents where compile() can resolve them later. Built only
// where the partition API exists (see CMakeLists.txt).
#include "dnnl_support.h"
#include "graft/partition/op_support.h"

namespace graft::dnnl_backend {
namespace {

const bool registered = [] {
  for (const std::string& op : dnnl_op_types())
    partition::register_op_support("dnnl", op, [](const ir::Node& node) {
      SupportResult r = dnnl_supports(node);
      return r ? partition::Support::yes() : partition::Support::no(r.reason);
    });
  return true;
}();

}  // namespace
}  // namespace graft::dnnl_backend

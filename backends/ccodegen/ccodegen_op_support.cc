// ccodegen's op support, registered with the partitioner: one checker per op
// of ccodegen's op table (c_op_table.cc), each asking ccodegen_supports().
// The partitioner's generic property then grows the largest convex regions of
// supported nodes into graft.Subgraph nodes for ccodegen.
#include "c_op_table.h"
#include "graft/backends/ccodegen.h"
#include "graft/partition/op_support.h"

namespace graft::backends {
namespace {

bool register_ccodegen_op_support() {
  for (const COp& op : c_ops())
    partition::register_op_support("ccodegen", std::string(op.name), [](const ir::Node& node) {
      CcodegenSupport answer = ccodegen_supports(node);
      return answer.supported ? partition::Support::yes() : partition::Support::no(answer.reason);
    });
  return true;
}

[[maybe_unused]] const bool registered = register_ccodegen_op_support();

}  // namespace
}  // namespace graft::backends

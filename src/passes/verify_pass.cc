#include "graft/ops/type_inference.h"
#include "graft/ir/verify.h"
#include "graft/passes/pass.h"

namespace graft::passes {

bool verify_pass(std::unique_ptr<ir::Graph>& graph, PassContext&) {
  ir::verify(*graph);
  return false;
}

bool infer_pass(std::unique_ptr<ir::Graph>& graph, PassContext&) {
  ops::infer_types(*graph);
  return true;
}

}  // namespace graft::passes

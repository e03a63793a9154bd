// Identity: the output is the input tensor itself (shared storage, no copy).
#include "graft/ops/infer_util.h"

namespace graft::ops {
namespace {

void identity_kernel(KernelContext& ctx) { ctx.set_output(0, ctx.input(0)); }

}  // namespace

GRAFT_REGISTER_OP("", "Identity", infer_same_as_input, identity_kernel);

}  // namespace graft::ops

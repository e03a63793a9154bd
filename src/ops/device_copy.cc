// graft.CopyToDevice and graft.CopyToHost: a value crossing a device
// boundary. Placement inserts them (compiler/placement); the executor runs
// them through the DeviceAPI of the device they name, so they have no host
// kernel: reaching one is a bug in the executor, not a slow path.
#include "graft/core/error.h"
#include "graft/ops/infer_util.h"

namespace graft::ops {
namespace {

void device_copy_kernel(KernelContext&) {
  fail(ErrorKind::internal, "a device copy reached the host kernels: the executor runs copies through the DeviceAPI");
}

}  // namespace

GRAFT_REGISTER_OP("graft", "CopyToDevice", infer_same_as_input, device_copy_kernel);
GRAFT_REGISTER_OP("graft", "CopyToHost", infer_same_as_input, device_copy_kernel);

}  // namespace graft::ops

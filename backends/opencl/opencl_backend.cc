// The `opencl` backend: claims, through the partitioner, the nodes the
// OpenCL kernels take (opencl_kernel.h: each kernel's support check, also
// registered as the backend's op-support checker), and compiles each
// subgraph into an OpenClModule on opencl:N (CompileOptions::device_id).
// Not in the default order: a session uses it when asked (--device opencl,
// SessionOptions::device, GRAFT_BACKENDS=opencl,...).
#include "graft/backend/backend.h"
#include "graft/codegen/opencl_runtime.h"
#include "opencl_module.h"

namespace graft::opencl {

namespace {

class OpenClBackend final : public backend::Backend {
 public:
  std::string name() const override { return "opencl"; }
  Device device() const override { return Device{DeviceType::opencl, 0}; }
  int default_rank() const override { return 5; }
  bool in_default_order() const override { return false; }
  std::string unavailable_reason() const override { return codegen::opencl_runtime_unavailable_reason(); }
  std::unique_ptr<backend::CompiledModule> compile(const ir::Graph& subgraph,
                                                   const backend::CompileOptions& options) const override {
#ifdef GRAFT_HAVE_OPENCL_HEADERS
    return std::make_unique<OpenClModule>(subgraph, options.device_id);
#else
    (void)subgraph;
    (void)options;
    fail(ErrorKind::unsupported, "graft was built without the OpenCL headers");
#endif
  }
};

}  // namespace

GRAFT_REGISTER_BACKEND(OpenClBackend);

}  // namespace graft::opencl

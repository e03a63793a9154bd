// The `cuda` backend: claims, through the partitioner, the nodes the CUDA
// kernels take (cuda_kernel.h: each kernel's support check, registered as
// the backend's op-support checker), and compiles each subgraph into a
// CudaModule on cuda:N. Not in the default order: a session uses it when
// asked (--device cuda, SessionOptions::device, GRAFT_BACKENDS=cuda,...).
// Unavailable, with the reason, without the driver, a device or NVRTC, or
// when the driver is older than NVRTC (its PTX would not load).
#include <cstdlib>

#include "cuda_module.h"
#include "graft/backend/backend.h"
#include "graft/codegen/cuda_driver.h"
#include "graft/codegen/cuda_emitter.h"
#include "graft/core/error.h"

namespace graft::cuda {

namespace {

class CudaBackend final : public backend::Backend {
 public:
  std::string name() const override { return "cuda"; }
  Device device() const override { return Device{DeviceType::cuda, 0}; }
  int default_rank() const override { return 5; }
  bool in_default_order() const override { return false; }
  std::string unavailable_reason() const override {
    std::string why = codegen::cuda_driver().error;
    if (!why.empty()) return why;
    why = codegen::nvrtc_unavailable_reason();
    if (!why.empty()) return "no NVRTC: " + why;
    // PTX from an NVRTC newer than the driver does not load
    // (CUDA_ERROR_UNSUPPORTED_PTX_VERSION): refuse up front, saying so.
    const std::string nvrtc = codegen::nvrtc_version();  // "13.0"
    const int major = std::atoi(nvrtc.c_str());
    const size_t dot = nvrtc.find('.');
    const int minor = dot == std::string::npos ? 0 : std::atoi(nvrtc.c_str() + dot + 1);
    const int driver = codegen::cuda_driver().driver_version;  // 13000 for 13.0
    if (driver > 0 && driver < major * 1000 + minor * 10)
      return "the CUDA driver (" + codegen::cuda_driver_version() + ") is older than NVRTC (" + nvrtc +
             "): its PTX would not load; update the driver or put an NVRTC of the driver's version first on the "
             "library path";
    return {};
  }
  std::unique_ptr<backend::CompiledModule> compile(const ir::Graph& subgraph,
                                                   const backend::CompileOptions& options) const override {
    std::string why = unavailable_reason();
    if (!why.empty()) fail(ErrorKind::unsupported, "the cuda backend is unavailable: ", why);
    if (options.device_id != 0)
      fail(ErrorKind::unsupported, "graft's CUDA kernels run on cuda:0 only (asked for cuda:", options.device_id, ")");
    return std::make_unique<CudaModule>(subgraph, options.device_id);
  }
};

}  // namespace

GRAFT_REGISTER_BACKEND(CudaBackend);

}  // namespace graft::cuda

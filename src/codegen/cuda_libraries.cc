// cuBLAS and cuDNN opened at run time (cuda_libraries.h).
#include "graft/codegen/cuda_libraries.h"

#include <dlfcn.h>

#include <initializer_list>

namespace graft::codegen {

namespace {

void* open_first(std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return handle;
  return nullptr;
}

template <typename F>
void load(void* handle, F& slot, const char* name) {
  slot = reinterpret_cast<F>(dlsym(handle, name));
}

struct Cudnn {
  std::string error;
  size_t (*get_version)() = nullptr;
};

const Cudnn& cudnn() {
  static const Cudnn library = [] {
    Cudnn lib;
    void* handle = open_first({"libcudnn.so.9", "libcudnn.so", "/usr/local/cuda/lib64/libcudnn.so.9"});
    if (!handle) {
      lib.error = "libcudnn.so.9 not found (install cuDNN 9 or add its folder to the library path)";
      return lib;
    }
    load(handle, lib.get_version, "cudnnGetVersion");
    if (!lib.get_version) lib.error = "libcudnn lacks cudnnGetVersion";
    return lib;
  }();
  return library;
}

}  // namespace

const Cublas& cublas() {
  static const Cublas library = [] {
    Cublas lib;
    void* handle = open_first({"libcublas.so.13", "libcublas.so.12", "libcublas.so",
                               "/usr/local/cuda/lib64/libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.12"});
    if (!handle) {
      lib.error = "libcublas.so.13 not found (install the CUDA toolkit's cuBLAS or add its lib64 to the library path)";
      return lib;
    }
    load(handle, lib.create, "cublasCreate_v2");
    load(handle, lib.destroy, "cublasDestroy_v2");
    load(handle, lib.set_stream, "cublasSetStream_v2");
    load(handle, lib.set_math_mode, "cublasSetMathMode");
    load(handle, lib.set_workspace, "cublasSetWorkspace_v2");
    load(handle, lib.get_property, "cublasGetProperty");
    load(handle, lib.sgemm, "cublasSgemm_v2");
    load(handle, lib.sgemm_strided_batched, "cublasSgemmStridedBatched");
    if (!lib.create || !lib.destroy || !lib.set_stream || !lib.set_math_mode || !lib.get_property || !lib.sgemm ||
        !lib.sgemm_strided_batched)
      lib.error = "libcublas lacks an expected function";
    return lib;
  }();
  return library;
}

std::string cublas_unavailable_reason() { return cublas().error; }

std::string cublas_version() {
  const Cublas& lib = cublas();
  if (!lib.error.empty()) return {};
  int major = 0, minor = 0, patch = 0;
  lib.get_property(0, &major);  // MAJOR_VERSION
  lib.get_property(1, &minor);  // MINOR_VERSION
  lib.get_property(2, &patch);  // PATCH_LEVEL
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string cudnn_unavailable_reason() { return cudnn().error; }

std::string cudnn_version() {
  const Cudnn& lib = cudnn();
  if (!lib.error.empty()) return {};
  size_t v = lib.get_version();  // 91900 for 9.19.0
  return std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) + "." + std::to_string(v % 100);
}

}  // namespace graft::codegen

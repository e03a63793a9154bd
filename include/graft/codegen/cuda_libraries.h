/// \file
/// NVIDIA's libraries beside the driver, opened at run time like it
/// (cuda_driver.h): cuBLAS for the products of the `cuda` backend, and cuDNN,
/// whose presence and version `graft devices` reports. Nothing links against
/// them; where one is missing its *_unavailable_reason() says why.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace graft::codegen {

/// cuBLAS (libcublas.so.13 or .12): the entry points graft calls. Status 0 is
/// success; handles and streams are opaque pointers.
struct Cublas {
  std::string error;  ///< empty when loaded
  int (*create)(void**) = nullptr;
  int (*destroy)(void*) = nullptr;
  int (*set_stream)(void*, void*) = nullptr;
  int (*set_math_mode)(void*, int) = nullptr;
  /// cublasSetWorkspace_v2(handle, memory, bytes) (null in cuBLAS before 11).
  int (*set_workspace)(void*, void*, size_t) = nullptr;
  int (*get_property)(int, int*) = nullptr;
  /// cublasSgemm_v2(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc), column-major.
  int (*sgemm)(void*, int, int, int, int, int, const float*, const float*, int, const float*, int, const float*,
               float*, int) = nullptr;
  /// cublasSgemmStridedBatched(..., A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, batch).
  int (*sgemm_strided_batched)(void*, int, int, int, int, int, const float*, const float*, int, long long,
                               const float*, int, long long, const float*, float*, int, long long, int) = nullptr;
};

inline constexpr int kCublasOpN = 0;
inline constexpr int kCublasOpT = 1;
inline constexpr int kCublasDefaultMath = 0;
inline constexpr int kCublasTf32Math = 3;

/// The process's cuBLAS table (loaded at the first call).
const Cublas& cublas();
/// Empty when cuBLAS loaded, else why not.
std::string cublas_unavailable_reason();
/// "13.1.0", or empty without cuBLAS.
std::string cublas_version();

/// Empty when cuDNN (libcudnn.so.9) loaded, else why not.
std::string cudnn_unavailable_reason();
/// cudnnGetVersion as "9.19.0", or empty without cuDNN.
std::string cudnn_version();

}  // namespace graft::codegen

// A stand-in libcublas.so.13 beside the stand-in driver (fake_libcuda.cc):
// column-major SGEMM on host memory (the stand-in's device memory), done
// at once, with the cuBLAS semantics graft relies on (op(A), op(B), leading
// dimensions, alpha and beta with beta = 0 ignoring C, strided batches with
// stride 0). It lets the CUDA backend's MatMul, Gemm and Conv plans run
// without a GPU; it says nothing about cuBLAS itself.
#include <cstddef>

namespace {
int handle_token = 5;

/// C = alpha op(A) op(B) + beta C, column-major; op 0 = N, 1 = T.
void gemm(int ta, int tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
          float beta, float* c, int ldc) {
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double sum = 0;
      for (int p = 0; p < k; ++p) {
        const float x = ta ? a[p + static_cast<size_t>(i) * lda] : a[i + static_cast<size_t>(p) * lda];
        const float y = tb ? b[j + static_cast<size_t>(p) * ldb] : b[p + static_cast<size_t>(j) * ldb];
        sum += static_cast<double>(x) * y;
      }
      float& out = c[i + static_cast<size_t>(j) * ldc];
      out = static_cast<float>(alpha * sum + (beta == 0.0f ? 0.0 : static_cast<double>(beta) * out));
    }
}
}  // namespace

extern "C" {

int cublasCreate_v2(void** handle) {
  *handle = &handle_token;
  return 0;
}
int cublasDestroy_v2(void*) { return 0; }
int cublasSetStream_v2(void*, void*) { return 0; }
int cublasSetMathMode(void*, int) { return 0; }
int cublasSetWorkspace_v2(void*, void*, size_t) { return 0; }
int cublasGetProperty(int type, int* value) {
  *value = type == 0 ? 13 : 0;
  return 0;
}
int cublasSgemm_v2(void*, int ta, int tb, int m, int n, int k, const float* alpha, const float* a, int lda,
                   const float* b, int ldb, const float* beta, float* c, int ldc) {
  gemm(ta, tb, m, n, k, *alpha, a, lda, b, ldb, *beta, c, ldc);
  return 0;
}
int cublasSgemmStridedBatched(void*, int ta, int tb, int m, int n, int k, const float* alpha, const float* a, int lda,
                              long long stride_a, const float* b, int ldb, long long stride_b, const float* beta,
                              float* c, int ldc, long long stride_c, int batch) {
  for (int i = 0; i < batch; ++i)
    gemm(ta, tb, m, n, k, *alpha, a + i * stride_a, lda, b + i * stride_b, ldb, *beta, c + i * stride_c, ldc);
  return 0;
}

}  // extern "C"

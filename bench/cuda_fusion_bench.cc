// Fused pointwise kernels on an NVIDIA GPU (CUDA C through NVRTC, launched
// through the driver API): bandwidth of fused chains of k = 2, 4, 8, 16 ops
// against a device-to-device copy measured in the same run, the speedup over
// running the k ops as k kernels; broadcasting kernels (scale and bias along
// rows, channels, and a rank-4 pattern) with 32-bit and 64-bit index
// arithmetic; and the time to get one kernel's PTX, cold
// (NVRTC) and from the disk cache. Without a GPU only the compile times are
// measured; without NVRTC nothing (each says why and exits 0).
//
//   ./build/bench/cuda_fusion_bench [elements=16777216] [repeats=50]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graft/codegen/compile_cache.h"
#include "graft/codegen/cuda_emitter.h"
#include "graft/codegen/interpreter.h"
#include "graft/codegen/kernel_runner.h"
#include "graft/codegen/op_expressions.h"
#include "graft/ops/type_inference.h"
#include "graft/backend/buffer_pool.h"

using namespace graft;
using namespace graft::codegen;

namespace {

using Clock = std::chrono::steady_clock;

/// Ops `first` .. `first + count - 1` of the chain Mul, Add, Max, Min (with
/// scalar constants, in turn) on one float32 input of n elements; `salt`
/// shifts the constants, so that each salt gives a distinct kernel.
ir::KernelIR chain_kernel(int first, int count, int64_t n, int salt = 0) {
  ir::Graph g;
  g.opset_imports[""] = 17;
  ir::Value v = g.add_input("x", ir::ValueType::of(DType::float32, {n}))->output(0);
  static const char* ops[] = {"Mul", "Add", "Max", "Min"};
  static const float constants[] = {0.999f, 0.001f, -1.0f, 1.0f};
  for (int i = first; i < first + count; ++i) {
    float value = constants[i % 4] + static_cast<float>(salt) * 1e-3f;
    ir::Value c = g.add_constant("c" + std::to_string(i), Tensor::scalar<float>(value))->output(0);
    v = g.add_node(ops[i % 4], {v, c})->output(0);
  }
  g.add_output(v, "y");
  ops::infer_types(g);
  return lower_body(g).ir;
}

/// y = x * s + b, with s and b broadcast to x's shape: the bias and scale
/// kernels of normalization layers.
ir::KernelIR scale_bias_kernel(const Shape& x_shape, const Shape& vector_shape) {
  ir::Graph g;
  g.opset_imports[""] = 17;
  ir::Value x = g.add_input("x", ir::ValueType::of(DType::float32, x_shape))->output(0);
  ir::Value s = g.add_input("s", ir::ValueType::of(DType::float32, vector_shape))->output(0);
  ir::Value b = g.add_input("b", ir::ValueType::of(DType::float32, vector_shape))->output(0);
  g.add_output(g.add_node("Add", {g.add_node("Mul", {x, s})->output(0), b})->output(0), "y");
  ops::infer_types(g);
  return lower_body(g).ir;
}

/// Median seconds of one call of `body` (which queues work) over `repeats`
/// timed rounds of `per_round` calls each, after a warm-up round.
double median_seconds(int repeats, int per_round, const std::function<void()>& body) {
  for (int i = 0; i < per_round; ++i) body();
  cuda_synchronize();
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    auto start = Clock::now();
    for (int i = 0; i < per_round; ++i) body();
    cuda_synchronize();
    times.push_back(std::chrono::duration<double>(Clock::now() - start).count() / per_round);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 16777216;
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 50;
  if (n <= 0) {
    std::fprintf(stderr, "usage: cuda_fusion_bench [elements > 0] [repeats]\n");
    return 2;
  }
  if (std::string why = nvrtc_unavailable_reason(); !why.empty()) {
    std::printf("cuda_fusion_bench: skipped, %s\n", why.c_str());
    return 0;
  }
  const std::string no_gpu = cuda_device_unavailable_reason();
  const std::string architecture = no_gpu.empty() ? cuda_device_architecture() : "compute_90";
  std::printf("CUDA fused pointwise kernels, %s, NVRTC %s\n", architecture.c_str(), nvrtc_version().c_str());

  // Compile latency of one fused kernel (16 ops): cold through NVRTC (the
  // constants differ per compile, so nothing can serve it), then through the
  // compile cache from GRAFT_CACHE_DIR with the memory level dropped. Needs
  // no GPU.
  char pattern[] = "/tmp/graft_cuda_bench_cache_XXXXXX";
  if (!mkdtemp(pattern)) {
    std::fprintf(stderr, "cuda_fusion_bench: cannot create a temporary directory\n");
    return 1;
  }
  setenv("GRAFT_CACHE_DIR", pattern, 1);
  CompileCache& cache = CompileCache::global();
  std::vector<double> cold_ms, disk_ms;
  for (int i = 0; i < 9; ++i) {
    ir::KernelIR ir = chain_kernel(0, 16, n, 1000 + i);
    auto start = Clock::now();
    cache.cuda_ptx(ir, architecture);
    cold_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    cache.clear_memory();
    start = Clock::now();
    cache.cuda_ptx(ir, architecture);
    disk_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  unsetenv("GRAFT_CACHE_DIR");
  std::filesystem::remove_all(pattern);
  std::sort(cold_ms.begin(), cold_ms.end());
  std::sort(disk_ms.begin(), disk_ms.end());
  std::printf(
      "16-op kernel to PTX: cold (NVRTC) median %.1f ms (min %.1f, max %.1f); from the disk cache median %.2f ms\n",
      cold_ms[4], cold_ms.front(), cold_ms.back(), disk_ms[4]);
  if (!no_gpu.empty()) {
    std::printf("cuda_fusion_bench: no GPU (%s): bandwidth figures skipped\n", no_gpu.c_str());
    return 0;
  }
  std::printf("%lld float32 elements, median of %d rounds\n", static_cast<long long>(n), repeats);

  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  std::vector<float> host(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) host[static_cast<size_t>(i)] = static_cast<float>((i % 1000) - 500) * 1e-3f;
  CudaBuffer x(bytes), y(bytes), z(bytes);
  x.upload(host.data(), bytes);
  const Shape shape{n};
  // Bytes moved per element pass: one read and one write.
  const double pass_bytes = 2.0 * static_cast<double>(bytes);
  const double copy_s = median_seconds(repeats, 10, [&] { y.copy_from(x, bytes); });
  std::printf("device-to-device copy: %.3f ms, %.0f GB/s (read + write)\n", copy_s * 1e3, pass_bytes / copy_s * 1e-9);
  std::printf("%4s %12s %12s %12s %14s %16s\n", "k", "fused ms", "fused GB/s", "vs copy", "unfused ms",
              "fused speedup");
  for (int k : {2, 4, 8, 16}) {
    CudaKernel fused(chain_kernel(0, k, n));
    std::vector<std::unique_ptr<CudaKernel>> single;
    for (int i = 0; i < k; ++i) single.push_back(std::make_unique<CudaKernel>(chain_kernel(i, 1, n)));
    CudaOperand in{x.address(), shape}, out{y.address(), shape}, other{z.address(), shape};
    double fused_s = median_seconds(repeats, 10, [&] { fused.launch({&in, 1}, {&out, 1}); });
    double unfused_s = median_seconds(repeats, 2, [&] {
      // x -> y -> z -> y -> ...: each op reads and writes the whole tensor.
      for (int i = 0; i < k; ++i) {
        const CudaOperand& from = i == 0 ? in : (i % 2 ? out : other);
        const CudaOperand& to = i % 2 ? other : out;
        single[static_cast<size_t>(i)]->launch({&from, 1}, {&to, 1});
      }
    });
    std::printf("%4d %12.3f %12.0f %12.2f %14.3f %16.2f\n", k, fused_s * 1e3, pass_bytes / fused_s * 1e-9,
                copy_s / fused_s, unfused_s * 1e3, unfused_s / fused_s);
  }
  // Broadcasting kernels: element offsets from coordinates, computed with
  // 32-bit multiply-high divisions (the default below 2^31 elements) and
  // with 64-bit divisions (the path of larger tensors), same kernel, same run.
  std::printf("broadcast y = x * s + b (bytes: x read, y written)\n");
  std::printf("%-30s %12s %12s %12s %12s %12s\n", "x shape, s and b shape", "32-bit ms", "64-bit ms", "32-bit GB/s",
              "vs copy", "64/32-bit");
  struct Case {
    Shape x, vector;
  };
  const int64_t rows = std::max<int64_t>(1, n / 1024), images = std::max<int64_t>(1, n / 65536);
  for (const Case& c : {Case{{rows, 1024}, {1024}}, Case{{images, 64, 32, 32}, {64, 1, 1}},
                        Case{{images, 64, 31, 33}, {1, 64, 1, 33}}}) {
    ir::KernelIR ir = scale_bias_kernel(c.x, c.vector);
    CudaKernel kernel(ir);
    int64_t x_elements = 1, v_elements = 1;
    for (int64_t e : c.x) x_elements *= e;
    for (int64_t e : c.vector) v_elements *= e;
    if (static_cast<size_t>(x_elements) * sizeof(float) > bytes) continue;
    CudaBuffer s_buffer(static_cast<size_t>(v_elements) * sizeof(float)), b_buffer(s_buffer.size());
    s_buffer.upload(host.data(), s_buffer.size());
    b_buffer.upload(host.data() + 1, b_buffer.size());
    CudaOperand in[] = {{x.address(), c.x}, {s_buffer.address(), c.vector}, {b_buffer.address(), c.vector}};
    CudaOperand out_narrow{y.address(), c.x}, out_wide{z.address(), c.x};
    double narrow_s = median_seconds(repeats, 10, [&] { kernel.launch(in, {&out_narrow, 1}); });
    double wide_s = median_seconds(repeats, 10, [&] { kernel.launch(in, {&out_wide, 1}, {.wide_indices = true}); });
    const double case_bytes = 2.0 * static_cast<double>(x_elements) * sizeof(float);
    std::string label = shape_to_string(c.x) + ", " + shape_to_string(c.vector);
    std::printf("%-30s %12.3f %12.3f %12.0f %12.2f %12.2f\n", label.c_str(), narrow_s * 1e3, wide_s * 1e3,
                case_bytes / narrow_s * 1e-9, (case_bytes / pass_bytes) * copy_s / narrow_s, wide_s / narrow_s);
    // The two index paths compute the same offsets: the outputs are equal.
    std::vector<float> a(static_cast<size_t>(x_elements)), b(a.size());
    y.download(a.data(), a.size() * sizeof(float));
    z.download(b.data(), b.size() * sizeof(float));
    if (std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) != 0) {
      std::printf("cuda_fusion_bench: the 32-bit and 64-bit index paths disagree on %s\n", label.c_str());
      return 1;
    }
  }
  // A 16-op chain checked against the CPU interpreter on a prefix, so that the
  // figures are of kernels that compute the right thing.
  const int64_t m = std::min<int64_t>(n, 1 << 16);
  ir::KernelIR ir = chain_kernel(0, 16, m);
  Tensor input(DType::float32, {m});
  std::copy(host.begin(), host.begin() + m, input.data<float>());
  std::vector<Tensor> got = CudaKernel(ir).run(std::vector<Tensor>{input});
  backend::BufferPool pool;
  Interpreter interpreter(ir);
  std::vector<Tensor> want = run_kernel(ir, interpreter, std::vector<Tensor>{input}, pool);
  float max_error = 0;
  for (int64_t i = 0; i < m; ++i)
    max_error = std::max(max_error, std::abs(got[0].data<float>()[i] - want[0].data<float>()[i]));
  std::printf("16-op chain on %lld elements: max |GPU - CPU interpreter| = %g\n", static_cast<long long>(m), max_error);
  if (max_error > 1e-6f) {
    std::printf("cuda_fusion_bench: the GPU results differ from the CPU's\n");
    return 1;
  }
  return 0;
}

// The CUDA emitter: every generated kernel compiles to PTX with NVRTC (no GPU
// needed); where a GPU is present, kernels run and match the CPU results.
#include <gtest/gtest.h>

#include <chrono>
#include <map>

#include "graft/codegen/cuda_emitter.h"
#include "graft/codegen/interpreter.h"
#include "graft/runtime/buffer_pool.h"
#include "op_cases.h"

namespace graft::codegen {
namespace {

using graft::testing::close_enough;

TEST(CudaEmitter, EveryOpKernelCompilesToPtx) {
  std::string why = nvrtc_unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << why;
  // One NVRTC program holding every kernel, each in its own namespace (one
  // compile instead of hundreds keeps the test fast), plus one standalone.
  std::vector<graft::testing::BuiltCase> cases = graft::testing::build_op_cases();
  // Shapes are not part of kernel IR, so the broadcast cases share kernels.
  std::string program;
  std::map<uint64_t, size_t> kernel_of_hash;
  std::vector<size_t> kernel_of_case;
  for (size_t i = 0; i < cases.size(); ++i) {
    KernelIR ir = lower_body(*cases[i].graph).ir;
    auto [it, fresh] = kernel_of_hash.emplace(stable_hash(ir), kernel_of_hash.size());
    kernel_of_case.push_back(it->second);
    if (!fresh) continue;
    std::string id = std::to_string(it->second);
    program += "namespace k" + id + " {\n" + emit_cuda_source(ir, "graft_kernel_" + id) + "}\n";
  }
  auto start = std::chrono::steady_clock::now();
  std::string ptx = compile_cuda_to_ptx(program, "all_op_kernels.cu");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("NVRTC %s: %zu kernels -> %zu bytes of PTX in %.2f s\n", nvrtc_version().c_str(), kernel_of_hash.size(), ptx.size(),
              seconds);
  for (size_t i = 0; i < cases.size(); ++i)
    EXPECT_NE(ptx.find(".entry graft_kernel_" + std::to_string(kernel_of_case[i]) + "("), std::string::npos)
        << cases[i].label;
  std::string single = compile_cuda_to_ptx(emit_cuda_source(lower_body(*cases[0].graph).ir, "graft_kernel"), "one.cu");
  EXPECT_NE(single.find(".entry graft_kernel"), std::string::npos);
}

TEST(CudaEmitter, BrokenSourceReportsTheNvrtcLog) {
  if (!nvrtc_unavailable_reason().empty()) GTEST_SKIP() << nvrtc_unavailable_reason();
  try {
    compile_cuda_to_ptx("extern \"C\" __global__ void k() { undefined_thing(); }", "broken.cu");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("undefined_thing"), std::string::npos) << e.what();
  }
}

TEST(CudaEmitter, KernelsRunOnTheGpuAndMatchTheCpu) {
  std::string why = cuda_device_unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << "no GPU: " << why;
  runtime::BufferPool pool;
  for (const auto& c : graft::testing::build_op_cases()) {
    KernelIR ir = lower_body(*c.graph).ir;
    CudaKernel kernel(ir);
    std::vector<Tensor> got = kernel.run(c.inputs);
    Interpreter interpreter(ir);
    std::vector<Tensor> want = run_kernel(ir, interpreter, c.inputs, pool);
    for (size_t k = 0; k < got.size(); ++k) EXPECT_TRUE(close_enough(got[k], want[k], 1e-5, 1e-6)) << c.label;
  }
}

}  // namespace
}  // namespace graft::codegen

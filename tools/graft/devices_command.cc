// graft devices: what this machine offers graft — the CPU and its threads,
// the backends (and why any is unavailable), the CPU JIT of fused kernels and
// its compile cache, CUDA (the driver, NVRTC, cuBLAS, cuDNN: each with its
// version or why it is missing, and every cuda:N device), OpenCL's kernel
// target, and every OpenCL platform and device (the OpenCL DeviceAPI's opencl:N) with its
// memory and compute units.
// What to attach to a bug report or to compare two machines.
#include <iostream>
#include <sstream>
#include <vector>

#include "command.h"
#include "graft/codegen/compile_cache.h"
#include "graft/codegen/cuda_driver.h"
#include "graft/codegen/cuda_emitter.h"
#include "graft/codegen/cuda_libraries.h"
#include "graft/codegen/opencl_emitter.h"
#include "graft/core/parallel.h"
#include "graft/backend/backend.h"
#include "graft/backend/device_api.h"
#include "graft/runtime/cpu_features.h"

namespace graft::cli {

namespace {

/// "llvm-14.0.6|x86_64-pc-linux-gnu|znver4|+avx,...|emitter-3|lanes-16" ->
/// "LLVM 14.0.6, x86_64-pc-linux-gnu, cpu znver4, 16 float lanes".
std::string describe_jit_target(const std::string& id) {
  std::vector<std::string> parts;
  std::stringstream in(id);
  for (std::string part; std::getline(in, part, '|');) parts.push_back(part);
  if (parts.size() < 6) return id;
  std::string version = parts[0].rfind("llvm-", 0) == 0 ? parts[0].substr(5) : parts[0];
  std::string lanes = parts[5].rfind("lanes-", 0) == 0 ? parts[5].substr(6) : parts[5];
  return "LLVM " + version + ", " + parts[1] + ", cpu " + parts[2] + ", " + lanes + " float lanes";
}

int run_devices() {
  // Collected first, so that an error (a bad GRAFT_CACHE_DIR) is all it prints.
  std::vector<std::pair<std::string, std::string>> lines;
  auto line = [&](const std::string& what, const std::string& text) { lines.emplace_back(what, text); };
  line("cpu", std::string(runtime::host_architecture()) + ", " + std::to_string(default_num_threads()) +
                  " threads (GRAFT_NUM_THREADS or the cores), features: " +
                  runtime::cpu_feature_names(runtime::host_cpu_features()));
  for (const backend::Backend* backend : backend::all_backends()) {
    std::string why = backend->unavailable_reason();
    line("backend " + backend->name(),
         why.empty() ? std::string(backend->in_default_order() ? "available" : "available when named (--backends)")
                     : "unavailable: " + why);
  }
  std::string jit = codegen::cpu_jit_unavailable_reason();
  if (!codegen::jit_enabled_by_environment())
    line("fused kernels", "interpreter (GRAFT_JIT=0)");
  else
    line("fused kernels", jit.empty() ? "LLVM JIT: " + describe_jit_target(codegen::cpu_jit_target())
                                      : "interpreter (LLVM JIT unavailable: " + jit + ")");
  std::optional<std::string> cache = codegen::cache_directory_from_environment();
  line("compile cache", cache ? "memory and " + *cache + " (GRAFT_CACHE_DIR)" : "memory (GRAFT_CACHE_DIR unset)");
  // CUDA: the driver and devices (the `cuda` DeviceAPI's cuda:N), then each
  // library the backend opens at run time, with its version or why it is missing.
  std::string nvrtc = codegen::nvrtc_unavailable_reason();
  std::string driver = codegen::cuda_driver().error;
  std::string driver_version = codegen::cuda_driver_version();
  line("cuda driver", driver.empty() ? "CUDA " + driver_version + " (libcuda.so.1)"
                                     : "unavailable: " + driver +
                                           (driver_version.empty() ? "" : " (driver CUDA " + driver_version + ")"));
  line("cuda nvrtc", nvrtc.empty() ? "NVRTC " + codegen::nvrtc_version() +
                                         (driver.empty() ? ", kernels for " + codegen::cuda_device_architecture()
                                                         : ", kernels compile (no device to run them)")
                                   : "unavailable: " + nvrtc);
  std::string cublas = codegen::cublas_unavailable_reason();
  line("cuda cublas", cublas.empty() ? "cuBLAS " + codegen::cublas_version() : "unavailable: " + cublas);
  std::string cudnn = codegen::cudnn_unavailable_reason();
  line("cuda cudnn", cudnn.empty() ? "cuDNN " + codegen::cudnn_version() + " (found; the backend's kernels do not use it yet)"
                                   : "unavailable: " + cudnn);
  backend::DeviceAPI& gpus = backend::device_api(DeviceType::cuda);
  for (int id = 0; id < gpus.device_count(); ++id) {
    backend::DeviceProperties p = gpus.properties(id);
    line(to_string(Device{DeviceType::cuda, id}), p.name + " (" + p.version + "), " +
                                                      backend::format_bytes(p.global_memory_bytes) + " memory, " +
                                                      std::to_string(p.compute_units) + " multiprocessors");
  }
  std::string opencl = codegen::opencl_unavailable_reason();
  line("opencl", opencl.empty() ? "kernels on " + codegen::opencl_device_description() : "no device (" + opencl + ")");
  backend::DeviceAPI& devices = backend::device_api(DeviceType::opencl);
  for (int id = 0; id < devices.device_count(); ++id) {
    backend::DeviceProperties p = devices.properties(id);
    line(to_string(Device{DeviceType::opencl, id}),
         p.platform + ": " + p.name + " (" + p.kind + (p.version.empty() ? "" : ", " + p.version) + "), " +
             backend::format_bytes(p.global_memory_bytes) + " global memory (largest allocation " +
             backend::format_bytes(p.max_allocation_bytes) + "), " + std::to_string(p.compute_units) +
             " compute units");
  }
  for (const auto& [what, text] : lines)
    std::cout << what << std::string(what.size() < 18 ? 18 - what.size() : 1, ' ') << text << "\n";
  return 0;
}

std::function<int()> setup_devices(CLI::App& app) {
  app.add_subcommand("devices",
                     "what this machine offers graft: CPU, backends, the fused-kernel JIT and its cache, CUDA, OpenCL");
  return [] { return run_devices(); };
}

}  // namespace

GRAFT_CLI_COMMAND(setup_devices);

}  // namespace graft::cli

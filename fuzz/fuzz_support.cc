#include "fuzz_support.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "graft/core/dtype.h"
#include "graft/core/shape.h"
#include "graft/core/tensor.h"
#include "graft/frontend/load_model.h"

namespace graft::fuzz {

namespace {

/// Small values of every kind a kernel meets: zero, negatives, fractions,
/// and integers that are valid indices into short axes.
template <typename T>
T pattern_value(int64_t i) {
  if constexpr (std::is_same_v<T, bool>) {
    return i % 3 == 1;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(i % 3);
  } else {
    return T(static_cast<float>(i % 7 - 3) * 0.5f);
  }
}

Tensor pattern_tensor(DType dtype, const Shape& shape, const std::string& name, size_t& budget) {
  size_t nbytes = shape_nbytes(shape, std::max<size_t>(dtype_size(dtype), 1), "fuzzed input '" + name + "'");
  if (nbytes > budget)
    fail(ErrorKind::resource_exhausted, "fuzzed input '", name, "' of shape ", shape_to_string(shape),
         " exceeds the inputs' budget");
  budget -= nbytes;
  Tensor tensor(dtype, shape);
  visit_dtype(dtype, "fuzzed input '" + name + "'", [&]<typename T>() {
    T* data = tensor.data<T>();
    for (int64_t i = 0; i < tensor.numel(); ++i) data[i] = pattern_value<T>(i);
  });
  return tensor;
}

/// The type a model's input is generated at: symbolic dimensions 1, an unknown rank [1].
ir::ValueType small_type(const ir::ValueType& declared) {
  ir::ValueType type = declared;
  if (!type.has_rank) {
    type.has_rank = true;
    type.dims = {ir::Dim::known(1)};
  }
  for (ir::Dim& dim : type.dims)
    if (!dim.is_known()) dim = ir::Dim::known(1);
  return type;
}

/// An input of `type`: none for an optional, a one-item sequence for a sequence.
Tensor generated_input(const ir::ValueType& type, const std::string& name, size_t& budget) {
  if (type.optional) return Tensor::none(type.dtype);
  Shape shape;
  for (const ir::Dim& dim : type.dims) shape.push_back(dim.value);
  if (type.sequence) return Tensor::sequence(type.dtype, {pattern_tensor(type.dtype, shape, name, budget)});
  return pattern_tensor(type.dtype, shape, name, budget);
}

}  // namespace

void prepare_fuzzing_process() {
  for (const char* name : {"GRAFT_BACKENDS", "GRAFT_FUSION", "GRAFT_MAX_PLANS", "GRAFT_MAX_MEMORY", "GRAFT_CACHE_DIR",
                           "GRAFT_JIT_LANES", "GRAFT_DNNL_VERBOSE", "GRAFT_CUDA_TF32"})
    ::unsetenv(name);
  ::setenv("GRAFT_JIT", "0", 1);
  ::setenv("GRAFT_NUM_THREADS", "1", 1);
}

runtime::SessionOptions fuzzing_session_options() {
  runtime::SessionOptions options;
  options.num_threads = 1;
  options.max_memory = kRunMemoryLimit;
  return options;
}

void run_at_types(const runtime::Session& session, const std::vector<ir::ValueType>& types) {
  size_t budget = kMaxInputBytes;
  std::vector<Tensor> inputs;
  try {
    for (size_t i = 0; i < types.size() && i < session.inputs().size(); ++i)
      inputs.push_back(generated_input(types[i], session.inputs()[i].name, budget));
  } catch (const Error& error) {
    if (error.kind() == ErrorKind::resource_exhausted) return;  // too large to run here; loading was checked
    throw;
  }
  backend::RunLimits limits;
  limits.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kRunDeadlineMilliseconds);
  session.run(inputs, limits);
}

void run_on_small_inputs(const runtime::Session& session) {
  std::vector<ir::ValueType> types;
  for (const runtime::ValueInfo& info : session.inputs()) types.push_back(small_type(info.type));
  run_at_types(session, types);
}

void load_plan_and_run(std::string_view model_bytes) {
  std::unique_ptr<runtime::Session> session = frontend::load_model_from_memory(model_bytes, fuzzing_session_options());
  run_on_small_inputs(*session);
}

const std::string& scratch_directory() {
  static const std::string directory = [] {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("graft-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
    return path.string();
  }();
  return directory;
}

std::string write_scratch_file(std::string_view bytes, const std::string& suffix) {
  std::string path = scratch_directory() + "/input" + suffix;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

}  // namespace graft::fuzz

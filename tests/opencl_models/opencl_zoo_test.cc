// Whole zoo models on the OpenCL device (PoCL here) against the same models
// on graft's CPU backends: every node on the device, the input copied in and
// the output copied out and nothing else, and outputs within rtol 1e-4.
// Label `models` (minutes under a sanitizer, so not in the unit set).
#include <gtest/gtest.h>

#include <random>

#include "graft/codegen/opencl_runtime.h"
#include "graft/frontend/load_model.h"
#include "graft/runtime/session.h"
#include "graft/zoo/zoo.h"

namespace graft::testing {
namespace {

Tensor random_input(const runtime::ValueInfo& info, uint64_t seed) {
  Shape shape;
  for (const ir::Dim& d : info.type.dims) shape.push_back(d.is_known() ? d.value : 1);
  Tensor t(info.type.dtype, shape);
  std::mt19937_64 rng(seed);
  if (info.type.dtype == DType::int64) {
    std::uniform_int_distribution<int64_t> ids(0, 999);
    for (int64_t& v : std::span<int64_t>(t.data<int64_t>(), static_cast<size_t>(t.numel()))) v = ids(rng);
  } else {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (float& v : std::span<float>(t.data<float>(), static_cast<size_t>(t.numel()))) v = dist(rng);
  }
  return t;
}

class OpenClZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(OpenClZoo, RunsWhollyOnTheDeviceAndMatchesTheCpu) {
  if (std::string why = codegen::opencl_runtime_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const std::string bytes = zoo::build_zoo_model(GetParam());
  runtime::SessionOptions cpu_options;
  cpu_options.num_threads = 2;
  std::unique_ptr<runtime::Session> cpu = frontend::load_model_from_memory(bytes, cpu_options);
  runtime::SessionOptions device_options = cpu_options;
  device_options.device = Device{DeviceType::opencl, 0};
  std::unique_ptr<runtime::Session> device = frontend::load_model_from_memory(bytes, device_options);

  std::vector<Tensor> inputs;
  uint64_t input_bytes = 0;
  for (const runtime::ValueInfo& info : cpu->inputs()) {
    inputs.push_back(random_input(info, 7 + inputs.size()));
    input_bytes += inputs.back().nbytes();
  }
  std::vector<Tensor> want = cpu->run(inputs);
  backend::RunStats stats;
  std::vector<Tensor> got = device->run(inputs, &stats);

  std::vector<ir::ValueType> types;
  for (const Tensor& t : inputs) types.push_back(ir::ValueType::of(t.dtype(), t.shape()));
  partition::PartitionReport report = device->partition_report_for(types);
  std::map<std::string, size_t> per_backend = report.nodes_per_backend();
  size_t elsewhere = 0;
  for (const auto& [backend, count] : per_backend)
    if (backend != "opencl") elsewhere += count;
  EXPECT_EQ(elsewhere, 0u) << report.to_text();
  uint64_t output_bytes = 0;
  for (const Tensor& t : want) output_bytes += t.nbytes();
  EXPECT_EQ(stats.bytes_to_device, input_bytes) << "only the inputs go to the device";
  EXPECT_EQ(stats.bytes_to_host, output_bytes) << "only the outputs come back";

  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape());
    double largest = 0;
    for (int64_t k = 0; k < want[i].numel(); ++k) largest = std::max(largest, std::abs(want[i].value_as_double(k)));
    const double atol = 1e-4 * largest;
    size_t bad = 0;
    for (int64_t k = 0; k < want[i].numel(); ++k) {
      double a = got[i].value_as_double(k), b = want[i].value_as_double(k);
      if (std::abs(a - b) > atol + 1e-4 * std::abs(b) && bad++ < 5)
        ADD_FAILURE() << GetParam() << " output " << i << " element " << k << ": device " << a << ", cpu " << b;
    }
    EXPECT_EQ(bad, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, OpenClZoo, ::testing::Values("resnet50", "mobilenet_v2", "squeezenet", "bert"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace graft::testing

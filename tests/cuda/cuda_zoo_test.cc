// Whole zoo models on the CUDA device against the same models on graft's CPU
// backends (rtol 1e-4, TF32 off): resnet50, bert, the residual GRU, the GRU
// cell, mobilenet_v2 and the MLP; every node of each is on the device (a
// stand-in driver shows the partition here: cuda_fake_kernels_test.cc).
// Without a device each skips with "no CUDA device: <reason>".
#include <gtest/gtest.h>

#include <random>

#include "cuda_test_util.h"
#include "graft/frontend/load_model.h"
#include "graft/runtime/session.h"
#include "graft/zoo/zoo.h"

namespace graft::testing {
namespace {

Tensor random_input(const runtime::ValueInfo& info, uint64_t seed, int64_t batch) {
  Shape shape;
  for (const ir::Dim& d : info.type.dims) shape.push_back(d.is_known() ? d.value : batch);
  Tensor t(info.type.dtype, shape);
  std::mt19937_64 rng(seed);
  if (info.type.dtype == DType::int64) {
    std::uniform_int_distribution<int64_t> ids(0, 999);
    for (int64_t k = 0; k < t.numel(); ++k) t.data<int64_t>()[k] = ids(rng);
  } else {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (int64_t k = 0; k < t.numel(); ++k) t.data<float>()[k] = dist(rng);
  }
  return t;
}

class CudaZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaZoo, MatchesTheCpu) {
  GRAFT_REQUIRE_CUDA();
  const std::string bytes = zoo::build_zoo_model(GetParam());
  runtime::SessionOptions cpu_options;
  cpu_options.num_threads = 4;
  std::unique_ptr<runtime::Session> cpu = frontend::load_model_from_memory(bytes, cpu_options);
  runtime::SessionOptions device_options = cpu_options;
  device_options.device = Device{DeviceType::cuda, 0};
  std::unique_ptr<runtime::Session> device = frontend::load_model_from_memory(bytes, device_options);
  std::vector<Tensor> inputs;
  for (const runtime::ValueInfo& info : cpu->inputs()) inputs.push_back(random_input(info, 7 + inputs.size(), 2));
  std::vector<Tensor> want = cpu->run(inputs);
  std::vector<Tensor> got = device->run(inputs);
  std::vector<ir::ValueType> types;
  for (const Tensor& t : inputs) types.push_back(ir::ValueType::of(t.dtype(), t.shape()));
  partition::PartitionReport report = device->partition_report_for(types);
  size_t elsewhere = 0;
  for (const auto& [backend, count] : report.nodes_per_backend()) elsewhere += backend == "cuda" ? 0 : count;
  EXPECT_EQ(elsewhere, 0u) << report.to_text();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape());
    double largest = 0;
    for (int64_t k = 0; k < want[i].numel(); ++k) largest = std::max(largest, std::abs(want[i].value_as_double(k)));
    size_t bad = 0;
    for (int64_t k = 0; k < want[i].numel(); ++k) {
      double a = got[i].value_as_double(k), b = want[i].value_as_double(k);
      if (std::abs(a - b) > 1e-4 * largest + 1e-4 * std::abs(b) && bad++ < 5)
        ADD_FAILURE() << GetParam() << " output " << i << " element " << k << ": cuda " << a << ", cpu " << b;
    }
    EXPECT_EQ(bad, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, CudaZoo, ::testing::Values("resnet50", "bert", "gru", "gru_cell", "mobilenet_v2", "mlp"));

}  // namespace
}  // namespace graft::testing

// The CUDA DeviceAPI and backend on the stand-in driver (fake_libcuda.cc:
// host memory, no kernels), so that their own code runs on machines without
// a GPU. Run by the ctest entry cuda_fake_driver, which puts the stand-in
// first on LD_LIBRARY_PATH and sets GRAFT_TEST_FAKE_LIBCUDA=1; skipped
// otherwise (a real driver, or none). What compiles kernels needs NVRTC (the
// CUDA toolkit, not a Debian package): without it those tests skip, naming it.
#include <gtest/gtest.h>

#include <cstdlib>

#include "cuda_test_util.h"
#include "graft/backend/device_tensor.h"
#include "graft/runtime/session.h"

namespace graft::testing {
namespace {

TEST(CudaFakeDriver, TheDeviceApiDescribesAndServesTheDevice) {
  GRAFT_REQUIRE_FAKE_LIBCUDA();
  backend::DeviceAPI& api = backend::device_api(DeviceType::cuda);
  ASSERT_EQ(api.unavailable_reason(), "");
  ASSERT_EQ(api.device_count(), 1);
  backend::DeviceProperties p = api.properties(0);
  EXPECT_EQ(p.name, "graft fake CUDA device");
  EXPECT_EQ(p.platform, "NVIDIA CUDA driver 13.0");
  EXPECT_EQ(p.version, "compute capability 9.0");
  EXPECT_EQ(p.kind, "gpu");
  EXPECT_EQ(p.global_memory_bytes, uint64_t{1} << 30);
  EXPECT_EQ(p.compute_units, 2u);
  EXPECT_THROW(api.properties(1), Error);

  // Copies at offsets through a device tensor, and events between two queues.
  std::shared_ptr<backend::DeviceQueue> q1 = api.create_profiled_queue(0), q2 = api.create_queue(0);
  Tensor host = random_tensor({256}, 1);
  Tensor a = backend::make_device_tensor(DType::float32, {256}, Device{DeviceType::cuda, 0}, q1);
  Tensor b = backend::make_device_tensor(DType::float32, {256}, Device{DeviceType::cuda, 0}, q2);
  std::unique_ptr<backend::DeviceEvent> begin = api.record_event(*q1);
  api.copy_to_device(*q1, backend::device_buffer(a), 0, host.raw_data(), 512);
  api.copy_to_device(*q1, backend::device_buffer(a), 512, host.data<float>() + 128, 512);
  std::unique_ptr<backend::DeviceEvent> end = api.record_event(*q1);
  api.wait_event(*q2, *end);
  api.copy_on_device(*q2, backend::device_buffer(b), 0, backend::device_buffer(a), 0, 1024);
  expect_close(backend::copy_to_host(b, *q2), host, 0, 0);
  EXPECT_TRUE(api.event_completed(*end));
  EXPECT_EQ(api.elapsed_microseconds(*begin, *end), 0.0);  // a profiled queue's events are timed
  std::unique_ptr<backend::DeviceEvent> plain = api.record_event(*q2);
  EXPECT_LT(api.elapsed_microseconds(*plain, *plain), 0.0);  // a plain queue's are not
  // The driver's out-of-memory status is the pool's clear error.
  try {
    api.allocate(Device{DeviceType::cuda, 0}, size_t{3} << 30);
    ADD_FAILURE() << "3 GiB on a 1 GiB device";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of device memory on cuda:0"), std::string::npos) << e.what();
  }
}

TEST(CudaFakeDriver, TheBackendPlacesTheModelAndAKernelThatCannotLoadIsAClearError) {
  GRAFT_REQUIRE_FAKE_LIBCUDA();
  GRAFT_REQUIRE_NVRTC();  // the backend compiles its kernels before it loads them
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  ir::Value x = g->add_input("x", ir::ValueType::of(DType::float32, {4, 64}))->output(0);
  ir::Value axis = g->add_constant("axis", Tensor::scalar<int64_t>(1))->output(0);
  ir::Value r = g->add_node("Relu", {x}, 1, "relu")->output(0);
  ir::Value c = g->add_node("CumSum", {r, axis}, 1, "cumsum")->output(0);
  g->add_output(g->add_node("Exp", {c}, 1, "exp")->output(0), "y");
  for (const auto& n : g->nodes()) n->opset_version = 17;
  ops::infer_types(*g);
  runtime::SessionOptions options;
  options.device = Device{DeviceType::cuda, 0};
  runtime::Session session(std::move(g), options);
  const partition::PartitionReport& report = session.partition_report();
  EXPECT_EQ(report.nodes_per_backend()["cuda"], 2u) << report.to_text();
  bool to_device = false;
  for (const partition::DeviceCopy& copy : report.copies) to_device |= copy.to == "cuda:0";
  EXPECT_TRUE(to_device) << report.to_text();
  try {
    session.run({random_tensor({4, 64}, 2)});
    ADD_FAILURE() << "a kernel ran on the stand-in driver";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuModuleLoadData"), std::string::npos) << e.what();
  }
}

TEST(CudaFakeDriver, GraftDevicesListsTheDevice) {
  GRAFT_REQUIRE_FAKE_LIBCUDA();
  const std::string graft = std::string(GRAFT_BINARY_DIR) + "/bin/graft";
  const std::string out = ::testing::TempDir() + "/cuda_fake_devices.txt";
  ASSERT_EQ(std::system((graft + " devices > " + out + " 2>&1").c_str()), 0);
  std::FILE* f = std::fopen(out.c_str(), "rb");
  ASSERT_TRUE(f);
  std::string text(8192, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), f));
  std::fclose(f);
  EXPECT_NE(text.find("cuda driver       CUDA 13.0"), std::string::npos) << text;
  EXPECT_NE(text.find("cuda:0            graft fake CUDA device (compute capability 9.0), 1 GiB memory, 2 multiprocessors"),
            std::string::npos)
      << text;
  // Without the CUDA toolkit (a fresh Debian machine) the device is listed
  // and the backend says what it lacks.
  const std::string nvrtc_missing = codegen::nvrtc_unavailable_reason();
  if (!nvrtc_missing.empty()) {
    EXPECT_NE(text.find("backend cuda      unavailable: no NVRTC: " + nvrtc_missing), std::string::npos) << text;
    return;
  }
  EXPECT_NE(text.find("backend cuda      available when named"), std::string::npos) << text;
  EXPECT_NE(text.find("kernels for compute_90"), std::string::npos) << text;
  // A driver older than NVRTC: the backend refuses up front, saying why.
  ASSERT_EQ(std::system(("GRAFT_FAKE_CUDA_DRIVER_VERSION=12040 " + graft + " devices > " + out + " 2>&1").c_str()), 0);
  f = std::fopen(out.c_str(), "rb");
  ASSERT_TRUE(f);
  text.assign(8192, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), f));
  std::fclose(f);
  EXPECT_NE(text.find("backend cuda      unavailable: the CUDA driver (12.4) is older than NVRTC (13.0)"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace graft::testing

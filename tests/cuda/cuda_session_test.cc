// The CUDA device through a Session and the graft tool. Without a device
// (this machine, CI): the DeviceAPI reports no devices with the reason,
// --device cuda and SessionOptions::device are a clear error, and with
// GRAFT_BACKENDS=cuda,ref the backend declines with the reason and the CPU
// runs the model. With a device: a split model (copies at both boundaries)
// against the host, weights uploaded once and again after a change,
// concurrent runs on their own streams, an injected allocation failure, and
// profiled runs' kernel times.
#include <gtest/gtest.h>

#include <cstdio>
#include <thread>

#include "cuda/cuda_module.h"
#include "cuda_test_util.h"
#include "graft/backend/device_tensor.h"
#include "graft/runtime/session.h"

namespace graft::testing {
namespace {

runtime::SessionOptions cuda_options() {
  runtime::SessionOptions options;
  options.device = Device{DeviceType::cuda, 0};
  options.num_threads = 2;
  return options;
}

/// x[4,64] -> Relu -> Add(W) -> CumSum (no CUDA kernel) -> Mul -> Exp -> Mul(x) -> y
std::unique_ptr<ir::Graph> split_model(Tensor weight) {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  ir::Value x = g->add_input("x", ir::ValueType::of(DType::float32, {4, 64}))->output(0);
  ir::Value w = g->add_constant("W", std::move(weight))->output(0);
  ir::Value axis = g->add_constant("axis", Tensor::scalar<int64_t>(1))->output(0);
  ir::Value r = g->add_node("Relu", {x}, 1, "relu")->output(0);
  ir::Value a = g->add_node("Add", {r, w}, 1, "add")->output(0);
  ir::Value c = g->add_node("CumSum", {a, axis}, 1, "cumsum")->output(0);
  ir::Value s =
      g->add_node("Mul", {c, g->add_constant("scale", Tensor::scalar<float>(-0.05f))->output(0)}, 1, "scale")->output(0);
  ir::Value e = g->add_node("Exp", {s}, 1, "exp")->output(0);
  ir::Value y = g->add_node("Mul", {e, x}, 1, "mul")->output(0);
  g->add_output(y, "y");
  for (const auto& n : g->nodes()) n->opset_version = 17;
  ops::infer_types(*g);
  return g;
}

std::string read_text(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return {};
  std::string text;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) text.append(buffer, n);
  std::fclose(f);
  return text;
}

// ---- without a device ---------------------------------------------------------

TEST(CudaDevice, WithoutADeviceTheDeviceApiReportsNoneAndWhy) {
  backend::DeviceAPI& api = backend::device_api(DeviceType::cuda);
  EXPECT_EQ(api.type(), DeviceType::cuda);
  if (api.device_count() > 0) GTEST_SKIP() << "a CUDA device is here: " << api.properties(0).name;
  std::string why = api.unavailable_reason();
  EXPECT_FALSE(why.empty());
  EXPECT_TRUE(why.find("libcuda.so.1 not found") != std::string::npos || why.find("no CUDA device") != std::string::npos ||
              why.find("cuInit") != std::string::npos)
      << why;
  try {
    api.create_queue(0);
    ADD_FAILURE() << "a queue on cuda:0 without a device";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no device cuda:0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
  EXPECT_THROW(api.allocate(Device{DeviceType::cuda, 0}, 64), Error);
  EXPECT_THROW(api.properties(0), Error);
  // The backend says the same.
  const backend::Backend* cuda = nullptr;
  for (const backend::Backend* b : backend::all_backends())
    if (b->name() == "cuda") cuda = b;
  ASSERT_NE(cuda, nullptr);
  EXPECT_EQ(cuda->device().type, DeviceType::cuda);
  EXPECT_FALSE(cuda->in_default_order());
  EXPECT_NE(cuda->unavailable_reason().find(why), std::string::npos);
}

TEST(CudaDevice, WithoutADeviceSessionOptionsDeviceCudaIsAClearError) {
  std::string missing = cuda_device_missing();
  if (missing.empty()) GTEST_SKIP() << "a CUDA device is here";
  try {
    runtime::Session session(split_model(random_tensor({64}, 1)), cuda_options());
    ADD_FAILURE() << "a session on cuda:0 without a device";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("device cuda:0 is unavailable: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  EXPECT_EQ(runtime::parse_device("cuda:0").type, DeviceType::cuda);
  EXPECT_EQ(runtime::parse_device("cuda").id, 0);
}

TEST(CudaFaults, WithoutADeviceTheToolRefusesTheDeviceAndTheBackendsFallBack) {
  std::string missing = cuda_device_missing();
  if (missing.empty()) GTEST_SKIP() << "a CUDA device is here";
  const std::string graft = std::string(GRAFT_BINARY_DIR) + "/bin/graft";
  const std::string dir = ::testing::TempDir();
  const std::string model = dir + "/cuda_fault_mlp.onnx", out = dir + "/cuda_fault_out.txt";
  ASSERT_EQ(std::system((graft + " zoo mlp -o " + model + " > /dev/null").c_str()), 0);
  // Asked for the device: a clear error naming why it is unavailable.
  int rc = std::system((graft + " run " + model + " --device cuda --shape input=1,784 > " + out + " 2>&1").c_str());
  std::string text = read_text(out);
  EXPECT_NE(rc, 0) << text;
  EXPECT_NE(text.find("device cuda:0 is unavailable: " + missing), std::string::npos) << text;
  // Named among others: the backend declines with the reason, the CPU runs the model.
  rc = std::system(("GRAFT_BACKENDS=cuda,ref " + graft + " partition " + model + " > " + out + " 2>&1").c_str());
  text = read_text(out);
  EXPECT_EQ(rc, 0) << text;
  EXPECT_NE(text.find("cuda: 0 nodes"), std::string::npos) << text;
  EXPECT_NE(text.find("unavailable: " + missing), std::string::npos) << text;
  rc = std::system(("GRAFT_BACKENDS=cuda,ref " + graft + " run " + model + " --shape input=1,784 > " + out + " 2>&1").c_str());
  EXPECT_EQ(rc, 0) << read_text(out);
  // graft devices says what it found and what it lacks.
  rc = std::system((graft + " devices > " + out + " 2>&1").c_str());
  text = read_text(out);
  EXPECT_EQ(rc, 0) << text;
  EXPECT_NE(text.find("cuda driver       unavailable: " + missing), std::string::npos) << text;
  EXPECT_NE(text.find("cuda nvrtc"), std::string::npos) << text;
  EXPECT_NE(text.find("cuda cublas"), std::string::npos) << text;
  EXPECT_NE(text.find("cuda cudnn"), std::string::npos) << text;
}

// ---- with a device --------------------------------------------------------------

TEST(CudaSession, SplitModelCopiesAtBothBoundariesAndMatchesTheHost) {
  GRAFT_REQUIRE_CUDA();
  Tensor weight = random_tensor({64}, 3);
  std::vector<Tensor> inputs{random_tensor({4, 64}, 4)};
  std::vector<Tensor> want = run_graph(*split_model(weight), inputs);
  runtime::Session session(split_model(weight), cuda_options());
  const partition::PartitionReport& report = session.partition_report();
  bool to_device = false, to_host = false;
  for (const partition::DeviceCopy& c : report.copies) {
    to_device |= c.to == "cuda:0";
    to_host |= c.to == "cpu:0";
  }
  EXPECT_TRUE(to_device && to_host) << report.to_text();
  backend::RunStats stats;
  std::vector<Tensor> got = session.run(inputs, &stats);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FALSE(got[0].on_device());
  expect_close(got[0], want[0], 1e-5, 1e-6);
  EXPECT_EQ(stats.bytes_to_device, 2u * 4 * 64 * 4);
  EXPECT_EQ(stats.bytes_to_host, 2u * 4 * 64 * 4);
}

TEST(CudaSession, WeightsAreUploadedOnceAndAgainWhenTheyChange) {
  GRAFT_REQUIRE_CUDA();
  Tensor weight = random_tensor({64}, 5);
  std::vector<Tensor> inputs{random_tensor({4, 64}, 6)};
  runtime::Session session(split_model(weight), cuda_options());
  session.run(inputs);
  const uint64_t after_first = backend::weight_uploads(DeviceType::cuda);
  for (int i = 0; i < 3; ++i) session.run(inputs);
  EXPECT_EQ(backend::weight_uploads(DeviceType::cuda), after_first) << "weights stay resident between runs";
  Tensor changed = random_tensor({64}, 7);
  weight.copy_from(changed);  // the session shares the weight's storage; its version moves
  std::vector<Tensor> got = session.run(inputs);
  EXPECT_GT(backend::weight_uploads(DeviceType::cuda), after_first);
  expect_close(got[0], run_graph(*split_model(changed), inputs)[0], 1e-5, 1e-6);
}

TEST(CudaSession, ConcurrentRunsOnTheirOwnStreamsAgreeWithSequentialRuns) {
  GRAFT_REQUIRE_CUDA();
  runtime::Session session(split_model(random_tensor({64}, 8)), cuda_options());
  std::vector<Tensor> a{random_tensor({4, 64}, 9)}, b{random_tensor({4, 64}, 10)};
  std::vector<Tensor> want_a = session.run(a), want_b = session.run(b);
  std::vector<Tensor> got_a, got_b;
  for (int round = 0; round < 5; ++round) {
    std::thread ta([&] { got_a = session.run(a); });
    std::thread tb([&] { got_b = session.run(b); });
    ta.join();
    tb.join();
    expect_close(got_a[0], want_a[0], 0, 0);
    expect_close(got_b[0], want_b[0], 0, 0);
  }
}

TEST(CudaSession, AnInjectedAllocationFailureIsAClearErrorAndTheNextRunRecovers) {
  GRAFT_REQUIRE_CUDA();
  runtime::Session session(split_model(random_tensor({64}, 11)), cuda_options());
  backend::DeviceAPI& api = backend::device_api(DeviceType::cuda);
  api.empty_cache(0);
  api.set_memory_limit(0, 256);  // less than one value of the model
  try {
    session.run({random_tensor({4, 64}, 12)});
    ADD_FAILURE() << "the run fit in 256 bytes of device memory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of device memory on cuda:0"), std::string::npos) << e.what();
  }
  api.set_memory_limit(0, 0);
  EXPECT_EQ(session.run({random_tensor({4, 64}, 12)}).size(), 1u);
}

TEST(CudaDevice, CopiesStreamsAndEventsRoundTrip) {
  GRAFT_REQUIRE_CUDA();
  backend::DeviceAPI& api = backend::device_api(DeviceType::cuda);
  std::shared_ptr<backend::DeviceQueue> q1 = api.create_profiled_queue(0), q2 = api.create_queue(0);
  Tensor host = random_tensor({1024}, 13);
  Tensor t = backend::make_device_tensor(DType::float32, {1024}, Device{DeviceType::cuda, 0}, q1);
  Tensor u = backend::make_device_tensor(DType::float32, {1024}, Device{DeviceType::cuda, 0}, q2);
  std::unique_ptr<backend::DeviceEvent> begin = api.record_event(*q1);
  api.copy_to_device(*q1, backend::device_buffer(t), 0, host.raw_data(), host.nbytes());
  std::unique_ptr<backend::DeviceEvent> uploaded = api.record_event(*q1);
  api.wait_event(*q2, *uploaded);
  api.copy_on_device(*q2, backend::device_buffer(u), 0, backend::device_buffer(t), 0, host.nbytes());
  expect_close(backend::copy_to_host(u, *q2), host, 0, 0);
  api.synchronize(*uploaded);
  EXPECT_TRUE(api.event_completed(*uploaded));
  EXPECT_GE(api.elapsed_microseconds(*begin, *uploaded), 0.0);
  EXPECT_THROW(t.raw_data(), Error);
}

}  // namespace
}  // namespace graft::testing

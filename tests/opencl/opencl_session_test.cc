// Models on the OpenCL device through a Session: placement and copies at
// device boundaries, values kept on the device between device nodes,
// weights uploaded once, concurrent runs on one device, and faults (out of
// device memory, an unknown device).
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "graft/backend/device_api.h"
#include "graft/backend/device_tensor.h"
#include "graft/codegen/compile_cache.h"
#include "graft/runtime/session.h"
#include "opencl/opencl_module.h"
#include "support/scoped_env.h"
#include "opencl_test_util.h"

namespace graft::testing {
namespace {

runtime::SessionOptions opencl_options() {
  runtime::SessionOptions options;
  options.device = Device{DeviceType::opencl, 0};
  options.num_threads = 2;
  return options;
}

/// x[4,64] -> Relu -> Add(W) -> CumSum (no OpenCL kernel) -> Exp -> Mul(x) -> y
std::unique_ptr<ir::Graph> split_model(Tensor weight) {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  ir::Value x = g->add_input("x", ir::ValueType::of(DType::float32, {4, 64}))->output(0);
  ir::Value w = g->add_constant("W", std::move(weight))->output(0);
  ir::Value axis = g->add_constant("axis", Tensor::scalar<int64_t>(1))->output(0);
  ir::Value r = g->add_node("Relu", {x}, 1, "relu")->output(0);
  ir::Value a = g->add_node("Add", {r, w}, 1, "add")->output(0);
  ir::Value c = g->add_node("CumSum", {a, axis}, 1, "cumsum")->output(0);
  ir::Value s = g->add_node("Mul", {c, g->add_constant("scale", Tensor::scalar<float>(-0.05f))->output(0)}, 1, "scale")->output(0);
  ir::Value e = g->add_node("Exp", {s}, 1, "exp")->output(0);
  ir::Value y = g->add_node("Mul", {e, x}, 1, "mul")->output(0);
  g->add_output(y, "y");
  for (const auto& n : g->nodes()) n->opset_version = 17;
  ops::infer_types(*g);
  return g;
}

TEST(OpenClSession, SplitModelCopiesAtBothBoundariesAndMatchesTheHost) {
  GRAFT_REQUIRE_OPENCL();
  Tensor weight = random_tensor({64}, 3);
  std::vector<Tensor> inputs{random_tensor({4, 64}, 4)};
  std::vector<Tensor> want = run_graph(*split_model(weight), inputs);

  runtime::Session session(split_model(weight), opencl_options());
  const partition::PartitionReport& report = session.partition_report();
  // x goes to the device, the Add's result comes back for CumSum, CumSum's
  // result goes to the device again, and y comes back.
  ASSERT_GE(report.copies.size(), 4u) << report.to_text();
  bool to_device = false, to_host = false;
  for (const partition::DeviceCopy& c : report.copies) {
    to_device |= c.to == "opencl:0";
    to_host |= c.to == "cpu:0";
  }
  EXPECT_TRUE(to_device && to_host) << report.to_text();
  EXPECT_NE(report.to_text().find("device copies:"), std::string::npos);
  EXPECT_NE(report.to_json().find("device_copies"), std::string::npos);

  backend::RunStats stats;
  std::vector<Tensor> got = session.run(inputs, &stats);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FALSE(got[0].on_device());
  expect_close(got[0], want[0], 1e-5, 1e-6);
  // Each boundary value crosses once per run: x (1 KiB) in twice (for the
  // device's Relu and Mul it is copied once), CumSum's result in, y and the
  // Add's result out.
  EXPECT_EQ(stats.bytes_to_device, 2u * 4 * 64 * 4);
  EXPECT_EQ(stats.bytes_to_host, 2u * 4 * 64 * 4);
}

TEST(OpenClSession, WeightsAreUploadedOnceAndAgainWhenTheyChange) {
  GRAFT_REQUIRE_OPENCL();
  Tensor weight = random_tensor({64}, 5);
  runtime::Session session(split_model(weight), opencl_options());
  std::vector<Tensor> inputs{random_tensor({4, 64}, 6)};
  const uint64_t before = backend::weight_uploads(DeviceType::opencl);
  std::vector<Tensor> first;
  for (int i = 0; i < 5; ++i) first = session.run(inputs);
  const uint64_t per_session = backend::weight_uploads(DeviceType::opencl) - before;
  EXPECT_GE(per_session, 1u);
  EXPECT_LE(per_session, 3u);  // W (and the scalar constants a body may keep)
  for (int i = 0; i < 5; ++i) session.run(inputs);
  EXPECT_EQ(backend::weight_uploads(DeviceType::opencl) - before, per_session) << "runs after the first uploaded weights again";

  // A changed weight (Tensor::copy_from bumps its version) is uploaded again and used.
  Tensor new_weight = random_tensor({64}, 7);
  weight.copy_from(new_weight);
  std::vector<Tensor> got = session.run(inputs);
  EXPECT_GT(backend::weight_uploads(DeviceType::opencl) - before, per_session);
  std::vector<Tensor> want = run_graph(*split_model(new_weight), inputs);
  expect_close(got[0], want[0], 1e-5, 1e-6);
}

TEST(OpenClSession, ConcurrentRunsOnOneDeviceAgreeWithSequentialRuns) {
  GRAFT_REQUIRE_OPENCL();
  Tensor weight = random_tensor({64}, 8);
  runtime::Session a(split_model(weight), opencl_options());
  runtime::Session b(split_model(weight), opencl_options());
  std::vector<std::vector<Tensor>> inputs;
  std::vector<Tensor> want;
  for (int i = 0; i < 8; ++i) {
    inputs.push_back({random_tensor({4, 64}, 100 + static_cast<uint64_t>(i))});
    want.push_back(a.run(inputs.back())[0]);
  }
  std::vector<Tensor> got_a(8), got_b(8);
  std::thread ta([&] { for (int i = 0; i < 8; ++i) got_a[static_cast<size_t>(i)] = a.run(inputs[static_cast<size_t>(i)])[0]; });
  std::thread tb([&] { for (int i = 7; i >= 0; --i) got_b[static_cast<size_t>(i)] = b.run(inputs[static_cast<size_t>(i)])[0]; });
  ta.join();
  tb.join();
  for (size_t i = 0; i < 8; ++i) {
    expect_close(got_a[i], want[i], 0, 0);
    expect_close(got_b[i], want[i], 0, 0);
  }
}

TEST(OpenClSession, OutOfDeviceMemoryIsAClearError) {
  GRAFT_REQUIRE_OPENCL();
  runtime::Session session(split_model(random_tensor({64}, 9)), opencl_options());
  backend::DeviceAPI& api = backend::device_api(DeviceType::opencl);
  api.empty_cache(0);
  api.set_memory_limit(0, 256);  // less than one value of the model
  try {
    session.run({random_tensor({4, 64}, 10)});
    ADD_FAILURE() << "the run fit in 256 bytes of device memory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of device memory on opencl:0"), std::string::npos) << e.what();
  }
  api.set_memory_limit(0, 0);
  EXPECT_EQ(session.run({random_tensor({4, 64}, 10)}).size(), 1u);  // and it recovers
}

TEST(OpenClSession, UnknownDevicesAndBadDeviceTextAreRefused) {
  EXPECT_THROW(runtime::parse_device("gpu"), Error);
  EXPECT_THROW(runtime::parse_device("opencl:x"), Error);
  EXPECT_THROW(runtime::parse_device("opencl:"), Error);
  EXPECT_EQ(runtime::parse_device("opencl:1").id, 1);
  EXPECT_EQ(runtime::parse_device("opencl").type, DeviceType::opencl);
  GRAFT_REQUIRE_OPENCL();
  runtime::SessionOptions options = opencl_options();
  options.device.id = 99;
  try {
    runtime::Session session(split_model(random_tensor({64}, 11)), options);
    session.run({random_tensor({4, 64}, 12)});
    ADD_FAILURE() << "opencl:99 ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("opencl:99"), std::string::npos) << e.what();
  }
}

TEST(OpenClSession, DeviceTensorsRefuseHostAccess) {
  GRAFT_REQUIRE_OPENCL();
  backend::DeviceAPI& api = backend::device_api(DeviceType::opencl);
  std::shared_ptr<backend::DeviceQueue> queue = api.create_queue(0);
  Tensor t = backend::make_device_tensor(DType::float32, {2, 3}, Device{DeviceType::opencl, 0}, queue);
  EXPECT_TRUE(t.on_device());
  EXPECT_THROW(t.raw_data(), Error);
  EXPECT_THROW(t.clone(), Error);
  Tensor host = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  api.copy_to_device(*queue, backend::device_buffer(t), 0, host.raw_data(), host.nbytes());
  expect_close(backend::copy_to_host(t, *queue), host, 0, 0);
  EXPECT_THROW(Tensor(DType::float32, {2}, Device{DeviceType::opencl, 0}), Error);
}

}  // namespace
}  // namespace graft::testing

namespace graft::testing {
namespace {

std::string read_text(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return {};
  std::string text;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) text.append(buffer, n);
  std::fclose(f);
  return text;
}

TEST(OpenClFaults, WithoutAnOpenClPlatformTheDeviceIsRefusedAndTheBackendsFallBack) {
  const std::string graft = std::string(GRAFT_BINARY_DIR) + "/bin/graft";
  const std::string dir = ::testing::TempDir();
  const std::string model = dir + "/opencl_fault_mlp.onnx", out = dir + "/opencl_fault_out.txt";
  ASSERT_EQ(std::system((graft + " zoo mlp -o " + model + " > /dev/null").c_str()), 0);
  // Asked for the device: a clear error naming why it is unavailable.
  int rc = std::system(("OCL_ICD_VENDORS=/nonexistent " + graft + " run " + model +
                        " --device opencl --shape input=1,784 > " + out + " 2>&1").c_str());
  std::string text = read_text(out);
  EXPECT_NE(rc, 0) << text;
  EXPECT_NE(text.find("opencl:0 is unavailable"), std::string::npos) << text;
  EXPECT_NE(text.find("no OpenCL platform"), std::string::npos) << text;
  // Named among others: the backend declines with the reason, the CPU runs the model.
  rc = std::system(("OCL_ICD_VENDORS=/nonexistent GRAFT_BACKENDS=opencl,ref " + graft + " partition " + model +
                    " > " + out + " 2>&1").c_str());
  text = read_text(out);
  EXPECT_EQ(rc, 0) << text;
  EXPECT_NE(text.find("opencl: 0 nodes"), std::string::npos) << text;
  EXPECT_NE(text.find("unavailable: no OpenCL platform"), std::string::npos) << text;
  rc = std::system(("OCL_ICD_VENDORS=/nonexistent GRAFT_BACKENDS=opencl,ref " + graft + " run " + model +
                    " --shape input=1,784 > " + out + " 2>&1").c_str());
  EXPECT_EQ(rc, 0) << read_text(out);
}

}  // namespace
}  // namespace graft::testing

namespace graft::testing {
namespace {

TEST(OpenClFaults, AKernelThatFailsToBuildIsAClearErrorAndTheNextRunRecovers) {
  GRAFT_REQUIRE_OPENCL();
  Tensor weight = random_tensor({64}, 21);
  std::vector<Tensor> inputs{random_tensor({4, 64}, 22)};
  runtime::Session session(split_model(weight), opencl_options());
  codegen::opencl_inject_build_failures(true);
  try {
    session.run(inputs);
    ADD_FAILURE() << "a run built its kernels while builds fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not build on opencl:0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("build failure injected"), std::string::npos) << "the build log is missing";
  }
  codegen::opencl_inject_build_failures(false);
  std::vector<Tensor> got = session.run(inputs);
  expect_close(got[0], run_graph(*split_model(weight), inputs)[0], 1e-5, 1e-6);
}

}  // namespace
}  // namespace graft::testing

namespace graft::testing {
namespace {

TEST(OpenClProgramCache, BinariesAreStoredInGraftCacheDirAndLoadedBack) {
  GRAFT_REQUIRE_OPENCL();
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "graft_opencl_binaries";
  std::filesystem::remove_all(dir);
  const std::string dir_text = dir.string();
  ScopedEnv env("GRAFT_CACHE_DIR", dir_text.c_str());
  // A source no other test builds (the counter makes it new in every run of the test).
  static int round = 0;
  const std::string source = "__kernel void graft_cache_probe_" + std::to_string(++round) +
                             "(__global float* x) { x[get_global_id(0)] += 1.0f; }\n";
  codegen::CompileCounters& counters = codegen::CompileCache::global().counters();
  const uint64_t builds = counters.opencl_builds, hits = counters.opencl_disk_hits, rejects = counters.disk_rejects;
  const codegen::OpenClFunctions& cl = codegen::opencl_functions();
  cl.release_program(codegen::opencl_build_program(0, source));
  EXPECT_EQ(counters.opencl_builds - builds, 1u);
  size_t files = 0;
  std::filesystem::path binary;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".bin") ++files, binary = entry.path();
  ASSERT_EQ(files, 1u) << "one binary stored";
  cl.release_program(codegen::opencl_build_program(0, source));  // from the disk now
  EXPECT_EQ(counters.opencl_disk_hits - hits, 1u);
  EXPECT_EQ(counters.opencl_builds - builds, 1u);
  // A damaged binary is rebuilt from source, never loaded.
  {
    std::FILE* f = std::fopen(binary.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fseek(f, 40, SEEK_SET);
    std::fputc(0x5a, f);
    std::fclose(f);
  }
  cl.release_program(codegen::opencl_build_program(0, source));
  EXPECT_EQ(counters.opencl_builds - builds, 2u);
  EXPECT_EQ(counters.opencl_disk_hits - hits, 1u);
  EXPECT_GE(counters.disk_rejects, rejects);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace graft::testing

// The DeviceAPI over every device type this machine has: the same tests on
// the CPU's (always), on OpenCL's (PoCL here; skipped, saying why, where
// there is no OpenCL platform) and on CUDA's (skipped, saying why, without
// an NVIDIA driver and GPU).
#include "graft/backend/device_api.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "graft/codegen/op_expressions.h"
#include "graft/codegen/opencl_emitter.h"
#include "graft/codegen/opencl_runtime.h"
#include "graft/ir/graph.h"
#include "graft/ops/type_inference.h"
#include "graft/core/error.h"
#include "cuda/cuda_kernel.h"

using namespace graft;
using namespace graft::backend;

namespace {

std::vector<unsigned char> pattern(size_t bytes, unsigned seed) {
  std::vector<unsigned char> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<unsigned char>((i * 131 + seed * 17 + (i >> 8)) & 0xff);
  return v;
}

class DeviceApiTest : public ::testing::TestWithParam<DeviceType> {
 protected:
  void SetUp() override {
    api_ = &device_api(GetParam());
    if (api_->device_count() == 0)
      GTEST_SKIP() << "skipped: no "
                   << (GetParam() == DeviceType::opencl ? "OpenCL" : GetParam() == DeviceType::cuda ? "CUDA" : "such")
                   << " device here ("
                   << api_->unavailable_reason() << ")";
    device_ = Device{GetParam(), 0};
  }
  DeviceAPI* api_ = nullptr;
  Device device_;
};

TEST_P(DeviceApiTest, RoundTripHostDeviceDeviceHost) {
  auto queue = api_->create_queue(device_.id);
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{3}, size_t{511}, size_t{512}, size_t{513}, size_t{4097},
                       size_t{65537}, size_t{1} << 20}) {
    std::vector<unsigned char> in = pattern(bytes, static_cast<unsigned>(bytes)), out(bytes, 0xee);
    DeviceBuffer a = api_->allocate(device_, bytes);
    DeviceBuffer b = api_->allocate(device_, bytes);
    EXPECT_EQ(a.size(), bytes);
    EXPECT_GE(a.capacity(), bytes);
    EXPECT_TRUE(a);
    api_->copy_to_device(*queue, a, 0, in.data(), bytes);
    api_->copy_on_device(*queue, b, 0, a, 0, bytes);
    api_->copy_to_host(*queue, out.data(), b, 0, bytes);
    api_->synchronize(*queue);
    EXPECT_EQ(in, out) << bytes << " bytes";
  }
  // Offsets inside buffers, and a range past the end is an Error.
  std::vector<unsigned char> in = pattern(1000, 7), out(10);
  DeviceBuffer a = api_->allocate(device_, 1000);
  api_->copy_to_device(*queue, a, 0, in.data(), 1000);
  api_->copy_to_host(*queue, out.data(), a, 333, 10);
  api_->synchronize(*queue);
  EXPECT_EQ(0, std::memcmp(out.data(), in.data() + 333, 10));
  EXPECT_THROW(api_->copy_to_host(*queue, out.data(), a, 995, 10), Error);
  EXPECT_THROW(api_->copy_to_device(*queue, a, 1001, in.data(), 0), Error);
  // Within one buffer: apart is a copy, overlapping is an Error on every device.
  api_->copy_on_device(*queue, a, 500, a, 0, 500);
  api_->copy_to_host(*queue, out.data(), a, 500, 10);
  api_->synchronize(*queue);
  EXPECT_EQ(0, std::memcmp(out.data(), in.data(), 10));
  EXPECT_THROW(api_->copy_on_device(*queue, a, 100, a, 0, 200), Error);
}

TEST_P(DeviceApiTest, PoolReusesFreedBlocks) {
  api_->empty_cache(device_.id);
  {
    DeviceBuffer warm = api_->allocate(device_, 100000);
  }
  DevicePoolStats before = api_->pool_stats(device_.id);
  for (int i = 0; i < 100; ++i) {
    DeviceBuffer b = api_->allocate(device_, 100000 - static_cast<size_t>(i % 3));  // one size class
    ASSERT_TRUE(b);
  }
  DevicePoolStats after = api_->pool_stats(device_.id);
  EXPECT_EQ(after.device_allocations, before.device_allocations);
  EXPECT_EQ(after.reuses, before.reuses + 100);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_GE(after.bytes_cached, device_pool_size_class(100000));
  api_->empty_cache(device_.id);
  EXPECT_EQ(api_->pool_stats(device_.id).bytes_cached, 0u);
}

TEST_P(DeviceApiTest, AllocationLargerThanTheDeviceIsAnError) {
  DeviceProperties p = api_->properties(device_.id);
  ASSERT_GT(p.global_memory_bytes, 0u);
  DeviceBuffer held = api_->allocate(device_, 3 << 20);  // something in use, for the message
  uint64_t huge = p.global_memory_bytes * 4;
  try {
    api_->allocate(device_, static_cast<size_t>(huge));
    FAIL() << "allocating " << huge << " bytes succeeded";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("out of device memory on " + to_string(device_)), std::string::npos) << message;
    EXPECT_NE(message.find(format_bytes(huge) + " requested"), std::string::npos) << message;
    EXPECT_NE(message.find(" in use"), std::string::npos) << message;
  }
  // The pool still works.
  DeviceBuffer after = api_->allocate(device_, 1000);
  EXPECT_TRUE(after);
}

TEST_P(DeviceApiTest, ReleaseAfterQueuedWorkReusesTheBlockOnceItIsDone) {
  auto queue = api_->create_queue(device_.id);
  const size_t bytes = 3 << 20;
  std::vector<unsigned char> in = pattern(bytes, 11), out(bytes, 0);
  DeviceBuffer a = api_->allocate(device_, bytes), b = api_->allocate(device_, bytes);
  api_->copy_to_device(*queue, a, 0, in.data(), bytes);
  api_->copy_on_device(*queue, b, 0, a, 0, bytes);
  api_->release_after(*queue, a);  // the copy may still be reading it
  EXPECT_FALSE(a);
  api_->copy_to_host(*queue, out.data(), b, 0, bytes);
  api_->synchronize(*queue);
  EXPECT_EQ(in, out);
  DevicePoolStats before = api_->pool_stats(device_.id);
  DeviceBuffer c = api_->allocate(device_, bytes);  // the work is done: a's block
  DevicePoolStats after = api_->pool_stats(device_.id);
  EXPECT_EQ(after.device_allocations, before.device_allocations);
  EXPECT_EQ(after.reuses, before.reuses + 1);
  EXPECT_EQ(after.bytes_pending, 0u);
}

TEST_P(DeviceApiTest, OutOfMemoryReturnsCachedBlocksAndRetries) {
  api_->empty_cache(device_.id);
  DevicePoolStats start = api_->pool_stats(device_.id);
  api_->set_memory_limit(device_.id, start.bytes_in_use + (1 << 20));
  { DeviceBuffer a = api_->allocate(device_, 600 << 10); }  // cached now
  DeviceBuffer b = api_->allocate(device_, 700 << 10);     // a 768 KiB block: fits only once the cached one is gone
  DevicePoolStats s = api_->pool_stats(device_.id);
  EXPECT_EQ(s.bytes_cached, 0u);
  EXPECT_EQ(s.device_frees, start.device_frees + 1);
  try {
    api_->allocate(device_, 512 << 10);
    FAIL() << "allocated past the limit";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("512 KiB requested, 768 KiB in use"), std::string::npos) << e.what();
  }
  api_->set_memory_limit(device_.id, 0);
}

TEST_P(DeviceApiTest, QueueRunsInOrder) {
  // A chain of dependent copies on one queue: each reads what the one before wrote.
  auto queue = api_->create_queue(device_.id);
  const size_t bytes = 1 << 18;
  std::vector<unsigned char> in = pattern(bytes, 3), out(bytes, 0);
  std::vector<DeviceBuffer> buffers;
  for (int i = 0; i < 8; ++i) buffers.push_back(api_->allocate(device_, bytes));
  api_->copy_to_device(*queue, buffers[0], 0, in.data(), bytes);
  for (size_t i = 1; i < buffers.size(); ++i) api_->copy_on_device(*queue, buffers[i], 0, buffers[i - 1], 0, bytes);
  api_->copy_to_host(*queue, out.data(), buffers.back(), 0, bytes);
  api_->synchronize(*queue);
  EXPECT_EQ(in, out);
  // A host kernel runs after the work queued before it.
  std::vector<unsigned char> seen(16, 0);
  api_->copy_to_host(*queue, seen.data(), buffers.back(), 0, 16);
  bool matched = false;
  DeviceKernel check;
  check.host = [&] { matched = std::memcmp(seen.data(), in.data(), 16) == 0; };
  api_->enqueue_kernel(*queue, check);
  api_->synchronize(*queue);
  EXPECT_TRUE(matched);
}

TEST_P(DeviceApiTest, EventOrdersTwoQueues) {
  auto producer = api_->create_queue(device_.id);
  auto consumer = api_->create_queue(device_.id);
  const size_t bytes = 1 << 20;
  std::vector<unsigned char> in = pattern(bytes, 9), out(bytes, 0);
  DeviceBuffer a = api_->allocate(device_, bytes), b = api_->allocate(device_, bytes);
  api_->copy_to_device(*producer, a, 0, in.data(), bytes);
  api_->copy_on_device(*producer, b, 0, a, 0, bytes);
  std::unique_ptr<DeviceEvent> done = api_->record_event(*producer);
  EXPECT_EQ(done->device(), device_);
  api_->wait_event(*consumer, *done);
  api_->copy_to_host(*consumer, out.data(), b, 0, bytes);
  api_->synchronize(*consumer);
  EXPECT_EQ(in, out);
  api_->synchronize(*done);
}

TEST_P(DeviceApiTest, ManyThreadsAllocateAtOnce) {
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      auto queue = api_->create_queue(device_.id);
      for (int i = 0; i < 50; ++i) {
        size_t bytes = 1000 + static_cast<size_t>((t * 50 + i) % 7) * 4099;
        std::vector<unsigned char> in = pattern(bytes, static_cast<unsigned>(t * 100 + i)), out(bytes, 0);
        DeviceBuffer b = api_->allocate(device_, bytes);
        api_->copy_to_device(*queue, b, 0, in.data(), bytes);
        api_->copy_to_host(*queue, out.data(), b, 0, bytes);
        api_->synchronize(*queue);
        if (in != out) failures++;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  DevicePoolStats s = api_->pool_stats(device_.id);
  EXPECT_EQ(s.bytes_in_use, 0u);
}

TEST_P(DeviceApiTest, WrongDeviceIsAnError) {
  EXPECT_THROW(api_->allocate(Device{GetParam(), api_->device_count()}, 16), Error);
  DeviceType other = GetParam() == DeviceType::cpu ? DeviceType::opencl : DeviceType::cpu;
  EXPECT_THROW(api_->allocate(Device{other, 0}, 16), Error);
  EXPECT_THROW(api_->create_queue(api_->device_count()), Error);
}

/// A CUDA kernel adding 1 to each of n bytes.
const char* const kCudaAddOne = GRAFT_CUDA_PRELUDE
    "extern \"C\" __global__ void graft_test_add_one(unsigned char* p, i64 n) {\n"
    "  const i64 i = graft_thread();\n"
    "  if (i < n) p[i] += 1;\n"
    "}\n";

/// A kernel adding 1 to each of `bytes` bytes of `buffer`, on the buffer's
/// device: a host function on the CPU, a cl_kernel on OpenCL; on CUDA a
/// host function that launches the CUDA kernel on `queue`'s stream (CUDA
/// kernels launch themselves: DeviceKernel carries no CUDA arguments).
class AddOne {
 public:
  AddOne(const DeviceBuffer& buffer, size_t bytes, DeviceQueue* queue = nullptr) {
    if (buffer.device().type == DeviceType::cuda) {
      auto function = std::make_shared<cuda::CudaFunction>(kCudaAddOne, "graft_test_add_one", buffer.device().id);
      uint64_t address = reinterpret_cast<uintptr_t>(buffer.handle());
      void* stream = queue ? queue->native_handle() : nullptr;
      kernel_.host = [function, address, bytes, stream] {
        function->launch(stream, cuda::blocks_for(static_cast<int64_t>(bytes), 256), 256, address,
                         static_cast<int64_t>(bytes));
      };
      return;
    }
    if (buffer.device().type == DeviceType::cpu) {
      auto* data = static_cast<unsigned char*>(buffer.handle());
      kernel_.host = [data, bytes] {
        for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<unsigned char>(data[i] + 1);
      };
      return;
    }
#ifdef GRAFT_HAVE_OPENCL_HEADERS
    const codegen::OpenClFunctions& cl = codegen::opencl_functions();
    size_t id = static_cast<size_t>(buffer.device().id);
    const char* source = "__kernel void add_one(__global uchar* p) { size_t i = get_global_id(0); p[i] += 1; }";
    cl_int status = CL_SUCCESS;
    program_ = cl.create_program(codegen::opencl_context(id), 1, &source, nullptr, &status);
    EXPECT_EQ(status, CL_SUCCESS);
    cl_device_id device = codegen::opencl_device_id(id);
    EXPECT_EQ(cl.build_program(program_, 1, &device, "", nullptr, nullptr), CL_SUCCESS);
    kernel_object_ = cl.create_kernel(program_, "add_one", &status);
    EXPECT_EQ(status, CL_SUCCESS);
    cl_mem memory = static_cast<cl_mem>(buffer.handle());
    EXPECT_EQ(cl.set_arg(kernel_object_, 0, sizeof memory, &memory), CL_SUCCESS);
    kernel_.native = kernel_object_;
    kernel_.global = {bytes, 1, 1};
#endif
  }
  ~AddOne() {
#ifdef GRAFT_HAVE_OPENCL_HEADERS
    if (kernel_object_) codegen::opencl_functions().release_kernel(kernel_object_);
    if (program_) codegen::opencl_functions().release_program(program_);
#endif
  }
  const DeviceKernel& kernel() const { return kernel_; }

 private:
  DeviceKernel kernel_;
#ifdef GRAFT_HAVE_OPENCL_HEADERS
  cl_program program_ = nullptr;
  cl_kernel kernel_object_ = nullptr;
#endif
};

TEST_P(DeviceApiTest, KernelsAndCopiesRunInQueueOrder) {
  auto queue = api_->create_queue(device_.id);
  const size_t bytes = 4096;
  std::vector<unsigned char> in = pattern(bytes, 5), out(bytes, 0), expected(bytes);
  DeviceBuffer a = api_->allocate(device_, bytes), b = api_->allocate(device_, bytes);
  AddOne add_a(a, bytes, queue.get()), add_b(b, bytes, queue.get());
  api_->copy_to_device(*queue, a, 0, in.data(), bytes);
  api_->enqueue_kernel(*queue, add_a.kernel());      // a = in + 1
  api_->copy_on_device(*queue, b, 0, a, 0, bytes);   // b = in + 1
  api_->enqueue_kernel(*queue, add_b.kernel());      // b = in + 2
  api_->enqueue_kernel(*queue, add_b.kernel());      // b = in + 3
  api_->copy_to_host(*queue, out.data(), b, 0, bytes);
  api_->synchronize(*queue);
  for (size_t i = 0; i < bytes; ++i) expected[i] = static_cast<unsigned char>(in[i] + 3);
  EXPECT_EQ(out, expected);
}

TEST(OpenClDeviceApi, EmitterKernelsRunOnDeviceApiBuffersAndQueues) {
  if (std::string why = codegen::opencl_unavailable_reason(); !why.empty())
    GTEST_SKIP() << "skipped: no OpenCL device for kernels here (" << why << ")";
  // y = x * 2 + 1 from the kernel IR, launched by the emitter on memory and a
  // queue of the DeviceAPI (the same device and context), between its copies.
  ir::Graph g;
  g.opset_imports[""] = 17;
  ir::Value x = g.add_input("x", ir::ValueType::of(DType::float32, {1000}))->output(0);
  ir::Value two = g.add_constant("two", Tensor::scalar<float>(2.0f))->output(0);
  ir::Value one = g.add_constant("one", Tensor::scalar<float>(1.0f))->output(0);
  g.add_output(g.add_node("Add", {g.add_node("Mul", {x, two})->output(0), one})->output(0), "y");
  ops::infer_types(g);
  codegen::OpenClKernel kernel(codegen::lower_body(g).ir);

  DeviceAPI& api = device_api(DeviceType::opencl);
  Device device{DeviceType::opencl, static_cast<int32_t>(codegen::opencl_kernel_device_index())};
  const size_t bytes = 1000 * sizeof(float);
  std::vector<float> in(1000), out(1000, 0.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) * 0.5f - 100.0f;
  DeviceBuffer a = api.allocate(device, bytes), b = api.allocate(device, bytes);
  auto queue = api.create_queue(device.id);
  api.copy_to_device(*queue, a, 0, in.data(), bytes);
  codegen::OpenClBuffer a_view = codegen::OpenClBuffer::borrow(a.handle(), a.size());
  codegen::OpenClBuffer b_view = codegen::OpenClBuffer::borrow(b.handle(), b.size());
  std::unique_ptr<codegen::OpenClQueue> queue_view = codegen::OpenClQueue::borrow(queue->native_handle());
  codegen::OpenClOperand input{&a_view, {1000}}, output{&b_view, {1000}};
  kernel.launch({&input, 1}, {&output, 1}, codegen::OpenClLaunchOptions{.queue = queue_view.get()});
  api.copy_to_host(*queue, out.data(), b, 0, bytes);
  api.synchronize(*queue);
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(out[i], in[i] * 2.0f + 1.0f) << i;
  // The views release nothing: the pool still owns the memory and the queue.
  a_view = codegen::OpenClBuffer::borrow(b.handle(), b.size());
  queue_view.reset();
  api.copy_to_host(*queue, out.data(), a, 0, bytes);
  api.synchronize(*queue);
  EXPECT_EQ(out, in);
}

std::string type_name(const ::testing::TestParamInfo<DeviceType>& info) {
  return info.param == DeviceType::cpu ? "cpu" : info.param == DeviceType::opencl ? "opencl" : "cuda";
}

INSTANTIATE_TEST_SUITE_P(Devices, DeviceApiTest,
                         ::testing::Values(DeviceType::cpu, DeviceType::opencl, DeviceType::cuda), type_name);

TEST(DeviceApiRegistry, NamesWhatIsRegistered) {
  EXPECT_EQ(device_api(DeviceType::cpu).type(), DeviceType::cpu);
  EXPECT_EQ(device_api(DeviceType::opencl).type(), DeviceType::opencl);
  EXPECT_EQ(device_api(DeviceType::cuda).type(), DeviceType::cuda);
  try {
    device_api(static_cast<DeviceType>(7));  // no such type
    FAIL() << "a DeviceAPI for type 7 is registered";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported);
    EXPECT_NE(std::string(e.what()).find("registered: cpu, cuda, opencl"), std::string::npos) << e.what();
  }
  EXPECT_EQ(device_apis().size(), 3u);
}

TEST(DeviceApiRegistry, SizeClassesAndByteCounts) {
  EXPECT_EQ(device_pool_size_class(0), 512u);
  EXPECT_EQ(device_pool_size_class(512), 512u);
  EXPECT_EQ(device_pool_size_class(513), 1024u);
  EXPECT_EQ(device_pool_size_class(3000), 3072u);
  EXPECT_EQ(device_pool_size_class(64 << 20), size_t{64} << 20);
  EXPECT_EQ(device_pool_size_class((64 << 20) + 1), size_t{80} << 20);
  EXPECT_EQ(format_bytes(0), "0 bytes");
  EXPECT_EQ(format_bytes(1000), "1000 bytes");
  EXPECT_EQ(format_bytes(64 << 20), "64 MiB");
  EXPECT_EQ(format_bytes(uint64_t{1288490189}), "1.2 GiB");
}

}  // namespace

namespace {

/// Two devices of host memory whose queued work finishes when the test says
/// so: to check that the pool never hands out a block released after
/// unfinished work, and copies between two devices of one type.
class FakeDeviceAPI : public DeviceAPI {
 public:
  struct Queue : DeviceQueue {
    explicit Queue(int id) : DeviceQueue(Device{DeviceType::cuda, id}) {}
    std::shared_ptr<bool> done = std::make_shared<bool>(false);  ///< the work queued so far has finished
  };
  struct Event : DeviceEvent {
    explicit Event(std::shared_ptr<bool> done) : DeviceEvent(Device{DeviceType::cuda, 0}), done(std::move(done)) {}
    std::shared_ptr<bool> done;
  };
  int waits = 0;                 ///< synchronize(event) calls
  int same_device_copies = 0;    ///< do_copy_on_device calls

  DeviceType type() const override { return DeviceType::cuda; }
  int device_count() const override { return 2; }
  DeviceProperties properties(int) const override {
    DeviceProperties p;
    p.name = "fake";
    p.global_memory_bytes = 1 << 30;
    p.max_allocation_bytes = 1 << 30;
    return p;
  }
  std::unique_ptr<DeviceQueue> create_queue(int id) override { return std::make_unique<Queue>(id); }
  void enqueue_kernel(DeviceQueue& queue, const DeviceKernel&) override { queued(queue); }
  void synchronize(DeviceQueue& queue) override { *static_cast<Queue&>(queue).done = true; }
  std::unique_ptr<DeviceEvent> record_event(DeviceQueue& queue) override {
    return std::make_unique<Event>(static_cast<Queue&>(queue).done);
  }
  void wait_event(DeviceQueue&, const DeviceEvent&) override {}
  void synchronize(const DeviceEvent& event) override {
    ++waits;
    *static_cast<const Event&>(event).done = true;
  }
  bool event_completed(const DeviceEvent& event) override { return *static_cast<const Event&>(event).done; }

 protected:
  void* device_allocate(int, size_t bytes) override { return std::malloc(bytes); }
  void device_free(int, void* handle) override { std::free(handle); }
  void do_copy_to_device(DeviceQueue& queue, void* destination, size_t offset, const void* source,
                         size_t bytes) override {
    std::memcpy(static_cast<char*>(destination) + offset, source, bytes);
    queued(queue);
  }
  void do_copy_to_host(DeviceQueue& queue, void* destination, void* source, size_t offset, size_t bytes) override {
    std::memcpy(destination, static_cast<char*>(source) + offset, bytes);
    queued(queue);
  }
  void do_copy_on_device(DeviceQueue& queue, void* destination, size_t destination_offset, void* source,
                         size_t source_offset, size_t bytes) override {
    std::memcpy(static_cast<char*>(destination) + destination_offset, static_cast<char*>(source) + source_offset,
                bytes);
    same_device_copies++;
    queued(queue);
  }

 private:
  /// New work: not finished until the test finishes it.
  static void queued(DeviceQueue& queue) { static_cast<Queue&>(queue).done = std::make_shared<bool>(false); }
};

TEST(DevicePool, ABlockReleasedAfterUnfinishedWorkIsNotReusedUntilItFinishes) {
  FakeDeviceAPI api;
  Device device{DeviceType::cuda, 0};
  auto queue = api.create_queue(0);
  DeviceBuffer a = api.allocate(device, 1000);
  void* block = a.handle();
  DeviceKernel kernel;
  api.enqueue_kernel(*queue, kernel);
  auto work = static_cast<FakeDeviceAPI::Queue&>(*queue).done;
  api.release_after(*queue, a);
  EXPECT_EQ(api.pool_stats(0).bytes_pending, 1024u);
  DeviceBuffer b = api.allocate(device, 1000);  // the kernel still runs: another block
  EXPECT_NE(b.handle(), block);
  EXPECT_EQ(api.pool_stats(0).device_allocations, 2u);
  *work = true;  // the kernel finishes
  DeviceBuffer c = api.allocate(device, 1000);
  EXPECT_EQ(c.handle(), block);
  EXPECT_EQ(api.pool_stats(0).bytes_pending, 0u);
  EXPECT_EQ(api.pool_stats(0).device_allocations, 2u);
}

TEST(DevicePool, OutOfMemoryWaitsForPendingBlocks) {
  FakeDeviceAPI api;
  Device device{DeviceType::cuda, 0};
  api.set_memory_limit(0, 1 << 20);
  auto queue = api.create_queue(0);
  DeviceBuffer a = api.allocate(device, 600 << 10);
  DeviceKernel kernel;
  api.enqueue_kernel(*queue, kernel);
  api.release_after(*queue, a);
  DeviceBuffer b = api.allocate(device, 700 << 10);  // only once a's block is back: waits for the kernel
  EXPECT_TRUE(b);
  EXPECT_EQ(api.waits, 1);
  DevicePoolStats s = api.pool_stats(0);
  EXPECT_EQ(s.bytes_pending, 0u);
  EXPECT_EQ(s.device_frees, 1u);
  EXPECT_EQ(s.bytes_in_use, 768u << 10);
}

TEST(DevicePool, CopiesBetweenTwoDevicesOfOneTypeGoThroughTheHost) {
  FakeDeviceAPI api;
  std::vector<unsigned char> in = pattern(5000, 2), out(5000, 0);
  DeviceBuffer on0 = api.allocate(Device{DeviceType::cuda, 0}, 5000);
  DeviceBuffer on1 = api.allocate(Device{DeviceType::cuda, 1}, 5000);
  auto queue0 = api.create_queue(0);
  auto queue1 = api.create_queue(1);
  api.copy_to_device(*queue1, on1, 0, in.data(), 5000);
  api.copy_on_device(*queue0, on0, 0, on1, 0, 5000);  // to device 0 from device 1
  api.copy_to_host(*queue0, out.data(), on0, 0, 5000);
  EXPECT_EQ(in, out);
  EXPECT_EQ(api.same_device_copies, 0);
  EXPECT_EQ(api.pool_stats(1).device_allocations, 1u);  // one pool per device
  EXPECT_THROW(api.copy_on_device(*queue0, on1, 0, on0, 0, 10), Error);  // destination not on the queue's device
}

}  // namespace

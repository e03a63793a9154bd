// The CUDA emitter: every generated kernel compiles to PTX with NVRTC (no GPU
// needed); where a GPU is present, kernels run and match the CPU results.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <map>

#include "graft/codegen/cuda_emitter.h"
#include "graft/codegen/interpreter.h"
#include "graft/backend/buffer_pool.h"
#include "op_cases.h"
#include "random_dag.h"
#include "typed_random_dag.h"

namespace graft::codegen {
namespace {

using graft::testing::close_enough;
using graft::testing::make_random_dag;
using graft::testing::RandomDag;

/// Interpreter results of `ir` on `inputs` (the CPU side of every comparison).
std::vector<Tensor> cpu_results(const ir::KernelIR& ir, const std::vector<Tensor>& inputs) {
  static backend::BufferPool pool;
  Interpreter interpreter(ir);
  return run_kernel(ir, interpreter, inputs, pool);
}

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
    ir::KernelIR ir = lower_body(*cases[i].graph).ir;
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
  backend::BufferPool pool;
  for (const auto& c : graft::testing::build_op_cases()) {
    ir::KernelIR ir = lower_body(*c.graph).ir;
    CudaKernel kernel(ir);
    std::vector<Tensor> got = kernel.run(c.inputs);
    Interpreter interpreter(ir);
    std::vector<Tensor> want = run_kernel(ir, interpreter, c.inputs, pool);
    for (size_t k = 0; k < got.size(); ++k) EXPECT_TRUE(close_enough(got[k], want[k], 1e-5, 1e-6)) << c.label;
  }
}

TEST(CudaEmitter, RandomDagKernelsCompileToPtx) {
  if (!nvrtc_unavailable_reason().empty()) GTEST_SKIP() << nvrtc_unavailable_reason();
  // 300 random DAGs (every op of their generator, broadcasting, several
  // outputs) in one NVRTC program, each kernel in its own namespace.
  std::string program;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    RandomDag dag = make_random_dag(seed, false);
    std::string id = std::to_string(seed);
    program += "namespace k" + id + " {\n" + emit_cuda_source(lower_body(*dag.graph).ir, "dag_" + id) + "}\n";
  }
  std::string ptx = compile_cuda_to_ptx(program, "random_dags.cu");
  for (uint64_t seed = 0; seed < 300; ++seed)
    EXPECT_NE(ptx.find(".entry dag_" + std::to_string(seed) + "("), std::string::npos) << "seed " << seed;
}

TEST(CudaEmitter, RandomDagsRunOnTheGpuAndMatchTheReference) {
  std::string why = cuda_device_unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << "no GPU: " << why;
  for (uint64_t seed = 20000; seed < 20300; ++seed) {
    RandomDag dag = make_random_dag(seed, false);
    ir::KernelIR ir = lower_body(*dag.graph).ir;
    CudaKernel kernel(ir);
    std::vector<Tensor> want = graft::testing::run_reference(*dag.graph, dag.inputs);
    // Every third DAG also through the 64-bit index path of large tensors.
    for (bool wide : {false, true}) {
      if (wide && seed % 3 != 0) continue;
      std::vector<Tensor> got = kernel.run(dag.inputs, CudaLaunchOptions{.wide_indices = wide});
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k)
        ASSERT_TRUE(close_enough(got[k], want[k], 1e-5, 1e-6))
            << "seed " << seed << (wide ? ", 64-bit indices" : "") << "\n"
            << to_string(ir);
    }
  }
}

TEST(CudaEmitter, TypedRandomDagKernelsCompileToPtx) {
  if (!nvrtc_unavailable_reason().empty()) GTEST_SKIP() << nvrtc_unavailable_reason();
  // 200 DAGs over every kernel dtype in one NVRTC program.
  std::string program;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    graft::testing::TypedDag dag = graft::testing::make_typed_dag(seed);
    std::string id = std::to_string(seed);
    program += "namespace k" + id + " {\n" + emit_cuda_source(lower_body(*dag.graph).ir, "typed_" + id) + "}\n";
  }
  std::string ptx = compile_cuda_to_ptx(program, "typed_random_dags.cu");
  for (uint64_t seed = 0; seed < 200; ++seed)
    EXPECT_NE(ptx.find(".entry typed_" + std::to_string(seed) + "("), std::string::npos) << "seed " << seed;
}

TEST(CudaEmitter, TypedRandomDagsRunOnTheGpuAndMatchTheReference) {
  std::string why = cuda_device_unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << "no GPU: " << why;
  for (uint64_t seed = 30000; seed < 30300; ++seed) {
    graft::testing::TypedDag dag = graft::testing::make_typed_dag(seed);
    ir::KernelIR ir = lower_body(*dag.graph).ir;
    CudaKernel kernel(ir);
    std::vector<Tensor> want = graft::testing::run_reference(*dag.graph, dag.inputs);
    for (bool wide : {false, true}) {
      if (wide && seed % 3 != 0) continue;
      std::vector<Tensor> got = kernel.run(dag.inputs, CudaLaunchOptions{.wide_indices = wide});
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k)
        ASSERT_TRUE(close_enough(got[k], want[k], graft::testing::typed_dag_rtol(want[k].dtype(), ir),
                                 graft::testing::typed_dag_atol(want[k].dtype(), ir)))
            << "seed " << seed << " output " << k << (wide ? ", 64-bit indices" : "") << "\n"
            << to_string(ir);
    }
  }
}

/// x * sigmoid(x) + b (b broadcast along the rows), then tanh: a kernel with
/// two inputs of different shapes.
std::unique_ptr<ir::Graph> swish_bias_tanh() {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  ir::Value x = g->add_input("x", ir::ValueType::of(DType::float32, {2, 3}))->output(0);
  ir::Value b = g->add_input("b", ir::ValueType::of(DType::float32, {3}))->output(0);
  ir::Value s = g->add_node("Mul", {x, g->add_node("Sigmoid", {x})->output(0)})->output(0);
  g->add_output(g->add_node("Tanh", {g->add_node("Add", {s, b})->output(0)})->output(0), "y");
  ops::infer_types(*g);
  return g;
}

TEST(CudaEmitter, OneKernelRunsOnDeviceBuffersAtEveryShape) {
  std::string why = cuda_device_unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << "no GPU: " << why;
  ir::KernelIR ir = lower_body(*swish_bias_tanh()).ir;
  CudaKernel kernel(ir);  // compiled once; shapes are launch arguments
  // The last shape has more elements than one grid of 65535 blocks of 256
  // threads covers, so threads take several elements each.
  for (Shape x_shape : {Shape{2, 3}, Shape{1, 1}, Shape{7, 1, 5}, Shape{4097, 4099}}) {
    Shape b_shape{x_shape.back()};
    Tensor x = graft::testing::random_of(DType::float32, x_shape, 1),
           b = graft::testing::random_of(DType::float32, b_shape, 2);
    CudaBuffer dx(x.nbytes()), db(b.nbytes()), dy(x.nbytes());
    dx.upload(x.raw_data(), x.nbytes());
    db.upload(b.raw_data(), b.nbytes());
    CudaOperand in[] = {{dx.address(), x_shape}, {db.address(), b_shape}};
    CudaOperand out[] = {{dy.address(), x_shape}};
    std::vector<Tensor> want = cpu_results(ir, {x, b});
    for (bool wide : {false, true}) {
      kernel.launch(in, out, CudaLaunchOptions{.wide_indices = wide});
      Tensor y(DType::float32, x_shape);
      dy.download(y.raw_data(), y.nbytes());  // waits for the launch
      EXPECT_TRUE(close_enough(y, want[0], 1e-5, 1e-6)) << shape_to_string(x_shape) << (wide ? ", 64-bit indices" : "");
    }
  }
  // Dense operands take the path of 4 elements per thread: sizes around its
  // edges, and one of several steps of the whole grid.
  std::unique_ptr<ir::Graph> unary = swish_bias_tanh();
  ir::KernelIR dense_ir = lower_body(*unary).ir;
  CudaKernel dense(dense_ir);
  for (int64_t n : {1, 3, 4, 5, 1023, 1025, 70000001}) {
    Shape shape{n}, b_shape{1};
    Tensor x = graft::testing::random_of(DType::float32, shape, 4),
           b = graft::testing::random_of(DType::float32, b_shape, 5);
    CudaBuffer dx(x.nbytes()), db(b.nbytes());
    dx.upload(x.raw_data(), x.nbytes());
    db.upload(b.raw_data(), b.nbytes());
    CudaOperand in[] = {{dx.address(), shape}, {db.address(), b_shape}};
    CudaOperand out[] = {{dx.address(), shape}};  // in place, as the memory planner may run it
    dense.launch(in, out);
    Tensor y(DType::float32, shape);
    dx.download(y.raw_data(), y.nbytes());
    std::vector<Tensor> want = cpu_results(dense_ir, {x, b});
    EXPECT_TRUE(close_enough(y, want[0], 1e-5, 1e-6)) << n;
  }
  // A device-to-device copy of the last input gives it back.
  Tensor x = graft::testing::random_of(DType::float32, {1000}, 3), back(DType::float32, {1000});
  CudaBuffer a(x.nbytes()), c(x.nbytes());
  a.upload(x.raw_data(), x.nbytes());
  c.copy_from(a, x.nbytes());
  cuda_synchronize();
  c.download(back.raw_data(), back.nbytes());
  EXPECT_EQ(std::memcmp(back.raw_data(), x.raw_data(), x.nbytes()), 0);
}

TEST(CudaEmitter, LaunchRefusesOperandsThatDoNotFit) {
  std::string why = cuda_device_unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << "no GPU: " << why;
  CudaKernel kernel(lower_body(*swish_bias_tanh()).ir);
  CudaBuffer buffer(4 * 12);
  CudaOperand x{buffer.address(), {2, 3}}, b{buffer.address(), {3}}, wrong_b{buffer.address(), {4}};
  CudaOperand y{buffer.address(), {2, 3}}, wrong_y{buffer.address(), {3, 2}};
  auto expect_error = [](const std::function<void()>& fn, const std::string& needle) {
    try {
      fn();
      ADD_FAILURE() << "no error (expected one naming " << needle << ")";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error([&] { kernel.launch(std::vector<CudaOperand>{x}, std::vector<CudaOperand>{y}); }, "1 inputs");
  expect_error([&] { kernel.launch(std::vector<CudaOperand>{x, wrong_b}, std::vector<CudaOperand>{y}); }, "broadcast");
  expect_error([&] { kernel.launch(std::vector<CudaOperand>{x, b}, std::vector<CudaOperand>{wrong_y}); }, "output 0");
  Tensor host(DType::float32, {100});
  expect_error([&] { buffer.upload(host.raw_data(), host.nbytes()); }, "400 bytes");
}

}  // namespace
}  // namespace graft::codegen

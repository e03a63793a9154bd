// The OpenCL emitter: every op case, float32 random DAGs and random DAGs over
// every kernel dtype (every third also with 64-bit indices), built by the
// OpenCL device (PoCL on the CPU where no GPU driver is installed) and run
// against the reference kernels; one kernel on device buffers at several
// shapes, in place; two queues, each running its launches in order; and
// launches whose operands do not fit. Skips, with the
// reason, where no OpenCL device with double precision is found.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "graft/codegen/compile_cache.h"
#include "graft/codegen/interpreter.h"
#include "graft/codegen/opencl_emitter.h"
#include "graft/backend/buffer_pool.h"
#include "op_cases.h"
#include "random_dag.h"
#include "typed_random_dag.h"

namespace graft::codegen {
namespace {

using graft::testing::close_enough;

#define SKIP_WITHOUT_OPENCL()                                                             \
  do {                                                                                    \
    if (std::string why = opencl_unavailable_reason(); !why.empty()) GTEST_SKIP() << why; \
  } while (0)

TEST(OpenClEmitter, EveryOpCaseMatchesTheReference) {
  SKIP_WITHOUT_OPENCL();
  std::printf("OpenCL device: %s\n", opencl_device_description().c_str());
  std::vector<graft::testing::BuiltCase> cases = graft::testing::build_op_cases();
  std::vector<ir::KernelIR> irs;
  for (const auto& c : cases) irs.push_back(lower_body(*c.graph).ir);
  std::vector<std::unique_ptr<OpenClKernel>> kernels = OpenClKernel::build_all(irs);  // one program
  ASSERT_EQ(kernels.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const graft::testing::BuiltCase& c = cases[i];
    std::vector<Tensor> got = kernels[i]->run(c.inputs);
    std::vector<Tensor> want = graft::testing::run_reference(*c.graph, c.inputs);
    ASSERT_EQ(got.size(), want.size());
    DType t = want[0].dtype();
    double rtol = t == DType::float32 ? 1e-5 : t == DType::float64 ? 1e-12 : 0;
    for (size_t k = 0; k < got.size(); ++k) EXPECT_TRUE(close_enough(got[k], want[k], rtol, rtol * 0.1)) << c.label;
  }
}

TEST(OpenClEmitter, RandomDagsMatchTheReference) {
  SKIP_WITHOUT_OPENCL();
  // 80 float32 DAGs and 80 over every dtype, as two programs.
  std::vector<graft::testing::RandomDag> dags;
  std::vector<graft::testing::TypedDag> typed;
  std::vector<ir::KernelIR> irs, typed_irs;
  for (uint64_t seed = 40000; seed < 40080; ++seed) {
    dags.push_back(graft::testing::make_random_dag(seed, false));
    irs.push_back(lower_body(*dags.back().graph).ir);
    typed.push_back(graft::testing::make_typed_dag(seed));
    typed_irs.push_back(lower_body(*typed.back().graph).ir);
  }
  // Every third DAG also through the 64-bit index path of large tensors.
  std::vector<std::unique_ptr<OpenClKernel>> kernels = OpenClKernel::build_all(irs);
  for (size_t i = 0; i < dags.size(); ++i) {
    std::vector<Tensor> want = graft::testing::run_reference(*dags[i].graph, dags[i].inputs);
    for (bool wide : {false, true}) {
      if (wide && i % 3 != 0) continue;
      std::vector<Tensor> got = kernels[i]->run(dags[i].inputs, OpenClLaunchOptions{.wide_indices = wide});
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k)
        ASSERT_TRUE(close_enough(got[k], want[k], 1e-5, 1e-6))
            << "dag " << i << (wide ? ", 64-bit indices" : "") << "\n"
            << to_string(irs[i]);
    }
  }
  std::vector<std::unique_ptr<OpenClKernel>> typed_kernels = OpenClKernel::build_all(typed_irs);
  for (size_t i = 0; i < typed.size(); ++i) {
    std::vector<Tensor> want = graft::testing::run_reference(*typed[i].graph, typed[i].inputs);
    for (bool wide : {false, true}) {
      if (wide && i % 3 != 0) continue;
      std::vector<Tensor> got = typed_kernels[i]->run(typed[i].inputs, OpenClLaunchOptions{.wide_indices = wide});
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k)
        ASSERT_TRUE(close_enough(got[k], want[k], graft::testing::typed_dag_rtol(want[k].dtype(), typed_irs[i]),
                                 graft::testing::typed_dag_atol(want[k].dtype(), typed_irs[i])))
            << "typed dag " << i << " output " << k << (wide ? ", 64-bit indices" : "") << "\n"
            << to_string(typed_irs[i]);
    }
  }
}

TEST(OpenClEmitter, TanhIsOneWhereTheReferenceIs) {
  // PoCL's tanhf gives 0.99999994 even at infinity; a product with a large
  // value (Gelu's tanh form at -1e30) turned that into -3e22 for -0.
  SKIP_WITHOUT_OPENCL();
  for (DType t : {DType::float32, DType::float64}) {
    ir::Graph g;
    g.opset_imports[""] = 20;
    ir::Node* x = g.add_input("x", ir::ValueType::of(t, {9}));
    ir::Node* tanh = g.add_node("Tanh", {x->output(0)}, 1, "tanh");
    ir::Node* gelu = g.add_node("Gelu", {x->output(0)}, 1, "gelu");
    gelu->attributes.set("approximate", std::string("tanh"));
    g.add_output(tanh->output(0), "y");
    g.add_output(gelu->output(0), "z");
    ops::infer_types(g);
    std::vector<double> values = {-INFINITY, -1e30, -300, -20, -9, 9.5, 20, 1e30, INFINITY};
    Tensor input = t == DType::float32 ? Tensor::from_vector<float>(std::vector<float>(values.begin(), values.end()), {9})
                                       : Tensor::from_vector<double>(values, {9});
    std::vector<Tensor> inputs{input};
    std::vector<Tensor> got = OpenClKernel(lower_body(g).ir).run(inputs);
    std::vector<Tensor> want = graft::testing::run_reference(g, inputs);
    for (size_t k = 0; k < 2; ++k) EXPECT_TRUE(close_enough(got[k], want[k], 1e-6, 0)) << dtype_name(t) << " output " << k;
  }
}

TEST(OpenClEmitter, OneKernelServesEveryShapeAndRefusesWrongInputs) {
  SKIP_WITHOUT_OPENCL();
  ir::Graph g;
  g.opset_imports[""] = 17;
  ir::Value x = g.add_input("x", ir::ValueType::of(DType::float32, {3}))->output(0);
  ir::Value b = g.add_input("b", ir::ValueType::of(DType::float32, {1}))->output(0);
  g.add_output(g.add_node("Tanh", {g.add_node("Add", {x, b})->output(0)})->output(0), "y");
  ops::infer_types(g);
  ir::KernelIR ir = lower_body(g).ir;
  OpenClKernel kernel(ir);  // built once; shapes are run arguments
  backend::BufferPool pool;
  Interpreter interpreter(ir);
  for (Shape shape : {Shape{1}, Shape{5, 7}, Shape{2, 3, 1000}, Shape{}}) {
    std::vector<Tensor> inputs = {graft::testing::random_of(DType::float32, shape, 1),
                                  graft::testing::random_of(DType::float32, {1}, 2)};
    std::vector<Tensor> got = kernel.run(inputs);
    std::vector<Tensor> want = run_kernel(ir, interpreter, inputs, pool);
    EXPECT_TRUE(close_enough(got[0], want[0], 1e-5, 1e-6)) << shape_to_string(shape);
  }
  // A second kernel of the same IR (say, another Session's) builds nothing.
  CompileCounters& counters = CompileCache::global().counters();
  uint64_t builds = counters.opencl_builds, hits = counters.opencl_memory_hits;
  OpenClKernel again(ir);
  EXPECT_EQ(counters.opencl_builds, builds);
  EXPECT_EQ(counters.opencl_memory_hits, hits + 1);
  std::vector<Tensor> inputs = {graft::testing::random_of(DType::float32, {6}, 3),
                                graft::testing::random_of(DType::float32, {1}, 4)};
  EXPECT_TRUE(close_enough(again.run(inputs)[0], run_kernel(ir, interpreter, inputs, pool)[0], 1e-5, 1e-6));
  Tensor ints(DType::int32, {3}), one(DType::float32, {1}), three(DType::float32, {3}), four(DType::float32, {4});
  EXPECT_THROW(kernel.run(std::vector<Tensor>{ints, one}), Error);    // a wrong dtype
  EXPECT_THROW(kernel.run(std::vector<Tensor>{three, four}), Error);  // shapes that do not broadcast
}

TEST(OpenClEmitter, OneKernelRunsOnDeviceBuffersAtEveryShape) {
  SKIP_WITHOUT_OPENCL();
  // x * sigmoid(x) + b, then tanh: b broadcasts along x's last dimension.
  ir::Graph g;
  g.opset_imports[""] = 17;
  ir::Value x = g.add_input("x", ir::ValueType::of(DType::float32, {2, 3}))->output(0);
  ir::Value b = g.add_input("b", ir::ValueType::of(DType::float32, {3}))->output(0);
  ir::Value s = g.add_node("Mul", {x, g.add_node("Sigmoid", {x})->output(0)})->output(0);
  g.add_output(g.add_node("Tanh", {g.add_node("Add", {s, b})->output(0)})->output(0), "y");
  ops::infer_types(g);
  ir::KernelIR ir = lower_body(g).ir;
  OpenClKernel kernel(ir);
  backend::BufferPool pool;
  Interpreter interpreter(ir);
  // Broadcasting shapes (both index paths), then dense ones run in place, as
  // the memory planner may run them.
  for (Shape x_shape : {Shape{2, 3}, Shape{1, 1}, Shape{7, 1, 5}, Shape{4, 1, 3, 2}, Shape{513, 257}}) {
    Shape b_shape{x_shape.back()};
    Tensor xt = graft::testing::random_of(DType::float32, x_shape, 1),
           bt = graft::testing::random_of(DType::float32, b_shape, 2);
    std::vector<Tensor> want = run_kernel(ir, interpreter, std::vector<Tensor>{xt, bt}, pool);
    OpenClBuffer dx(xt.nbytes()), db(bt.nbytes()), dy(xt.nbytes());
    dx.upload(xt.raw_data(), xt.nbytes());
    db.upload(bt.raw_data(), bt.nbytes());
    OpenClOperand in[] = {{&dx, x_shape}, {&db, b_shape}};
    OpenClOperand out[] = {{&dy, x_shape}};
    for (bool wide : {false, true}) {
      kernel.launch(in, out, OpenClLaunchOptions{.wide_indices = wide});
      Tensor y(DType::float32, x_shape);
      dy.download(y.raw_data(), y.nbytes());  // waits for the launch
      EXPECT_TRUE(close_enough(y, want[0], 1e-5, 1e-6)) << shape_to_string(x_shape) << (wide ? ", 64-bit" : "");
    }
  }
  for (int64_t n : {1, 3, 1023, 100003}) {
    Shape shape{n}, b_shape{n};
    Tensor xt = graft::testing::random_of(DType::float32, shape, 4),
           bt = graft::testing::random_of(DType::float32, b_shape, 5);
    std::vector<Tensor> want = run_kernel(ir, interpreter, std::vector<Tensor>{xt, bt}, pool);
    OpenClBuffer dx(xt.nbytes()), db(bt.nbytes());
    dx.upload(xt.raw_data(), xt.nbytes());
    db.upload(bt.raw_data(), bt.nbytes());
    OpenClOperand in[] = {{&dx, shape}, {&db, b_shape}};
    OpenClOperand out[] = {{&dx, shape}};
    kernel.launch(in, out);
    Tensor y(DType::float32, shape);
    dx.download(y.raw_data(), y.nbytes());
    EXPECT_TRUE(close_enough(y, want[0], 1e-5, 1e-6)) << n;
  }
  // A device-to-device copy gives the data back; opencl_finish waits for it.
  Tensor data = graft::testing::random_of(DType::float32, {1000}, 3), back(DType::float32, {1000});
  OpenClBuffer a(data.nbytes()), c(data.nbytes());
  a.upload(data.raw_data(), data.nbytes());
  c.copy_from(a, data.nbytes());
  opencl_finish();
  c.download(back.raw_data(), back.nbytes());
  EXPECT_EQ(std::memcmp(back.raw_data(), data.raw_data(), data.nbytes()), 0);
}

TEST(OpenClEmitter, EachQueueRunsItsWorkInOrder) {
  SKIP_WITHOUT_OPENCL();
  // y = tanh(x) + 1, applied three times in place on each of two queues
  // without waiting in between: each queue's launches run in order.
  ir::Graph g;
  g.opset_imports[""] = 17;
  ir::Value x = g.add_input("x", ir::ValueType::of(DType::float32, {4096}))->output(0);
  ir::Value one = g.add_constant("one", Tensor::scalar<float>(1.0f))->output(0);
  g.add_output(g.add_node("Add", {g.add_node("Tanh", {x})->output(0), one})->output(0), "y");
  ops::infer_types(g);
  ir::KernelIR ir = lower_body(g).ir;
  OpenClKernel kernel(ir);
  backend::BufferPool pool;
  Interpreter interpreter(ir);
  OpenClQueue first, second;
  std::vector<Tensor> data = {graft::testing::random_of(DType::float32, {4096}, 7),
                              graft::testing::random_of(DType::float32, {4096}, 8)};
  std::vector<OpenClBuffer> buffers;
  buffers.reserve(2);
  const OpenClQueue* queues[] = {&first, &second};
  for (size_t q = 0; q < 2; ++q) {
    buffers.emplace_back(data[q].nbytes());
    buffers[q].upload(data[q].raw_data(), data[q].nbytes(), queues[q]);
  }
  for (int round = 0; round < 3; ++round)
    for (size_t q = 0; q < 2; ++q) {
      OpenClOperand operand{&buffers[q], {4096}};
      kernel.launch({&operand, 1}, {&operand, 1}, OpenClLaunchOptions{.queue = queues[q]});
    }
  for (size_t q = 0; q < 2; ++q) {
    std::vector<Tensor> want{data[q]};
    for (int round = 0; round < 3; ++round) want = run_kernel(ir, interpreter, want, pool);
    Tensor got(DType::float32, {4096});
    buffers[q].download(got.raw_data(), got.nbytes(), queues[q]);  // waits for that queue's launches
    EXPECT_TRUE(close_enough(got, want[0], 1e-5, 1e-6)) << "queue " << q;
  }
  // run() on a queue of its own gives what it gives on the default queue.
  std::vector<Tensor> on_default = kernel.run(std::vector<Tensor>{data[0]});
  std::vector<Tensor> on_second = kernel.run(std::vector<Tensor>{data[0]}, OpenClLaunchOptions{.queue = &second});
  EXPECT_EQ(std::memcmp(on_default[0].raw_data(), on_second[0].raw_data(), on_default[0].nbytes()), 0);
  // Work that reads what another queue wrote waits for it first.
  OpenClBuffer shared(data[1].nbytes());
  shared.upload(data[1].raw_data(), data[1].nbytes(), &first);
  OpenClOperand operand{&shared, {4096}};
  kernel.launch({&operand, 1}, {&operand, 1}, OpenClLaunchOptions{.queue = &first});
  first.finish();
  kernel.launch({&operand, 1}, {&operand, 1}, OpenClLaunchOptions{.queue = &second});
  Tensor twice(DType::float32, {4096});
  shared.download(twice.raw_data(), twice.nbytes(), &second);
  std::vector<Tensor> once = run_kernel(ir, interpreter, std::vector<Tensor>{data[1]}, pool);
  std::vector<Tensor> want = run_kernel(ir, interpreter, once, pool);
  EXPECT_TRUE(close_enough(twice, want[0], 1e-5, 1e-6));
}

TEST(OpenClEmitter, LaunchRefusesOperandsThatDoNotFit) {
  SKIP_WITHOUT_OPENCL();
  ir::Graph g;
  g.opset_imports[""] = 17;
  ir::Value x = g.add_input("x", ir::ValueType::of(DType::float32, {4, 3}))->output(0);
  ir::Value b = g.add_input("b", ir::ValueType::of(DType::float32, {3}))->output(0);
  g.add_output(g.add_node("Add", {x, b})->output(0), "y");
  ops::infer_types(g);
  OpenClKernel kernel(lower_body(g).ir);
  OpenClBuffer dx(12 * 4), db(3 * 4), dy(12 * 4), small(11 * 4);
  OpenClOperand x_op{&dx, {4, 3}}, b_op{&db, {3}}, y_op{&dy, {4, 3}};
  auto expect_error = [](const std::function<void()>& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error; expected one naming '" << needle << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  auto launch = [&](std::vector<OpenClOperand> in, std::vector<OpenClOperand> out) { kernel.launch(in, out); };
  expect_error([&] { launch({x_op}, {y_op}); }, "1 inputs");
  expect_error([&] { launch({x_op, {&db, {4}}}, {y_op}); }, "broadcast");
  expect_error([&] { launch({x_op, b_op}, {{&dy, {12}}}); }, "output 0");
  expect_error([&] { launch({{&small, {4, 3}}, b_op}, {y_op}); }, "input 0 of shape [4,3] needs 48 bytes");
  expect_error([&] { launch({x_op, b_op}, {{&small, {4, 3}}}); }, "output 0 of shape [4,3] needs 48 bytes");
  expect_error([&] { launch({x_op, {nullptr, {3}}}, {y_op}); }, "input 1");
  Tensor big(DType::float32, {13});
  expect_error([&] { dx.upload(big.raw_data(), big.nbytes()); }, "upload of 52 bytes into 48");
  expect_error([&] { dx.download(big.raw_data(), big.nbytes()); }, "download of 52 bytes into 48");
}

TEST(OpenClEmitter, EveryKernelSourceIsOpenClC) {
  // Without a device too: the sources name no CUDA construct.
  for (uint64_t seed = 0; seed < 50; ++seed) {
    std::string source = emit_opencl_source(lower_body(*graft::testing::make_typed_dag(seed).graph).ir, "k");
    EXPECT_NE(source.find("__kernel void k("), std::string::npos);
    for (const char* cuda : {"__device__", "__global__", "long long", "<T>", "__longlong_as_double", "asm("})
      EXPECT_EQ(source.find(cuda), std::string::npos) << cuda << " in seed " << seed;
  }
}

}  // namespace
}  // namespace graft::codegen

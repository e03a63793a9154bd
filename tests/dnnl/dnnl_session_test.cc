// Session partitions real models onto dnnl through the registered op
// checkers, and gives the reference's results. Built only where the partition
// API exists (tests/CMakeLists.txt).
#include "dnnl_test_util.h"
#include "graft/frontend/onnx_import.h"
#include "graft/zoo/zoo.h"

namespace graft::testing {
namespace {

std::vector<Tensor> run_session(const std::string& model, const std::vector<std::string>& backends,
                                const std::vector<Tensor>& inputs) {
  runtime::SessionOptions options;
  options.backends = backends;
  options.num_threads = 2;
  runtime::Session session(frontend::load_onnx_from_memory(model), options);
  return session.run(inputs);
}

TEST(DnnlSession, Resnet18GoesToDnnlWhole) {
  std::string model = zoo::build_zoo_model("resnet18", 1);
  runtime::SessionOptions options;
  options.backends = {"dnnl"};
  options.num_threads = 2;
  runtime::Session session(frontend::load_onnx_from_memory(model), options);
  auto per_backend = session.partition_report().nodes_per_backend();
  EXPECT_EQ(per_backend["ref"], 0u) << session.partition_report().to_text();
  EXPECT_GT(per_backend["dnnl"], 40u);
  std::vector<Tensor> inputs = {random_tensor({1, 3, 224, 224}, 5)};
  std::vector<Tensor> got = session.run(inputs);
  std::vector<Tensor> want = run_session(model, {"ref"}, inputs);
  EXPECT_LE(max_relative_error(got[0], want[0]), 1e-4);
}

TEST(DnnlSession, WeightSetThroughTheSessionReachesTheModule) {
  std::string model = zoo::build_zoo_model("mlp", 1);
  runtime::SessionOptions options;
  options.backends = {"dnnl"};
  options.num_threads = 2;
  runtime::Session session(frontend::load_onnx_from_memory(model), options);
  std::vector<Tensor> inputs = {random_tensor({2, 784}, 5)};
  std::vector<Tensor> before = session.run(inputs);
  session.set_weight("layers.0.weight", random_tensor({512, 784}, 77));
  std::vector<Tensor> after = session.run(inputs);
  EXPECT_GT(max_relative_error(after[0], before[0]), 1e-3);
}

}  // namespace
}  // namespace graft::testing

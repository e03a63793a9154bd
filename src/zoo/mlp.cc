// The zoo's multilayer perceptron: nn.Sequential(Linear, ReLU, Linear, ReLU,
// Linear) exported as Gemm(transB=1) + Relu, the smallest zoo model (tests).
#include "model_builder.h"

namespace graft::zoo::detail {

std::string build_mlp(uint64_t seed) {
  ModelBuilder b("mlp", seed);
  b.add_input("input", onnx::TensorProto::FLOAT, {"batch", 784});
  std::string x = "input";
  const int64_t widths[] = {784, 512, 256, 10};
  for (int layer = 0; layer < 3; ++layer) {
    std::string prefix = "layers." + std::to_string(2 * layer);
    x = b.linear_gemm(prefix, x, widths[layer], widths[layer + 1], layer < 2 ? 1.41421356 : 1.0);
    if (layer < 2) x = b.relu(scope_of("layers." + std::to_string(2 * layer + 1)), x);
  }
  b.mark_output(x, "output", onnx::TensorProto::FLOAT, {"batch", 10});
  return b.serialize();
}

}  // namespace graft::zoo::detail

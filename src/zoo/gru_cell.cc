// A GRU cell (torch.nn.GRUCell(500, 500)) applied for two time steps with a
// residual connection, h = h + cell(x[t], h), batch 100, as PyTorch 1.13
// exports it: no GRU node, but per step a Gather of x[t], two Gemms
// (input and hidden projections with their biases), a Split of each into the
// r, z, n gate pre-activations, and the gate arithmetic written out:
//   r = sigmoid(i_r + h_r), z = sigmoid(i_z + h_z), n = tanh(i_n + r * h_n),
//   h' = n + z * (h - n).
// The same model as `make compare`'s gru_cell_residual. Its 11 pointwise ops
// per step are what the fusion pass turns into one kernel.
#include <cmath>

#include "model_builder.h"

namespace graft::zoo::detail {

std::string build_gru_cell(uint64_t seed) {
  constexpr int64_t kSteps = 2, kBatch = 100, kHidden = 500;
  ModelBuilder b("gru_cell", seed);
  b.add_input("x", onnx::TensorProto::FLOAT, {kSteps, kBatch, kHidden});
  b.add_input("h", onnx::TensorProto::FLOAT, {kBatch, kHidden});
  double bound = 1.0 / std::sqrt(static_cast<double>(kHidden));
  std::string w_ih = b.uniform_weight("cell.weight_ih", {3 * kHidden, kHidden}, -bound, bound);
  std::string w_hh = b.uniform_weight("cell.weight_hh", {3 * kHidden, kHidden}, -bound, bound);
  std::string b_ih = b.uniform_weight("cell.bias_ih", {3 * kHidden}, -bound, bound);
  std::string b_hh = b.uniform_weight("cell.bias_hh", {3 * kHidden}, -bound, bound);
  std::string split_sizes = b.int64_constant("onnx::Split_sizes", {3}, {kHidden, kHidden, kHidden});
  std::string h = "h";
  for (int64_t t = 0; t < kSteps; ++t) {
    std::string scope = t == 0 ? "/cell" : "/cell_" + std::to_string(t);
    std::string index = b.int64_constant("onnx::Gather_" + std::to_string(t), {}, {t});
    std::string x_t = b.op("", "Gather", {"x", index}, {attr_int("axis", 0)});
    std::string gi = b.op(scope, "Gemm", {x_t, w_ih, b_ih}, {attr_int("transB", 1)});
    std::string gh = b.op(scope, "Gemm", {h, w_hh, b_hh}, {attr_int("transB", 1)});
    auto i = b.node(scope, "Split", {gi, split_sizes}, {attr_int("axis", 1)}, 3);
    auto hs = b.node(scope, "Split", {gh, split_sizes}, {attr_int("axis", 1)}, 3);
    std::string r = b.op(scope, "Sigmoid", {b.op(scope, "Add", {i[0], hs[0]})});
    std::string z = b.op(scope, "Sigmoid", {b.op(scope, "Add", {i[1], hs[1]})});
    std::string n = b.op(scope, "Tanh", {b.op(scope, "Add", {i[2], b.op(scope, "Mul", {r, hs[2]})})});
    std::string next = b.op(scope, "Add", {b.op(scope, "Mul", {b.op(scope, "Sub", {h, n}), z}), n});
    h = b.op("", "Add", {h, next});
  }
  b.mark_output(h, "output", onnx::TensorProto::FLOAT, {kBatch, kHidden});
  return b.serialize();
}

}  // namespace graft::zoo::detail

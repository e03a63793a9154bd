// A one-layer GRU (torch.nn.GRU(500, 500)) with a residual connection, as its
// ONNX export looks: one GRU node (linear_before_reset=1, PyTorch's gate
// arithmetic; the exporter has already reordered the gate weights into ONNX's
// z, r, h order and folded them into initializers), Squeeze of the direction
// axis, and Add of the input. Outputs: the sequence output [2,batch,500] and
// the final hidden state [1,batch,500].
#include <cmath>

#include "model_builder.h"

namespace graft::zoo::detail {

std::string build_gru(uint64_t seed) {
  constexpr int64_t kSequence = 2, kFeatures = 500, kHidden = 500;
  ModelBuilder b("gru", seed);
  b.add_input("input", onnx::TensorProto::FLOAT, {kSequence, "batch", kFeatures});
  double bound = 1.0 / std::sqrt(static_cast<double>(kHidden));
  std::string w = b.uniform_weight("onnx::GRU_W", {1, 3 * kHidden, kFeatures}, -bound, bound);
  std::string r = b.uniform_weight("onnx::GRU_R", {1, 3 * kHidden, kHidden}, -bound, bound);
  std::string bias = b.uniform_weight("onnx::GRU_B", {1, 6 * kHidden}, -bound, bound);
  auto outputs = b.node(scope_of("gru"), "GRU", {"input", w, r, bias},
                        {attr_int("hidden_size", kHidden), attr_int("linear_before_reset", 1)}, 2);
  std::string axes = b.int64_constant("onnx::Squeeze_axes", {1}, {1});
  std::string sequence = b.op(scope_of("gru"), "Squeeze", {outputs[0], axes});
  std::string sum = b.op("", "Add", {sequence, "input"});
  b.mark_output(sum, "output", onnx::TensorProto::FLOAT, {kSequence, "batch", kHidden});
  b.mark_output(outputs[1], "hidden", onnx::TensorProto::FLOAT, {1, "batch", kHidden});
  return b.serialize();
}

}  // namespace graft::zoo::detail

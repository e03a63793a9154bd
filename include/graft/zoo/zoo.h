/// \file
/// The model zoo: well-known network architectures built in memory as ONNX
/// models, laid out the way PyTorch's exporter writes them at opset 17
/// (initializers for weights, one ONNX op per framework op), with seeded
/// random weights. Nothing is downloaded; the same name and seed always give
/// the same bytes. See docs/zoo.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace graft::zoo {

/// The names build_zoo_model accepts, sorted ("bert", "gru", "mlp", ...).
std::vector<std::string> zoo_model_names();

/// A one-line description of a zoo model (architecture, input and output).
/// Throws Error(invalid_argument) listing the known names when `name` is unknown.
std::string zoo_model_description(const std::string& name);

/// Builds the model `name` and returns it as a serialized onnx.ModelProto.
/// Weights are drawn from a generator seeded with `seed` (He or Xavier scaled
/// so activations stay of order one through deep networks). Throws
/// Error(invalid_argument) listing the known names when `name` is unknown.
std::string build_zoo_model(const std::string& name, uint64_t seed = 0);

}  // namespace graft::zoo

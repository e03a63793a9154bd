// Conversion of onnx::TensorProto to graft::Tensor, shared by the importer and
// the test-data reader. Every size is checked against the real data before
// anything is allocated.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "graft/core/tensor.h"

namespace graft::frontend {

/// Converts a TensorProto. `what` names the tensor and file in errors;
/// `base_dir` is the model's folder for external data ("" = not allowed).
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& what, const std::string& base_dir);

/// Fills a TensorProto (raw_data) from a tensor.
void tensor_to_proto(const Tensor& tensor, onnx::TensorProto& proto);

/// Reads a whole file, refusing files larger than `max_bytes`; throws Error(io).
std::string read_file_bytes(const std::string& path, size_t max_bytes);

}  // namespace graft::frontend

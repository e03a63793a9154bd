// Conversion of onnx::TensorProto to graft::Tensor, shared by the importer and
// the test-data reader. Every size is checked against the real data before
// anything is allocated.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "graft/core/tensor.h"
#include "model_bytes.h"

namespace graft::frontend {

/// Converts a TensorProto. `what` names the tensor and file in errors;
/// `base_dir` is the model's folder for external data ("" = not allowed).
/// `raw_slice`, when given, is the raw_data that parse_model_skipping_raw_data
/// left in the source (the proto then has none); it is read straight into the
/// new tensor after its size is checked.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& what, const std::string& base_dir,
                         const RawDataSlice* raw_slice = nullptr);

/// Fills a TensorProto (raw_data) from a tensor.
void tensor_to_proto(const Tensor& tensor, onnx::TensorProto& proto);

/// Reads a whole file, refusing files larger than `max_bytes`; throws Error(io).
std::string read_file_bytes(const std::string& path, size_t max_bytes);

}  // namespace graft::frontend

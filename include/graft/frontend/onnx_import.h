/// \file
/// ONNX import (through Debian's libonnx protobuf classes) and export.
#pragma once

#include <memory>
#include <string>

#include "graft/ir/graph.h"

namespace graft::frontend {

/// Loads an ONNX model file into a graft graph. Default-domain opsets 1 to 18
/// (ops keep their semantics of the model's opset). Initializers
/// and Constant ops become Constant nodes; graph inputs that are also
/// initializers become Constants. External data is read only from files inside
/// the model's folder. Every tensor size is checked for overflow and against
/// the real data size before allocating. Unsupported ops fail with one
/// Error(unsupported) listing every unsupported op type and node name.
/// Throws Error(io) when the file cannot be read, Error(invalid_model) when it
/// is not a valid ONNX model.
std::unique_ptr<ir::Graph> load_onnx(const std::string& path);
/// Same, from bytes in memory; `base_dir` is where external data would live
/// ("" = external data not allowed).
std::unique_ptr<ir::Graph> load_onnx_from_memory(const std::string& bytes, const std::string& base_dir = "",
                                                 const std::string& what = "<memory>");

/// Writes a graft graph as an ONNX model file (Constant nodes become
/// initializers). Throws Error(io) on write failure and Error(unsupported) for
/// graft-domain ops that have no ONNX form.
void save_onnx(const ir::Graph& graph, const std::string& path);

}  // namespace graft::frontend

/// \file
/// Loading a model to run, whatever its kind: the one small facade above the
/// runtime (DESIGN.md section 1). An ONNX file is imported and compiled by a
/// Session; a compiled artifact (.graft) is restored as it was compiled.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "graft/runtime/artifact.h"
#include "graft/runtime/session.h"

namespace graft::frontend {

/// A Session for the model at `path`: a compiled artifact when the file is
/// named *.graft or starts with the artifact magic, else an ONNX model.
/// Throws graft::Error naming the file on any problem with it.
std::unique_ptr<runtime::Session> load_model(const std::string& path, runtime::SessionOptions options = {});

/// The same from a model's bytes in memory: a compiled artifact when they
/// start with the artifact magic, else an ONNX model (external data, if any,
/// cannot be found). Errors name them "<ONNX bytes>" or "<artifact bytes>".
std::unique_ptr<runtime::Session> load_model_from_memory(std::string_view bytes, runtime::SessionOptions options = {});

/// Loads an ONNX model, prepares it like a Session (passes, partitioning,
/// fusion), plans it for the given input shapes (compiling every compiled
/// node once) and writes the artifact. Returns what the artifact holds.
runtime::ArtifactInfo compile_artifact(const std::string& onnx_path, const std::string& artifact_path,
                                       const runtime::ArtifactCompileOptions& options);

}  // namespace graft::frontend

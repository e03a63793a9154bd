// The model-loading facade (graft/frontend/load_model.h): ONNX files and
// compiled artifacts both become Sessions; graft compile writes artifacts.
#include "graft/frontend/load_model.h"

#include <cstdlib>

#include "graft/backend/backend.h"
#include "graft/core/parallel.h"
#include "graft/frontend/onnx_import.h"

namespace graft::frontend {

std::unique_ptr<runtime::Session> load_model(const std::string& path, runtime::SessionOptions options) {
  const bool graft_extension = path.size() >= 6 && path.compare(path.size() - 6, 6, ".graft") == 0;
  if (graft_extension || runtime::is_artifact_file(path))
    return std::make_unique<runtime::Session>(runtime::ArtifactPath{path}, std::move(options));
  return std::make_unique<runtime::Session>(load_onnx(path), std::move(options));
}

std::unique_ptr<runtime::Session> load_model_from_memory(std::string_view bytes, runtime::SessionOptions options) {
  if (runtime::has_artifact_magic(bytes))
    return std::make_unique<runtime::Session>(runtime::load_artifact_from_memory(bytes, "<artifact bytes>"),
                                              std::move(options));
  return std::make_unique<runtime::Session>(load_onnx_from_memory(std::string(bytes), "", "<ONNX bytes>"),
                                            std::move(options));
}

runtime::ArtifactInfo compile_artifact(const std::string& onnx_path, const std::string& artifact_path,
                              const runtime::ArtifactCompileOptions& options) {
  if (runtime::is_artifact_file(onnx_path))
    fail(ErrorKind::invalid_argument, "'", onnx_path, "' is already a compiled artifact; compile the ONNX model");
  runtime::SessionOptions session_options = options.session;
  // Compiling ahead of time is where slow compilers pay off: without an explicit
  // list, every available host backend takes part, those left out of a
  // Session's default order (ccodegen) included. Device backends take part
  // when asked for (--backends, or a device in the options).
  const char* env = std::getenv("GRAFT_BACKENDS");
  if (session_options.backends.empty() && !(env && *env) && session_options.device.type == DeviceType::cpu)
    for (const backend::Backend* backend : backend::all_backends())
      if (backend->unavailable_reason().empty() && backend->device().type == DeviceType::cpu)
        session_options.backends.push_back(backend->name());
  runtime::Session session(load_onnx(onnx_path), session_options);
  runtime::Session::PlannedGraph plan =
      session.plan_for_types(runtime::concrete_input_types(session.inputs(), options.input_shapes, options.shape_flag));
  runtime::write_artifact(*plan.graph, plan.modules, artifact_path);
  return runtime::inspect_artifact(artifact_path);
}


}  // namespace graft::frontend

// graft compile: an ONNX model prepared like a Session (passes, partitioning,
// fusion), planned once for concrete input shapes -- which compiles every
// compiled subgraph node with its backend -- and written as an artifact.
#include "graft/frontend/onnx_import.h"
#include "graft/runtime/artifact.h"

namespace graft::runtime {

std::vector<ir::ValueType> artifact_input_types(const std::vector<ValueInfo>& inputs,
                                                const std::map<std::string, Shape>& shapes) {
  for (const auto& [name, shape] : shapes) {
    bool known = false;
    for (const ValueInfo& info : inputs) known = known || info.name == name;
    if (!known) {
      std::string names;
      for (const ValueInfo& info : inputs) names += (names.empty() ? "'" : ", '") + info.name + "'";
      fail(ErrorKind::invalid_argument, "--shape given for '", name, "', which is not an input of the model (inputs: ",
           names.empty() ? "none" : names, ")");
    }
  }
  std::vector<ir::ValueType> types;
  for (const ValueInfo& info : inputs) {
    auto given = shapes.find(info.name);
    if (given != shapes.end()) {
      const Shape& shape = given->second;
      if (info.type.has_rank) {
        if (shape.size() != info.type.dims.size())
          fail(ErrorKind::invalid_argument, "--shape ", info.name, ": rank ", shape.size(), " given, the model declares ",
               info.type.to_string());
        for (size_t d = 0; d < shape.size(); ++d)
          if (info.type.dims[d].is_known() && info.type.dims[d].value != shape[d])
            fail(ErrorKind::invalid_argument, "--shape ", info.name, "=", shape_to_string(shape),
                 " does not fit the model's ", info.type.to_string(), " (dimension ", d, ")");
      }
      types.push_back(ir::ValueType::of(info.type.dtype, shape));
      continue;
    }
    if (!info.type.is_concrete())
      fail(ErrorKind::invalid_argument, "input '", info.name, "' has shape ", info.type.to_string(),
           "; an artifact is compiled for concrete shapes: give --shape ", info.name, "=D0,D1,...");
    types.push_back(info.type);
  }
  return types;
}

ArtifactInfo compile_artifact(const std::string& onnx_path, const std::string& artifact_path,
                              const ArtifactCompileOptions& options) {
  if (is_artifact_file(onnx_path))
    fail(ErrorKind::invalid_argument, "'", onnx_path, "' is already a compiled artifact; compile the ONNX model");
  Session session(frontend::load_onnx(onnx_path), options.session);
  Session::PlannedGraph plan = session.plan_for_types(artifact_input_types(session.inputs(), options.input_shapes));
  write_artifact(*plan.graph, plan.modules, artifact_path);
  return inspect_artifact(artifact_path);
}

}  // namespace graft::runtime

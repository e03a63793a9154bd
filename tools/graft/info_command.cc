// graft info MODEL: what a model holds, read straight from its ONNX protobuf
// (not through the importer, so that it also describes models the importer
// refuses): inputs, outputs, initializers, node count, op histogram, and the
// ops graft cannot run (absent from the op table or without semantics).
// Nodes inside control-flow bodies (If/Loop/Scan graph attributes) count too.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <set>

#include "artifact_info.h"
#include "cli_support.h"
#include "command.h"
#include "graft/core/dtype.h"
#include "graft/core/error.h"
#include "graft/ir/op_schema.h"

namespace graft::cli {

namespace {

std::string elem_type_name(int32_t elem_type) {
  try {
    return std::string(dtype_name(dtype_from_onnx(elem_type)));
  } catch (const Error&) {
    return "type#" + std::to_string(elem_type);
  }
}

std::string describe_type(const onnx::TypeProto& type) {
  switch (type.value_case()) {
    case onnx::TypeProto::kTensorType: {
      const auto& tensor = type.tensor_type();
      std::string text = elem_type_name(tensor.elem_type());
      if (!tensor.has_shape()) return text + "[?]";
      text += "[";
      for (int i = 0; i < tensor.shape().dim_size(); ++i) {
        const auto& dim = tensor.shape().dim(i);
        if (i) text += ",";
        if (dim.has_dim_value())
          text += std::to_string(dim.dim_value());
        else if (dim.has_dim_param() && !dim.dim_param().empty())
          text += dim.dim_param();
        else
          text += "?";
      }
      return text + "]";
    }
    case onnx::TypeProto::kSequenceType:
      return "sequence<" + describe_type(type.sequence_type().elem_type()) + ">";
    case onnx::TypeProto::kOptionalType:
      return "optional<" + describe_type(type.optional_type().elem_type()) + ">";
    case onnx::TypeProto::kMapType:
      return "map<" + elem_type_name(type.map_type().key_type()) + "," + describe_type(type.map_type().value_type()) +
             ">";
    default:
      return "(no type)";
  }
}

struct OpCounts {
  std::map<std::pair<std::string, std::string>, int64_t> by_op;  // (domain, op_type) -> nodes
  int64_t nodes = 0;
  int64_t nested_nodes = 0;
};

void count_nodes(const onnx::GraphProto& graph, OpCounts& counts, bool nested) {
  for (const auto& node : graph.node()) {
    std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    ++counts.by_op[{domain, node.op_type()}];
    ++counts.nodes;
    if (nested) ++counts.nested_nodes;
    for (const auto& attribute : node.attribute()) {
      if (attribute.has_g()) count_nodes(attribute.g(), counts, true);
      for (const auto& body : attribute.graphs()) count_nodes(body, counts, true);
    }
  }
}

std::string qualified(const std::pair<std::string, std::string>& op) {
  return op.first.empty() ? op.second : op.first + "." + op.second;
}

int show_info(const std::string& path) {
  const bool graft_extension = path.size() >= 6 && path.compare(path.size() - 6, 6, ".graft") == 0;
  if (graft_extension || runtime::is_artifact_file(path)) {
    print_artifact_info(path, runtime::inspect_artifact(path));
    return 0;
  }
  std::string bytes = read_file(path);
  if (bytes.empty()) fail(ErrorKind::invalid_model, "'", path, "' is empty, not an ONNX model");
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes))
    fail(ErrorKind::invalid_model, "'", path, "' is not an ONNX model (it does not parse as onnx.ModelProto)");
  if (!model.has_graph() || model.opset_import_size() == 0)
    fail(ErrorKind::invalid_model, "'", path, "' is not an ONNX model (no graph or no opset_import)");
  const onnx::GraphProto& graph = model.graph();

  std::cout << "model: " << path << " (" << format_bytes(bytes.size()) << ")\n";
  std::cout << "  ir_version " << model.ir_version();
  if (!model.producer_name().empty())
    std::cout << ", producer " << model.producer_name() << " " << model.producer_version();
  std::cout << ", opsets:";
  for (const auto& opset : model.opset_import())
    std::cout << " " << (opset.domain().empty() ? "ai.onnx" : opset.domain()) << " " << opset.version();
  std::cout << "\n";
  if (!graph.name().empty()) std::cout << "  graph " << graph.name() << "\n";

  std::set<std::string> initializer_names;
  int64_t parameters = 0;
  for (const auto& t : graph.initializer()) {
    initializer_names.insert(t.name());
    int64_t n = 1;
    for (int64_t d : t.dims()) n = (d >= 0 && n <= INT64_MAX / std::max<int64_t>(d, 1)) ? n * d : -1;
    if (n >= 0 && parameters >= 0) parameters += n;
  }

  std::cout << "inputs:\n";
  for (const auto& input : graph.input()) {
    if (initializer_names.count(input.name())) continue;
    std::cout << "  " << input.name() << ": " << describe_type(input.type()) << "\n";
  }
  std::cout << "outputs:\n";
  for (const auto& output : graph.output())
    std::cout << "  " << output.name() << ": " << describe_type(output.type()) << "\n";
  std::cout << "initializers: " << graph.initializer_size() << " (" << parameters << " values)\n";

  OpCounts counts;
  count_nodes(graph, counts, false);
  std::cout << "nodes: " << counts.nodes;
  if (counts.nested_nodes) std::cout << " (" << counts.nested_nodes << " inside subgraphs)";
  std::cout << "\nops:\n";
  std::vector<std::pair<std::pair<std::string, std::string>, int64_t>> histogram(counts.by_op.begin(),
                                                                                 counts.by_op.end());
  std::stable_sort(histogram.begin(), histogram.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  size_t width = 0;
  for (const auto& [op, count] : histogram) width = std::max(width, qualified(op).size());
  std::vector<std::string> unsupported;
  for (const auto& [op, count] : histogram) {
    std::string name = qualified(op);
    const ir::OpSchema* schema = ir::find_op(op.first, op.second);
    const char* note = "";
    if (!schema) {
      note = "  (unknown to graft)";
      unsupported.push_back(name + " (not in the op table)");
    } else if (!schema->is_implemented()) {
      note = "  (not implemented)";
      unsupported.push_back(name + " (no kernel)");
    }
    std::cout << "  " << name << std::string(width - name.size() + 2, ' ') << count << note << "\n";
  }
  std::cout << "unsupported ops: ";
  if (unsupported.empty()) std::cout << "none";
  for (size_t i = 0; i < unsupported.size(); ++i) std::cout << (i ? ", " : "") << unsupported[i];
  std::cout << "\n";
  return 0;
}

std::function<int()> setup_info(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand("info", "describe a model: inputs, outputs, ops and the ops graft cannot run; or a .graft artifact");
  sub->add_option("model", *path, "the .onnx model or .graft artifact")->required();
  return [path] { return show_info(*path); };
}

}  // namespace

GRAFT_CLI_COMMAND(setup_info);

}  // namespace graft::cli

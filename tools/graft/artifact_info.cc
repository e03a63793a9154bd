#include "artifact_info.h"

#include <iostream>

#include "cli_support.h"
#include "graft/runtime/cpu_features.h"

namespace graft::cli {

void print_artifact_info(const std::string& path, const runtime::ArtifactInfo& info) {
  std::cout << "artifact: " << path << " (" << format_bytes(info.file_bytes) << ")\n"
            << "  format " << info.format_version << ", built by graft " << info.graft_version << " for "
            << info.architecture << ", CPU features required: " << runtime::cpu_feature_names(info.cpu_features)
            << "\n";
  std::cout << "inputs:\n";
  for (const auto& in : info.inputs) std::cout << "  " << in.name << ": " << in.type.to_string() << "\n";
  std::cout << "outputs:\n";
  for (const auto& out : info.outputs) std::cout << "  " << out.name << ": " << out.type.to_string() << "\n";
  std::cout << "sections: graph " << format_bytes(info.graph_bytes) << ", weights " << format_bytes(info.weights_bytes)
            << " (" << info.num_weights << " tensors, " << format_bytes(info.weight_data_bytes)
            << " of data";
  if (info.num_converted_only_weights)
    std::cout << "; " << info.num_converted_only_weights << " stored only in the layout their backend converted them to";
  std::cout << "), modules " << format_bytes(info.modules_bytes) << "\n";
  std::cout << "nodes: " << info.num_nodes << "; by backend:";
  for (const auto& [backend, count] : info.nodes_per_backend) std::cout << " " << backend << " " << count;
  std::cout << "\nmodules: " << info.modules.size() << "\n";
  for (const auto& m : info.modules)
    std::cout << "  node " << m.node_index << " '" << one_line(m.node_name) << "' (" << m.backend << "): "
              << m.type_key << ", " << format_bytes(m.bytes) << "\n";
}

}  // namespace graft::cli

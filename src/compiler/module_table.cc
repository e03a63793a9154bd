#include "graft/compiler/module_table.h"

#include <cstdio>
#include <mutex>
#include <set>
#include <string>

#include "graft/core/error.h"
#include "graft/ir/graph.h"
#include "graft/compiler/shape_specialized_module.h"

namespace graft::compiler {

bool is_compiled_node(const ir::Node& node) {
  static const std::string fallback = backend::fallback_backend().name();
  if (!node.subgraph || node.backend.empty() || node.backend == fallback) return false;
  return (node.op() == ir::OpId::Subgraph || node.op() == ir::OpId::FusedPointwise);
}

namespace {

/// Says once per backend (with the first reason) that subgraphs fell back to the reference kernels.
void warn_fallback(const std::string& backend, const ir::Node& node, const std::string& reason) {
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mutex);
  if (!said.insert(backend).second) return;
  std::fprintf(stderr,
               "graft: warning: backend '%s' could not compile %s (%s); it runs on the reference kernels "
               "(later subgraphs of '%s' that fall back are not reported)\n",
               backend.c_str(), node.describe().c_str(), reason.c_str(), backend.c_str());
}

}  // namespace

backend::ModuleTable compile_modules(ir::Graph& graph, const backend::CompileOptions& options, std::vector<CompileFallback>* fallbacks,
                            bool warn) {
  backend::ModuleTable table(graph.num_nodes());
  for (const auto& node : graph.nodes()) {
    if (!is_compiled_node(*node)) continue;
    // Without a code generator a fused node runs its body with the reference kernels.
    if (node->op() == ir::OpId::FusedPointwise && !backend::find_backend(node->backend)) continue;
    const backend::Backend& backend = backend::get_backend(node->backend);
    try {
      table[node->index()] = backend.compile(*node->subgraph, options);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::unsupported) throw;
      // A subgraph placed on a device reads and writes device values: the
      // host's reference kernels cannot stand in for it.
      if (node->device.type != DeviceType::cpu)
        fail(ErrorKind::unsupported, node->describe(), " on ", to_string(node->device), ": backend '",
             node->backend, "' cannot compile it: ", e.what());
      // Shapes known only when it runs: compiled then, once per input shapes.
      if (ShapeSpecializedModule::worth_specializing(*node->subgraph)) {
        table[node->index()] = std::make_shared<ShapeSpecializedModule>(backend, *node->subgraph, options);
        if (fallbacks) fallbacks->push_back({node->name, node->backend, e.what(), {}, true});
        continue;
      }
      if (warn) warn_fallback(node->backend, *node, e.what());
      if (fallbacks) fallbacks->push_back({node->name, node->backend, e.what(), {}});
      node->backend = backend::fallback_backend().name();
    }
  }
  return table;
}

}  // namespace graft::compiler

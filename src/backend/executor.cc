#include "graft/backend/executor.h"

#include "graft/backend/backend.h"
#include "graft/core/parallel.h"

namespace graft::backend {

Executor::Executor(const ir::Graph& graph) : Executor(graph, ModuleTable{}) {}

Executor::Executor(const ir::Graph& graph, ModuleTable modules)
    : graph_(graph), indexed_(graph), modules_(std::move(modules)) {
  const size_t entries = indexed_.num_entries();
  last_use_.assign(entries, ir::Entry::kAbsent);
  keep_.assign(entries, false);
  input_position_.assign(indexed_.num_nodes(), -1);
  for (uint32_t id = 0; id < indexed_.num_nodes(); ++id) {
    const ir::Node& n = indexed_.node(id);
    if (n.schema().category == ir::OpCategory::source)
      for (int k = 0; k < n.num_outputs(); ++k) keep_[indexed_.entry_id(id, static_cast<uint32_t>(k))] = true;
    for (const ir::Entry& e : indexed_.inputs(id))
      if (e.present()) last_use_[indexed_.entry_id(e)] = id;
  }
  for (const ir::Entry& e : indexed_.outputs()) keep_[indexed_.entry_id(e)] = true;
  const auto& inputs = graph.inputs();
  for (size_t i = 0; i < inputs.size(); ++i) input_position_[indexed_.id_of(*inputs[i])] = static_cast<int32_t>(i);
}

std::vector<Tensor> Executor::run(std::span<const Tensor> inputs, BufferPool& pool, const RunOptions& options,
                                  RunStats* stats) const {
  GRAFT_CHECK(inputs.size() == graph_.inputs().size(), "executor got ", inputs.size(), " inputs, graph has ",
              graph_.inputs().size());
  ScopedNumThreads threads(options.num_threads);
  if (!options.nested) pool.begin_run();
  std::vector<Tensor> values(indexed_.num_entries());
  ops::SubgraphRunner run_body = [&pool, &options](const ir::Graph& body, const std::vector<Tensor>& body_inputs) {
    Executor body_executor(body);
    RunOptions body_options = options;
    body_options.nested = true;
    body_options.profile = false;
    return body_executor.run(body_inputs, pool, body_options);
  };
  std::vector<Tensor> node_inputs;
  std::vector<bool> dies;
  for (uint32_t id = 0; id < indexed_.num_nodes(); ++id) {
    const ir::Node& n = indexed_.node(id);
    uint32_t first_entry = indexed_.entry_id(id, 0);
    if (n.schema().category == ir::OpCategory::source) {
      if (input_position_[id] >= 0) values[first_entry] = inputs[static_cast<size_t>(input_position_[id])];
      else values[first_entry] = n.constant_value;
      continue;
    }
    const CompiledModule* module = n.index() < modules_.size() ? modules_[n.index()].get() : nullptr;
    if (!module && !n.schema().kernel) fail(ErrorKind::unsupported, n.describe(), ": no kernel for this op");
    auto in_entries = indexed_.inputs(id);
    node_inputs.assign(in_entries.size(), Tensor());
    dies.assign(in_entries.size(), false);
    for (size_t k = 0; k < in_entries.size(); ++k) {
      if (!in_entries[k].present()) continue;
      uint32_t e = indexed_.entry_id(in_entries[k]);
      node_inputs[k] = values[e];
      dies[k] = !keep_[e] && last_use_[e] == id;
    }
    auto start = options.profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    std::vector<Tensor> outs;
    if (module) {
      ModuleRunContext module_context{pool, options.num_threads, nullptr};
      outs = module->run(node_inputs, module_context);
      if (outs.size() != static_cast<size_t>(n.num_outputs()))
        fail(ErrorKind::internal, n.describe(), ": module '", module->type_key(), "' returned ", outs.size(),
             " outputs, expected ", n.num_outputs());
    } else {
      ops::KernelContext ctx(n, std::move(node_inputs), dies, pool, options.num_threads, run_body);
      n.schema().kernel(ctx);
      outs = std::move(ctx.outputs());
    }
    if (options.profile && stats) {
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
      int64_t model_nodes = 1;
      if (n.subgraph) {
        model_nodes = 0;
        for (const auto& inner : n.subgraph->nodes())
          model_nodes += inner->schema().category == ir::OpCategory::source ? 0 : 1;
      }
      stats->timings.push_back({n.name, n.op_type(), n.backend.empty() ? fallback_backend().name() : n.backend, us, start, model_nodes});
    }
    for (size_t k = 0; k < outs.size(); ++k) values[first_entry + k] = std::move(outs[k]);
    node_inputs = std::vector<Tensor>();
    // Drop inputs whose last reader was this node so their buffers can be reused.
    for (const ir::Entry& e : in_entries) {
      if (!e.present()) continue;
      uint32_t entry = indexed_.entry_id(e);
      if (!keep_[entry] && last_use_[entry] == id) values[entry] = Tensor();
    }
    // Outputs nobody reads are dropped at once.
    for (size_t k = 0; k < outs.size(); ++k) {
      uint32_t entry = first_entry + static_cast<uint32_t>(k);
      if (!keep_[entry] && last_use_[entry] == ir::Entry::kAbsent) values[entry] = Tensor();
    }
  }
  std::vector<Tensor> results;
  results.reserve(indexed_.outputs().size());
  for (const ir::Entry& e : indexed_.outputs()) {
    const Tensor& t = values[indexed_.entry_id(e)];
    if (!t.is_defined())
      fail(ErrorKind::internal, "graph output '", graph_.value_name(ir::Value{&indexed_.mutable_node(e.node_id), static_cast<int>(e.index)}),
           "' was not computed");
    results.push_back(t);
  }
  if (stats) stats->memory = pool.stats();
  return results;
}

}  // namespace graft::backend

// Helpers of the dnnl backend tests: small graphs, compiling a whole graph
// with the dnnl backend, and comparing with the reference kernels.
#pragma once

#include <gtest/gtest.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cmath>

#include "../../backends/dnnl/dnnl_backend.h"
#include "graft/ops/type_inference.h"
#include "graft/backend/backend.h"
#include "graft/runtime/session.h"
#include "support/graph_runner.h"

namespace graft::testing {

/// An empty graph at opset 17.
/// Whether oneDNN runs AVX-512 (core) kernels here: what its brgemm matmul
/// and Winograd convolutions need. Follows ONEDNN_MAX_CPU_ISA too.
inline bool onednn_runs_avx512_core() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto avx512_core = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
  return (isa & avx512_core) == avx512_core;
}

inline std::unique_ptr<ir::Graph> new_graph() {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  return g;
}

/// max |got - want| / max |want| (0 when both are zero).
inline double max_relative_error(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  if (got.shape() != want.shape()) return 1e30;
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double a = got.value_as_double(i), b = want.value_as_double(i);
    if (std::isnan(a) || std::isnan(b)) return 1e30;
    diff = std::max(diff, std::abs(a - b));
    scale = std::max(scale, std::abs(b));
  }
  return scale == 0 ? diff : diff / scale;
}

/// Compiles `graph` (types inferred, concrete) as one dnnl subgraph.
inline std::unique_ptr<backend::CompiledModule> compile_dnnl(const ir::Graph& graph, int threads = 2) {
  backend::CompileOptions options;
  options.num_threads = threads;
  return backend::get_backend("dnnl").compile(graph, options);
}

/// Runs a compiled module once.
inline std::vector<Tensor> run_module(const backend::CompiledModule& module, const std::vector<Tensor>& inputs,
                                      int threads = 2) {
  backend::BufferPool pool;
  backend::ModuleRunContext context{pool, threads, nullptr};
  return module.run(inputs, context);
}

/// Infers types, then checks dnnl against the reference kernels on `inputs`:
/// every output within `tolerance` max relative error. Returns the module's statistics.
inline dnnl_backend::DnnlModuleStats expect_dnnl_matches_reference(ir::Graph& graph, const std::vector<Tensor>& inputs,
                                                                  double tolerance = 1e-4) {
  ops::infer_types(graph);
  std::vector<Tensor> want = run_graph(graph, inputs);
  auto module = compile_dnnl(graph);
  std::vector<Tensor> got = run_module(*module, inputs);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i)
    EXPECT_LE(max_relative_error(got[i], want[i]), tolerance) << "output " << i;
  return dnnl_backend::dnnl_module_stats(*module);
}

/// The options of the dnnl tests' whole-graph sessions: dnnl, then fused
/// kernels, then the reference kernels, on 2 threads.
inline runtime::SessionOptions dnnl_session_options() {
  runtime::SessionOptions options;
  options.backends = {"dnnl", "fuse", "ref"};
  options.num_threads = 2;
  return options;
}

/// A graph with one graft.Subgraph node (backend `backend`) whose body is `body`.
inline std::unique_ptr<ir::Graph> wrap_in_subgraph(const ir::Graph& body, const std::string& backend) {
  auto outer = new_graph();
  std::vector<ir::Value> inputs;
  for (const ir::Node* in : body.inputs()) inputs.push_back(outer->add_input(in->output_names[0].empty() ? in->name : in->output_names[0], in->output_types[0])->output(0));
  ir::Node* node = outer->add_node("Subgraph", inputs, static_cast<int>(body.outputs().size()), backend + "_0", "graft");
  node->subgraph = std::shared_ptr<ir::Graph>(body.clone().release());
  node->backend = backend;
  node->attributes.set("backend", backend);
  node->attributes.set("id", int64_t{0});
  for (size_t i = 0; i < body.outputs().size(); ++i) outer->add_output(node->output(static_cast<int>(i)), "out" + std::to_string(i));
  return outer;
}

}  // namespace graft::testing

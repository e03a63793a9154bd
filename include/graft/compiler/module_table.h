/// \file
/// ModuleTable: the CompiledModule of each subgraph node of one planned graph,
/// indexed by Node::index(). The executor runs a node through its module when
/// it has one, else through the op's reference kernel.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "graft/backend/backend.h"

namespace graft::compiler {


/// A subgraph whose backend declined to compile it at plan time: it runs on
/// the reference kernels instead, or, when its shapes are known only once it
/// runs and it computes enough to gain from its backend
/// (ShapeSpecializedModule::worth_specializing), its backend compiles it
/// when it runs, once per input shapes (Session::compile_fallbacks,
/// `graft run --report`).
struct CompileFallback {
  std::string node;     ///< the subgraph node ("dnnl_subgraph_3")
  std::string backend;  ///< the backend that declined it
  std::string reason;   ///< the backend's message
  std::string inputs;   ///< the model input types of the plan it happened in ("float32[1,3,224,224]"), set by Session
  bool compiled_when_run = false;  ///< true: a ShapeSpecializedModule compiles it when it runs
};

/// True for nodes a backend compiles: graft.Subgraph and graft.FusedPointwise
/// with a body and an assigned backend other than "ref".
bool is_compiled_node(const ir::Node& node);

/// Compiles every compiled node of `graph` (types must be concrete) with its
/// backend. Throws invalid_argument for a node whose backend is not registered,
/// except graft.FusedPointwise nodes, which then run their body through the
/// reference kernels (fusion works before any code generator is built in).
/// A backend that declines a subgraph at compile time (ErrorKind::unsupported:
/// say, a shape only known once the graph runs) does not fail the plan. When
/// ShapeSpecializedModule::worth_specializing, the node keeps its backend and
/// gets a ShapeSpecializedModule, which compiles it when it runs; otherwise
/// the node is given to `ref` (Node::backend, so artifacts and reports show
/// it), runs its body on the reference kernels, and graft warns once per
/// backend on stderr (unless `warn` is false: the shape-generic plan, where
/// declining is expected). Either way the node is appended to `fallbacks`
/// when given.
backend::ModuleTable compile_modules(ir::Graph& graph, const backend::CompileOptions& options,
                            std::vector<CompileFallback>* fallbacks = nullptr, bool warn = true);

}  // namespace graft::compiler

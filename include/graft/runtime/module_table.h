/// \file
/// ModuleTable: the CompiledModule of each subgraph node of one planned graph,
/// indexed by Node::index(). The executor runs a node through its module when
/// it has one, else through the op's reference kernel.
#pragma once
#include <memory>
#include <vector>

#include "graft/runtime/backend.h"

namespace graft::runtime {

using ModuleTable = std::vector<std::shared_ptr<const CompiledModule>>;

/// True for nodes a backend compiles: graft.Subgraph and graft.FusedPointwise
/// with a body and an assigned backend other than "ref".
bool is_compiled_node(const ir::Node& node);

/// Compiles every compiled node of `graph` (types must be concrete) with its
/// backend. Throws invalid_argument for a node whose backend is not registered,
/// except graft.FusedPointwise nodes, which then run their body through the
/// reference kernels (fusion works before any code generator is built in).
/// A backend that declines a subgraph at compile time (ErrorKind::unsupported:
/// say, a shape only known once the graph runs) does not fail the plan: the
/// node is given to `ref` (Node::backend, so artifacts and reports show it),
/// runs its body on the reference kernels, and graft warns once per backend
/// on stderr.
ModuleTable compile_modules(ir::Graph& graph, const CompileOptions& options);

}  // namespace graft::runtime

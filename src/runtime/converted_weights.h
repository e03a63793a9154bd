// Internal to the runtime: which weights only their converted copies need.
#pragma once

#include <cstddef>

#include "graft/ir/graph.h"
#include "graft/compiler/module_table.h"

namespace graft::runtime {

/// Marks releasable (Storage::set_releasable) the storage of every weight of
/// `planned` that is read only by modules that supersede it
/// (backend::CompiledModule::superseded_constants: dnnl, which keeps them converted):
/// each occurrence of its storage in the graph, bodies included, is a
/// Constant of such a module's body viewing all of it. The module releases it
/// once converted. Only for a plan that can be the session's only one (fixed
/// input shapes): another plan's modules would need the originals. Returns
/// the number of storages marked.
size_t mark_weights_only_converted(const ir::Graph& planned, const backend::ModuleTable& modules);

}  // namespace graft::runtime

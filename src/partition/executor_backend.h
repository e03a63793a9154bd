// The backend graft registers for a SubgraphProperty (or a set of op support
// checkers) whose author registered no runtime::Backend: its modules run the
// subgraph with graft's executor and reference kernels.
#pragma once

#include <string>

namespace graft::partition {

/// Registers the executor backend `name` unless a backend of that name exists
/// (a real one registered later replaces it). Returns true.
bool register_executor_backend(const std::string& name);

}  // namespace graft::partition

// A backend made from a SubgraphProperty (or op support checkers) alone.
#pragma once

#include <memory>
#include <string>

#include "graft/backend/backend.h"

namespace graft::backend {

/// A backend named `name` that takes what `property` selects (null: what
/// the op support checkers registered under `name` accept) and compiles as
/// the fallback backend does.
std::shared_ptr<const Backend> make_property_backend(std::string name,
                                                     std::shared_ptr<partition::SubgraphProperty> property);

}  // namespace graft::backend

/// \file
/// TensorBytesKey: which bytes a tensor views (its storage, byte offset and
/// size). The clones that a plan and its subgraph bodies make of a tensor
/// share its storage, so two tensors with equal keys are the same weight:
/// the runtime and the backends that convert weights use the key to find a
/// weight's other copies.
#pragma once

#include <cstddef>
#include <tuple>

#include "graft/core/tensor.h"

namespace graft {

/// Storage, byte offset and size of a tensor's bytes; ordered, so it keys a
/// std::set or std::map.
using TensorBytesKey = std::tuple<const Storage*, size_t, size_t>;

/// The key of the bytes `t` views.
inline TensorBytesKey tensor_bytes_key(const Tensor& t) { return {t.storage().get(), t.byte_offset(), t.nbytes()}; }

}  // namespace graft

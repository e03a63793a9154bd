// Internal to the runtime (and backends that compare weights): which bytes a
// tensor views.
#pragma once

#include <cstddef>
#include <tuple>

#include "graft/core/tensor.h"

namespace graft::runtime {

/// Storage, byte offset and size: the clones a plan and its subgraph bodies
/// make share storage, so two tensors with equal keys are the same weight.
using TensorBytesKey = std::tuple<const Storage*, size_t, size_t>;

inline TensorBytesKey tensor_bytes_key(const Tensor& t) { return {t.storage().get(), t.byte_offset(), t.nbytes()}; }

}  // namespace graft::runtime

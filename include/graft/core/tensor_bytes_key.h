/// \file
/// Which bytes a tensor views: a key under which the runtime and backends
/// that keep converted weights recognise one weight in its several clones.
#pragma once

#include <cstddef>
#include <tuple>

#include "graft/core/tensor.h"

namespace graft {

/// Storage, byte offset and size: the clones a plan and its subgraph bodies
/// make share storage, so two tensors with equal keys are the same weight.
using TensorBytesKey = std::tuple<const Storage*, size_t, size_t>;

inline TensorBytesKey tensor_bytes_key(const Tensor& t) { return {t.storage().get(), t.byte_offset(), t.nbytes()}; }

}  // namespace graft

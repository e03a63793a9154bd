// The sum of the gradients of slices that cut a value into pieces, as the
// Concat of the pieces' gradients.
#pragma once

#include <vector>

#include "graft/ops/gradient.h"

namespace graft::autodiff {

/// When every contribution is a backward constant-mode Pad (a Slice's
/// gradient: the slice's gradient padded with zeros to the sliced value's
/// shape) along one and the same axis, and the unpadded ranges tile that
/// axis without overlap (a fused projection split into Q, K and V), their
/// Sum is the Concat of the Pads' inputs in range order: returns that Concat
/// (added through `ctx`); a null value otherwise. The Pads are left unread.
ir::Value join_slice_gradients(ops::GradientContext& ctx, const std::vector<ir::Value>& contributions);

}  // namespace graft::autodiff

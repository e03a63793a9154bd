// Launch shapes shared by the OpenCL row kernels (pools, Softmax,
// normalizations, reductions): one work-item per output or row, or one
// work-group of kGroupSize per row, and which of the two a row length takes
// on a device.
//
// Every kernel of those files checks its index against the real count, so
// the 1-D ranges are rounded up to whole work-groups of kGroupSize: one
// work-group size whatever the shape (PoCL specializes a kernel per
// work-group size, once) and groups a GPU schedules well. The work-group
// kernels declare reqd_work_group_size(64, 1, 1) and reduce in __local
// memory.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "graft/core/error.h"
#include "opencl_kernel.h"

#ifdef GRAFT_HAVE_OPENCL_HEADERS

namespace graft::opencl {

/// Work-items per work-group of the row kernels (the kernels' sources spell it 64).
inline constexpr int64_t kGroupSize = 64;
/// Rows shorter than this always run one work-item per row.
inline constexpr int64_t kGroupRowMinimum = 256;

/// `n` work-items in work-groups of kGroupSize (the kernels skip the items past n).
inline ClRange items(int64_t n) {
  ClRange range;
  range.local[0] = static_cast<size_t>(kGroupSize);
  range.global[0] = static_cast<size_t>((n + kGroupSize - 1) / kGroupSize * kGroupSize);
  return range;
}

/// One work-group of kGroupSize per row, `rows` rows.
inline ClRange groups(int64_t rows) {
  ClRange range;
  range.local[0] = static_cast<size_t>(kGroupSize);
  range.global[0] = static_cast<size_t>(rows * kGroupSize);
  return range;
}

/// Whether `rows` rows of `n` elements each run one work-group per row on
/// `device` rather than one work-item per row. On a GPU every row of
/// kGroupRowMinimum elements or more does (the group's reads of a row
/// coalesce, its lanes share the row's work). Elsewhere (PoCL on a CPU,
/// where a work-group's barriers cost more than they save) only when the
/// rows are too few to give each compute unit four of them.
inline bool group_per_row(const ClDevice& device, int64_t rows, int64_t n) {
  if (n < kGroupRowMinimum) return false;
  const codegen::OpenClDeviceInfo& info = codegen::opencl_devices().at(static_cast<size_t>(device.index()));
  if (info.kind == "gpu") return true;
  return rows < 4 * std::max<int64_t>(1, info.compute_units);
}

/// `support`, with a malformed attribute (a graft::Error while reading the
/// node) reported as the reason instead of thrown at the partitioner.
template <std::string (*support)(const KernelRequest&)>
std::string guarded(const KernelRequest& request) {
  try {
    return support(request);
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace graft::opencl

#endif  // GRAFT_HAVE_OPENCL_HEADERS

#include "graft/ops/broadcast.h"

#include "graft/core/error.h"

namespace graft::ops {

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  GRAFT_CHECK(in.size() <= out.size(), "broadcast of rank ", in.size(), " to rank ", out.size());
  std::vector<int64_t> strides(out.size(), 0);
  size_t lead = out.size() - in.size();
  int64_t s = 1;
  for (size_t d = in.size(); d-- > 0;) {
    GRAFT_CHECK(in[d] == out[d + lead] || in[d] == 1, "shape ", shape_to_string(in), " does not broadcast to ",
                shape_to_string(out));
    strides[d + lead] = in[d] == 1 ? 0 : s;
    s *= in[d];
  }
  return strides;
}

}  // namespace graft::ops

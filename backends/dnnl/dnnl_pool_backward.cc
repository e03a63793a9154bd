// Pooling gradients: graft.MaxPoolGrad(d_y, x) and graft.AveragePoolGrad(d_y,
// x) -> d_x on oneDNN's pooling_v2_backward, with the forward's window
// (pool_window: ceil_mode as extra end padding, as the forward does).
// oneDNN's max pooling backward reads a workspace that the forward in
// training mode writes (where each window's maximum is); the op's inputs are
// d_y and x, so the kernel runs that forward on x first, into a discarded
// output, and then the backward. Average pooling needs no workspace: its
// backward only takes the forward as its hint. Both read and write the
// layout of x's slot (a convolution's blocked layout stays blocked), as the
// forward pool does; d_y is converted to the layout of the forward's output.
#include "dnnl_emitters.h"

namespace graft::dnnl_backend {

using dnnl::algorithm;
using dnnl::prop_kind;

int emit_pool_grad(Builder& b, const ir::Node& node) {
  int x = b.dense(b.slot_of(b.input(node, 1)), node.name);
  const Dims x_dims = b.desc(x).dims();
  const Dims y_dims = b.dims(b.input(node, 0));
  const PoolWindow w = pool_window(node, x_dims);
  dnnl::pooling_v2_forward::primitive_desc forward(
      dnnl::pooling_v2_forward::desc(prop_kind::forward_training, w.alg, b.desc(x), any_desc(y_dims), w.strides,
                                     w.kernel, w.dilation, w.pad_l, w.pad_r),
      Builder::new_attr(), b.engine());
  dnnl::pooling_v2_backward::primitive_desc pd(
      dnnl::pooling_v2_backward::desc(w.alg, forward.src_desc(), forward.dst_desc(), w.strides, w.kernel, w.dilation,
                                      w.pad_l, w.pad_r),
      Builder::new_attr(), b.engine(), forward);
  std::vector<std::pair<int, int>> args;
  if (w.alg == algorithm::pooling_max) {
    int y = b.add_slot(forward.dst_desc());
    int workspace = b.add_slot(forward.workspace_desc());
    b.add_step(dnnl::pooling_v2_forward(forward), forward,
               {{DNNL_ARG_SRC, b.as_desc(x, forward.src_desc(), node.name)},
                {DNNL_ARG_DST, y},
                {DNNL_ARG_WORKSPACE, workspace}},
               node.name + " (forward for the workspace)");
    args.push_back({DNNL_ARG_WORKSPACE, workspace});
  }
  int dy = b.as_desc(b.dense(b.slot_of(b.input(node, 0)), node.name), pd.diff_dst_desc(), node.name);
  int dx = b.add_slot(pd.diff_src_desc());
  args.push_back({DNNL_ARG_DIFF_DST, dy});
  args.push_back({DNNL_ARG_DIFF_SRC, dx});
  b.add_step(dnnl::pooling_v2_backward(pd), pd, std::move(args), node.name);
  return dx;
}

}  // namespace graft::dnnl_backend

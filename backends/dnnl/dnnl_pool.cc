// Pools and resampling: MaxPool, AveragePool, their global forms, Resize and
// Expand of spatial extents of 1, on oneDNN's pooling and resampling
// primitives, which read and write the layout of their input (a
// convolution's blocked layout stays blocked).
// ONNX's ceil_mode becomes extra end padding, so that oneDNN produces the
// output extents ONNX defines.
#include <algorithm>

#include "dnnl_emitters.h"
#include "graft/ops/conv_util.h"

namespace graft::dnnl_backend {
namespace {

using dnnl::algorithm;
using dnnl::prop_kind;
using ir::OpId;

int pool(Builder& b, const ir::Node& node, algorithm alg, const Dims& out, const Dims& strides, const Dims& kernel,
         const Dims& dilation, const Dims& pad_l, const Dims& pad_r) {
  int src = b.dense(b.slot_of(b.input(node, 0)), node.name);
  dnnl::pooling_v2_forward::primitive_desc pd(
      dnnl::pooling_v2_forward::desc(prop_kind::forward_inference, alg, b.desc(src), any_desc(out), strides, kernel,
                                     dilation, pad_l, pad_r),
      Builder::new_attr(), b.engine());
  src = b.as_desc(src, pd.src_desc(), node.name);
  int dst = b.add_slot(pd.dst_desc());
  b.add_step(dnnl::pooling_v2_forward(pd), pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, node.name);
  return dst;
}

}  // namespace

PoolWindow pool_window(const ir::Node& node, const Dims& x) {
  const bool max = node.op() == OpId::MaxPool || node.op() == OpId::MaxPoolGrad;
  const size_t spatial = x.size() - 2;
  ops::conv::WindowAttributes attrs = ops::conv::read_window_attributes(node, spatial, {}, true);
  PoolWindow w;
  for (size_t d = 0; d < spatial; ++d) {
    ops::conv::ResolvedDim r = ops::conv::resolve_dim(node, attrs, d, x[2 + d]);
    int64_t window = (attrs.kernel[d] - 1) * attrs.dilations[d] + 1;
    int64_t needed = (r.output - 1) * attrs.strides[d] + window - x[2 + d] - r.pad_begin;
    w.strides.push_back(attrs.strides[d]);
    w.kernel.push_back(attrs.kernel[d]);
    w.dilation.push_back(attrs.dilations[d] - 1);
    w.pad_l.push_back(r.pad_begin);
    w.pad_r.push_back(std::max(needed, r.pad_end));
  }
  w.alg = max                                               ? algorithm::pooling_max
          : node.attributes.get_int("count_include_pad", 0) ? algorithm::pooling_avg_include_padding
                                                            : algorithm::pooling_avg_exclude_padding;
  return w;
}

int emit_pool(Builder& b, const ir::Node& node) {
  const PoolWindow w = pool_window(node, b.dims(b.input(node, 0)));
  return pool(b, node, w.alg, dims_of(node.output_types[0]), w.strides, w.kernel, w.dilation, w.pad_l, w.pad_r);
}

int emit_global_pool(Builder& b, const ir::Node& node) {
  Dims x = b.dims(b.input(node, 0)), out = dims_of(node.output_types[0]);
  size_t spatial = x.size() - 2;
  Dims kernel(x.begin() + 2, x.end()), ones(spatial, 1), zeros(spatial, 0);
  algorithm alg = node.op() == OpId::GlobalMaxPool ? algorithm::pooling_max : algorithm::pooling_avg_exclude_padding;
  return pool(b, node, alg, out, ones, kernel, zeros, zeros, zeros);
}

namespace {

int resample(Builder& b, const ir::Node& node, algorithm alg) {
  Dims out = dims_of(node.output_types[0]);
  int src = b.dense(b.slot_of(b.input(node, 0)), node.name);
  dnnl::resampling_forward::primitive_desc pd(
      dnnl::resampling_forward::desc(prop_kind::forward_inference, alg, b.desc(src), any_desc(out)),
      Builder::new_attr(), b.engine());
  int dst = b.add_slot(pd.dst_desc());
  b.add_step(dnnl::resampling_forward(pd), pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, node.name);
  return dst;
}

}  // namespace

// Resize over the spatial dimensions (dnnl_support.cc says which modes):
// oneDNN's resampling reads and writes the activation's blocked layout.
int emit_resize(Builder& b, const ir::Node& node) {
  return resample(b, node,
                  node.attributes.get_string("mode", "nearest") == "linear" ? algorithm::resampling_linear
                                                                            : algorithm::resampling_nearest);
}

// An extent of 1 resampled to n by nearest neighbour reads its one value n
// times: an Expand of those dimensions.
int emit_expand(Builder& b, const ir::Node& node) { return resample(b, node, algorithm::resampling_nearest); }

}  // namespace graft::dnnl_backend

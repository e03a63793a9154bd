// Convolutions: Conv and ConvTranspose anchors with their groups' post-ops.
// Source, weights and destination are created with format_tag::any, so
// oneDNN picks blocked layouts; the weights (a BatchNormalization folded in)
// are converted to the layout picked (dnnl_weights.cc); a Conv of
// fake-quantized input and int8 weights runs in int8 (dnnl_int8.cc). 3x3 convolutions
// with large outputs ask for Winograd; a ConvTranspose whose kernel equals
// its stride runs as a matmul and one reorder.
#include <algorithm>

#include "dnnl_emitters.h"
#include "dnnl_int8.h"
#include "graft/ops/conv_util.h"

namespace graft::dnnl_backend {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;

// Winograd's minimal filtering (F(2x2,3x3) or F(4x4,3x3), oneDNN picks)
// does 2.25-4x fewer multiplications than a direct 3x3 convolution, but
// transforms every input and output tile and stores the weights 1.8-4x
// larger. It wins where the output is large next to the weights: measured
// on resnet50's stride-1 3x3 layers (2 threads, AMD Zen 5), 28% faster at
// 56x56 and 28x28, 21% at 14x14, 5% at 7x7, where the weights are 7-28x
// larger too. Hence: 3x3, stride 1, undilated, ungrouped, output at least
// 28x28. oneDNN has Winograd only for some ISAs and post-ops; the
// convolution falls back to direct where it has none.
// The weights' transform, done once at the first run, is slow in oneDNN
// (about 0.2 us per input-output channel pair): 215 ms for the 2048 -> 512
// convolution of torchvision's FCN head, whose run it shortened by 3 ms
// (fcn_resnet50's first run 390 -> 171 ms without it). Hence also at most
// 256 x 256 channel pairs (13 ms).
bool prefers_winograd(const std::vector<int64_t>& kernel, const Dims& strides, const Dims& dilates, int64_t group,
                      const Dims& dst_dims, const Dims& w_dims) {
  if (kernel.size() != 2 || kernel[0] != 3 || kernel[1] != 3 || group != 1) return false;
  for (size_t d = 0; d < 2; ++d)
    if (strides[d] != 1 || dilates[d] != 0) return false;
  if (w_dims[0] * w_dims[1] > 256 * 256) return false;
  return dst_dims[2] * dst_dims[3] >= 28 * 28;
}

// A ConvTranspose whose kernel equals its stride (no padding, dilation or
// groups) writes each input pixel into its own kh x kw block of the output:
// one product [N*H*W, C_in] x [C_in, C_out*kh*kw] and a reorder that moves
// the blocks into place. oneDNN 2.6's deconvolution ran Mask R-CNN's mask
// head upsampling (256 -> 256 channels, 2x2 stride 2, 100 regions of 14x14)
// at 39 GFLOP/s, 263 ms; as a product it is brgemm's. Eltwise post-ops
// only (they commute with the reorder); -1 when the node is not such a case.
int emit_conv_transpose_as_matmul(Builder& b, const Group& g, const std::string& label) {
  const ir::Node& node = b.graph().node(g.anchor);
  Dims x_dims = b.dims(b.input(node, 0)), w_dims = b.dims(b.input(node, 1));
  Dims dst_dims = dims_of(node.output_types[0]);
  if (x_dims.size() != 4 || w_dims.size() != 4 || node.attributes.get_int("group", 1) != 1) return -1;
  const std::string auto_pad = node.attributes.get_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID") return -1;
  const Dims kernel = {w_dims[2], w_dims[3]};
  auto all_equal = [](const std::vector<int64_t>& v, int64_t x) {
    return std::all_of(v.begin(), v.end(), [x](int64_t e) { return e == x; });
  };
  if (node.attributes.get_ints("strides", std::vector<int64_t>{1, 1}) != kernel) return -1;
  if (auto_pad == "NOTSET" && !all_equal(node.attributes.get_ints("pads", std::vector<int64_t>(4, 0)), 0)) return -1;
  if (!all_equal(node.attributes.get_ints("dilations", std::vector<int64_t>(2, 1)), 1)) return -1;
  if (!all_equal(node.attributes.get_ints("output_padding", std::vector<int64_t>(2, 0)), 0)) return -1;
  const int64_t n = x_dims[0], c_in = x_dims[1], h = x_dims[2], w = x_dims[3];
  const int64_t c_out = w_dims[1], kh = kernel[0], kw = kernel[1], block = kh * kw;
  if (w_dims[0] != c_in || dst_dims != Dims{n, c_out, h * kh, w * kw}) return -1;
  dnnl::post_ops ops;
  for (const PostOp& p : g.post_ops) {
    if (p.kind != PostOp::Kind::eltwise) return -1;
    ops.append_eltwise(1.0f, p.alg, p.alpha, p.beta);
  }
  const int64_t rows = n * h * w, columns = c_out * block;
  dnnl::primitive_attr attr = Builder::new_attr();
  attr.set_post_ops(ops);
  const bool bias = b.has_input(node, 2);
  memory::desc src_md = plain_desc({rows, c_in}), dst_md = plain_desc({rows, columns});
  memory::desc w_any = any_desc({c_in, columns}), b_md = plain_desc({1, columns});
  dnnl::matmul::primitive_desc pd(
      bias ? dnnl::matmul::desc(src_md, w_any, b_md, dst_md) : dnnl::matmul::desc(src_md, w_any, dst_md), attr,
      b.engine());
  // Channels-last input: its bytes are the [N*H*W, C_in] rows.
  memory::desc channels_last({n, c_in, h, w}, memory::data_type::f32, memory::format_tag::nhwc);
  int src = b.view(b.as_desc(b.slot_of(b.input(node, 0)), channels_last, label), src_md);
  Weight weight;
  weight.sources = {b.source_of(b.input(node, 1))};
  weight.plain = plain_desc({c_in, columns});  // ONNX's [C_in, C_out, kh, kw]
  weight.desc = pd.weights_desc();
  weight.identity = weight.plain == weight.desc;
  weight.label = node.name;
  int w_slot = b.add_weight(std::move(weight));
  int product = b.add_slot(dst_md);
  std::vector<std::pair<int, int>> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w_slot}, {DNNL_ARG_DST, product}};
  if (bias) {
    Weight bias_weight;
    bias_weight.sources = {b.source_of(b.input(node, 2))};
    bias_weight.plain = b_md;
    bias_weight.desc = b_md;
    bias_weight.label = node.name + ".bias";
    bias_weight.fill = [c_out, block](const std::vector<Tensor>& sources, void* plain_out) {
      float* out = static_cast<float*>(plain_out);
      const float* values = sources[0].data<float>();
      for (int64_t c = 0; c < c_out; ++c) std::fill(out + c * block, out + (c + 1) * block, values[c]);
    };
    args.push_back({DNNL_ARG_BIAS, b.add_weight(std::move(bias_weight))});
  }
  b.add_step(dnnl::matmul(pd), pd, std::move(args), label);
  // Row (n, y, x) holds the blocks [C_out, kh, kw] of output pixels
  // (n, :, y*kh + i, x*kw + j): read as [N, C_out, H, kh, W, kw], it is
  // the plain output once reordered.
  const Dims blocks = {n, c_out, h, kh, w, kw};
  const Dims strides = {h * w * columns, block, w * columns, kw, columns, 1};
  int scattered = b.view(product, memory::desc(blocks, memory::data_type::f32, strides));
  int out = b.add_slot(plain_desc(blocks));
  b.add_reorder(scattered, out, label);
  return b.view(out, plain_desc(dst_dims));
}

}  // namespace

int emit_conv(Builder& b, const Group& g, const std::string& label) {
  const ir::Node& conv = b.graph().node(g.anchor);
  Dims x_dims = b.dims(b.input(conv, 0)), w_dims = b.dims(b.input(conv, 1));
  Dims dst_dims = dims_of(conv.output_types[0]);
  size_t spatial = x_dims.size() - 2;
  std::vector<int64_t> kernel(w_dims.begin() + 2, w_dims.end());
  ops::conv::WindowAttributes attrs = ops::conv::read_window_attributes(conv, spatial, kernel, false);
  Dims strides, dilates, pad_l, pad_r;
  for (size_t d = 0; d < spatial; ++d) {
    ops::conv::ResolvedDim r = ops::conv::resolve_dim(conv, attrs, d, x_dims[2 + d]);
    strides.push_back(attrs.strides[d]);
    dilates.push_back(attrs.dilations[d] - 1);
    pad_l.push_back(r.pad_begin);
    pad_r.push_back(r.pad_end);
  }
  int64_t group = conv.attributes.get_int("group", 1);
  Dims wd = w_dims;
  if (group > 1) {
    wd = {group, w_dims[0] / group};
    wd.insert(wd.end(), w_dims.begin() + 1, w_dims.end());
  }
  bool bias = b.has_input(conv, 2) || folded_batch_norm(g);
  if (g.int8) {
    if (int result = emit_int8_conv(b, g, label, {x_dims, wd, dst_dims, strides, dilates, pad_l, pad_r, bias});
        result >= 0)
      return result;
  }
  // An int8 convolution that oneDNN has only reference code for runs in
  // float32 on its source's values; a folded fake quantization gives them.
  int src_slot = g.int8 && !g.int8->source->folded_nodes.empty() ? dequantized_source(b, *g.int8->source, label)
                                                                 : b.slot_of(b.input(conv, 0));
  memory::desc w_any = any_desc(wd), b_any = any_desc({w_dims[0]});
  algorithm alg = prefers_winograd(kernel, strides, dilates, group, dst_dims, w_dims) ? algorithm::convolution_winograd
                                                                                      : algorithm::convolution_direct;
  // In a training step, made for training: oneDNN then picks the layouts
  // its backward primitives read (they are made from a forward_training
  // hint), and the activations they share with the forward need no
  // conversion (oneDNN 2.6 on AVX-512: nChw16c, where inference picks
  // channels-last).
  const prop_kind prop = b.trains_convolutions() ? prop_kind::forward_training : prop_kind::forward_inference;
  auto make = [&](const memory::desc& src, const memory::desc& dst) {
    if (bias) return dnnl::convolution_forward::desc(prop, alg, src, w_any, b_any, dst, strides, dilates, pad_l, pad_r);
    return dnnl::convolution_forward::desc(prop, alg, src, w_any, dst, strides, dilates, pad_l, pad_r);
  };
  auto fall_back_to_direct = [&alg] {
    if (alg == algorithm::convolution_direct) return false;
    alg = algorithm::convolution_direct;
    return true;
  };
  // The weights' slots depend on the layouts the primitive picks: build the
  // primitive first with placeholders, then fill in the weight arguments.
  dnnl::convolution_forward::primitive_desc pd;
  size_t fused = 0;
  int dst =
      finish_anchor<dnnl::convolution_forward>(b, g, label, dst_dims, src_slot, make, pd, fused, fall_back_to_direct);
  int w_slot, b_slot;
  conv_weights(b, g, conv, wd, pd.weights_desc(), bias ? pd.bias_desc() : memory::desc(), w_slot, b_slot);
  Step& s = b.program().steps.back();
  s.args.push_back({DNNL_ARG_WEIGHTS, w_slot});
  if (b_slot >= 0) s.args.push_back({DNNL_ARG_BIAS, b_slot});
  return apply_post_ops(b, g, fused, dst, label);
}

int emit_conv_transpose(Builder& b, const Group& g, const std::string& label) {
  if (int result = emit_conv_transpose_as_matmul(b, g, label); result >= 0) return result;
  const ir::Node& node = b.graph().node(g.anchor);
  Dims x_dims = b.dims(b.input(node, 0)), w_dims = b.dims(b.input(node, 1));
  Dims dst_dims = dims_of(node.output_types[0]);
  size_t spatial = x_dims.size() - 2;
  int64_t group = node.attributes.get_int("group", 1);
  std::vector<int64_t> pads = node.attributes.get_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  if (node.attributes.get_string("auto_pad", "NOTSET") == "VALID") pads.assign(2 * spatial, 0);
  std::vector<int64_t> output_padding = node.attributes.get_ints("output_padding", std::vector<int64_t>(spatial, 0));
  std::vector<int64_t> st = node.attributes.get_ints("strides", std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> dl = node.attributes.get_ints("dilations", std::vector<int64_t>(spatial, 1));
  Dims strides, dilates, pad_l, pad_r;
  for (size_t d = 0; d < spatial; ++d) {
    strides.push_back(st[d]);
    dilates.push_back(dl[d] - 1);
    pad_l.push_back(pads[d]);
    pad_r.push_back(pads[spatial + d] - output_padding[d]);
  }
  // ONNX stores [C_in, C_out/group, k...]; oneDNN wants [group, C_out/group, C_in/group, k...].
  int64_t in_per_group = w_dims[0] / group, out_per_group = w_dims[1];
  int64_t k = product(w_dims, 2, w_dims.size());
  Dims kernel_dims(w_dims.begin() + 2, w_dims.end());
  Dims kernel_strides = row_major_strides(kernel_dims);
  Dims wd, ws;
  if (group > 1) {
    wd = {group, out_per_group, in_per_group};
    ws = {in_per_group * out_per_group * k, k, out_per_group * k};
  } else {
    wd = {out_per_group, in_per_group};
    ws = {k, out_per_group * k};
  }
  wd.insert(wd.end(), kernel_dims.begin(), kernel_dims.end());
  ws.insert(ws.end(), kernel_strides.begin(), kernel_strides.end());
  bool bias = b.has_input(node, 2);
  int64_t out_channels = out_per_group * group;
  memory::desc w_any = any_desc(wd), b_any = any_desc({out_channels});
  auto make = [&](const memory::desc& src, const memory::desc& dst) {
    if (bias)
      return dnnl::deconvolution_forward::desc(prop_kind::forward_inference, algorithm::deconvolution_direct, src,
                                               w_any, b_any, dst, strides, dilates, pad_l, pad_r);
    return dnnl::deconvolution_forward::desc(prop_kind::forward_inference, algorithm::deconvolution_direct, src, w_any,
                                             dst, strides, dilates, pad_l, pad_r);
  };
  int src_slot = b.slot_of(b.input(node, 0));
  dnnl::deconvolution_forward::primitive_desc pd;
  size_t fused = 0;
  int dst = finish_anchor<dnnl::deconvolution_forward>(b, g, label, dst_dims, src_slot, make, pd, fused);
  Weight w;
  w.sources = {b.source_of(b.input(node, 1))};
  w.plain = memory::desc(wd, memory::data_type::f32, ws);
  w.desc = pd.weights_desc();
  w.label = node.name;
  Step& s = b.program().steps.back();
  s.args.push_back({DNNL_ARG_WEIGHTS, b.add_weight(std::move(w))});
  if (bias) {
    Weight bias_weight;
    bias_weight.sources = {b.source_of(b.input(node, 2))};
    bias_weight.plain = plain_desc({out_channels});
    bias_weight.desc = pd.bias_desc();
    bias_weight.label = node.name + ".bias";
    bias_weight.identity = bias_weight.plain == bias_weight.desc;
    int b_slot = b.add_weight(std::move(bias_weight));
    b.program().steps.back().args.push_back({DNNL_ARG_BIAS, b_slot});
  }
  return apply_post_ops(b, g, fused, dst, label);
}

}  // namespace graft::dnnl_backend

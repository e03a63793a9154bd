// Sliding-window geometry shared by Conv, ConvTranspose and the pools, and
// the im2col / col2im transforms (see conv_util.h for the formulas).
#include "graft/ops/conv_util.h"

#include <algorithm>
#include <cstring>
#include <variant>

#include "graft/core/parallel.h"

namespace graft::ops::conv {
namespace {

template <typename... Args>
[[noreturn]] void fail_node(const ir::Node& node, const Args&... args) {
  graft::fail(ErrorKind::invalid_model, node.describe(), ": ", args...);
}

std::vector<int64_t> read_list(const ir::Node& node, const char* name, size_t expected, int64_t fallback,
                               int64_t minimum) {
  if (!node.attributes.has(name)) return std::vector<int64_t>(expected, fallback);
  std::vector<int64_t> values = node.attributes.get_ints(name);
  if (values.size() != expected)
    fail_node(node, "attribute '", name, "' has ", values.size(), " values, expected ", expected);
  for (int64_t v : values)
    if (v < minimum) fail_node(node, "attribute '", name, "' has value ", v, ", expected at least ", minimum);
  return values;
}

// Largest kernel extent, stride, dilation or pad: keeps window arithmetic far from int64 overflow.
constexpr int64_t kMaxExtent = int64_t{1} << 31;
// Largest number of taps in one window; more is a malformed or hostile model, not a network.
constexpr int64_t kMaxKernelSize = int64_t{1} << 32;

}  // namespace

WindowAttributes read_window_attributes(const ir::Node& node, size_t spatial_rank, const std::vector<int64_t>& kernel,
                                        bool allow_ceil_mode) {
  WindowAttributes attrs;
  if (node.attributes.has("kernel_shape")) {
    attrs.kernel = read_list(node, "kernel_shape", spatial_rank, 1, 1);
    if (!kernel.empty() && kernel != attrs.kernel)
      fail_node(node, "attribute 'kernel_shape' ", shape_to_string(attrs.kernel), " does not match the weight's ",
                shape_to_string(kernel));
  } else {
    attrs.kernel = kernel;
  }
  for (int64_t k : attrs.kernel)
    if (k < 1 || k > kMaxExtent) fail_node(node, "kernel extent ", k, " is out of range");
  attrs.strides = read_list(node, "strides", spatial_rank, 1, 1);
  attrs.dilations = read_list(node, "dilations", spatial_rank, 1, 1);
  attrs.pads = read_list(node, "pads", 2 * spatial_rank, 0, 0);
  for (int64_t v : attrs.strides)
    if (v > kMaxExtent) fail_node(node, "stride ", v, " is out of range");
  for (int64_t v : attrs.dilations)
    if (v > kMaxExtent) fail_node(node, "dilation ", v, " is out of range");
  for (int64_t v : attrs.pads)
    if (v > kMaxExtent) fail_node(node, "pad ", v, " is out of range");
  std::string auto_pad = node.attributes.get_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    attrs.auto_pad = AutoPad::notset;
  } else if (auto_pad == "SAME_UPPER") {
    attrs.auto_pad = AutoPad::same_upper;
  } else if (auto_pad == "SAME_LOWER") {
    attrs.auto_pad = AutoPad::same_lower;
  } else if (auto_pad == "VALID") {
    attrs.auto_pad = AutoPad::valid;
  } else {
    fail_node(node, "attribute 'auto_pad' is '", auto_pad, "', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  }
  if (allow_ceil_mode) attrs.ceil_mode = node.attributes.get_int("ceil_mode", 0) != 0;
  return attrs;
}

ResolvedDim resolve_dim(const ir::Node& node, const WindowAttributes& attrs, size_t d, int64_t input) {
  // In 128 bits: a model's attributes may hold any int64 (a fuzzed pad of
  // INT64_MAX overflowed the padded extent); a result past int64 is an error.
  using Wide = __int128;
  auto narrow = [&](Wide v) {
    if (v > INT64_MAX || v < INT64_MIN)
      fail_node(node, "the window's extents overflow 64 bits in spatial dimension ", d);
    return static_cast<int64_t>(v);
  };
  const size_t rank = attrs.strides.size();
  const int64_t stride = attrs.strides[d];
  const int64_t window = narrow((Wide{attrs.kernel[d]} - 1) * attrs.dilations[d] + 1);
  ResolvedDim r;
  switch (attrs.auto_pad) {
    case AutoPad::notset: {
      r.pad_begin = attrs.pads[d];
      r.pad_end = attrs.pads[d + rank];
      const int64_t padded = narrow(Wide{input} + r.pad_begin + r.pad_end);
      const int64_t span = narrow(Wide{padded} - window);
      // With ceil_mode a window may reach past the padded input by less than
      // a stride (ONNX's ceil((span) / stride) + 1 outputs, as ONNX Runtime
      // and PyTorch compute; the taps past the end take no part).
      if (span < 0 && !(attrs.ceil_mode && -Wide{span} < stride))
        fail_node(node, "the window (", window, ") is larger than the padded input (", padded,
                  ") in spatial dimension ", d);
      if (attrs.ceil_mode) {
        r.output = span < 0 ? 1 : narrow((Wide{span} + stride - 1) / stride + 1);
        if (Wide{r.output - 1} * stride >= Wide{input} + r.pad_begin) --r.output;
      } else {
        r.output = span / stride + 1;
      }
      break;
    }
    case AutoPad::valid:
      if (input < window)
        fail_node(node, "the window (", window, ") is larger than the input (", input, ") in spatial dimension ", d);
      r.output = (input - window) / stride + 1;
      break;
    case AutoPad::same_upper:
    case AutoPad::same_lower: {
      r.output = narrow((Wide{input} + stride - 1) / stride);
      const int64_t total = narrow(std::max<Wide>(0, Wide{r.output - 1} * stride + window - input));
      r.pad_begin = attrs.auto_pad == AutoPad::same_upper ? total / 2 : total - total / 2;
      r.pad_end = total - r.pad_begin;
      break;
    }
  }
  if (r.output < 0) fail_node(node, "negative output extent in spatial dimension ", d);
  return r;
}

std::vector<ir::Dim> infer_spatial_dims(const ir::Node& node, const WindowAttributes& attrs,
                                        const std::vector<ir::Dim>& input_spatial) {
  std::vector<ir::Dim> out;
  for (size_t d = 0; d < input_spatial.size(); ++d) {
    if (attrs.kernel.size() != input_spatial.size() || !input_spatial[d].is_known()) {
      out.push_back(ir::Dim{});
      continue;
    }
    out.push_back(ir::Dim::known(resolve_dim(node, attrs, d, input_spatial[d].value).output));
  }
  return out;
}

Geometry3d make_geometry(const ir::Node& node, const WindowAttributes& attrs, const Shape& input_spatial) {
  const size_t rank = input_spatial.size();
  if (rank == 0) fail_node(node, "expected at least one spatial dimension");
  if (rank > 3)
    graft::fail(ErrorKind::unsupported, node.describe(), ": ", rank,
                " spatial dimensions are not supported (at most 3)");
  if (attrs.kernel.size() != rank)
    fail_node(node, "kernel has ", attrs.kernel.size(), " dimensions, the input has ", rank, " spatial dimensions");
  int64_t taps = 1;
  for (int64_t k : attrs.kernel) {
    taps *= k;  // each k <= kMaxExtent, so the running product is checked before it could overflow
    if (taps > kMaxKernelSize)
      graft::fail(ErrorKind::unsupported, node.describe(), ": kernel ", shape_to_string(attrs.kernel),
                  " has more than ", kMaxKernelSize, " taps");
  }
  Geometry3d g;
  const size_t lead = 3 - rank;
  for (size_t d = 0; d < rank; ++d) {
    ResolvedDim r = resolve_dim(node, attrs, d, input_spatial[d]);
    g.input[lead + d] = input_spatial[d];
    g.output[lead + d] = r.output;
    g.kernel[lead + d] = attrs.kernel[d];
    g.stride[lead + d] = attrs.strides[d];
    g.dilation[lead + d] = attrs.dilations[d];
    g.pad_begin[lead + d] = r.pad_begin;
    g.pad_end[lead + d] = r.pad_end;
  }
  return g;
}

Shape ConvProblem::output_shape() const {
  Shape shape = {batch, out_channels};
  for (int64_t e : geometry_output_shape(geometry, spatial_rank)) shape.push_back(e);
  return shape;
}

void infer_conv_output(InferContext& ctx, size_t x_index, size_t w_index, DType dtype) {
  const ir::ValueType& x = ctx.input_type(x_index);
  const ir::ValueType& w = ctx.input_type(w_index);
  if (!x.has_rank) {
    ctx.set_output(0, ir::ValueType::of_dtype(dtype));
    return;
  }
  if (x.dims.size() < 3) ctx.fail("input X has rank ", x.dims.size(), ", expected at least 3 (N, C, spatial...)");
  const size_t spatial = x.dims.size() - 2;
  const int64_t group = ctx.attrs().get_int("group", 1);
  if (group < 1) ctx.fail("attribute 'group' is ", group, ", expected at least 1");
  std::vector<int64_t> kernel;
  ir::Dim out_channels;
  if (w.has_rank) {
    if (w.dims.size() != x.dims.size())
      ctx.fail("weight W has rank ", w.dims.size(), ", expected ", x.dims.size(), " like X");
    out_channels = w.dims[0];
    if (w.dims[1].is_known() && x.dims[1].is_known() &&
        (x.dims[1].value % group != 0 || x.dims[1].value / group != w.dims[1].value))
      ctx.fail("X has ", x.dims[1].value, " channels, expected W's ", w.dims[1].value, " times group ", group);
    for (size_t d = 2; d < w.dims.size(); ++d) {
      if (!w.dims[d].is_known()) {
        kernel.clear();
        break;
      }
      kernel.push_back(w.dims[d].value);
    }
  }
  WindowAttributes attrs = read_window_attributes(ctx.node(), spatial, kernel, false);
  std::vector<ir::Dim> dims = {x.dims[0], out_channels};
  std::vector<ir::Dim> input_spatial(x.dims.begin() + 2, x.dims.end());
  for (const ir::Dim& d : infer_spatial_dims(ctx.node(), attrs, input_spatial)) dims.push_back(d);
  ctx.set_output(0, ir::ValueType{dtype, true, std::move(dims)});
}

ConvProblem prepare_conv(const KernelContext& ctx, const Tensor& x, const Tensor& w) {
  if (x.rank() < 3) ctx.fail("input X has rank ", x.rank(), ", expected at least 3 (N, C, spatial...)");
  if (w.rank() != x.rank()) ctx.fail("weight W has rank ", w.rank(), ", expected ", x.rank(), " like X");
  ConvProblem p;
  p.batch = x.dim(0);
  p.in_channels = x.dim(1);
  p.out_channels = w.dim(0);
  p.group = ctx.attrs().get_int("group", 1);
  p.spatial_rank = static_cast<size_t>(x.rank() - 2);
  if (p.group < 1) ctx.fail("attribute 'group' is ", p.group, ", expected at least 1");
  if (p.in_channels % p.group != 0 || p.in_channels / p.group != w.dim(1))
    ctx.fail("X has ", p.in_channels, " channels, expected W's ", w.dim(1), " times group ", p.group);
  if (p.out_channels % p.group != 0)
    ctx.fail("W has ", p.out_channels, " output channels, not a multiple of group ", p.group);
  Shape kernel(w.shape().begin() + 2, w.shape().end());
  WindowAttributes attrs = read_window_attributes(ctx.node(), p.spatial_rank, kernel, false);
  p.geometry = make_geometry(ctx.node(), attrs, Shape(x.shape().begin() + 2, x.shape().end()));
  return p;
}

Shape geometry_output_shape(const Geometry3d& g, size_t spatial_rank) {
  return Shape(g.output + (3 - spatial_rank), g.output + 3);
}

void valid_range(int64_t offset, int64_t stride, int64_t limit, int64_t extent, int64_t& lo, int64_t& hi) {
  auto first_at_least = [&](int64_t bound) {  // smallest o with o*stride + offset >= bound
    int64_t need = bound - offset;
    if (need <= 0) return int64_t{0};
    return (need + stride - 1) / stride;
  };
  lo = std::min(first_at_least(0), extent);
  hi = std::max(lo, std::min(first_at_least(limit), extent));
}

template <typename T>
void im2col(const T* input, int64_t channels, const Geometry3d& g, int64_t column_begin, int64_t column_end, T* col,
            int64_t ld) {
  const int64_t out_w = g.output[2], out_h = g.output[1];
  const int64_t in_d = g.input[0], in_h = g.input[1], in_w = g.input[2];
  const int64_t kernel_size = g.kernel_size();
  const int64_t row_begin = column_begin / out_w, row_end = (column_end + out_w - 1) / out_w;
  const int64_t plane = g.input_size();
  const int64_t rows = channels * kernel_size;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, column_end - column_begin));
  parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t c = r / kernel_size;
      int64_t k = r % kernel_size;
      const int64_t kw = k % g.kernel[2];
      k /= g.kernel[2];
      const int64_t kh = k % g.kernel[1];
      const int64_t kd = k / g.kernel[1];
      const T* source = input + c * plane;
      T* dst = col + r * ld - column_begin;
      const int64_t w_offset = kw * g.dilation[2] - g.pad_begin[2];
      int64_t lo, hi;
      valid_range(w_offset, g.stride[2], in_w, out_w, lo, hi);
      for (int64_t orow = row_begin; orow < row_end; ++orow) {
        const int64_t od = orow / out_h, oh = orow % out_h;
        const int64_t id = od * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
        const int64_t ih = oh * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
        T* out = dst + orow * out_w;
        if (id < 0 || id >= in_d || ih < 0 || ih >= in_h) {
          std::fill(out, out + out_w, T(0));
          continue;
        }
        const T* src = source + (id * in_h + ih) * in_w + w_offset;
        std::fill(out, out + lo, T(0));
        if (g.stride[2] == 1) {
          std::copy(src + lo, src + hi, out + lo);
        } else {
          const int64_t s = g.stride[2];
          for (int64_t ow = lo; ow < hi; ++ow) out[ow] = src[ow * s];
        }
        std::fill(out + hi, out + out_w, T(0));
      }
    }
  });
}

template <typename T>
void col2im_add(const T* col, int64_t channels, const Geometry3d& g, int64_t column_begin, int64_t column_end,
                int64_t ld, T* output) {
  const int64_t out_w = g.output[2], out_h = g.output[1];
  const int64_t in_d = g.input[0], in_h = g.input[1], in_w = g.input[2];
  const int64_t kernel_size = g.kernel_size();
  const int64_t plane = g.input_size();
  const int64_t row_begin = column_begin / out_w, row_end = (column_end + out_w - 1) / out_w;
  parallel_for(channels, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      T* target = output + c * plane;
      for (int64_t k = 0; k < kernel_size; ++k) {
        const int64_t kw = k % g.kernel[2];
        const int64_t kh = (k / g.kernel[2]) % g.kernel[1];
        const int64_t kd = k / (g.kernel[2] * g.kernel[1]);
        const T* src_row = col + (c * kernel_size + k) * ld - column_begin;
        const int64_t w_offset = kw * g.dilation[2] - g.pad_begin[2];
        int64_t lo, hi;
        valid_range(w_offset, g.stride[2], in_w, out_w, lo, hi);
        for (int64_t orow = row_begin; orow < row_end; ++orow) {
          const int64_t od = orow / out_h, oh = orow % out_h;
          const int64_t id = od * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
          const int64_t ih = oh * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
          if (id < 0 || id >= in_d || ih < 0 || ih >= in_h) continue;
          const T* src = src_row + orow * out_w;
          T* dst = target + (id * in_h + ih) * in_w + w_offset;
          const int64_t s = g.stride[2];
          for (int64_t ow = lo; ow < hi; ++ow) dst[ow * s] += src[ow];
        }
      }
    }
  });
}

template void im2col<float>(const float*, int64_t, const Geometry3d&, int64_t, int64_t, float*, int64_t);
template void im2col<double>(const double*, int64_t, const Geometry3d&, int64_t, int64_t, double*, int64_t);
template void im2col<int32_t>(const int32_t*, int64_t, const Geometry3d&, int64_t, int64_t, int32_t*, int64_t);
template void col2im_add<float>(const float*, int64_t, const Geometry3d&, int64_t, int64_t, int64_t, float*);
template void col2im_add<double>(const double*, int64_t, const Geometry3d&, int64_t, int64_t, int64_t, double*);

int64_t read_lp_order(const ir::Node& node) {
  auto it = node.attributes.all().find("p");
  if (it == node.attributes.all().end()) return 2;
  int64_t p = 0;
  if (const float* f = std::get_if<float>(&it->second)) {
    p = static_cast<int64_t>(*f);
    if (static_cast<float>(p) != *f)
      graft::fail(ErrorKind::unsupported, node.describe(), ": non-integer p ", *f, " is not supported");
  } else {
    p = node.attributes.get_int("p");
  }
  if (p < 1) fail_node(node, "attribute 'p' is ", p, ", expected at least 1");
  return p;
}

Tensor to_float32(const Tensor& t) {
  if (t.dtype() != DType::float16 && t.dtype() != DType::bfloat16) return t;
  Tensor out(DType::float32, t.shape());
  float* dst = out.data<float>();
  if (t.dtype() == DType::float16) {
    const float16_t* src = t.data<float16_t>();
    for (int64_t i = 0; i < t.numel(); ++i) dst[i] = static_cast<float>(src[i]);
  } else {
    const bfloat16_t* src = t.data<bfloat16_t>();
    for (int64_t i = 0; i < t.numel(); ++i) dst[i] = static_cast<float>(src[i]);
  }
  return out;
}

void from_float32(const Tensor& values, Tensor& out) {
  GRAFT_CHECK(values.numel() == out.numel(), "from_float32: size mismatch");
  const float* src = values.data<float>();
  if (out.dtype() == DType::float16) {
    float16_t* dst = out.data<float16_t>();
    for (int64_t i = 0; i < out.numel(); ++i) dst[i] = float16_t(src[i]);
  } else {
    bfloat16_t* dst = out.data<bfloat16_t>();
    for (int64_t i = 0; i < out.numel(); ++i) dst[i] = bfloat16_t(src[i]);
  }
}

}  // namespace graft::ops::conv

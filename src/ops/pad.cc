// Pad: grows (or, with negative pads, crops) each dimension. Before opset 11
// the pads and the constant value are attributes; from 11 they are inputs,
// and from 18 an `axes` input says which dimensions the pads are for.
//
// Every output coordinate along a dimension maps to an input coordinate or to
// "padding": constant mode fills padding with the value; edge clamps to the
// border; reflect mirrors without repeating the border element (period
// 2*(n-1), as numpy's pad); wrap (opset 19) repeats the input periodically.
// The maps are built once per dimension, then the output is written row by
// row with a memcpy for the part of each row that is a copy of an input row.
#include <algorithm>
#include <array>
#include <cstring>

#include "data_movement.h"
#include "graft/core/parallel.h"
#include "graft/ops/gradient.h"
#include "graft/ops/infer_util.h"

namespace graft::ops {
namespace {

enum class PadMode { constant, reflect, edge, wrap };

template <typename Context>
PadMode read_mode(const Context& ctx) {
  const std::string mode = ctx.attrs().get_string("mode", "constant");
  if (mode == "constant") return PadMode::constant;
  if (mode == "reflect") return PadMode::reflect;
  if (mode == "edge") return PadMode::edge;
  if (mode == "wrap") return PadMode::wrap;
  ctx.fail("mode '", mode, "' is not one of constant, reflect, edge, wrap");
}

// Pads per dimension as [begin..., end...] for all `rank` dims, from pads
// given for `axes` (all dims when axes is empty).
template <typename Context>
std::vector<int64_t> full_pads(const Context& ctx, const std::vector<int64_t>& pads, const std::vector<int64_t>& axes,
                               int64_t rank) {
  std::vector<int64_t> dims_for_pads = axes;
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) dims_for_pads.push_back(d);
  dims_for_pads = checked_axes(ctx, dims_for_pads, rank);
  const size_t n = dims_for_pads.size();
  if (pads.size() != 2 * n) ctx.fail("pads has ", pads.size(), " entries, expected ", 2 * n);
  std::vector<int64_t> full(2 * static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < n; ++i) {
    full[static_cast<size_t>(dims_for_pads[i])] = pads[i];
    full[static_cast<size_t>(dims_for_pads[i] + rank)] = pads[i + n];
  }
  return full;
}

std::vector<int64_t> attribute_pads(const ir::Attributes& attrs) {
  if (attrs.has("pads")) return attrs.get_ints("pads");
  return attrs.get_ints("paddings", {});
}

// extent + begin + end, the padded size of one dimension; overflow and a
// negative size are errors naming the dimension.
template <typename Context>
int64_t padded_extent(const Context& ctx, int64_t extent, int64_t begin, int64_t end, size_t d) {
  int64_t grown;
  if (__builtin_add_overflow(extent, begin, &grown) || __builtin_add_overflow(grown, end, &grown))
    ctx.fail("pads (", begin, ", ", end, ") of dimension ", d, " of size ", extent, " overflow int64");
  if (grown < 0) ctx.fail("pads shrink dimension ", d, " of size ", extent, " below 0");
  return grown;
}

void pad_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  read_mode(ctx);
  if (!x.has_rank) {
    set_output_dtype_only(ctx, 0, x.dtype);
    return;
  }
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  std::optional<std::vector<int64_t>> pads, axes = std::vector<int64_t>{};
  if (ctx.opset() < 11) {
    pads = attribute_pads(ctx.attrs());
  } else {
    pads = constant_input_ints(ctx, 1);
    if (ctx.opset() >= 18 && ctx.has_input(3)) axes = constant_input_ints(ctx, 3);
  }
  if (!pads || !axes) {
    ctx.set_output(0, ranked_type(x.dtype, unknown_dims(x.dims.size())));
    return;
  }
  std::vector<int64_t> full = full_pads(ctx, *pads, *axes, rank);
  std::vector<ir::Dim> dims = x.dims;
  for (size_t d = 0; d < dims.size(); ++d) {
    const int64_t begin = full[d], end = full[d + static_cast<size_t>(rank)];
    if (dims[d].is_known())
      dims[d] = ir::Dim::known(padded_extent(ctx, dims[d].value, begin, end, d));
    else if (int64_t grow; __builtin_add_overflow(begin, end, &grow) || grow != 0)
      dims[d] = ir::Dim{};
  }
  ctx.set_output(0, ranked_type(x.dtype, std::move(dims)));
}

// Input coordinate for every output coordinate of one dimension; -1 marks
// constant padding.
std::vector<int64_t> coordinate_map(const KernelContext& ctx, PadMode mode, int64_t in, int64_t begin, int64_t out) {
  std::vector<int64_t> map(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    int64_t i = o - begin;
    if (i < 0 || i >= in) {
      if (mode == PadMode::constant) {
        i = -1;
      } else if (in == 0) {
        ctx.fail("cannot pad an empty dimension in this mode");
      } else if (mode == PadMode::edge) {
        i = std::clamp<int64_t>(i, 0, in - 1);
      } else if (mode == PadMode::wrap) {
        i = ((i % in) + in) % in;
      } else if (in == 1) {
        i = 0;
      } else {
        const int64_t period = 2 * (in - 1);
        i = ((i % period) + period) % period;
        if (i >= in) i = period - i;
      }
    }
    map[static_cast<size_t>(o)] = i;
  }
  return map;
}

// The padding value as the bytes of one element of `dtype`.
std::array<uint8_t, 8> padding_value(const KernelContext& ctx, DType dtype) {
  std::array<uint8_t, 8> bytes{};
  if (ctx.opset() >= 11) {
    if (ctx.has_input(2) && ctx.input(2).numel() > 0) {
      const Tensor& v = ctx.input(2);
      if (v.dtype() != dtype) ctx.fail("constant_value is ", v.type_string(), ", expected dtype ", dtype_name(dtype));
      std::memcpy(bytes.data(), v.raw_data(), dtype_size(dtype));
    }
    return bytes;
  }
  const float value = ctx.attrs().get_float("value", 0.0f);
  visit_dtype(dtype, "Pad", [&]<typename T>() {
    T converted = static_cast<T>(static_cast<compute_t<T>>(value));
    std::memcpy(bytes.data(), &converted, sizeof(T));
  });
  return bytes;
}

void pad_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const PadMode mode = read_mode(ctx);
  const int64_t rank = x.rank();
  std::vector<int64_t> pads, axes;
  if (ctx.opset() < 11) {
    pads = attribute_pads(ctx.attrs());
  } else {
    pads = input_ints(ctx, 1, "pads");
    if (ctx.opset() >= 18 && ctx.has_input(3)) axes = input_ints(ctx, 3, "axes");
  }
  std::vector<int64_t> full = full_pads(ctx, pads, axes, rank);
  Shape out_shape(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    const size_t i = static_cast<size_t>(d);
    out_shape[i] = padded_extent(ctx, x.dim(d), full[i], full[i + static_cast<size_t>(rank)], i);
  }
  shape_numel(out_shape, ctx.node().describe());
  const std::array<uint8_t, 8> value = padding_value(ctx, x.dtype());
  // The output first: its size is checked against the memory limit before
  // the coordinate maps, as long as its dimensions, are made.
  Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
  const int64_t total = y.numel();
  if (total == 0) return;
  if (rank == 0) {
    std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
    return;
  }
  // The coordinate maps only now: each is as long as its output extent,
  // which the allocated (memory-limited) output bounds.
  std::vector<std::vector<int64_t>> maps;
  for (int64_t d = 0; d < rank; ++d) {
    const size_t i = static_cast<size_t>(d);
    maps.push_back(coordinate_map(ctx, mode, x.dim(d), full[i], out_shape[i]));
  }
  const std::vector<int64_t> strides = shape_strides(x.shape());
  const int64_t row = out_shape.back(), rows = total / row;
  const std::vector<int64_t>& inner_map = maps.back();
  // The part of each row that copies a contiguous input run: [copy_begin, copy_end).
  const int64_t copy_begin = std::min(row, std::max<int64_t>(0, full[static_cast<size_t>(rank - 1)]));
  const int64_t copy_end = std::min<int64_t>(row, full[static_cast<size_t>(rank - 1)] + x.shape().back());
  visit_element_type(x.dtype(), "Pad", [&]<typename U>() {
    U fill;
    std::memcpy(&fill, value.data(), sizeof(U));
    const U* src = static_cast<const U*>(x.raw_data());
    U* dst = static_cast<U*>(y.raw_data());
    parallel_for(rows, std::max<int64_t>(1, 8192 / row), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        int64_t rem = r, offset = 0;
        bool padding_row = false;
        for (int64_t d = rank - 2; d >= 0; --d) {
          const int64_t i = maps[static_cast<size_t>(d)][static_cast<size_t>(rem % out_shape[static_cast<size_t>(d)])];
          rem /= out_shape[static_cast<size_t>(d)];
          if (i < 0)
            padding_row = true;
          else
            offset += i * strides[static_cast<size_t>(d)];
        }
        U* o = dst + r * row;
        if (padding_row) {
          std::fill(o, o + row, fill);
          continue;
        }
        const U* s = src + offset;
        for (int64_t c = 0; c < copy_begin; ++c)
          o[c] = inner_map[static_cast<size_t>(c)] < 0 ? fill : s[inner_map[static_cast<size_t>(c)]];
        if (copy_end > copy_begin)
          std::memcpy(o + copy_begin, s + inner_map[static_cast<size_t>(copy_begin)],
                      static_cast<size_t>(copy_end - copy_begin) * sizeof(U));
        for (int64_t c = std::max(copy_begin, copy_end); c < row; ++c)
          o[c] = inner_map[static_cast<size_t>(c)] < 0 ? fill : s[inner_map[static_cast<size_t>(c)]];
      }
    });
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "Pad", pad_infer, pad_kernel);

// Gradient builder (graft/ops/gradient.h): constant mode with constant,
// non-negative pads; dy sliced back to the input's extents (the padding
// value gets no gradient).
namespace {

void pad_gradient(GradientContext& g) {
  if (g.attrs().get_string("mode", "constant") != "constant") g.unsupported("modes other than constant");
  std::vector<int64_t> dims = g.known_dims(g.input(0));
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::optional<std::vector<int64_t>> pads =
      g.node().opset_version > 0 && g.node().opset_version < 11 ? attribute_pads(g.attrs()) : g.constant_ints(1);
  if (g.has_input(3)) g.unsupported("the axes input");
  if (!pads || static_cast<int64_t>(pads->size()) != 2 * rank)
    g.unsupported("pads must be a constant of 2 * rank values");
  std::vector<int64_t> starts, ends, axes;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t begin = (*pads)[static_cast<size_t>(d)], end = (*pads)[static_cast<size_t>(d + rank)];
    if (begin < 0 || end < 0) g.unsupported("negative pads");
    if (begin == 0 && end == 0) continue;
    starts.push_back(begin);
    ends.push_back(begin + dims[static_cast<size_t>(d)]);
    axes.push_back(d);
  }
  if (axes.empty()) {
    g.set_input_gradient(0, g.output_gradient(0));
    return;
  }
  g.set_input_gradient(
      0, g.add(ir::OpId::Slice, {g.output_gradient(0), g.int64s(starts), g.int64s(ends), g.int64s(axes)}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(Pad, pad_gradient);

}  // namespace graft::ops

// Transpose: a permutation of the dimensions, as a strided copy.
//
// The permutation is first simplified: dimensions of extent 1 are dropped and
// runs of input dimensions that stay adjacent and in order in the output are
// merged, so that e.g. [B,S,H,D] -> [B,H,S,D] becomes a 4-D copy whose inner
// rows of D elements are contiguous on both sides. Then:
//  - if the innermost dimension is unchanged, every output row is one memcpy
//    of a contiguous input row (parallel over rows);
//  - otherwise the output's innermost dimension is read with a stride, and the
//    copy is tiled: for each outer index it walks 32x32 tiles of the plane
//    spanned by the output's innermost dimension and the input's innermost
//    dimension, so that both reads and writes stay within a few cache lines.
#include "transpose.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "data_movement.h"
#include "graft/core/parallel.h"
#include "graft/ops/gradient.h"
#include "graft/ops/infer_util.h"

namespace graft::ops {
namespace {

struct SimplifiedTranspose {
  Shape in_shape;             // reduced input shape
  std::vector<int64_t> perm;  // reduced permutation
};

SimplifiedTranspose simplify(const Shape& in_shape, const std::vector<int64_t>& perm) {
  // Drop extent-1 dimensions, renumbering the rest.
  std::vector<int64_t> renumber(in_shape.size(), -1);
  Shape kept_shape;
  for (size_t d = 0; d < in_shape.size(); ++d)
    if (in_shape[d] != 1) {
      renumber[d] = static_cast<int64_t>(kept_shape.size());
      kept_shape.push_back(in_shape[d]);
    }
  std::vector<int64_t> kept_perm;
  for (int64_t p : perm)
    if (renumber[static_cast<size_t>(p)] >= 0) kept_perm.push_back(renumber[static_cast<size_t>(p)]);
  // Merge output-adjacent dims that are input-adjacent in the same order.
  SimplifiedTranspose result;
  if (kept_perm.empty()) return result;
  std::vector<std::vector<int64_t>> groups;  // groups of input dims, in output order
  for (int64_t p : kept_perm) {
    if (!groups.empty() && groups.back().back() + 1 == p)
      groups.back().push_back(p);
    else
      groups.push_back({p});
  }
  // The merged input order is the groups sorted by their first input dim.
  std::vector<size_t> by_input(groups.size());
  std::iota(by_input.begin(), by_input.end(), 0);
  std::sort(by_input.begin(), by_input.end(), [&](size_t a, size_t b) { return groups[a][0] < groups[b][0]; });
  std::vector<int64_t> group_input_position(groups.size());
  for (size_t i = 0; i < by_input.size(); ++i) {
    const auto& g = groups[by_input[i]];
    int64_t extent = 1;
    for (int64_t d : g) extent *= kept_shape[static_cast<size_t>(d)];
    result.in_shape.push_back(extent);
    group_input_position[by_input[i]] = static_cast<int64_t>(i);
  }
  for (size_t g = 0; g < groups.size(); ++g) result.perm.push_back(group_input_position[g]);
  return result;
}

template <typename U>
void transpose_typed(const U* in, U* out, const SimplifiedTranspose& t) {
  const size_t rank = t.in_shape.size();
  const std::vector<int64_t> in_strides = shape_strides(t.in_shape);
  Shape out_shape(rank);
  std::vector<int64_t> src_stride(rank);  // input stride of each output dim
  for (size_t i = 0; i < rank; ++i) {
    out_shape[i] = t.in_shape[static_cast<size_t>(t.perm[i])];
    src_stride[i] = in_strides[static_cast<size_t>(t.perm[i])];
  }
  const std::vector<int64_t> out_strides = shape_strides(out_shape);
  const int64_t total = shape_numel(out_shape);
  if (total == 0) return;

  if (t.perm[rank - 1] == static_cast<int64_t>(rank - 1)) {
    // Contiguous rows on both sides.
    const int64_t row = out_shape[rank - 1];
    const int64_t rows = total / row;
    parallel_for(rows, std::max<int64_t>(1, 4096 / row), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        int64_t rem = r, src = 0;
        for (size_t d = rank - 1; d-- > 0;) {
          src += (rem % out_shape[d]) * src_stride[d];
          rem /= out_shape[d];
        }
        std::memcpy(out + r * row, in + src, static_cast<size_t>(row) * sizeof(U));
      }
    });
    return;
  }

  // Tiled copy over the plane (j, last): j is the output position of the
  // input's innermost dimension.
  const size_t last = rank - 1;
  const size_t j =
      static_cast<size_t>(std::find(t.perm.begin(), t.perm.end(), static_cast<int64_t>(rank - 1)) - t.perm.begin());
  constexpr int64_t kTile = 32;
  const int64_t rows_j = out_shape[j], cols = out_shape[last];
  const int64_t tiles_j = (rows_j + kTile - 1) / kTile;
  std::vector<size_t> outer_dims;
  for (size_t d = 0; d < rank; ++d)
    if (d != j && d != last) outer_dims.push_back(d);
  int64_t outer = 1;
  for (size_t d : outer_dims) outer *= out_shape[d];
  const int64_t src_col_stride = src_stride[last], dst_row_stride = out_strides[j];
  parallel_for(outer * tiles_j, 1, [&](int64_t begin, int64_t end) {
    for (int64_t w = begin; w < end; ++w) {
      int64_t tile = w % tiles_j, rem = w / tiles_j;
      int64_t src = 0, dst = 0;
      for (size_t k = outer_dims.size(); k-- > 0;) {
        size_t d = outer_dims[k];
        int64_t idx = rem % out_shape[d];
        rem /= out_shape[d];
        src += idx * src_stride[d];
        dst += idx * out_strides[d];
      }
      const int64_t j0 = tile * kTile, j1 = std::min(rows_j, j0 + kTile);
      for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
        const int64_t c1 = std::min(cols, c0 + kTile);
        for (int64_t r = j0; r < j1; ++r) {
          const U* s = in + src + r + c0 * src_col_stride;
          U* o = out + dst + r * dst_row_stride;
          for (int64_t c = c0; c < c1; ++c, s += src_col_stride) o[c] = *s;
        }
      }
    }
  });
}

std::vector<int64_t> transpose_perm(const ir::Attributes& attrs, size_t rank) {
  std::vector<int64_t> perm(rank);
  if (attrs.has("perm")) return attrs.get_ints("perm");
  for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(rank - 1 - i);
  return perm;
}

template <typename Context>
std::vector<int64_t> checked_perm(const Context& ctx, size_t rank) {
  std::vector<int64_t> perm = transpose_perm(ctx.attrs(), rank);
  if (perm.size() != rank) ctx.fail("perm has ", perm.size(), " entries for an input of rank ", rank);
  return checked_axes(ctx, perm, static_cast<int64_t>(rank), "perm");
}

void transpose_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  if (!x.has_rank) {
    if (ctx.attrs().has("perm"))
      ctx.set_output(0, ranked_type(x.dtype, unknown_dims(ctx.attrs().get_ints("perm").size())));
    else
      set_output_dtype_only(ctx, 0, x.dtype);
    return;
  }
  std::vector<int64_t> perm = checked_perm(ctx, x.dims.size());
  std::vector<ir::Dim> dims;
  for (int64_t p : perm) dims.push_back(x.dims[static_cast<size_t>(p)]);
  ctx.set_output(0, ranked_type(x.dtype, std::move(dims)));
}

void transpose_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> perm = checked_perm(ctx, static_cast<size_t>(x.rank()));
  Shape out_shape;
  for (int64_t p : perm) out_shape.push_back(x.dim(p));
  Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
  transpose_bytes(x.raw_data(), y.raw_data(), x.shape(), perm, dtype_size(x.dtype()));
}

}  // namespace

void transpose_bytes(const void* in, void* out, const Shape& in_shape, const std::vector<int64_t>& perm,
                     size_t element_size) {
  const size_t nbytes = shape_nbytes(in_shape, element_size);
  SimplifiedTranspose t = simplify(in_shape, perm);
  if (t.in_shape.size() <= 1) {
    parallel_copy(out, in, nbytes);
    return;
  }
  visit_element_size(element_size, "Transpose",
                     [&]<typename U>() { transpose_typed(static_cast<const U*>(in), static_cast<U*>(out), t); });
}

GRAFT_REGISTER_OP("", "Transpose", transpose_infer, transpose_kernel);

// Gradient builder (graft/ops/gradient.h): dy transposed by the inverse
// permutation. Where dy is the product of a backward Gemm (a linear layer's
// weight gradient X^T dY, its weight read through a Transpose as PyTorch
// exports nn.Linear: W^T), the transposed product is that Gemm with its
// operands swapped, dY^T X, rather than a copy of the product transposed (a
// weight-sized copy per layer; the Gemm it replaces is left unread and
// dropped with the nodes the gradients do not need).
namespace {

/// Gemm(A, B, transA, transB)^T as Gemm(B, A, !transB, !transA), when `dy`
/// is the output of a backward Gemm without C; a null value otherwise.
ir::Value transposed_backward_gemm(GradientContext& g, ir::Value dy) {
  const ir::Node& gemm = *dy.node;
  if (gemm.op() != ir::OpId::Gemm || !gemm.is_backward || gemm.inputs.size() != 2) return {};
  const int64_t trans_a = gemm.attributes.get_int("transA", 0), trans_b = gemm.attributes.get_int("transB", 0);
  return g.add(ir::OpId::Gemm, {gemm.inputs[1], gemm.inputs[0]},
               {{"transA", int64_t{trans_b == 0}},
                {"transB", int64_t{trans_a == 0}},
                {"alpha", gemm.attributes.get_float("alpha", 1.0f)},
                {"beta", 0.0f}});
}

void transpose_gradient(GradientContext& g) {
  const ir::ValueType& x = g.input_type(0);
  if (!x.has_rank) g.unsupported("the input's rank is not known");
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  std::vector<int64_t> perm;
  if (g.attrs().has("perm")) {
    perm = g.attrs().get_ints("perm");
  } else {
    for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
  }
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<size_t>(perm[i] < 0 ? perm[i] + rank : perm[i])] = static_cast<int64_t>(i);
  if (rank == 2 && inverse[0] == 1)
    if (ir::Value swapped = transposed_backward_gemm(g, g.output_gradient(0))) {
      g.set_input_gradient(0, swapped);
      return;
    }
  g.set_input_gradient(0, g.add(ir::OpId::Transpose, {g.output_gradient(0)}, {{"perm", inverse}}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(Transpose, transpose_gradient);

}  // namespace graft::ops

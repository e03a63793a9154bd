/// \file
/// Helpers shared by the math op families (matmul, einsum, reductions,
/// normalizations). Private to src/ops.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "graft/core/tensor.h"
#include "graft/ops/op_context.h"

namespace graft::ops {

/// C[b] = op(A[b]) * op(B[b]) for every index b of `out_batch`. Each A matrix
/// is M x K (K x M when trans_a) and each B matrix K x N (N x K when trans_b),
/// stored densely one after another in the order of `a_batch` / `b_batch`,
/// which broadcast (numpy rules, aligned right) to `out_batch`. C is dense,
/// out_batch x M x N. float uses gemm_f32, double gemm_f64, integers a plain
/// loop (wrapping arithmetic). Parallel over batches or inside each product.
template <typename T>
void batched_matmul(const T* A, const Shape& a_batch, const T* B, const Shape& b_batch, const Shape& out_batch,
                    int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b, T* C);

/// Every element of `t` (any numeric dtype) converted to W.
template <typename W>
std::vector<W> tensor_to_vector(const Tensor& t) {
  std::vector<W> out(static_cast<size_t>(t.numel()));
  visit_numeric_dtype(t.dtype(), "tensor_to_vector", [&]<typename T>() {
    const T* p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<W>(static_cast<compute_t<T>>(p[i]));
  });
  return out;
}

/// The constant integer list held by input `i` (nullopt when absent or not
/// constant).
std::optional<std::vector<int64_t>> constant_ints(const InferContext& ctx, size_t i);

/// Output dims for a reduction of `input` over `axes` (already normalized and
/// sorted, no duplicates): reduced dims become 1 with keepdims, else vanish.
std::vector<ir::Dim> reduced_dims(const std::vector<ir::Dim>& input, const std::vector<int64_t>& axes, bool keepdims);

/// Normalizes (negative allowed), sorts and checks for duplicates; `ctx`-style
/// failure through `fail_node` naming the node.
std::vector<int64_t> normalize_axes(std::vector<int64_t> axes, int64_t rank, const std::string& node_description);

}  // namespace graft::ops

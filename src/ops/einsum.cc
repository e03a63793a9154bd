// Einsum: general Einstein summation over any number of operands.
//
// The equation is parsed into integer labels per operand: letters keep their
// identity, "..." expands to one label per broadcast dimension (aligned from
// the right across operands). Without "->" the output is the ellipsis labels
// followed by the letters used exactly once, in ASCII order.
//
// Evaluation, on a working copy in float (float16, bfloat16, float32),
// double, or int64 (integers):
//  1. per operand: take the diagonal of repeated labels ("ii->i"), expand
//     broadcast size-1 dimensions, and sum out labels nobody else needs;
//  2. contract operands left to right: labels of both operands that are still
//     needed become batch dimensions, the others are contracted; each operand
//     is arranged as [batch, free, contracted] or [batch, contracted, free]
//     (whichever needs no copy, if either), and one batched gemm multiplies;
//  3. sum out what the output does not name, then transpose to its order.
// So "bhqd,bhkd->bhqk" runs as one batched gemm with B transposed and no copy.
#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "graft/ops/op_context.h"
#include "math_common.h"

namespace graft::ops {
namespace {

constexpr int kEllipsisLabel = 1000;  // labels >= this stand for ellipsis dims

/// A parsed equation: labels per operand and for the output.
struct Equation {
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
};

/// Parses one term: letters and at most one "..." (expanded for `rank`).
std::vector<int> parse_term(const std::string& node, const std::string& term, int64_t rank, int64_t ellipsis_rank,
                            bool is_output) {
  std::vector<int> labels;
  bool seen_ellipsis = false;
  int64_t letters = 0;
  for (char c : term)
    if (std::isalpha(static_cast<unsigned char>(c))) ++letters;
  for (size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if (std::isalpha(static_cast<unsigned char>(c))) {
      labels.push_back(static_cast<unsigned char>(c));
    } else if (c == '.') {
      if (seen_ellipsis || term.compare(i, 3, "...") != 0)
        fail(ErrorKind::invalid_model, node, ": malformed ellipsis in einsum term '", term, "'");
      seen_ellipsis = true;
      i += 2;
      const int64_t dims = is_output ? ellipsis_rank : rank - letters;
      if (dims < 0)
        fail(ErrorKind::invalid_model, node, ": einsum term '", term, "' names more dimensions than rank ", rank);
      for (int64_t d = 0; d < dims; ++d) labels.push_back(kEllipsisLabel + static_cast<int>(ellipsis_rank - dims + d));
    } else {
      fail(ErrorKind::invalid_model, node, ": unexpected character '", c, "' in einsum term '", term, "'");
    }
  }
  if (!is_output && static_cast<int64_t>(labels.size()) != rank)
    fail(ErrorKind::invalid_model, node, ": einsum term '", term, "' has ", labels.size(),
         " labels for an operand of rank ", rank);
  return labels;
}

Equation parse_equation(const std::string& node, std::string equation, const std::vector<int64_t>& ranks) {
  equation.erase(std::remove_if(equation.begin(), equation.end(),
                                [](char c) { return std::isspace(static_cast<unsigned char>(c)); }),
                 equation.end());
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  std::vector<std::string> terms;
  size_t start = 0;
  for (size_t comma; (comma = lhs.find(',', start)) != std::string::npos; start = comma + 1)
    terms.push_back(lhs.substr(start, comma - start));
  terms.push_back(lhs.substr(start));
  if (terms.size() != ranks.size())
    fail(ErrorKind::invalid_model, node, ": einsum equation '", equation, "' has ", terms.size(), " terms for ",
         ranks.size(), " inputs");
  // The ellipsis covers the most dimensions any operand gives it.
  int64_t ellipsis_rank = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (terms[i].find("...") == std::string::npos) continue;
    int64_t letters = 0;
    for (char c : terms[i])
      if (std::isalpha(static_cast<unsigned char>(c))) ++letters;
    ellipsis_rank = std::max(ellipsis_rank, ranks[i] - letters);
  }
  Equation eq;
  for (size_t i = 0; i < terms.size(); ++i)
    eq.inputs.push_back(parse_term(node, terms[i], ranks[i], ellipsis_rank, false));
  if (arrow != std::string::npos) {
    eq.output = parse_term(node, equation.substr(arrow + 2), 0, ellipsis_rank, true);
    std::vector<int> sorted = eq.output;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      fail(ErrorKind::invalid_model, node, ": einsum output '", equation.substr(arrow + 2), "' repeats a label");
    for (int label : eq.output) {
      bool found = false;
      for (const auto& in : eq.inputs) found = found || std::find(in.begin(), in.end(), label) != in.end();
      if (!found)
        fail(ErrorKind::invalid_model, node, ": einsum output label '", static_cast<char>(label),
             "' appears in no input");
    }
  } else {
    for (int64_t d = 0; d < ellipsis_rank; ++d) eq.output.push_back(kEllipsisLabel + static_cast<int>(d));
    std::map<int, int> counts;
    for (const auto& in : eq.inputs)
      for (int label : in)
        if (label < kEllipsisLabel) ++counts[label];
    for (const auto& [label, count] : counts)
      if (count == 1) eq.output.push_back(label);
  }
  return eq;
}

/// An operand being evaluated: labels, shape and dense row-major data that
/// is either borrowed (an input) or owned.
template <typename W>
struct Operand {
  std::vector<int> labels;
  Shape shape;
  std::vector<W> owned;
  const W* data = nullptr;

  Operand() = default;
  Operand(const Operand&) = delete;
  Operand& operator=(const Operand&) = delete;
  Operand(Operand&&) = default;
  Operand& operator=(Operand&&) = default;

  void own(std::vector<W> values) {
    owned = std::move(values);
    data = owned.data();
  }
  int64_t numel() const { return shape_numel(shape); }
};

/// out[i] = in[sum_d index_d(i) * strides[d]] for the row-major out_shape.
template <typename W>
std::vector<W> gather(const W* in, const Shape& out_shape, const std::vector<int64_t>& strides) {
  const int64_t n = shape_numel(out_shape);
  std::vector<W> out(static_cast<size_t>(n));
  const size_t rank = out_shape.size();
  if (n == 0) return out;
  if (rank == 0) {
    out[0] = in[0];
    return out;
  }
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;
  const int64_t last = out_shape[rank - 1], last_stride = strides[rank - 1];
  for (int64_t i = 0; i < n; i += last) {
    for (int64_t j = 0; j < last; ++j) out[static_cast<size_t>(i + j)] = in[offset + j * last_stride];
    for (size_t d = rank - 1; d-- > 0;) {
      offset += strides[d];
      if (++index[d] < out_shape[d]) break;
      offset -= strides[d] * out_shape[d];
      index[d] = 0;
    }
  }
  return out;
}

/// Reorders `op` to `labels` (a permutation of its labels); no copy when the
/// order is already right.
template <typename W>
void transpose_to(Operand<W>& op, const std::vector<int>& labels) {
  if (labels == op.labels) return;
  const std::vector<int64_t> in_strides = shape_strides(op.shape);
  Shape shape;
  std::vector<int64_t> strides;
  for (int label : labels) {
    const size_t d = static_cast<size_t>(std::find(op.labels.begin(), op.labels.end(), label) - op.labels.begin());
    shape.push_back(op.shape[d]);
    strides.push_back(in_strides[d]);
  }
  op.own(gather(op.data, shape, strides));
  op.labels = labels;
  op.shape = shape;
}

/// Takes the diagonal over repeated labels and expands size-1 dimensions to
/// the label's size elsewhere.
template <typename W>
void diagonal_and_expand(Operand<W>& op, const std::map<int, int64_t>& sizes) {
  std::vector<int> labels;
  Shape shape;
  std::vector<int64_t> strides;
  const std::vector<int64_t> in_strides = shape_strides(op.shape);
  bool changed = false;
  for (size_t d = 0; d < op.labels.size(); ++d) {
    auto it = std::find(labels.begin(), labels.end(), op.labels[d]);
    const int64_t stride = op.shape[d] == 1 ? 0 : in_strides[d];
    if (it != labels.end()) {
      strides[static_cast<size_t>(it - labels.begin())] += stride;
      changed = true;
      continue;
    }
    labels.push_back(op.labels[d]);
    const int64_t size = sizes.at(op.labels[d]);
    if (size != op.shape[d]) changed = true;
    shape.push_back(size);
    strides.push_back(stride);
  }
  if (!changed) return;
  op.own(gather(op.data, shape, strides));
  op.labels = labels;
  op.shape = shape;
}

/// Sums `op` over every label not in `keep`.
template <typename W>
void sum_out(Operand<W>& op, const std::vector<int>& keep) {
  std::vector<int> kept_labels, summed_labels;
  for (int label : op.labels)
    (std::find(keep.begin(), keep.end(), label) != keep.end() ? kept_labels : summed_labels).push_back(label);
  if (summed_labels.empty()) return;
  // Move the summed labels last, then add up each contiguous row.
  std::vector<int> order = kept_labels;
  order.insert(order.end(), summed_labels.begin(), summed_labels.end());
  transpose_to(op, order);
  Shape shape(op.shape.begin(), op.shape.begin() + static_cast<std::ptrdiff_t>(kept_labels.size()));
  const int64_t rows = shape_numel(shape);
  const int64_t width = rows == 0 ? 0 : op.numel() / rows;
  std::vector<W> out(static_cast<size_t>(rows), W(0));
  for (int64_t r = 0; r < rows; ++r) {
    W sum = W(0);
    for (int64_t k = 0; k < width; ++k) sum += op.data[r * width + k];
    out[static_cast<size_t>(r)] = sum;
  }
  op.own(std::move(out));
  op.labels = kept_labels;
  op.shape = shape;
}

bool contains(const std::vector<int>& labels, int label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

/// Contracts a and b, keeping the labels in `keep` (the output's and those of
/// later operands).
template <typename W>
Operand<W> contract(Operand<W> a, Operand<W> b, const std::vector<int>& keep) {
  std::vector<int> a_keep = keep, b_keep = keep;
  a_keep.insert(a_keep.end(), b.labels.begin(), b.labels.end());
  b_keep.insert(b_keep.end(), a.labels.begin(), a.labels.end());
  sum_out(a, a_keep);
  sum_out(b, b_keep);
  std::vector<int> batch, contracted, a_free, b_free;
  for (int label : a.labels) {
    if (contains(b.labels, label))
      (contains(keep, label) ? batch : contracted).push_back(label);
    else
      a_free.push_back(label);
  }
  for (int label : b.labels)
    if (!contains(a.labels, label)) b_free.push_back(label);
  auto concat = [](std::vector<int> x, const std::vector<int>& y, const std::vector<int>& z) {
    x.insert(x.end(), y.begin(), y.end());
    x.insert(x.end(), z.begin(), z.end());
    return x;
  };
  const std::vector<int> a_plain = concat(batch, a_free, contracted), a_trans = concat(batch, contracted, a_free);
  const std::vector<int> b_plain = concat(batch, contracted, b_free), b_trans = concat(batch, b_free, contracted);
  const bool trans_a = a.labels != a_plain && a.labels == a_trans;
  const bool trans_b = b.labels != b_plain && b.labels == b_trans;
  transpose_to(a, trans_a ? a_trans : a_plain);
  transpose_to(b, trans_b ? b_trans : b_plain);
  std::map<int, int64_t> sizes;
  for (size_t d = 0; d < a.labels.size(); ++d) sizes[a.labels[d]] = a.shape[d];
  for (size_t d = 0; d < b.labels.size(); ++d) sizes[b.labels[d]] = b.shape[d];
  auto product = [&](const std::vector<int>& labels) {
    int64_t p = 1;
    for (int label : labels) p *= sizes[label];
    return p;
  };
  Operand<W> result;
  result.labels = concat(batch, a_free, b_free);
  for (int label : result.labels) result.shape.push_back(sizes[label]);
  const int64_t M = product(a_free), N = product(b_free), K = product(contracted);
  Shape batch_shape;
  for (int label : batch) batch_shape.push_back(sizes[label]);
  std::vector<W> out(static_cast<size_t>(shape_numel(result.shape)), W(0));
  if (!out.empty() && K > 0)
    batched_matmul<W>(a.data, batch_shape, b.data, batch_shape, batch_shape, M, N, K, trans_a, trans_b, out.data());
  result.own(std::move(out));
  return result;
}

void infer_einsum(InferContext& ctx) {
  const DType dtype = ctx.input_type(0).dtype;
  std::vector<int64_t> ranks;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const ir::ValueType& t = ctx.input_type(i);
    if (t.dtype != dtype) ctx.fail("input dtypes differ: ", dtype_name(dtype), " and ", dtype_name(t.dtype));
    if (!t.has_rank) return ctx.set_output(0, ir::ValueType::of_dtype(dtype));
    ranks.push_back(static_cast<int64_t>(t.dims.size()));
  }
  const Equation eq = parse_equation(ctx.node().describe(), ctx.attrs().get_string("equation"), ranks);
  std::vector<ir::Dim> dims;
  for (int label : eq.output) {
    ir::Dim best = ir::Dim::known(1);
    for (size_t i = 0; i < eq.inputs.size(); ++i)
      for (size_t d = 0; d < eq.inputs[i].size(); ++d) {
        if (eq.inputs[i][d] != label) continue;
        const ir::Dim& candidate = ctx.input_type(i).dims[d];
        if (candidate.is_known() && candidate.value == 1) continue;
        if (best.is_known() && best.value == 1)
          best = candidate;
        else if (candidate.is_known() && best.is_known() && candidate.value != best.value)
          ctx.fail("einsum label sizes differ (", best.value, " vs ", candidate.value, ")");
        else if (!best.is_known() && candidate.is_known())
          best = candidate;
      }
    dims.push_back(best);
  }
  ctx.set_output(0, ir::ValueType{dtype, true, std::move(dims)});
}

template <typename T, typename W>
void einsum_typed(KernelContext& ctx, const Equation& eq, const std::map<int, int64_t>& sizes) {
  const size_t n = ctx.num_inputs();
  std::vector<Operand<W>> operands(n);
  for (size_t i = 0; i < n; ++i) {
    const Tensor& t = ctx.input(i);
    operands[i].labels = eq.inputs[i];
    operands[i].shape = t.shape();
    if constexpr (std::is_same_v<T, W>)
      operands[i].data = t.data<T>();
    else
      operands[i].own(tensor_to_vector<W>(t));
    diagonal_and_expand(operands[i], sizes);
  }
  // Labels needed after operand i: the output's and those of operands > i.
  auto needed_after = [&](size_t i) {
    std::vector<int> keep = eq.output;
    for (size_t j = i + 1; j < n; ++j) keep.insert(keep.end(), operands[j].labels.begin(), operands[j].labels.end());
    return keep;
  };
  Operand<W> result = std::move(operands[0]);
  if (n == 1) sum_out(result, eq.output);
  for (size_t i = 1; i < n; ++i) result = contract(std::move(result), std::move(operands[i]), needed_after(i));
  sum_out(result, eq.output);
  transpose_to(result, eq.output);
  Shape out_shape;
  for (int label : eq.output) out_shape.push_back(sizes.at(label));
  Tensor& y = ctx.allocate_output(0, ctx.input(0).dtype(), out_shape);
  T* out = y.data<T>();
  for (int64_t i = 0; i < y.numel(); ++i) out[i] = static_cast<T>(static_cast<compute_t<T>>(result.data[i]));
}

void einsum_kernel(KernelContext& ctx) {
  if (ctx.num_inputs() == 0) ctx.fail("einsum needs at least one input");
  std::vector<int64_t> ranks;
  const DType dtype = ctx.input(0).dtype();
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.input(i).dtype() != dtype) ctx.fail("input dtypes differ: ", ctx.input(i).type_string());
    ranks.push_back(ctx.input(i).rank());
  }
  const Equation eq = parse_equation(ctx.node().describe(), ctx.attrs().get_string("equation"), ranks);
  // Every label's size; 1 broadcasts against any other size.
  std::map<int, int64_t> sizes;
  for (size_t i = 0; i < eq.inputs.size(); ++i)
    for (size_t d = 0; d < eq.inputs[i].size(); ++d) {
      const int label = eq.inputs[i][d];
      const int64_t size = ctx.input(i).dim(static_cast<int64_t>(d));
      auto [it, inserted] = sizes.emplace(label, size);
      if (inserted || it->second == size || size == 1) continue;
      if (it->second == 1)
        it->second = size;
      else
        ctx.fail("einsum label sizes differ (", it->second, " vs ", size, ") in input ", i, " ",
                 ctx.input(i).type_string());
    }
  visit_numeric_dtype(dtype, ctx.node().describe(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
    } else if constexpr (std::is_same_v<T, double>) {
      einsum_typed<T, double>(ctx, eq, sizes);
    } else if constexpr (std::is_floating_point_v<compute_t<T>>) {
      einsum_typed<T, float>(ctx, eq, sizes);
    } else if constexpr (std::is_same_v<T, int64_t>) {
      einsum_typed<T, int64_t>(ctx, eq, sizes);
    } else {
      einsum_typed<T, int64_t>(ctx, eq, sizes);
    }
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "Einsum", infer_einsum, einsum_kernel);

}  // namespace graft::ops

// run_kernel: the C++ side of every pointwise kernel.
//
// 1. Shapes: each DAG node's shape is the broadcast of its arguments' shapes
//    (inputs: the tensor's shape, constants: scalars); the iteration space is
//    the broadcast of the output shapes.
// 2. Strides: every operand (inputs, then outputs) gets element strides in the
//    iteration space, 0 along broadcast dimensions. An output smaller than the
//    iteration space is written with stride 0 too: every write of one element
//    stores the same value, since the value cannot depend on a dimension the
//    output does not have.
// 3. Collapse: dimensions of extent 1 go; neighbouring dimensions merge when
//    every operand's strides allow it. Equal shapes become one dense run.
// 4. Split: a dense iteration space is cut into contiguous chunks, one per
//    thread, and so is one dense but for inputs of one element (stride 0:
//    its chunks run strided, which the JIT's runner does without copies);
//    otherwise rows of the innermost dimension are distributed, each row run
//    contiguously when all its inner strides are 1, else strided.
#include "graft/codegen/kernel_runner.h"

#include <algorithm>

#include "graft/codegen/fast_divider.h"
#include "graft/core/error.h"
#include "graft/core/parallel.h"

namespace graft::codegen {

namespace {

/// Right-aligned broadcast of two shapes; throws invalid_argument.
Shape broadcast_pair(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1)
      out[i] = da;
    else if (da == 1)
      out[i] = db;
    else
      fail(ErrorKind::invalid_argument, "fused kernel: shapes ", shape_to_string(a), " and ", shape_to_string(b),
           " cannot be broadcast");
  }
  return out;
}

/// Element strides of `shape` in the iteration space `domain`.
std::vector<int64_t> strides_in(const Shape& shape, const Shape& domain) {
  std::vector<int64_t> strides(domain.size(), 0);
  int64_t stride = 1;
  for (size_t k = 0; k < shape.size(); ++k) {
    size_t d = domain.size() - 1 - k;
    size_t s = shape.size() - 1 - k;
    strides[d] = shape[s] == 1 ? 0 : stride;
    stride *= shape[s];
  }
  return strides;
}

constexpr int64_t kChunkElements = 16384;
/// Output size from which dense kernels use streaming stores (beyond a
/// typical last-level cache share).
constexpr int64_t kStreamingBytes = int64_t(8) << 20;

}  // namespace

std::vector<Shape> kernel_output_shapes(const ir::KernelIR& ir, std::span<const Shape> input_shapes) {
  if (input_shapes.size() != ir.input_dtypes.size())
    fail(ErrorKind::invalid_argument, "fused kernel: expected ", ir.input_dtypes.size(), " inputs, got ",
         input_shapes.size());
  std::vector<Shape> shapes(ir.exprs.size());
  for (size_t i = 0; i < ir.exprs.size(); ++i) {
    const ir::Expr& e = ir.exprs[i];
    if (e.op == ir::ExprOp::input) {
      shapes[i] = input_shapes[static_cast<size_t>(e.index)];
    } else if (e.op != ir::ExprOp::constant) {
      Shape s = shapes[static_cast<size_t>(e.args[0])];
      for (int k = 1; k < arity(e.op); ++k) s = broadcast_pair(s, shapes[static_cast<size_t>(e.args[k])]);
      shapes[i] = std::move(s);
    }
    if (shapes[i].size() > static_cast<size_t>(ir::kMaxKernelRank))
      fail(ErrorKind::invalid_argument, "fused kernel: rank ", shapes[i].size(), " is above the limit of ",
           ir::kMaxKernelRank);
  }
  std::vector<Shape> result;
  for (int32_t o : ir.outputs) result.push_back(shapes[static_cast<size_t>(o)]);
  return result;
}

int64_t LaunchGeometry::num_elements() const {
  int64_t n = 1;
  for (int64_t e : extents) n *= e;
  return n;
}

bool LaunchGeometry::dense() const {
  if (extents.size() != 1) return false;
  for (size_t k = 0; k < strides.size(); ++k)
    if ((k >= read.size() || read[k]) && strides[k][0] != 1) return false;
  return true;
}

bool LaunchGeometry::dense_apart_from_broadcast_inputs() const {
  if (extents.size() != 1) return false;
  for (size_t k = 0; k < strides.size(); ++k) {
    const bool input = k < read.size();
    if (input && !read[k]) continue;
    if (strides[k][0] != 1 && !(input && strides[k][0] == 0)) return false;
  }
  return true;
}

LaunchGeometry launch_geometry(const ir::KernelIR& ir, std::span<const Shape> input_shapes,
                               std::span<const Shape> output_shapes) {
  Shape domain;
  for (const Shape& s : output_shapes) domain = broadcast_pair(domain, s);
  LaunchGeometry g;
  g.read.assign(input_shapes.size(), false);
  for (const ir::Expr& e : ir.exprs)
    if (e.op == ir::ExprOp::input) g.read[static_cast<size_t>(e.index)] = true;
  const size_t n_ops = input_shapes.size() + output_shapes.size();
  std::vector<std::vector<int64_t>> strides(n_ops, std::vector<int64_t>(domain.size(), 0));
  for (size_t k = 0; k < n_ops; ++k) {
    if (k < input_shapes.size() && !g.read[k]) continue;  // any shape: never read
    strides[k] = strides_in(k < input_shapes.size() ? input_shapes[k] : output_shapes[k - input_shapes.size()], domain);
  }
  // Drop extent-1 dimensions, merge mergeable neighbours.
  g.strides.resize(n_ops);
  for (size_t d = 0; d < domain.size(); ++d) {
    if (domain[d] == 1) continue;
    bool merge = !g.extents.empty();
    for (size_t k = 0; k < n_ops && merge; ++k) merge = g.strides[k].back() == strides[k][d] * domain[d];
    if (merge) {
      g.extents.back() *= domain[d];
      for (size_t k = 0; k < n_ops; ++k) g.strides[k].back() = strides[k][d];
    } else {
      g.extents.push_back(domain[d]);
      for (size_t k = 0; k < n_ops; ++k) g.strides[k].push_back(strides[k][d]);
    }
  }
  if (g.extents.empty()) {
    g.extents.push_back(1);
    for (size_t k = 0; k < n_ops; ++k) g.strides[k].push_back(1);
  }
  return g;
}

DeviceLaunchPlan plan_device_launch(const ir::KernelIR& ir, std::span<const Shape> input_shapes,
                                    std::span<const Shape> output_shapes, bool wide_indices, std::string_view device) {
  if (input_shapes.size() != ir.input_dtypes.size() || output_shapes.size() != ir.outputs.size())
    fail(ErrorKind::invalid_argument, device, ": ", input_shapes.size(), " inputs and ", output_shapes.size(),
         " outputs given, the kernel takes ", ir.input_dtypes.size(), " and ", ir.outputs.size());
  std::vector<Shape> expected = kernel_output_shapes(ir, input_shapes);
  for (size_t o = 0; o < output_shapes.size(); ++o)
    if (output_shapes[o] != expected[o])
      fail(ErrorKind::invalid_argument, device, ": output ", o, " has shape ", shape_to_string(output_shapes[o]),
           ", the inputs give ", shape_to_string(expected[o]));
  DeviceLaunchPlan plan;
  plan.geometry = launch_geometry(ir, input_shapes, output_shapes);
  if (!plan.geometry.dense())
    plan.mode = wide_indices || plan.geometry.num_elements() > int64_t{FastDivider::kMaxDividend}
                    ? DeviceIndexMode::wide
                    : DeviceIndexMode::narrow;
  return plan;
}

std::vector<Shape> kernel_input_shapes(const ir::KernelIR& ir, std::span<const Tensor> inputs) {
  if (inputs.size() != ir.input_dtypes.size())
    fail(ErrorKind::invalid_argument, "fused kernel: expected ", ir.input_dtypes.size(), " inputs, got ",
         inputs.size());
  std::vector<Shape> input_shapes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].is_defined() || inputs[i].dtype() != ir.input_dtypes[i])
      fail(ErrorKind::invalid_argument, "fused kernel: input ", i, " should have dtype ",
           dtype_name(ir.input_dtypes[i]), ", got ", inputs[i].is_defined() ? inputs[i].type_string() : "nothing");
    input_shapes.push_back(inputs[i].shape());
  }
  return input_shapes;
}

std::vector<Tensor> run_kernel(const ir::KernelIR& ir, const KernelRunner& runner, std::span<const Tensor> inputs,
                               ops::OutputAllocator& allocator) {
  const std::vector<Shape> input_shapes = kernel_input_shapes(ir, inputs);
  return run_kernel(ir, runner, inputs, input_shapes, kernel_output_shapes(ir, input_shapes), allocator);
}

std::vector<Tensor> run_kernel(const ir::KernelIR& ir, const KernelRunner& runner, std::span<const Tensor> inputs,
                               std::span<const Shape> input_shapes, std::span<const Shape> output_shapes,
                               ops::OutputAllocator& allocator) {
  std::vector<DType> output_dtypes = ir.output_dtypes();
  std::vector<Tensor> outputs;
  for (size_t o = 0; o < output_shapes.size(); ++o)
    outputs.push_back(allocator.allocate(output_dtypes[o], output_shapes[o]));
  run_kernel_into(ir, runner, inputs, input_shapes, outputs);
  return outputs;
}

void run_kernel_into(const ir::KernelIR& ir, const KernelRunner& runner, std::span<const Tensor> inputs,
                     std::span<const Shape> input_shapes, std::span<const Tensor> outputs) {
  std::vector<Shape> output_shapes;
  for (const Tensor& t : outputs) output_shapes.push_back(t.shape());
  LaunchGeometry geometry = launch_geometry(ir, input_shapes, output_shapes);
  const int64_t total = geometry.num_elements();
  if (total == 0) return;

  // Operands: inputs that some output reads, then outputs.
  size_t n_ops = inputs.size() + outputs.size();
  std::vector<char*> base(n_ops, nullptr);
  std::vector<size_t> element_size(n_ops, 0);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!geometry.read[i]) continue;
    base[i] = static_cast<char*>(const_cast<void*>(inputs[i].raw_data()));
    element_size[i] = dtype_size(inputs[i].dtype());
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    size_t k = inputs.size() + o;
    base[k] = static_cast<char*>(const_cast<void*>(outputs[o].raw_data()));
    element_size[k] = dtype_size(outputs[o].dtype());
  }
  const std::vector<int64_t>& extents = geometry.extents;
  const std::vector<std::vector<int64_t>>& collapsed = geometry.strides;
  size_t rank = extents.size();
  int64_t inner = extents.back();
  std::vector<int64_t> inner_strides(n_ops);
  bool inner_contiguous = true;
  for (size_t k = 0; k < n_ops; ++k) {
    inner_strides[k] = collapsed[k].back();
    if (base[k] && inner_strides[k] != 1) inner_contiguous = false;
  }

  if (rank == 1 && !inner_contiguous && geometry.dense_apart_from_broadcast_inputs()) {
    // Dense but for inputs of one element (a learning rate, a scale): cut
    // into chunks over the threads like a dense space, each chunk a run with
    // those inputs at stride 0.
    parallel_for(total, kChunkElements, [&](int64_t begin, int64_t end) {
      std::vector<void*> ptrs(n_ops);
      for (size_t k = 0; k < n_ops; ++k)
        ptrs[k] = base[k] ? base[k] + begin * inner_strides[k] * static_cast<int64_t>(element_size[k]) : nullptr;
      runner.run_strided(end - begin, ptrs.data(), inner_strides.data());
    });
    return;
  }

  if (rank == 1 && inner_contiguous) {
    // Outputs far larger than the caches are written with streaming stores
    // (no read-for-ownership) over the 64-byte-aligned middle of each chunk.
    int64_t lanes = runner.streaming_lanes();
    int64_t output_bytes = 0;
    for (size_t k = inputs.size(); k < n_ops; ++k) output_bytes += total * static_cast<int64_t>(element_size[k]);
    bool stream = lanes > 0 && output_bytes >= kStreamingBytes;
    parallel_for(total, kChunkElements, [&](int64_t begin, int64_t end) {
      std::vector<void*> ptrs(n_ops);
      auto at = [&](int64_t index) {
        for (size_t k = 0; k < n_ops; ++k)
          ptrs[k] = base[k] ? base[k] + index * static_cast<int64_t>(element_size[k]) : nullptr;
        return ptrs.data();
      };
      int64_t head = stream ? std::min(end, (begin + lanes - 1) / lanes * lanes) : end;
      int64_t body_end = stream ? head + (end - head) / lanes * lanes : end;
      bool aligned = stream;
      for (size_t k = inputs.size(); k < n_ops && aligned; ++k)
        aligned = reinterpret_cast<uintptr_t>(base[k] + head * static_cast<int64_t>(element_size[k])) % 64 == 0;
      if (!aligned) {
        runner.run_contiguous(end - begin, at(begin));
        return;
      }
      if (head > begin) runner.run_contiguous(head - begin, at(begin));
      if (body_end > head) runner.run_streaming(body_end - head, at(head));
      if (end > body_end) runner.run_contiguous(end - body_end, at(body_end));
    });
    return;
  }

  int64_t rows = total / inner;
  int64_t row_grain = std::max<int64_t>(1, kChunkElements / inner);
  parallel_for(rows, row_grain, [&](int64_t begin, int64_t end) {
    std::vector<void*> ptrs(n_ops);
    std::vector<int64_t> index(rank, 0);
    for (int64_t row = begin; row < end; ++row) {
      int64_t rest = row;
      for (size_t d = rank - 1; d-- > 0;) {
        index[d] = rest % extents[d];
        rest /= extents[d];
      }
      for (size_t k = 0; k < n_ops; ++k) {
        if (!base[k]) {
          ptrs[k] = nullptr;
          continue;
        }
        int64_t offset = 0;
        for (size_t d = 0; d + 1 < rank; ++d) offset += index[d] * collapsed[k][d];
        ptrs[k] = base[k] + offset * static_cast<int64_t>(element_size[k]);
      }
      if (inner_contiguous)
        runner.run_contiguous(inner, ptrs.data());
      else
        runner.run_strided(inner, ptrs.data(), inner_strides.data());
    }
  });
}

}  // namespace graft::codegen

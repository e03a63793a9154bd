// The sequence ops (ONNX `seq(tensor(T))` values): SequenceEmpty,
// SequenceConstruct, SequenceInsert, SequenceAt, SequenceErase,
// SequenceLength, SplitToSequence, ConcatFromSequence and SequenceMap.
// A sequence is a Tensor made by Tensor::sequence(): an immutable list of
// tensors sharing their storage, so inserting or erasing copies the list, not
// the items.
#include <cstring>

#include "graft/ops/infer_util.h"
#include "graft/ops/op_context.h"
#include "graft/ops/sequence_position.h"

namespace graft::ops {
namespace {

// ---- Type inference ----

/// What two item types have in common: the dtype (they must agree where both
/// are known), the rank when equal, each dimension when equal.
ir::ValueType common_item_type(const InferContext& ctx, const ir::ValueType& a, const ir::ValueType& b) {
  if (a.dtype != DType::undefined && b.dtype != DType::undefined && a.dtype != b.dtype)
    ctx.fail("sequence items of dtypes ", dtype_name(a.dtype), " and ", dtype_name(b.dtype));
  ir::ValueType t = ir::ValueType::of_dtype(a.dtype != DType::undefined ? a.dtype : b.dtype);
  if (a.has_rank && b.has_rank && a.dims.size() == b.dims.size()) {
    t.has_rank = true;
    for (size_t d = 0; d < a.dims.size(); ++d) t.dims.push_back(a.dims[d] == b.dims[d] ? a.dims[d] : ir::Dim{});
  }
  return t;
}

const ir::ValueType& sequence_input_type(const InferContext& ctx, size_t i) {
  const ir::ValueType& t = ctx.input_type(i);
  if (!t.sequence) ctx.fail("input ", i, " is a tensor (", t.to_string(), "), expected a sequence");
  return t;
}

const ir::ValueType& tensor_input_type(const InferContext& ctx, size_t i) {
  const ir::ValueType& t = ctx.input_type(i);
  if (t.sequence) ctx.fail("input ", i, " is a sequence (", t.to_string(), "), expected a tensor");
  return t;
}

void infer_sequence_empty(InferContext& ctx) {
  DType dtype = dtype_from_onnx(static_cast<int32_t>(ctx.attrs().get_int("dtype", 1)));
  if (!dtype_is_storable(dtype)) ctx.fail("sequences of ", dtype_name(dtype), " are not supported");
  ctx.set_output(0, ir::ValueType::sequence_of(ir::ValueType::of_dtype(dtype)));
}

void infer_sequence_construct(InferContext& ctx) {
  ir::ValueType item = tensor_input_type(ctx, 0);
  for (size_t i = 1; i < ctx.num_inputs(); ++i) item = common_item_type(ctx, item, tensor_input_type(ctx, i));
  ctx.set_output(0, ir::ValueType::sequence_of(item));
}

void infer_sequence_insert(InferContext& ctx) {
  const ir::ValueType& sequence = sequence_input_type(ctx, 0);
  ctx.set_output(0, ir::ValueType::sequence_of(common_item_type(ctx, sequence.item_type(), tensor_input_type(ctx, 1))));
}

void infer_sequence_at(InferContext& ctx) { ctx.set_output(0, sequence_input_type(ctx, 0).item_type()); }

void infer_sequence_erase(InferContext& ctx) { ctx.set_output(0, sequence_input_type(ctx, 0)); }

void infer_sequence_length(InferContext& ctx) {
  sequence_input_type(ctx, 0);
  ctx.set_output(0, ir::ValueType::of(DType::int64, {}));
}

void infer_split_to_sequence(InferContext& ctx) {
  const ir::ValueType& x = tensor_input_type(ctx, 0);
  ir::ValueType item = ir::ValueType::of_dtype(x.dtype);
  if (x.has_rank) {
    int64_t rank = static_cast<int64_t>(x.dims.size());
    int64_t axis = normalize_axis(ctx.attrs().get_int("axis", 0), rank, ctx.node().describe());
    bool keep = ctx.has_input(1) || ctx.attrs().get_int("keepdims", 1) != 0;
    item.has_rank = true;
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis)
        item.dims.push_back(x.dims[static_cast<size_t>(d)]);
      else if (keep)
        item.dims.push_back(ctx.has_input(1) ? ir::Dim{} : ir::Dim::known(1));
    }
  }
  ctx.set_output(0, ir::ValueType::sequence_of(item));
}

void infer_concat_from_sequence(InferContext& ctx) {
  ir::ValueType item = sequence_input_type(ctx, 0).item_type();
  if (!ctx.attrs().has("axis")) ctx.fail("attribute 'axis' is required");
  bool new_axis = ctx.attrs().get_int("new_axis", 0) != 0;
  ir::ValueType out = ir::ValueType::of_dtype(item.dtype);
  if (item.has_rank) {
    int64_t rank = static_cast<int64_t>(item.dims.size()) + (new_axis ? 1 : 0);
    int64_t axis = normalize_axis(ctx.attrs().get_int("axis"), rank, ctx.node().describe());
    out.has_rank = true;
    out.dims = item.dims;
    if (new_axis)
      out.dims.insert(out.dims.begin() + axis, ir::Dim{});
    else
      out.dims[static_cast<size_t>(axis)] = ir::Dim{};
  }
  ctx.set_output(0, out);
}

size_t declared_inputs(const ir::Node& node) {
  return node.inputs.size() - static_cast<size_t>(node.num_captured_inputs);
}

void infer_sequence_map(InferContext& ctx) {
  sequence_input_type(ctx, 0);
  std::vector<ir::ValueType> body_inputs;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const ir::ValueType& t = ctx.input_type(i);
    body_inputs.push_back(i < declared_inputs(ctx.node()) && t.sequence ? t.item_type() : t);
  }
  auto types = infer_body_output_types(*ctx.attrs().get_graph("body"), body_inputs);
  for (size_t i = 0; i < ctx.num_outputs(); ++i)
    ctx.set_output(i, ir::ValueType::sequence_of(i < types.size() ? types[i] : ir::ValueType{}));
}

// ---- Kernels ----

/// A position input (a scalar int32 or int64) as an index into a sequence of
/// `length` items; `insertion` allows `length` itself (one past the end).
size_t position_of(const KernelContext& ctx, size_t input, size_t length, bool insertion) {
  const Tensor& p = ctx.input(input);
  if (!is_sequence_position(p)) ctx.fail("position must be a scalar int32 or int64, got ", p.type_string());
  const int64_t position = p.value_as_int64(0);
  std::optional<size_t> index = sequence_index(position, length, insertion);
  if (!index) {
    const int64_t n = static_cast<int64_t>(length);
    ctx.fail("position ", position, " is out of range for a sequence of ", n, " items (expected ", -n, " to ",
             insertion ? n : n - 1, ")");
  }
  return *index;
}

void sequence_empty_kernel(KernelContext& ctx) {
  ctx.set_output(0, Tensor::sequence(dtype_from_onnx(static_cast<int32_t>(ctx.attrs().get_int("dtype", 1))), {}));
}

void sequence_construct_kernel(KernelContext& ctx) {
  const DType dtype = ctx.input(0).dtype();
  std::vector<Tensor> items;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) items.push_back(ctx.input(i));
  ctx.set_output(0, Tensor::sequence(dtype, std::move(items)));
}

void sequence_insert_kernel(KernelContext& ctx) {
  std::vector<Tensor> items = ctx.input_sequence(0);
  const Tensor& tensor = ctx.input(1);
  if (tensor.dtype() != ctx.input_value(0).dtype())
    ctx.fail("cannot insert ", tensor.type_string(), " into a ", ctx.input_value(0).type_string());
  size_t position = ctx.has_input(2) ? position_of(ctx, 2, items.size(), true) : items.size();
  items.insert(items.begin() + static_cast<std::ptrdiff_t>(position), tensor);
  ctx.set_output(0, Tensor::sequence(tensor.dtype(), std::move(items)));
}

void sequence_at_kernel(KernelContext& ctx) {
  const std::vector<Tensor>& items = ctx.input_sequence(0);
  ctx.set_output(0, items[position_of(ctx, 1, items.size(), false)]);
}

void sequence_erase_kernel(KernelContext& ctx) {
  std::vector<Tensor> items = ctx.input_sequence(0);
  if (items.empty()) ctx.fail("cannot erase from an empty sequence");
  size_t position = ctx.has_input(1) ? position_of(ctx, 1, items.size(), false) : items.size() - 1;
  items.erase(items.begin() + static_cast<std::ptrdiff_t>(position));
  ctx.set_output(0, Tensor::sequence(ctx.input_value(0).dtype(), std::move(items)));
}

void sequence_length_kernel(KernelContext& ctx) {
  ctx.set_output(0, Tensor::scalar<int64_t>(static_cast<int64_t>(ctx.input_sequence(0).size())));
}

/// Elements before `axis` and from `axis + 1` on.
std::pair<int64_t, int64_t> outer_inner(const Shape& shape, int64_t axis) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  return {outer, inner};
}

void split_to_sequence_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() == 0) ctx.fail("cannot split a scalar");
  int64_t axis = normalize_axis(ctx.attrs().get_int("axis", 0), x.rank(), ctx.node().describe());
  int64_t extent = x.dim(axis);
  std::vector<int64_t> sizes;
  bool keep = true;
  if (!ctx.has_input(1)) {
    sizes.assign(static_cast<size_t>(extent), 1);
    keep = ctx.attrs().get_int("keepdims", 1) != 0;
  } else {
    const Tensor& split = ctx.input(1);
    if (split.dtype() != DType::int64 && split.dtype() != DType::int32)
      ctx.fail("split must be int32 or int64, got ", split.type_string());
    if (split.rank() == 0) {
      int64_t chunk = split.value_as_int64(0);
      if (chunk <= 0) ctx.fail("split size ", chunk, " must be positive");
      for (int64_t at = 0; at < extent; at += chunk) sizes.push_back(std::min(chunk, extent - at));
    } else if (split.rank() == 1) {
      sizes = split.to_int64_vector();
      int64_t total = 0;
      for (int64_t s : sizes) {
        if (s < 0) ctx.fail("split size ", s, " is negative");
        total += s;
      }
      if (total != extent) ctx.fail("split sizes add up to ", total, ", the axis has ", extent);
    } else {
      ctx.fail("split must be a scalar or a 1-D tensor, got ", split.type_string());
    }
  }
  auto [outer, inner] = outer_inner(x.shape(), axis);
  const size_t element = dtype_size(x.dtype());
  const char* in = static_cast<const char*>(x.raw_data());
  std::vector<Tensor> items;
  int64_t offset = 0;
  for (int64_t size : sizes) {
    Shape shape = x.shape();
    shape[static_cast<size_t>(axis)] = size;
    Tensor item(x.dtype(), shape);
    char* out = static_cast<char*>(item.raw_data());
    const size_t run = static_cast<size_t>(size * inner) * element;
    for (int64_t o = 0; o < outer && run > 0; ++o)
      std::memcpy(out + static_cast<size_t>(o) * run, in + static_cast<size_t>((o * extent + offset) * inner) * element,
                  run);
    if (!keep) shape.erase(shape.begin() + axis);
    items.push_back(keep ? item : item.reshaped(shape));
    offset += size;
  }
  ctx.set_output(0, Tensor::sequence(x.dtype(), std::move(items)));
}

void concat_from_sequence_kernel(KernelContext& ctx) {
  const std::vector<Tensor>& items = ctx.input_sequence(0);
  if (items.empty()) ctx.fail("cannot concatenate an empty sequence");
  const bool new_axis = ctx.attrs().get_int("new_axis", 0) != 0;
  const Shape& first = items[0].shape();
  const int64_t rank = static_cast<int64_t>(first.size()) + (new_axis ? 1 : 0);
  if (rank == 0) ctx.fail("cannot concatenate scalars without new_axis");
  const int64_t axis = normalize_axis(ctx.attrs().get_int("axis"), rank, ctx.node().describe());
  // Each item seen with the axis present (a 1 inserted for new_axis).
  auto viewed = [&](const Tensor& t) {
    Shape s = t.shape();
    if (new_axis) s.insert(s.begin() + axis, 1);
    return s;
  };
  Shape out_shape = viewed(items[0]);
  out_shape[static_cast<size_t>(axis)] = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    // Ranks first: viewed() inserts the new axis at a place only item 0's rank bounds.
    bool compatible = items[i].shape().size() == first.size();
    Shape s = compatible ? viewed(items[i]) : Shape{};
    compatible = compatible && s.size() == out_shape.size();
    for (size_t d = 0; compatible && d < s.size(); ++d)
      compatible = d == static_cast<size_t>(axis) || s[d] == out_shape[d];
    if (!compatible || (new_axis && items[i].shape() != first))
      ctx.fail("item ", i, " (", items[i].type_string(), ") does not concatenate with item 0 (", items[0].type_string(),
               ") along axis ", axis, new_axis ? " (new axis)" : "");
    out_shape[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
  }
  Tensor& out = ctx.allocate_output(0, items[0].dtype(), out_shape);
  auto [outer, inner] = outer_inner(out_shape, axis);
  const size_t element = dtype_size(out.dtype());
  char* dst = static_cast<char*>(out.raw_data());
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor& item : items) {
      const size_t run = static_cast<size_t>(viewed(item)[static_cast<size_t>(axis)] * inner) * element;
      if (run == 0) continue;
      std::memcpy(dst, static_cast<const char*>(item.raw_data()) + static_cast<size_t>(o) * run, run);
      dst += run;
    }
}

void sequence_map_kernel(KernelContext& ctx) {
  const ir::Graph& body = *ctx.attrs().get_graph("body");
  const size_t declared = declared_inputs(ctx.node());
  const size_t length = ctx.input_sequence(0).size();
  for (size_t i = 1; i < declared; ++i)
    if (ctx.has_input(i) && ctx.input_value(i).is_sequence() && ctx.input_sequence(i).size() != length)
      ctx.fail("input ", i, " is a sequence of ", ctx.input_sequence(i).size(), " items, input 0 has ", length);
  std::vector<std::vector<Tensor>> outputs(ctx.num_outputs());
  for (size_t k = 0; k < length; ++k) {
    std::vector<Tensor> in;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& value = ctx.input_value(i);
      in.push_back(i < declared && value.is_sequence() ? value.sequence_items()[k] : value);
    }
    std::vector<Tensor> out = ctx.run_subgraph(body, in);
    if (out.size() < ctx.num_outputs())
      ctx.fail("body produced ", out.size(), " outputs, expected ", ctx.num_outputs());
    for (size_t j = 0; j < ctx.num_outputs(); ++j) {
      if (out[j].is_sequence()) ctx.fail("body output ", j, " is a sequence, expected a tensor");
      outputs[j].push_back(std::move(out[j]));
    }
  }
  for (size_t j = 0; j < ctx.num_outputs(); ++j) {
    DType dtype = !outputs[j].empty() ? outputs[j][0].dtype() : ctx.node().output_types[j].dtype;
    if (dtype == DType::undefined) dtype = ctx.input_value(0).dtype();
    ctx.set_output(j, Tensor::sequence(dtype, std::move(outputs[j])));
  }
}

}  // namespace

GRAFT_REGISTER_OP("", "SequenceEmpty", infer_sequence_empty, sequence_empty_kernel);
GRAFT_REGISTER_OP("", "SequenceConstruct", infer_sequence_construct, sequence_construct_kernel);
GRAFT_REGISTER_OP("", "SequenceInsert", infer_sequence_insert, sequence_insert_kernel);
GRAFT_REGISTER_OP("", "SequenceAt", infer_sequence_at, sequence_at_kernel);
GRAFT_REGISTER_OP("", "SequenceErase", infer_sequence_erase, sequence_erase_kernel);
GRAFT_REGISTER_OP("", "SequenceLength", infer_sequence_length, sequence_length_kernel);
GRAFT_REGISTER_OP("", "SplitToSequence", infer_split_to_sequence, split_to_sequence_kernel);
GRAFT_REGISTER_OP("", "ConcatFromSequence", infer_concat_from_sequence, concat_from_sequence_kernel);
GRAFT_REGISTER_OP("", "SequenceMap", infer_sequence_map, sequence_map_kernel);

}  // namespace graft::ops

#include "graft/ops/infer_util.h"

#include "graft/ops/type_inference.h"

namespace graft::ops {

void infer_same_as_input(InferContext& ctx) {
  ir::ValueType t = ctx.input_type(0);
  ctx.set_output(0, t);
}

std::optional<std::vector<ir::Dim>> broadcast_dims(const InferContext& ctx,
                                                   const std::vector<ir::ValueType>& types) {
  size_t rank = 0;
  for (const auto& t : types) {
    if (!t.has_rank) return std::nullopt;
    rank = std::max(rank, t.dims.size());
  }
  std::vector<ir::Dim> out(rank, ir::Dim::known(1));
  for (const auto& t : types) {
    size_t lead = rank - t.dims.size();
    for (size_t d = 0; d < t.dims.size(); ++d) {
      ir::Dim& o = out[d + lead];
      const ir::Dim& in = t.dims[d];
      if (in.is_known() && in.value == 1) continue;
      if (o.is_known() && o.value == 1) {
        o = in;
      } else if (in.is_known() && o.is_known()) {
        if (in.value != o.value)
          ctx.fail("input shapes cannot be broadcast (", in.value, " vs ", o.value, " in dimension ", d + lead, ")");
      } else if (!in.is_known() && !o.is_known()) {
        if (in.symbol != o.symbol) o = ir::Dim{};
      } else if (in.is_known()) {
        o = in;  // a symbolic dim broadcast against a known non-1 extent must equal it
      }
    }
  }
  return out;
}

namespace {
void infer_broadcast_with(InferContext& ctx, DType dtype) {
  std::vector<ir::ValueType> types;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) types.push_back(ctx.input_type(i));
  auto dims = broadcast_dims(ctx, types);
  ir::ValueType out{dtype, dims.has_value(), dims.value_or(std::vector<ir::Dim>{})};
  ctx.set_output(0, std::move(out));
}
}  // namespace

void infer_broadcast(InferContext& ctx) { infer_broadcast_with(ctx, ctx.input_type(0).dtype); }
void infer_broadcast_bool(InferContext& ctx) { infer_broadcast_with(ctx, DType::boolean); }

void set_output_dtype_only(InferContext& ctx, size_t i, DType dtype) { ctx.set_output(i, ir::ValueType::of_dtype(dtype)); }

std::vector<ir::ValueType> infer_body_output_types(const ir::Graph& body,
                                                   const std::vector<ir::ValueType>& input_types) {
  auto copy = body.clone();
  for (size_t i = 0; i < copy->inputs().size() && i < input_types.size(); ++i)
    if (input_types[i].dtype != DType::undefined) copy->inputs()[i]->output_types[0] = input_types[i];
  try {
    ops::infer_types(*copy);
  } catch (const Error&) {
    // Leave types unknown; the kernel checks at run time.
  }
  std::vector<ir::ValueType> types;
  for (const ir::Value& v : copy->outputs()) types.push_back(copy->type_of(v));
  return types;
}

}  // namespace graft::ops

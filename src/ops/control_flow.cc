// If, Loop and Scan. Bodies are graphs held in GRAPH attributes. Values a body
// reads from an enclosing scope were appended by the importer to the node's
// inputs (the last num_captured_inputs) and to every body's inputs, after the
// body's declared inputs, in the same order.
#include <algorithm>
#include <cstring>

#include "graft/ops/type_inference.h"
#include "graft/ops/infer_util.h"
#include "graft/ops/op_context.h"

namespace graft::ops {
namespace {

/// The node's captured (outer-scope) inputs.
std::vector<Tensor> captured_inputs(const KernelContext& ctx) {
  std::vector<Tensor> out;
  size_t n = ctx.num_inputs();
  for (size_t i = n - static_cast<size_t>(ctx.node().num_captured_inputs); i < n; ++i)
    out.push_back(ctx.input_value(i));
  return out;
}

std::vector<ir::ValueType> captured_types(const InferContext& ctx) {
  std::vector<ir::ValueType> types;
  size_t n = ctx.num_inputs();
  for (size_t i = n - static_cast<size_t>(ctx.node().num_captured_inputs); i < n; ++i)
    types.push_back(ctx.input_type(i));
  return types;
}

// ---- If ----

void infer_if(InferContext& ctx) {
  const auto& then_branch = ctx.attrs().get_graph("then_branch");
  auto types = infer_body_output_types(*then_branch, captured_types(ctx));
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    ir::ValueType type = i < types.size() ? ir::ValueType::of_dtype(types[i].dtype) : ir::ValueType{};
    type.sequence = i < types.size() && types[i].sequence;
    type.optional = i < types.size() && types[i].optional;
    ctx.set_output(i, type);
  }
}

void if_kernel(KernelContext& ctx) {
  const Tensor& cond = ctx.input(0);
  if (cond.numel() != 1) ctx.fail("condition must hold one element, got ", cond.type_string());
  bool take_then = cond.value_as_double(0) != 0.0;
  const auto& body = ctx.attrs().get_graph(take_then ? "then_branch" : "else_branch");
  std::vector<Tensor> outs = ctx.run_subgraph(*body, captured_inputs(ctx));
  if (outs.size() < ctx.num_outputs())
    ctx.fail("branch produced ", outs.size(), " outputs, the node has ", ctx.num_outputs());
  for (size_t i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, outs[i]);
}

// ---- Loop ----

size_t loop_carried_count(const ir::Node& node) {
  return node.inputs.size() - 2 - static_cast<size_t>(node.num_captured_inputs);
}

void infer_loop(InferContext& ctx) {
  size_t n_carried = loop_carried_count(ctx.node());
  std::vector<ir::ValueType> body_inputs = {ir::ValueType::of(DType::int64, {}), ir::ValueType::of(DType::boolean, {})};
  for (size_t i = 0; i < n_carried; ++i)
    body_inputs.push_back(ctx.has_input(2 + i) ? ctx.input_type(2 + i) : ir::ValueType{});  // (an empty optional)
  for (const auto& t : captured_types(ctx)) body_inputs.push_back(t);
  auto types = infer_body_output_types(*ctx.attrs().get_graph("body"), body_inputs);
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    DType dtype = i + 1 < types.size() ? types[i + 1].dtype : DType::undefined;
    if (i < n_carried) {
      // A carried value keeps its initial type, unless the body makes it
      // another kind of value (an optional initial value the body fills).
      const ir::ValueType initial = ctx.has_input(2 + i) ? ctx.input_type(2 + i) : ir::ValueType{};
      const bool kind_changes =
          i + 1 < types.size() && types[i + 1].dtype != DType::undefined &&
          (types[i + 1].sequence != initial.sequence || types[i + 1].optional != initial.optional);
      ctx.set_output(i, kind_changes ? types[i + 1] : initial);
      continue;
    }
    ctx.set_output(i, ir::ValueType::of_dtype(dtype));
  }
}

/// Stacks equally shaped tensors along a new leading axis.
Tensor stack(const KernelContext& ctx, const std::vector<Tensor>& parts, size_t which) {
  if (parts.empty()) ctx.unsupported("scan output ", which, " of a loop that ran zero iterations");
  Shape shape = parts[0].shape();
  shape.insert(shape.begin(), static_cast<int64_t>(parts.size()));
  Tensor out(parts[0].dtype(), shape);
  size_t bytes = parts[0].nbytes();
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].is_sequence()) ctx.fail("scan output ", which, " is a sequence; scan outputs are tensors");
    if (parts[i].shape() != parts[0].shape() || parts[i].dtype() != parts[0].dtype())
      ctx.fail("scan output ", which, " changes type across iterations: ", parts[0].type_string(), " then ",
               parts[i].type_string());
    std::memcpy(static_cast<char*>(out.raw_data()) + i * bytes, parts[i].raw_data(), bytes);
  }
  return out;
}

void loop_kernel(KernelContext& ctx) {
  const auto& body = ctx.attrs().get_graph("body");
  size_t n_carried = loop_carried_count(ctx.node());
  int64_t max_trips = ctx.has_input(0) ? ctx.input(0).value_as_int64(0) : INT64_MAX;
  bool cond = ctx.has_input(1) ? ctx.input(1).value_as_double(0) != 0.0 : true;
  if (!ctx.has_input(0) && !ctx.has_input(1)) ctx.unsupported("a Loop with neither trip count nor condition never ends");
  // Each carried value is also an output (a node read from an artifact need not say so).
  if (n_carried > ctx.node().output_types.size())
    ctx.fail("carries ", n_carried, " values but has ", ctx.node().output_types.size(), " outputs");
  std::vector<Tensor> carried;
  for (size_t i = 0; i < n_carried; ++i)  // an absent initial value is an empty optional
    carried.push_back(ctx.has_input(2 + i) ? ctx.input_value(2 + i) : Tensor::none(ctx.node().output_types[i].dtype));
  std::vector<Tensor> captured = captured_inputs(ctx);
  size_t n_scan = ctx.num_outputs() > n_carried ? ctx.num_outputs() - n_carried : 0;
  std::vector<std::vector<Tensor>> scans(n_scan);
  for (int64_t iter = 0; iter < max_trips && cond; ++iter) {
    std::vector<Tensor> in = {Tensor::scalar<int64_t>(iter), Tensor::scalar<bool>(cond)};
    in.insert(in.end(), carried.begin(), carried.end());
    in.insert(in.end(), captured.begin(), captured.end());
    std::vector<Tensor> out = ctx.run_subgraph(*body, in);
    if (out.size() < 1 + n_carried + n_scan)
      ctx.fail("body produced ", out.size(), " outputs, expected ", 1 + n_carried + n_scan);
    cond = out[0].value_as_double(0) != 0.0;
    for (size_t i = 0; i < n_carried; ++i) carried[i] = out[1 + i];
    for (size_t k = 0; k < n_scan; ++k) scans[k].push_back(out[1 + n_carried + k]);
  }
  for (size_t i = 0; i < n_carried && i < ctx.num_outputs(); ++i) ctx.set_output(i, carried[i]);
  for (size_t k = 0; k < n_scan; ++k) ctx.set_output(n_carried + k, stack(ctx, scans[k], k));
}

// ---- Scan (opset 9+) ----

void infer_scan(InferContext& ctx) {
  for (size_t i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, ir::ValueType{});
  if (ctx.opset() < 9) return;  // the batched opset-8 form is rejected by the kernel
  int64_t n_scan_in = ctx.attrs().get_int("num_scan_inputs");
  size_t n_declared = ctx.num_inputs() - static_cast<size_t>(ctx.node().num_captured_inputs);
  if (n_scan_in < 0 || static_cast<size_t>(n_scan_in) > n_declared) ctx.fail("num_scan_inputs out of range");
  size_t n_state = n_declared - static_cast<size_t>(n_scan_in);
  for (size_t i = 0; i < n_state && i < ctx.num_outputs(); ++i) ctx.set_output(i, ctx.input_type(i));
}

/// Slice `index` along `axis` of `t`.
Tensor take_slice(const Tensor& t, int64_t axis, int64_t index) {
  Shape out_shape = t.shape();
  out_shape.erase(out_shape.begin() + axis);
  Tensor out(t.dtype(), out_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= t.dim(d);
  for (int64_t d = axis + 1; d < t.rank(); ++d) inner *= t.dim(d);
  size_t es = dtype_size(t.dtype());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(static_cast<char*>(out.raw_data()) + o * inner * es,
                static_cast<const char*>(t.raw_data()) + ((o * t.dim(axis) + index) * inner) * es, inner * es);
  return out;
}

void scan_kernel(KernelContext& ctx) {
  if (ctx.opset() < 9) ctx.unsupported("Scan before opset 9 (batched form) is not supported");
  const auto& body = ctx.attrs().get_graph("body");
  int64_t n_scan_in = ctx.attrs().get_int("num_scan_inputs");
  size_t n_declared = ctx.num_inputs() - static_cast<size_t>(ctx.node().num_captured_inputs);
  size_t n_state = n_declared - static_cast<size_t>(n_scan_in);
  size_t n_scan_out = ctx.num_outputs() - n_state;
  auto in_axes = ctx.attrs().get_ints("scan_input_axes", std::vector<int64_t>(static_cast<size_t>(n_scan_in), 0));
  auto in_dirs = ctx.attrs().get_ints("scan_input_directions", std::vector<int64_t>(static_cast<size_t>(n_scan_in), 0));
  auto out_axes = ctx.attrs().get_ints("scan_output_axes", std::vector<int64_t>(n_scan_out, 0));
  auto out_dirs = ctx.attrs().get_ints("scan_output_directions", std::vector<int64_t>(n_scan_out, 0));
  if (in_axes.size() != static_cast<size_t>(n_scan_in) || in_dirs.size() != static_cast<size_t>(n_scan_in) ||
      out_axes.size() != n_scan_out || out_dirs.size() != n_scan_out)
    ctx.fail("scan axes/directions attributes do not match the number of scan inputs/outputs");
  int64_t length = -1;
  for (int64_t j = 0; j < n_scan_in; ++j) {
    const Tensor& x = ctx.input(n_state + static_cast<size_t>(j));
    in_axes[static_cast<size_t>(j)] = normalize_axis(in_axes[static_cast<size_t>(j)], x.rank(), ctx.node().describe());
    int64_t len = x.dim(in_axes[static_cast<size_t>(j)]);
    if (length >= 0 && len != length) ctx.fail("scan inputs have different lengths ", length, " and ", len);
    length = len;
  }
  if (length < 0) length = 0;
  std::vector<Tensor> state;
  for (size_t i = 0; i < n_state; ++i) state.push_back(ctx.input_value(i));
  std::vector<Tensor> captured = captured_inputs(ctx);
  std::vector<std::vector<Tensor>> scans(n_scan_out);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<Tensor> in = state;
    for (int64_t j = 0; j < n_scan_in; ++j) {
      int64_t index = in_dirs[static_cast<size_t>(j)] ? length - 1 - t : t;
      in.push_back(take_slice(ctx.input(n_state + static_cast<size_t>(j)), in_axes[static_cast<size_t>(j)], index));
    }
    in.insert(in.end(), captured.begin(), captured.end());
    std::vector<Tensor> out = ctx.run_subgraph(*body, in);
    if (out.size() < n_state + n_scan_out) ctx.fail("body produced ", out.size(), " outputs");
    for (size_t i = 0; i < n_state; ++i) state[i] = out[i];
    for (size_t k = 0; k < n_scan_out; ++k) scans[k].push_back(out[n_state + k]);
  }
  for (size_t i = 0; i < n_state; ++i) ctx.set_output(i, state[i]);
  for (size_t k = 0; k < n_scan_out; ++k) {
    if (out_dirs[k]) std::reverse(scans[k].begin(), scans[k].end());
    Tensor stacked = stack(ctx, scans[k], k);
    int64_t axis = normalize_axis(out_axes[k], stacked.rank(), ctx.node().describe());
    if (axis != 0) {
      // Move the new leading axis to `axis`.
      Shape shape = stacked.shape();
      Shape out_shape = shape;
      out_shape.erase(out_shape.begin());
      out_shape.insert(out_shape.begin() + axis, shape[0]);
      Tensor moved(stacked.dtype(), out_shape);
      int64_t inner = 1, mid = 1;
      for (int64_t d = axis + 1; d < stacked.rank(); ++d) inner *= shape[static_cast<size_t>(d)];
      for (int64_t d = 1; d <= axis; ++d) mid *= shape[static_cast<size_t>(d)];
      size_t es = dtype_size(stacked.dtype());
      for (int64_t s = 0; s < shape[0]; ++s)
        for (int64_t m = 0; m < mid; ++m)
          std::memcpy(static_cast<char*>(moved.raw_data()) + ((m * shape[0] + s) * inner) * es,
                      static_cast<const char*>(stacked.raw_data()) + ((s * mid + m) * inner) * es, inner * es);
      stacked = moved;
    }
    ctx.set_output(n_state + k, stacked);
  }
}

}  // namespace

GRAFT_REGISTER_OP("", "If", infer_if, if_kernel);
GRAFT_REGISTER_OP("", "Loop", infer_loop, loop_kernel);
GRAFT_REGISTER_OP("", "Scan", infer_scan, scan_kernel);

}  // namespace graft::ops

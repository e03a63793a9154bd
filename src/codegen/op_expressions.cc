// Lowering fused bodies to kernel IR. Each op's expression is declared with
// its semantics (OpSchema::pointwise, graft/ops/pointwise_expression.h);
// this file holds what is generic: whether a node can be fused (its dtypes,
// ranks and outputs, then its expression's own test) and the walk over a
// body that calls each node's expression. The expressions mirror the
// reference kernels in src/ops (same branch structure, same constants, same
// NaN behaviour), so a fused kernel computes what the unfused graph
// computes; only the CPU JIT's transcendental approximations differ, within
// the bounds stated in docs/codegen.md.
#include "graft/codegen/op_expressions.h"

#include <memory>

#include "graft/ir/graph.h"
#include "graft/ir/indexed_graph.h"
#include "graft/ops/pointwise_expression.h"

namespace graft::codegen {

namespace {

bool rank_fits(const ir::ValueType& type) {
  return !type.has_rank || type.dims.size() <= static_cast<size_t>(ir::kMaxKernelRank);
}

/// The test behind is_fusible and why_not_fusible. `reason`, when not null,
/// receives why not; without it no message is built (the fusion pass asks for
/// every node of the graph).
bool check_fusible(const ir::Node& node, std::string* reason) {
  auto refuse = [reason](auto&& message) {
    if (reason) *reason = message();
    return false;
  };
  if (node.op() == ir::OpId::Constant) {
    const Tensor& value = node.constant_value;
    if (!ir::is_kernel_dtype(value.dtype())) return refuse([] { return "constant of a dtype kernels do not compute in"; });
    if (value.rank() > ir::kMaxKernelRank) return refuse([] { return "constant of rank above 8"; });
    return true;
  }
  const ops::PointwiseExpression* expression = node.schema().pointwise;
  if (!expression) return refuse([&] { return "op " + node.op_type() + " has no pointwise expression"; });
  if (node.num_outputs() != 1) return refuse([] { return "more than one output"; });
  if (node.inputs.empty() || !node.inputs[0]) return refuse([] { return "input 0 is absent"; });
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const ir::Value& input = node.inputs[i];
    if (!input) {
      if (expression->takes_absent_inputs) continue;
      return refuse([&] { return "input " + std::to_string(i) + " is absent"; });
    }
    GRAFT_CHECK(input.index >= 0 && input.index < input.node->num_outputs(), "bad value");
    const ir::ValueType& type = input.node->output_types[static_cast<size_t>(input.index)];
    if (!type.is_tensor())
      return refuse([&] { return "input " + std::to_string(i) + " is a sequence or an optional"; });
    if (!ir::is_kernel_dtype(type.dtype))
      return refuse([&] {
        return "input " + std::to_string(i) + " has dtype " + std::string(dtype_name(type.dtype)) +
               " (kernels take float32, float64, float16, int32, int64, bool)";
      });
    if (!rank_fits(type)) return refuse([] { return "input rank above 8"; });
  }
  const ir::ValueType& out = node.output_types[0];
  if (!out.is_tensor()) return refuse([] { return "the output is a sequence or an optional"; });
  if (!ir::is_kernel_dtype(out.dtype))
    return refuse([&] { return "output dtype " + std::string(dtype_name(out.dtype)) + " is not a kernel dtype"; });
  if (!rank_fits(out)) return refuse([] { return "output rank above 8"; });
  return ops::expression_takes(node, reason);
}

}  // namespace

std::string why_not_fusible(const ir::Node& node) {
  std::string reason;
  check_fusible(node, &reason);
  return reason;
}

bool is_fusible(const ir::Node& node) { return check_fusible(node, nullptr); }

LoweredKernel lower_body(const ir::Graph& body) {
  ir::IndexedGraph indexed(body);
  LoweredKernel result;
  ir::KernelIR& kernel = result.ir;
  for (const ir::Node* in : body.inputs()) {
    DType t = in->output_types[0].dtype;
    if (!ir::is_kernel_dtype(t))
      fail(ErrorKind::unsupported, "fused kernel input ", in->describe(), " has dtype ", dtype_name(t),
           " (kernels take float32, float64, float16, int32, int64, bool)");
    kernel.input_dtypes.push_back(t);
  }
  std::vector<int32_t> position_of_input(body.num_nodes(), -1);
  for (size_t i = 0; i < body.inputs().size(); ++i) position_of_input[body.inputs()[i]->index()] = static_cast<int32_t>(i);

  // Per body node (topological id, single-output nodes): the expression of
  // its value in its compute dtype, and the node's dtype in the graph. A
  // float16 value is computed in float32 and rounded to float16 after every
  // op, as the reference kernels round each op's result.
  std::vector<int32_t> expr_of(indexed.num_nodes(), -1);
  std::vector<DType> storage_of(indexed.num_nodes(), DType::undefined);
  auto to_compute = [&](int32_t e) {
    DType t = kernel.exprs[static_cast<size_t>(e)].dtype;
    return t == DType::float16 ? kernel.add_op(ir::ExprOp::cast, DType::float32, e) : e;
  };
  for (uint32_t id = 0; id < indexed.num_nodes(); ++id) {
    const ir::Node& node = indexed.node(id);
    storage_of[id] = node.output_types.empty() ? DType::undefined : node.output_types[0].dtype;
    if (node.op() == ir::OpId::Input) {
      int32_t position = position_of_input[node.index()];
      if (position < 0) fail(ErrorKind::invalid_model, node.describe(), " is not an input of the fused body");
      expr_of[id] = to_compute(kernel.add_input(position, kernel.input_dtypes[static_cast<size_t>(position)]));
      continue;
    }
    std::string reason = why_not_fusible(node);
    if (!reason.empty()) fail(ErrorKind::unsupported, node.describe(), " cannot be fused: ", reason);
    if (node.op() == ir::OpId::Constant) {
      const Tensor& value = node.constant_value;
      storage_of[id] = value.dtype();
      if (value.numel() == 1) {
        ir::Expr e;
        e.op = ir::ExprOp::constant;
        e.dtype = ops::compute_dtype(value.dtype());
        if (dtype_is_float(value.dtype()))
          e.float_value = value.value_as_double(0);
        else
          e.int_value = value.value_as_int64(0);
        expr_of[id] = kernel.add(e);
      } else {
        int32_t position = static_cast<int32_t>(kernel.input_dtypes.size());
        kernel.input_dtypes.push_back(value.dtype());
        result.captured.push_back(value);
        expr_of[id] = to_compute(kernel.add_input(position, value.dtype()));
      }
      continue;
    }
    std::vector<int32_t> args;
    std::vector<DType> dtypes;
    for (ir::Entry e : indexed.inputs(id)) {
      if (!e.present()) {
        args.push_back(-1);
        dtypes.push_back(DType::undefined);
        continue;
      }
      if (e.index != 0) fail(ErrorKind::unsupported, node.describe(), ": reads a second output of a body node");
      args.push_back(expr_of[e.node_id]);
      dtypes.push_back(storage_of[e.node_id]);
    }
    expr_of[id] = ops::lower_pointwise(kernel, node, args, dtypes);
  }
  for (ir::Entry out : indexed.outputs()) {
    if (!out.present() || out.index != 0) fail(ErrorKind::invalid_model, "fused body output is not a node's first output");
    int32_t e = expr_of[out.node_id];
    if (storage_of[out.node_id] == DType::float16) {
      // The float16 value that the rounding above (or the load) produced.
      const int32_t rounded = ops::float16_source(kernel, e);
      e = rounded >= 0 ? rounded : kernel.add_op(ir::ExprOp::cast, DType::float16, e);
    }
    kernel.outputs.push_back(e);
  }
  kernel = canonicalize(kernel);
  return result;
}

namespace {

/// A body graph of one node: an Input per node input, the node, its outputs.
std::unique_ptr<ir::Graph> single_node_body(const ir::Node& node) {
  auto body = std::make_unique<ir::Graph>();
  body->opset_imports = node.graph().opset_imports;
  std::vector<ir::Value> inputs;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const ir::Value& v = node.inputs[i];
    if (!v) {
      inputs.push_back({});
      continue;
    }
    inputs.push_back(body->add_input("in" + std::to_string(i), node.graph().type_of(v))->output(0));
  }
  ir::Node* copy = body->add_node(node.schema(), inputs, node.num_outputs(), node.name);
  copy->attributes = node.attributes;
  copy->opset_version = node.opset_version;
  for (int o = 0; o < node.num_outputs(); ++o) {
    copy->output_types[static_cast<size_t>(o)] = node.output_types[static_cast<size_t>(o)];
    body->add_output(copy->output(o), "out" + std::to_string(o));
  }
  return body;
}

}  // namespace

std::string why_not_lowerable(const ir::Node& node) {
  if (node.op() != ir::OpId::FusedPointwise) return why_not_fusible(node);
  if (!node.subgraph) return "a fused node without a body";
  for (const auto& body_node : node.subgraph->nodes()) {
    if (body_node->op() == ir::OpId::Input) continue;
    std::string reason = why_not_fusible(*body_node);
    if (!reason.empty()) return body_node->describe() + ": " + reason;
  }
  return {};
}

LoweredKernel lower_node(const ir::Node& node) {
  if (node.op() == ir::OpId::FusedPointwise) {
    if (!node.subgraph) fail(ErrorKind::invalid_model, node.describe(), ": a fused node without a body");
    return lower_body(*node.subgraph);
  }
  return lower_body(*single_node_body(node));
}

}  // namespace graft::codegen

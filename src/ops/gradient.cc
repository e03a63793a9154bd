// GradientContext: the builder side of autodiff. Backward nodes are added to
// the forward+backward graph one at a time and their types inferred at once,
// so a builder can read the shape of what it just made.
#include "graft/ops/gradient.h"

#include "graft/ops/op_context.h"

namespace graft::ops {

void infer_node_types(ir::Node& node) {
  const ir::OpSchema& s = node.schema();
  if (s.category == ir::OpCategory::source || !s.infer) return;
  std::vector<const Tensor*> constants(node.inputs.size(), nullptr);
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const ir::Value& v = node.inputs[i];
    if (v.node && v.node->op() == ir::OpId::Constant) constants[i] = &v.node->constant_value;
  }
  InferContext ctx(node, std::move(constants));
  s.infer(ctx);
}

GradientContext::GradientContext(ir::Graph& graph, ir::Node& forward, std::vector<ir::Value> output_gradients,
                                 std::vector<bool> needs_input_gradient, int* name_counter)
    : graph_(graph),
      forward_(forward),
      output_gradients_(std::move(output_gradients)),
      needs_(std::move(needs_input_gradient)),
      input_gradients_(forward.inputs.size()),
      counter_(name_counter ? name_counter : &own_counter_) {
  output_gradients_.resize(forward.output_types.size());
}

ir::Value GradientContext::input(size_t i) const {
  GRAFT_CHECK(has_input(i));
  return forward_.inputs[i];
}

const ir::ValueType& GradientContext::input_type(size_t i) const { return graph_.type_of(input(i)); }

ir::Node* GradientContext::add_node(ir::OpId op, const std::vector<ir::Value>& inputs, int num_outputs,
                                    std::vector<std::pair<std::string, ir::AttributeValue>> attributes) {
  ir::Node* n = graph_.add_node(op, inputs, num_outputs, backward_name(ir::op_name(op)));
  // Backward nodes use today's ONNX forms (axes as inputs, scatter reductions)
  // whatever the model's opset.
  if (ir::op_schema(op).domain.empty() && n->opset_version < 17) n->opset_version = 17;
  if (n->opset_version == 0) n->opset_version = 1;
  n->is_backward = true;
  n->device = forward_.device;
  for (auto& [key, value] : attributes) n->attributes.set(key, std::move(value));
  infer_node_types(*n);
  return n;
}

std::string GradientContext::backward_name(std::string_view what) {
  std::string base = forward_.name.empty() ? std::string(ir::op_name(forward_.op())) : forward_.name;
  return base + "_grad/" + std::string(what) + "_" + std::to_string((*counter_)++);
}

ir::Value GradientContext::add(ir::OpId op, const std::vector<ir::Value>& inputs,
                               std::vector<std::pair<std::string, ir::AttributeValue>> attributes) {
  return add_node(op, inputs, 1, std::move(attributes))->output(0);
}

ir::Value GradientContext::constant(Tensor value) {
  ir::Node* n = graph_.add_constant(backward_name("const"), std::move(value));
  n->is_backward = true;
  return n->output(0);
}

ir::Value GradientContext::scalar(double value, DType dtype) {
  Tensor t(dtype, Shape{});
  visit_dtype(dtype, "gradient constant", [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>)
      *t.data<T>() = value != 0;
    else
      *t.data<T>() = static_cast<T>(value);
  });
  return constant(std::move(t));
}

ir::Value GradientContext::int64s(const std::vector<int64_t>& values) {
  return constant(Tensor::from_vector<int64_t>(values, Shape{static_cast<int64_t>(values.size())}));
}

std::vector<int64_t> GradientContext::known_dims(ir::Value value) const {
  const ir::ValueType& t = graph_.type_of(value);
  std::optional<Shape> shape = t.concrete_shape();
  if (!shape) unsupported("the shape of ", graph_.value_name(value), " (", t.to_string(), ") is not known");
  return std::vector<int64_t>(shape->begin(), shape->end());
}

std::optional<std::vector<int64_t>> GradientContext::constant_ints(size_t i) const {
  if (!has_input(i) || forward_.inputs[i].node->op() != ir::OpId::Constant) return std::nullopt;
  const Tensor& t = forward_.inputs[i].node->constant_value;
  std::vector<int64_t> out;
  if (t.dtype() == DType::int64) {
    for (int64_t v : t.values<int64_t>()) out.push_back(v);
  } else if (t.dtype() == DType::int32) {
    for (int32_t v : t.values<int32_t>()) out.push_back(v);
  } else {
    return std::nullopt;
  }
  return out;
}

ir::Value GradientContext::shape_of(ir::Value value) { return int64s(known_dims(value)); }

void GradientContext::set_input_gradient(size_t i, ir::Value gradient) {
  GRAFT_CHECK(i < input_gradients_.size());
  input_gradients_[i] = gradient;
}

}  // namespace graft::ops

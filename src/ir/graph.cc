#include "graft/ir/graph.h"

#include <charconv>
#include <unordered_map>

namespace graft::ir {

ValueType ValueType::of(DType dtype, const Shape& shape) {
  ValueType t{dtype, true, {}};
  t.dims.reserve(shape.size());
  for (int64_t d : shape) t.dims.push_back(Dim::known(d));
  return t;
}

ValueType ValueType::sequence_of(ValueType item) {
  item.sequence = true;
  return item;
}

ValueType ValueType::item_type() const {
  ValueType item = *this;
  item.sequence = false;
  item.optional = false;
  return item;
}

ValueType ValueType::optional_of(ValueType present) {
  present.optional = true;
  return present;
}

ValueType ValueType::present_type() const {
  ValueType present = *this;
  present.optional = false;
  return present;
}

bool ValueType::is_concrete() const {
  if (!has_rank || !is_tensor()) return false;
  for (const Dim& d : dims)
    if (!d.is_known()) return false;
  return true;
}

std::optional<Shape> ValueType::concrete_shape() const {
  if (!is_concrete()) return std::nullopt;
  Shape s;
  for (const Dim& d : dims) s.push_back(d.value);
  return s;
}

std::string ValueType::to_string() const {
  if (optional) return "optional<" + present_type().to_string() + ">";
  if (sequence) return "sequence<" + item_type().to_string() + ">";
  std::string s(dtype_name(dtype));
  if (!has_rank) return s + "[?]";
  s += "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += dims[i].is_known() ? std::to_string(dims[i].value) : dims[i].symbol.empty() ? "?" : dims[i].symbol.str();
  }
  return s + "]";
}

bool touches_non_tensor(const Node& node) {
  for (const ValueType& t : node.output_types)
    if (!t.is_tensor()) return true;
  for (const Value& v : node.inputs)
    if (v.node && v.index >= 0 && v.index < v.node->num_outputs() &&
        !v.node->output_types[static_cast<size_t>(v.index)].is_tensor())
      return true;
  return false;
}

std::string Node::describe() const {
  return "node '" + (name.empty() ? "#" + std::to_string(index_) : name) + "' (" + op_type() + ")";
}

Node* Graph::add_node(std::string_view op_type, const std::vector<Value>& inputs, int num_outputs,
                      std::string name, std::string_view domain) {
  const OpSchema* schema = find_op(domain, op_type);
  if (!schema)
    fail(ErrorKind::unsupported, "unknown op '", domain.empty() ? "" : std::string(domain) + ".", op_type, "'");
  return create_node(*schema, inputs, num_outputs, std::move(name), domain);
}

Node* Graph::add_node(const OpSchema& schema, const std::vector<Value>& inputs, int num_outputs, std::string name) {
  return create_node(schema, inputs, num_outputs, std::move(name), schema.domain);
}

Node* Graph::add_node(OpId op, const std::vector<Value>& inputs, int num_outputs, std::string name) {
  return add_node(op_schema(op), inputs, num_outputs, std::move(name));
}

Node* Graph::create_node(const OpSchema& schema, const std::vector<Value>& inputs, int num_outputs, std::string name,
                         std::string_view opset_domain) {
  GRAFT_CHECK(num_outputs >= 0, "negative output count");
  auto node = std::unique_ptr<Node>(new Node(&schema, this, static_cast<uint32_t>(nodes_.size())));
  node->name = std::move(name);
  node->inputs = inputs;
  node->output_types.resize(static_cast<size_t>(num_outputs));
  node->output_names.resize(static_cast<size_t>(num_outputs));
  if (!opset_imports.empty()) {
    auto it = opset_imports.find(std::string(opset_domain));
    node->opset_version = it != opset_imports.end() ? static_cast<int>(it->second) : 0;
  }
  nodes_.push_back(std::move(node));
  return nodes_.back().get();
}

Node* Graph::add_input(std::string name, ValueType type) {
  Node* n = add_node(op_schema(OpId::Input), {}, 1, name);
  n->output_types[0] = std::move(type);
  n->output_names[0] = std::move(name);
  inputs_.push_back(n);
  return n;
}

Node* Graph::add_constant(const std::string& name, Tensor value) {
  Node* n = add_node(op_schema(OpId::Constant), {}, 1, name);
  n->output_types[0] = ValueType::of(value.dtype(), value.shape());
  n->output_names[0] = name;
  n->constant_value = std::move(value);
  return n;
}

void Graph::add_output(Value value, std::string name) {
  GRAFT_CHECK(value.node && &value.node->graph() == this, "graph output from another graph");
  if (name.empty()) name = value_name(value);
  outputs_.push_back(value);
  output_names_.push_back(std::move(name));
}

const ValueType& Graph::type_of(Value v) const {
  GRAFT_CHECK(v.node && v.index >= 0 && v.index < v.node->num_outputs(), "bad value");
  return v.node->output_types[static_cast<size_t>(v.index)];
}

std::string Graph::value_name(Value v) const {
  if (!v.node) return "<absent>";
  if (v.index >= 0 && v.index < v.node->num_outputs() && !v.node->output_names[static_cast<size_t>(v.index)].empty())
    return v.node->output_names[static_cast<size_t>(v.index)];
  if (!v.node->name.empty()) return v.node->name + ":" + std::to_string(v.index);
  // Unnamed nodes: built in a buffer, so that a short name stays in the
  // string's own storage (passes name every boundary value this way).
  char buffer[32];
  buffer[0] = '#';
  char* end = std::to_chars(buffer + 1, buffer + 20, v.node->index()).ptr;
  *end++ = ':';
  end = std::to_chars(end, buffer + sizeof buffer, v.index).ptr;
  return std::string(buffer, end);
}

Node* Graph::copy_node(const Node& src, const std::vector<Value>& inputs) {
  Node* n = add_node(src.schema(), inputs, src.num_outputs(), src.name);
  n->attributes = src.attributes;
  n->output_types = src.output_types;
  n->output_names = src.output_names;
  n->opset_version = src.opset_version;
  n->device = src.device;
  n->backend = src.backend;
  n->is_backward = src.is_backward;
  n->constant_value = src.constant_value;
  n->num_captured_inputs = src.num_captured_inputs;
  if (src.subgraph) n->subgraph = std::shared_ptr<Graph>(src.subgraph->clone());
  return n;
}

Node* Graph::take_node(Graph& other, Node& node) {
  GRAFT_CHECK(&node.graph() == &other && &other != this, "take_node: the node is not in the other graph");
  std::unique_ptr<Node>& slot = other.nodes_[node.index()];
  GRAFT_CHECK(slot.get() == &node, "take_node: node taken twice");
  node.graph_ = this;
  node.index_ = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back(std::move(slot));
  return &node;
}

std::unique_ptr<Graph> Graph::clone() const {
  auto g = std::make_unique<Graph>();
  g->opset_imports = opset_imports;
  g->name = name;
  std::unordered_map<const Node*, Node*> map;
  // Nodes may be in any order; copy in two phases so forward references work.
  for (const auto& n : nodes_) {
    Node* c = g->copy_node(*n, {});
    map[n.get()] = c;
  }
  for (const auto& n : nodes_) {
    Node* c = map[n.get()];
    for (const Value& v : n->inputs) c->inputs.push_back(v.node ? Value{map.at(v.node), v.index} : Value{});
  }
  for (Node* in : inputs_) g->inputs_.push_back(map.at(in));
  for (size_t i = 0; i < outputs_.size(); ++i)
    g->add_output(Value{map.at(outputs_[i].node), outputs_[i].index}, output_names_[i]);
  return g;
}

}  // namespace graft::ir

/// \file
/// The graph IR: nodes owned by a Graph, values as (producer, output index).
/// Graph inputs and weights are nodes too (ops `Input` and `Constant`).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "graft/core/device.h"
#include "graft/core/prefetch.h"
#include "graft/core/small_vector.h"
#include "graft/core/tensor.h"
#include "graft/ir/attribute.h"
#include "graft/ir/op_schema.h"
#include "graft/ir/symbol.h"

namespace graft::ir {

/// One dimension of a value's shape: a known extent, or unknown, possibly with
/// a symbolic name ("batch", "seq") shared by dimensions known to be equal.
/// Trivially copyable (16 bytes): copying a type copies its dimensions as
/// plain memory.
struct Dim {
  int64_t value = -1;  ///< >= 0 when known
  Symbol symbol;       ///< optional name when unknown
  static Dim known(int64_t v) { return Dim{v, {}}; }
  static Dim symbolic(std::string_view name) { return Dim{-1, Symbol(name)}; }
  bool is_known() const { return value >= 0; }
  bool operator==(const Dim&) const = default;
};

static_assert(std::is_trivially_copyable_v<Dim>);

/// Element type and (possibly partial) shape of a value: a tensor, or a
/// sequence of tensors (ONNX `seq(tensor(...))`), whose dtype and dims then
/// describe what is known of every item; either may be optional (ONNX
/// `optional(...)`: empty, or such a value).
struct ValueType {
  DType dtype = DType::undefined;
  bool has_rank = false;  ///< false: nothing is known of the shape
  std::vector<Dim> dims;  ///< meaningful only when has_rank
  bool sequence = false;  ///< a sequence of tensors (dtype and dims are its items')
  bool optional = false;  ///< may be empty (none); else a value of the type without this mark

  /// A fully known type.
  static ValueType of(DType dtype, const Shape& shape);
  /// Known dtype, unknown rank.
  static ValueType of_dtype(DType dtype) { return ValueType{dtype, false, {}}; }
  /// A sequence whose items are of type `item`.
  static ValueType sequence_of(ValueType item);
  /// The type of a sequence's items (the type itself, without the sequence
  /// and optional marks).
  ValueType item_type() const;
  /// An optional value of type `present` (empty, or of that type).
  static ValueType optional_of(ValueType present);
  /// The type of an optional value when it is not empty (the type itself,
  /// without the optional mark).
  ValueType present_type() const;
  /// A sequence or an optional: a value only the reference kernels and
  /// control flow take.
  bool is_tensor() const { return !sequence && !optional; }
  /// Every dimension known (never for a sequence or an optional: its length,
  /// or whether it holds anything, is a run-time value).
  bool is_concrete() const;
  /// The shape when is_concrete(), else nullopt.
  std::optional<Shape> concrete_shape() const;
  /// "float32[1,3,?,N]", "float32[?]" for unknown rank, "sequence<float32[?]>",
  /// "optional<float32[2]>".
  std::string to_string() const;
  bool operator==(const ValueType&) const = default;
};

class Node;
class Graph;

/// An edge source: output `index` of `node`. A null node marks an absent
/// optional input.
struct Value {
  Node* node = nullptr;
  int index = 0;
  explicit operator bool() const { return node != nullptr; }
  bool operator==(const Value&) const = default;
};

/// One operation. Owned by its Graph; create through Graph::add_node.
///
/// The fields that passes read for every node (op, owner, inputs, output
/// types, placement, flags, backend) come first: the first 160 bytes, which
/// a sweep over a large graph fetches (prefetch()). A single output's type
/// and name are stored inside the node.
class Node {
  // Private, yet first: part of the hot head of the object.
  friend class Graph;
  Node(const OpSchema* schema, Graph* graph, uint32_t index) : schema_(schema), graph_(graph), index_(index) {
    attributes.node_ = this;
  }
  const OpSchema* schema_;
  Graph* graph_;
  uint32_t index_;

 public:
  const OpSchema& schema() const { return *schema_; }
  /// The op (OpId::Conv): what code past the importer compares.
  OpId op() const { return schema_->id; }
  /// "Conv", "graft.Subgraph": for messages and export, not for comparisons.
  std::string op_type() const { return schema_->qualified_name(); }
  /// "node 'conv1' (Conv)": how error messages name the node.
  std::string describe() const;
  /// Position in the owning graph's node list (stable until the graph is rebuilt).
  uint32_t index() const { return index_; }
  Graph& graph() const { return *graph_; }

  /// The i-th output as a Value.
  Value output(int i) { return Value{this, i}; }
  int num_outputs() const { return static_cast<int>(output_types.size()); }

  /// Asks the CPU to start fetching the node's first fields (those above
  /// `output_names`): for sweeps over graphs larger than the caches, a few
  /// nodes ahead.
  void prefetch() const {
    const char* head = reinterpret_cast<const char*>(this);
    graft::prefetch(head);
    graft::prefetch(head + 64);
    graft::prefetch(head + 159);
  }

  int opset_version = 0;  ///< opset of the node's domain at import
  std::vector<Value> inputs;
  SmallVector<ValueType, 1> output_types;  ///< inline for the usual single output
  Device device;                          ///< placement
  bool is_backward = false;               ///< autodiff marks backward nodes
  int num_captured_inputs = 0;            ///< trailing inputs that are outer-scope values for control-flow bodies
  std::shared_ptr<Graph> subgraph;        ///< owned body of graft.Subgraph / graft.FusedPointwise
  std::string backend;                    ///< assigned backend ("" = not yet assigned)
  SmallVector<std::string, 1> output_names;  ///< unique within the graph; "" for unnamed
  std::string name;
  Attributes attributes;
  Tensor constant_value;  ///< the value of a Constant node
};

/// True when `node` reads or produces a sequence or an optional value (only
/// the reference kernels and control flow take them: backends and fusion
/// leave such nodes alone).
bool touches_non_tensor(const Node& node);

/// A dataflow graph. Nodes are kept in insertion order, which need not be
/// topological; IndexedGraph gives the topological view.
class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /// Adds a node of the op `domain`/`op_type` (throws unsupported when the op
  /// is not in the op table) with `num_outputs` outputs of unknown type.
  Node* add_node(std::string_view op_type, const std::vector<Value>& inputs, int num_outputs = 1,
                 std::string name = {}, std::string_view domain = "");
  /// Adds a node of op `schema` (an entry of the op table): add_node without
  /// the lookup by name, for passes that create many nodes of one op.
  Node* add_node(const OpSchema& schema, const std::vector<Value>& inputs, int num_outputs = 1, std::string name = {});
  /// Adds a node of op `op`.
  Node* add_node(OpId op, const std::vector<Value>& inputs, int num_outputs = 1, std::string name = {});
  /// Reserves room for `num_nodes` nodes in all (a builder that knows its size).
  void reserve_nodes(size_t num_nodes) { nodes_.reserve(num_nodes); }
  /// Adds a graph input (an `Input` node) and registers it as the next input.
  Node* add_input(std::string name, ValueType type);
  /// Adds a weight or constant (a `Constant` node holding `value`).
  Node* add_constant(const std::string& name, Tensor value);
  /// Appends a graph output.
  void add_output(Value value, std::string name = {});

  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  size_t num_nodes() const { return nodes_.size(); }
  const std::vector<Node*>& inputs() const { return inputs_; }
  const std::vector<Value>& outputs() const { return outputs_; }
  std::vector<Value>& mutable_outputs() { return outputs_; }
  const std::vector<std::string>& output_names() const { return output_names_; }
  std::vector<std::string>& mutable_output_names() { return output_names_; }

  /// Type of a value (the producer's output type).
  const ValueType& type_of(Value v) const;
  /// Display name of a value: its output name or "<node>:<index>".
  std::string value_name(Value v) const;

  /// Opset imports by domain ("" = ai.onnx).
  std::map<std::string, int64_t> opset_imports;
  /// Model name and producer, kept for export.
  std::string name;

  /// Deep copy (subgraphs and attributes included; constants share storage).
  std::unique_ptr<Graph> clone() const;
  /// Copies `src` (a node of another graph) into this graph with new inputs;
  /// keeps name, attributes, types, placement and flags.
  Node* copy_node(const Node& src, const std::vector<Value>& inputs);
  /// Moves `node` out of `other` into this graph without copying it: the same
  /// Node object, with a new index, still reading its old inputs, which the
  /// caller replaces. For passes that rebuild a graph they own: afterwards
  /// `other` may only be destroyed.
  Node* take_node(Graph& other, Node& node);

 private:
  Node* create_node(const OpSchema& schema, const std::vector<Value>& inputs, int num_outputs, std::string name,
                    std::string_view opset_domain);

  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<Node*> inputs_;
  std::vector<Value> outputs_;
  std::vector<std::string> output_names_;
};

}  // namespace graft::ir

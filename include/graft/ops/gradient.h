/// \file
/// Gradient builders: how an op's backward nodes are made, declared in the
/// op's semantics file beside its reference kernel:
///
///   void relu_gradient(GradientContext& g) {
///     ir::Value zero = g.scalar(0.0, g.input_type(0).dtype);
///     ir::Value mask = g.add(ir::OpId::Greater, {g.input(0), zero});
///     g.set_input_gradient(0, g.add(ir::OpId::Where, {mask, g.output_gradient(0), zero}));
///   }
///   GRAFT_REGISTER_GRADIENT(Relu, relu_gradient);
///
/// autodiff::gradient (graft/autodiff/gradient.h) walks the forward graph from
/// the loss backwards and calls the builder of every node on a path to a
/// value it differentiates. A builder sees the forward node's inputs and
/// outputs as values of the forward+backward graph and the gradients of its
/// outputs (absent where no path from the loss passes through), adds nodes
/// (marked is_backward, their types inferred at once) and sets the gradient
/// of each input that needs one. A gradient may have the broadcast shape of
/// the node's output: autodiff sums it back to the input's shape.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graft/ir/graph.h"

namespace graft::ops {

/// What a gradient builder sees and how it adds backward nodes.
class GradientContext {
 public:
  /// `forward` is a node of `graph` (the forward+backward graph under
  /// construction); `output_gradients` has one entry per output, a null
  /// Value where no gradient flows; `needs_input_gradient` says which inputs
  /// lead to a differentiated value. `name_counter`, shared by the contexts of
  /// one differentiation, numbers the backward nodes' names so that they stay
  /// unique in the graph (null: this context counts alone).
  GradientContext(ir::Graph& graph, ir::Node& forward, std::vector<ir::Value> output_gradients,
                  std::vector<bool> needs_input_gradient, int* name_counter = nullptr);

  /// The forward node (read its attributes, op and opset here).
  const ir::Node& node() const { return forward_; }
  const ir::Attributes& attrs() const { return forward_.attributes; }
  size_t num_inputs() const { return forward_.inputs.size(); }
  /// False for an absent optional input.
  bool has_input(size_t i) const { return i < forward_.inputs.size() && forward_.inputs[i]; }
  ir::Value input(size_t i) const;
  const ir::ValueType& input_type(size_t i) const;
  size_t num_outputs() const { return static_cast<size_t>(forward_.num_outputs()); }
  ir::Value output(size_t i) const { return forward_.output(static_cast<int>(i)); }
  const ir::ValueType& output_type(size_t i) const { return forward_.output_types[i]; }
  /// The gradient of the loss with respect to output i; a null Value when no
  /// path from the loss passes through it.
  ir::Value output_gradient(size_t i) const { return output_gradients_[i]; }
  /// True when input i leads to a value being differentiated (other inputs'
  /// gradients are ignored). A builder leaves such an input's gradient unset
  /// where the op is not differentiable in it (indices, running statistics,
  /// class weights): no gradient flows there.
  bool needs_input_gradient(size_t i) const { return i < needs_.size() && needs_[i]; }

  /// Adds a backward node of `op` reading `inputs` with `attributes`, marks it
  /// is_backward, names it after the forward node and infers its output types
  /// (from its inputs and the values of constant inputs). Returns the node.
  ir::Node* add_node(ir::OpId op, const std::vector<ir::Value>& inputs, int num_outputs = 1,
                     std::vector<std::pair<std::string, ir::AttributeValue>> attributes = {});
  /// add_node for a single output, which is returned.
  ir::Value add(ir::OpId op, const std::vector<ir::Value>& inputs,
                std::vector<std::pair<std::string, ir::AttributeValue>> attributes = {});
  /// A scalar constant of `dtype` (shape []).
  ir::Value scalar(double value, DType dtype);
  /// A 1-D int64 constant (axes, shapes, starts).
  ir::Value int64s(const std::vector<int64_t>& values);
  /// A constant tensor.
  ir::Value constant(Tensor value);
  /// The known shape of `value` as a constant (for Reshape, Expand); throws
  /// unsupported naming the forward node when a dimension is unknown.
  ir::Value shape_of(ir::Value value);
  /// The known dims of `value`; throws unsupported when a dimension is unknown.
  std::vector<int64_t> known_dims(ir::Value value) const;
  /// The values of input i when it is a constant integer tensor (axes,
  /// starts, a shape); nullopt when it is absent or computed.
  std::optional<std::vector<int64_t>> constant_ints(size_t i) const;
  /// The type of any value of the graph.
  const ir::ValueType& type_of(ir::Value value) const { return graph_.type_of(value); }

  /// Sets the gradient of input i (the input's shape, or a shape that
  /// broadcasts to it, which autodiff sums back).
  void set_input_gradient(size_t i, ir::Value gradient);
  /// The gradients set, one per input (null where none).
  const std::vector<ir::Value>& input_gradients() const { return input_gradients_; }

  /// Throws unsupported naming the forward node.
  template <typename... Args>
  [[noreturn]] void unsupported(const Args&... args) const {
    graft::fail(ErrorKind::unsupported, forward_.describe(), ": gradient: ", args...);
  }

 private:
  ir::Graph& graph_;
  ir::Node& forward_;
  std::vector<ir::Value> output_gradients_;
  std::vector<bool> needs_;
  std::vector<ir::Value> input_gradients_;
  int own_counter_ = 0;
  int* counter_;
  /// "<forward name>_grad/<what>_<n>".
  std::string backward_name(std::string_view what);
};

/// Infers the output types of one node from its inputs' types and the values
/// of its constant inputs (a node added after the graph's inference ran).
void infer_node_types(ir::Node& node);

/// A scalar constant (shape []) of the dtype of the forward node's output 0.
inline ir::Value constant(GradientContext& g, double value) { return g.scalar(value, g.output_type(0).dtype); }

/// The chain rule of a one-input op: input 0's gradient is output 0's
/// gradient times `derivative` (dy * f'(x)).
inline void set_dx(GradientContext& g, ir::Value derivative) {
  g.set_input_gradient(0, g.add(ir::OpId::Mul, {g.output_gradient(0), derivative}));
}

}  // namespace graft::ops

/// Registers the gradient builder (a `void(GradientContext&)`) of an op of
/// ops.def, in the op's semantics file beside GRAFT_REGISTER_OP:
///   GRAFT_REGISTER_GRADIENT(Relu, relu_gradient);
#define GRAFT_REGISTER_GRADIENT(op, builder)                                                 \
  [[maybe_unused]] static const bool GRAFT_CONCAT(graft_gradient_registered_, __COUNTER__) = \
      ::graft::ir::detail::register_op_gradient(::graft::ir::OpId::op, &(builder))

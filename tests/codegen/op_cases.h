// The op cases shared by the fused-op tests and the CUDA tests: every
// fusible op with every kernel dtype it accepts, as one-node graphs with
// inputs, with and without broadcasting.
#pragma once

#include "codegen_test_util.h"

namespace graft::testing {

inline constexpr DType f32 = DType::float32, f64 = DType::float64, i32 = DType::int32, i64 = DType::int64,
                boolean = DType::boolean, f16 = DType::float16;

struct OpCase {
  std::string op;
  int arity;
  std::vector<DType> dtypes;
  double lo = -3, hi = 3;
  ir::Attributes attrs = {};
  std::string label = {};
};

inline std::vector<OpCase> op_cases() {
  std::vector<DType> floats = {f32, f64, f16}, numeric = {f32, f64, f16, i32, i64}, logical = {boolean};
  auto attrs = [](std::initializer_list<std::pair<const char*, ir::AttributeValue>> list) {
    ir::Attributes a;
    for (auto& [k, v] : list) a.set(k, v);
    return a;
  };
  return {
      {"Abs", 1, numeric},          {"Neg", 1, numeric},
      {"Exp", 1, floats, -20, 20},  {"Log", 1, floats, 0.001, 50},
      {"Sqrt", 1, floats, 0, 9},    {"Reciprocal", 1, floats},
      {"Tanh", 1, floats, -6, 6},   {"Sigmoid", 1, floats, -30, 30},
      {"Sin", 1, floats},           {"Cos", 1, floats},
      {"Floor", 1, floats},         {"Ceil", 1, floats},
      {"Round", 1, floats},         {"Sign", 1, numeric},
      {"Erf", 1, {f32, f64, f16, i32, i64}},
      {"Relu", 1, numeric},         {"LeakyRelu", 1, floats, -3, 3, attrs({{"alpha", 0.2f}})},
      {"Elu", 1, floats, -3, 3, attrs({{"alpha", 0.7f}})},
      {"Selu", 1, floats},          {"Celu", 1, floats, -3, 3, attrs({{"alpha", 1.5f}})},
      {"Softplus", 1, floats, -30, 30},
      {"Softsign", 1, floats},      {"HardSigmoid", 1, floats},
      {"HardSwish", 1, floats, -5, 5},
      {"Gelu", 1, floats, -5, 5},   {"Gelu", 1, floats, -5, 5, attrs({{"approximate", std::string("tanh")}}), "tanh"},
      {"Mish", 1, floats, -10, 10}, {"ThresholdedRelu", 1, floats},
      {"Swish", 1, floats, -30, 30}, {"Swish", 1, floats, -10, 10, attrs({{"alpha", 1.702f}}), "alpha"},
      {"Shrink", 1, floats, -3, 3, attrs({{"bias", 0.5f}, {"lambd", 1.0f}})},
      {"IsNaN", 1, floats},         {"IsInf", 1, floats},
      {"Identity", 1, {f32, f64, f16, i32, i64, boolean}},
      {"Not", 1, logical},
      {"Add", 2, numeric},          {"Sub", 2, numeric},
      {"Mul", 2, numeric},          {"Div", 2, numeric},
      {"Pow", 2, floats, 0.1, 3},   {"Pow", 2, {i32, i64}, -3, 4, {}, "int"},
      {"PRelu", 2, numeric},        {"Max", 2, numeric},
      {"Min", 2, numeric},          {"Max", 3, numeric, -3, 3, {}, "3"},
      {"Sum", 3, numeric},          {"Mean", 3, floats},
      {"Equal", 2, {f32, f64, f16, i32, i64, boolean}},
      {"Less", 2, numeric},         {"LessOrEqual", 2, numeric},
      {"Greater", 2, numeric},      {"GreaterOrEqual", 2, numeric},
      {"And", 2, logical},          {"Or", 2, logical},
      {"Xor", 2, logical},
  };
}

inline Shape shape_of_operand(int i, bool broadcast) {
  if (!broadcast) return {2, 3, 17};
  static const Shape shapes[] = {{2, 3, 17}, {3, 1}, {17}};
  return shapes[i];
}

/// One case ready to run.
struct BuiltCase {
  std::unique_ptr<ir::Graph> graph;
  std::vector<Tensor> inputs;
  std::string label;
};

/// Every op case x dtype x (plain, broadcast).
inline std::vector<BuiltCase> build_op_cases() {
  std::vector<BuiltCase> built;
  for (const OpCase& c : op_cases()) {
    for (DType dtype : c.dtypes) {
      for (bool broadcast : {false, true}) {
        if (broadcast && c.arity == 1) continue;
        BuiltCase b;
        b.graph = std::make_unique<ir::Graph>();
        ir::Graph& g = *b.graph;
        g.opset_imports[""] = 20;
        std::vector<ir::Value> values;
        for (int i = 0; i < c.arity; ++i) {
          Shape shape = shape_of_operand(i, broadcast);
          values.push_back(g.add_input("x" + std::to_string(i), ir::ValueType::of(dtype, shape))->output(0));
          double lo = c.lo, hi = c.hi;
          if (c.op == "Pow" && i == 1) lo = -3, hi = 3;
          b.inputs.push_back(random_of(dtype, shape, 1000 + static_cast<uint64_t>(i * 7) + built.size(), lo, hi));
        }
        ir::Node* n = g.add_node(c.op, values, 1, "op");
        n->attributes = c.attrs;
        n->opset_version = 20;
        g.add_output(n->output(0), "y");
        ops::infer_types(g);
        b.label = c.op + c.label + " " + std::string(dtype_name(dtype)) + (broadcast ? " broadcast" : "");
        built.push_back(std::move(b));
      }
    }
  }
  return built;
}

}  // namespace graft::testing

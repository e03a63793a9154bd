// The op-to-expression table. Each row names an ONNX op, the dtypes its first
// input may have, an optional attribute check, and how to write the op with
// kernel IR primitives. The expressions mirror the reference kernels in
// src/ops (same branch structure, same constants, same NaN behaviour), so a
// fused kernel computes what the unfused graph computes; only the CPU JIT's
// transcendental approximations differ, within the bounds stated in
// docs/codegen.md.
#include "graft/codegen/op_expressions.h"

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numbers>

#include "graft/ir/graph.h"
#include "graft/ir/indexed_graph.h"

namespace graft::codegen {

namespace {

/// Which kernel dtypes an op's first input may have.
enum class Accepts { floats, numeric, signed_numeric, boolean, any };

bool accepts(Accepts set, DType t) {
  switch (set) {
    case Accepts::floats: return t == DType::float32 || t == DType::float64 || t == DType::float16;
    case Accepts::numeric:
    case Accepts::signed_numeric: return t != DType::boolean && ir::is_kernel_dtype(t);
    case Accepts::boolean: return t == DType::boolean;
    case Accepts::any: return ir::is_kernel_dtype(t);
  }
  return false;
}

/// The float16 expression that `e` converts to float32, when `e` is such a
/// conversion (a float16 value, rounded), else -1.
int32_t float16_source(const ir::KernelIR& ir, int32_t e) {
  const ir::Expr& value = ir.exprs[static_cast<size_t>(e)];
  const bool from_float16 =
      value.op == ir::ExprOp::cast && ir.exprs[static_cast<size_t>(value.args[0])].dtype == DType::float16;
  return from_float16 ? value.args[0] : -1;
}

/// `e` (float32) rounded to float16 and back, as a float16 op's result is
/// (unchanged when it is rounded already).
int32_t round_to_float16(ir::KernelIR& ir, int32_t e) {
  if (float16_source(ir, e) >= 0) return e;
  return ir.add_op(ir::ExprOp::cast, DType::float32, ir.add_op(ir::ExprOp::cast, DType::float16, e));
}

/// What a builder sees: the node, its lowered arguments and their dtypes.
struct Lowering {
  ir::KernelIR& ir;
  const ir::Node& node;
  std::vector<int32_t> args;   // -1 for an absent optional input
  std::vector<DType> dtypes;   // per argument: its dtype in the graph (float16 where args holds float32)
  DType out;                   // dtype the expression computes output 0 in (float32 for float16)

  DType t(int32_t e) const { return ir.exprs[static_cast<size_t>(e)].dtype; }
  int32_t arg(size_t i) const { return args.at(i); }
  /// A constant of dtype `dtype` (default: the output dtype).
  int32_t k(double value, DType dtype = DType::undefined) {
    return ir.add_constant(dtype == DType::undefined ? out : dtype, value);
  }
  int32_t k_int(int64_t value, DType dtype) {
    ir::Expr e;
    e.op = ir::ExprOp::constant;
    e.dtype = dtype;
    e.int_value = value;
    return ir.add(e);
  }
  int32_t un(ir::ExprOp op, int32_t a) { return ir.add_op(op, t(a), a); }
  int32_t bin(ir::ExprOp op, int32_t a, int32_t b) { return ir.add_op(op, t(a), a, b); }
  int32_t cmp(ir::ExprOp op, int32_t a, int32_t b) { return ir.add_op(op, DType::boolean, a, b); }
  int32_t select(int32_t c, int32_t a, int32_t b) { return ir.add_op(ir::ExprOp::select, t(a), c, a, b); }
  int32_t cast(int32_t a, DType to) { return t(a) == to ? a : ir.add_op(ir::ExprOp::cast, to, a); }
  /// `e` rounded to the node's dtype where it is float16 and the reference
  /// kernel stores an intermediate result (variadic ops, step by step).
  int32_t rounded(int32_t e) { return node.output_types[0].dtype == DType::float16 ? round_to_float16(ir, e) : e; }
  /// std::max(a, b) = a < b ? b : a (what the reference kernels call).
  int32_t std_max(int32_t a, int32_t b) { return select(cmp(ir::ExprOp::less, a, b), b, a); }
  /// std::min(a, b) = b < a ? b : a.
  int32_t std_min(int32_t a, int32_t b) { return select(cmp(ir::ExprOp::less, b, a), b, a); }
  /// `value`, or x where x is NaN (for formulas whose std::max/min would
  /// turn a NaN into a bound), as the reference kernels do.
  int32_t keep_nan(int32_t x, int32_t value) { return select(cmp(ir::ExprOp::equal, x, x), value, x); }
  float attr_float(const std::string& name, float fallback) const { return node.attributes.get_float(name, fallback); }
  /// log(1 + exp(x)) without overflow, as the reference Softplus.
  int32_t softplus(int32_t x) {
    int32_t zero = k(0, t(x));
    int32_t positive = bin(ir::ExprOp::add, x, un(ir::ExprOp::log1p, un(ir::ExprOp::exp, un(ir::ExprOp::neg, x))));
    int32_t negative = un(ir::ExprOp::log1p, un(ir::ExprOp::exp, x));
    return select(cmp(ir::ExprOp::greater, x, zero), positive, negative);
  }
};

using Builder = std::function<int32_t(Lowering&)>;
/// Returns "" when the node's attributes are supported, else why not.
using AttributeCheck = std::function<std::string(const ir::Node&)>;

struct OpRow {
  Accepts first_input;
  Builder build;
  AttributeCheck check;
};

int effective_opset(const ir::Node& node) { return node.opset_version > 0 ? node.opset_version : 1000; }

std::string no_legacy_broadcast(const ir::Node& node) {
  if (node.attributes.all().empty()) return {};
  if (node.attributes.has("broadcast") || node.attributes.has("axis"))
    return "legacy broadcast attributes (opset < 7) are not fused";
  return {};
}

/// The variadic ops, as the reference kernel: pairwise, the result of each
/// step stored in the node's dtype (the last one is rounded by the caller).
int32_t fold(Lowering& l, ir::ExprOp op) {
  int32_t acc = l.arg(0);
  for (size_t i = 1; i < l.args.size(); ++i) acc = l.bin(op, i > 1 ? l.rounded(acc) : acc, l.arg(i));
  return acc;
}

/// Pow with the reference kernel's choice of compute type, which follows
/// the graph's dtypes (float16 operands are float32 values here).
int32_t lower_pow(Lowering& l) {
  int32_t base = l.arg(0), exponent = l.arg(1);
  DType b = l.t(base), e = l.t(exponent);
  if (l.dtypes.at(0) == l.dtypes.at(1)) return l.bin(ir::ExprOp::pow, base, exponent);
  if (dtype_is_float(b) || dtype_is_float(e)) {
    int32_t r = l.bin(ir::ExprOp::pow, l.cast(base, DType::float64), l.cast(exponent, DType::float64));
    return l.cast(r, b);
  }
  int32_t r = l.bin(ir::ExprOp::pow, l.cast(base, DType::int64), l.cast(exponent, DType::int64));
  return l.cast(r, b);
}

int32_t lower_clip(Lowering& l) {
  int32_t x = l.arg(0);
  DType t = l.t(x);
  int32_t low, high;
  if (effective_opset(l.node) < 11) {
    low = l.k(l.attr_float("min", std::numeric_limits<float>::lowest()));
    high = l.k(l.attr_float("max", std::numeric_limits<float>::max()));
  } else {
    auto bound = [&](size_t i, bool is_low) {
      if (i < l.args.size() && l.args[i] >= 0) return l.args[i];
      switch (t) {
        case DType::float32:
          return l.k(is_low ? std::numeric_limits<float>::lowest() : std::numeric_limits<float>::max());
        case DType::float64:
          return l.k(is_low ? std::numeric_limits<double>::lowest() : std::numeric_limits<double>::max());
        case DType::int32:
          return l.k_int(is_low ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int32_t>::max(), t);
        default:
          return l.k_int(is_low ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max(), t);
      }
    };
    low = bound(1, true);
    high = bound(2, false);
  }
  return l.std_min(l.std_max(x, low), high);
}

/// The dtype of input `i` of `node` (undefined when absent).
DType input_dtype(const ir::Node& node, size_t i) {
  if (i >= node.inputs.size() || !node.inputs[i]) return DType::undefined;
  return node.inputs[i].node->output_types[static_cast<size_t>(node.inputs[i].index)].dtype;
}

std::string check_cast(const ir::Node& node) {
  if (!node.attributes.has("to")) return "attribute 'to' is missing";
  int64_t to = node.attributes.get_int("to");
  if (to < 0 || to > 16 || !ir::is_kernel_dtype(static_cast<DType>(to))) return "Cast to this dtype is not fused";
  // Kernels reach float16 from float32 only; float64 through float32 would
  // round twice, where the reference kernels round once.
  if (static_cast<DType>(to) == DType::float16 && input_dtype(node, 0) == DType::float64)
    return "Cast from float64 to float16 is not fused";
  return {};
}

/// Pow of operands of two dtypes computes in float64 and rounds once to the
/// result's dtype: float16 is reached from float32 only.
std::string check_pow(const ir::Node& node) {
  std::string legacy = no_legacy_broadcast(node);
  if (!legacy.empty()) return legacy;
  DType base = input_dtype(node, 0), exponent = input_dtype(node, 1);
  if (base != exponent && base == DType::float16) return "Pow of float16 by another dtype is not fused";
  return {};
}

std::string check_gelu(const ir::Node& node) {
  std::string approximate = node.attributes.get_string("approximate", "none");
  return approximate == "none" || approximate == "tanh" ? "" : "attribute 'approximate' is not none or tanh";
}

const std::map<std::string_view, OpRow>& table() {
  static const std::map<std::string_view, OpRow> rows = [] {
    std::map<std::string_view, OpRow> r;
    auto unary = [&](std::string_view name, Accepts set, ir::ExprOp op) {
      r[name] = {set, [op](Lowering& l) { return l.un(op, l.arg(0)); }, nullptr};
    };
    auto binary = [&](std::string_view name, Accepts set, ir::ExprOp op) {
      r[name] = {set, [op](Lowering& l) { return l.bin(op, l.arg(0), l.arg(1)); }, no_legacy_broadcast};
    };
    auto compare = [&](std::string_view name, Accepts set, ir::ExprOp op) {
      r[name] = {set, [op](Lowering& l) { return l.cmp(op, l.arg(0), l.arg(1)); }, no_legacy_broadcast};
    };
    unary("Abs", Accepts::numeric, ir::ExprOp::abs);
    unary("Neg", Accepts::signed_numeric, ir::ExprOp::neg);
    unary("Exp", Accepts::floats, ir::ExprOp::exp);
    unary("Log", Accepts::floats, ir::ExprOp::log);
    unary("Sqrt", Accepts::floats, ir::ExprOp::sqrt);
    unary("Tanh", Accepts::floats, ir::ExprOp::tanh);
    unary("Sigmoid", Accepts::floats, ir::ExprOp::sigmoid);
    unary("Sin", Accepts::floats, ir::ExprOp::sin);
    unary("Cos", Accepts::floats, ir::ExprOp::cos);
    unary("Floor", Accepts::floats, ir::ExprOp::floor);
    unary("Ceil", Accepts::floats, ir::ExprOp::ceil);
    unary("Round", Accepts::floats, ir::ExprOp::round);
    unary("Sign", Accepts::numeric, ir::ExprOp::sign);
    unary("Not", Accepts::boolean, ir::ExprOp::logical_not);
    r["Identity"] = {Accepts::any, [](Lowering& l) { return l.arg(0); }, nullptr};
    r["Erf"] = {Accepts::numeric,
                [](Lowering& l) {
                  int32_t x = l.arg(0);
                  if (dtype_is_float(l.t(x))) return l.un(ir::ExprOp::erf, x);
                  return l.cast(l.un(ir::ExprOp::erf, l.cast(x, DType::float64)), l.t(x));
                },
                nullptr};
    r["Reciprocal"] = {Accepts::floats, [](Lowering& l) { return l.bin(ir::ExprOp::div, l.k(1), l.arg(0)); }, nullptr};
    r["Relu"] = {Accepts::signed_numeric,
                 [](Lowering& l) {
                   int32_t x = l.arg(0), zero = l.k(0);
                   return l.select(l.cmp(ir::ExprOp::less, x, zero), zero, x);
                 },
                 nullptr};
    r["LeakyRelu"] = {Accepts::floats,
                      [](Lowering& l) {
                        int32_t x = l.arg(0);
                        int32_t scaled = l.bin(ir::ExprOp::mul, l.k(l.attr_float("alpha", 0.01f)), x);
                        return l.select(l.cmp(ir::ExprOp::less, x, l.k(0)), scaled, x);
                      },
                      nullptr};
    r["Elu"] = {Accepts::floats,
                [](Lowering& l) {
                  int32_t x = l.arg(0);
                  int32_t negative = l.bin(ir::ExprOp::mul, l.k(l.attr_float("alpha", 1.0f)), l.un(ir::ExprOp::expm1, x));
                  return l.select(l.cmp(ir::ExprOp::less, x, l.k(0)), negative, x);
                },
                nullptr};
    r["Celu"] = {Accepts::floats,
                 [](Lowering& l) {
                   int32_t x = l.arg(0), zero = l.k(0);
                   int32_t a = l.k(l.attr_float("alpha", 1.0f));
                   int32_t negative = l.bin(ir::ExprOp::mul, a, l.un(ir::ExprOp::expm1, l.bin(ir::ExprOp::div, x, a)));
                   return l.keep_nan(x, l.bin(ir::ExprOp::add, l.std_max(zero, x), l.std_min(zero, negative)));
                 },
                 [](const ir::Node& n) -> std::string {
                   return n.attributes.get_float("alpha", 1.0f) == 0.0f ? "alpha is 0" : "";
                 }};
    r["Selu"] = {Accepts::floats,
                 [](Lowering& l) {
                   int32_t x = l.arg(0);
                   int32_t alpha = l.k(l.attr_float("alpha", 1.67326319217681884765625f));
                   int32_t gamma = l.k(l.attr_float("gamma", 1.05070102214813232421875f));
                   int32_t negative = l.bin(ir::ExprOp::mul, gamma,
                                            l.bin(ir::ExprOp::sub, l.bin(ir::ExprOp::mul, alpha, l.un(ir::ExprOp::exp, x)), alpha));
                   return l.select(l.cmp(ir::ExprOp::greater, x, l.k(0)), l.bin(ir::ExprOp::mul, gamma, x), negative);
                 },
                 nullptr};
    r["Softplus"] = {Accepts::floats, [](Lowering& l) { return l.softplus(l.arg(0)); }, nullptr};
    r["Softsign"] = {Accepts::floats,
                     [](Lowering& l) {
                       int32_t x = l.arg(0);
                       return l.bin(ir::ExprOp::div, x, l.bin(ir::ExprOp::add, l.k(1), l.un(ir::ExprOp::abs, x)));
                     },
                     nullptr};
    r["Mish"] = {Accepts::floats,
                 [](Lowering& l) { return l.bin(ir::ExprOp::mul, l.arg(0), l.un(ir::ExprOp::tanh, l.softplus(l.arg(0)))); },
                 nullptr};
    r["HardSigmoid"] = {Accepts::floats,
                        [](Lowering& l) {
                          int32_t x = l.arg(0);
                          int32_t v = l.bin(ir::ExprOp::add, l.bin(ir::ExprOp::mul, l.k(l.attr_float("alpha", 0.2f)), x),
                                            l.k(l.attr_float("beta", 0.5f)));
                          return l.keep_nan(x, l.std_max(l.k(0), l.std_min(l.k(1), v)));
                        },
                        nullptr};
    r["HardSwish"] = {Accepts::floats,
                      [](Lowering& l) {
                        int32_t x = l.arg(0);
                        int32_t v = l.bin(ir::ExprOp::add, l.bin(ir::ExprOp::div, x, l.k(6)), l.k(0.5));
                        return l.bin(ir::ExprOp::mul, x, l.std_max(l.k(0), l.std_min(l.k(1), v)));
                      },
                      nullptr};
    r["ThresholdedRelu"] = {Accepts::floats,
                            [](Lowering& l) {
                              int32_t x = l.arg(0);
                              return l.select(l.cmp(ir::ExprOp::greater, x, l.k(l.attr_float("alpha", 1.0f))), x, l.k(0));
                            },
                            nullptr};
    r["Shrink"] = {Accepts::floats,
                   [](Lowering& l) {
                     int32_t x = l.arg(0);
                     float lambd = l.attr_float("lambd", 0.5f), bias = l.attr_float("bias", 0.0f);
                     int32_t above = l.select(l.cmp(ir::ExprOp::greater, x, l.k(lambd)), l.bin(ir::ExprOp::sub, x, l.k(bias)), l.k(0));
                     return l.select(l.cmp(ir::ExprOp::less, x, l.k(-lambd)), l.bin(ir::ExprOp::add, x, l.k(bias)), above);
                   },
                   nullptr};
    r["Gelu"] = {Accepts::floats,
                 [](Lowering& l) {
                   int32_t x = l.arg(0);
                   int32_t inner;
                   if (l.node.attributes.get_string("approximate", "none") == "tanh") {
                     int32_t cube = l.bin(ir::ExprOp::mul, l.bin(ir::ExprOp::mul, l.bin(ir::ExprOp::mul, l.k(0.044715), x), x), x);
                     int32_t scale = l.k(std::numbers::sqrt2 * std::numbers::inv_sqrtpi);
                     inner = l.un(ir::ExprOp::tanh, l.bin(ir::ExprOp::mul, scale, l.bin(ir::ExprOp::add, x, cube)));
                   } else {
                     inner = l.un(ir::ExprOp::erf, l.bin(ir::ExprOp::mul, x, l.k(std::numbers::sqrt2 / 2)));
                   }
                   return l.bin(ir::ExprOp::mul, l.bin(ir::ExprOp::mul, l.k(0.5), x), l.bin(ir::ExprOp::add, l.k(1), inner));
                 },
                 check_gelu};
    r["IsNaN"] = {Accepts::floats,
                  [](Lowering& l) {
                    return l.ir.add_op(ir::ExprOp::logical_not, DType::boolean, l.cmp(ir::ExprOp::equal, l.arg(0), l.arg(0)));
                  },
                  nullptr};
    r["IsInf"] = {Accepts::floats,
                  [](Lowering& l) {
                    int32_t x = l.arg(0);
                    DType t = l.t(x);
                    int32_t result = -1;
                    auto detect = [&](double infinity) {
                      int32_t is = l.cmp(ir::ExprOp::equal, x, l.k(infinity, t));
                      result = result < 0 ? is : l.bin(ir::ExprOp::logical_or, result, is);
                    };
                    if (l.node.attributes.get_int("detect_positive", 1) != 0) detect(std::numeric_limits<double>::infinity());
                    if (l.node.attributes.get_int("detect_negative", 1) != 0) detect(-std::numeric_limits<double>::infinity());
                    // Detecting neither: x < x, false for every x (NaN included)
                    // in x's shape, where a constant false would be a scalar.
                    return result < 0 ? l.cmp(ir::ExprOp::less, x, x) : result;
                  },
                  nullptr};
    binary("Add", Accepts::numeric, ir::ExprOp::add);
    binary("Sub", Accepts::numeric, ir::ExprOp::sub);
    binary("Mul", Accepts::numeric, ir::ExprOp::mul);
    binary("Div", Accepts::numeric, ir::ExprOp::div);
    r["Pow"] = {Accepts::numeric, lower_pow, check_pow};
    r["PRelu"] = {Accepts::numeric,
                  [](Lowering& l) {
                    int32_t x = l.arg(0), slope = l.arg(1);
                    return l.select(l.cmp(ir::ExprOp::less, x, l.k(0)), l.bin(ir::ExprOp::mul, slope, x), x);
                  },
                  [](const ir::Node& n) -> std::string {
                    return effective_opset(n) < 7 ? "per-channel PRelu of opset < 7 is not fused" : "";
                  }};
    r["Max"] = {Accepts::numeric, [](Lowering& l) { return fold(l, ir::ExprOp::max); }, nullptr};
    r["Min"] = {Accepts::numeric, [](Lowering& l) { return fold(l, ir::ExprOp::min); }, nullptr};
    r["Sum"] = {Accepts::numeric, [](Lowering& l) { return fold(l, ir::ExprOp::add); }, nullptr};
    r["Mean"] = {Accepts::floats,
                 [](Lowering& l) {
                   return l.bin(ir::ExprOp::div, l.rounded(fold(l, ir::ExprOp::add)), l.k(static_cast<double>(l.args.size())));
                 },
                 nullptr};
    compare("Equal", Accepts::any, ir::ExprOp::equal);
    compare("Less", Accepts::numeric, ir::ExprOp::less);
    compare("LessOrEqual", Accepts::numeric, ir::ExprOp::less_equal);
    compare("Greater", Accepts::numeric, ir::ExprOp::greater);
    compare("GreaterOrEqual", Accepts::numeric, ir::ExprOp::greater_equal);
    binary("And", Accepts::boolean, ir::ExprOp::logical_and);
    binary("Or", Accepts::boolean, ir::ExprOp::logical_or);
    binary("Xor", Accepts::boolean, ir::ExprOp::logical_xor);
    r["Where"] = {Accepts::boolean, [](Lowering& l) { return l.select(l.arg(0), l.arg(1), l.arg(2)); }, nullptr};
    r["Cast"] = {Accepts::any, [](Lowering& l) { return l.cast(l.arg(0), l.out); }, check_cast};
    r["CastLike"] = {Accepts::any, [](Lowering& l) { return l.cast(l.arg(0), l.out); },
                     [](const ir::Node& n) -> std::string {
                       return n.output_types[0].dtype == DType::float16 && input_dtype(n, 0) == DType::float64
                                  ? "CastLike from float64 to float16 is not fused"
                                  : "";
                     }};
    r["Clip"] = {Accepts::numeric, lower_clip, nullptr};
    return r;
  }();
  return rows;
}

const OpRow* find_row(const ir::Node& node) {
  // By the schema's position in the op table: the fusion pass asks for every
  // node of the graph, and a lookup by name costs more than the rest of the test.
  static const std::vector<const OpRow*> rows = [] {
    std::vector<const OpRow*> r;
    for (const ir::OpSchema& op : ir::all_ops()) {
      auto it = op.domain.empty() ? table().find(op.name) : table().end();
      r.push_back(it == table().end() ? nullptr : &it->second);
    }
    return r;
  }();
  return rows[ir::op_index(node.op())];
}

bool rank_fits(const ir::ValueType& type) {
  return !type.has_rank || type.dims.size() <= static_cast<size_t>(ir::kMaxKernelRank);
}

}  // namespace

std::vector<std::string_view> fusible_op_types() {
  std::vector<std::string_view> names;
  for (const auto& [name, row] : table()) names.push_back(name);
  return names;
}

namespace {

/// The test behind is_fusible and why_not_fusible. `reason`, when not null,
/// receives why not; without it no message is built (the fusion pass asks for
/// every node of the graph).
bool check_fusible(const ir::Node& node, std::string* reason) {
  auto refuse = [reason](auto&& message) {
    if (reason) *reason = message();
    return false;
  };
  const ir::OpSchema& schema = node.schema();
  if (node.op() == ir::OpId::Constant) {
    const Tensor& value = node.constant_value;
    if (!ir::is_kernel_dtype(value.dtype())) return refuse([] { return "constant of a dtype kernels do not compute in"; });
    if (value.rank() > ir::kMaxKernelRank) return refuse([] { return "constant of rank above 8"; });
    return true;
  }
  const OpRow* row = find_row(node);
  if (!row) return refuse([&] { return "op " + node.op_type() + " has no pointwise expression"; });
  if (node.num_outputs() != 1) return refuse([] { return "more than one output"; });
  if (node.inputs.empty() || !node.inputs[0]) return refuse([] { return "input 0 is absent"; });
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const ir::Value& input = node.inputs[i];
    if (!input) {
      if (node.op() == ir::OpId::Clip) continue;
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
  const ir::Value& input0 = node.inputs[0];
  DType first = input0.node->output_types[static_cast<size_t>(input0.index)].dtype;
  if (!accepts(row->first_input, first))
    return refuse(
        [&] { return "dtype " + std::string(dtype_name(first)) + " is not supported by this op's expression"; });
  const ir::ValueType& out = node.output_types[0];
  if (!out.is_tensor()) return refuse([] { return "the output is a sequence or an optional"; });
  if (!ir::is_kernel_dtype(out.dtype))
    return refuse([&] { return "output dtype " + std::string(dtype_name(out.dtype)) + " is not a kernel dtype"; });
  if (!rank_fits(out)) return refuse([] { return "output rank above 8"; });
  if (row->check) {
    std::string why = row->check(node);
    if (!why.empty()) return refuse([&] { return std::move(why); });
  }
  return true;
}

}  // namespace

std::string why_not_fusible(const ir::Node& node) {
  std::string reason;
  check_fusible(node, &reason);
  return reason;
}

bool is_fusible(const ir::Node& node) { return check_fusible(node, nullptr); }

namespace {

/// The dtype a kernel computes values of `storage` dtype in: float32 for
/// float16 (which kernels only load, store and round to), else itself.
DType compute_dtype(DType storage) { return storage == DType::float16 ? DType::float32 : storage; }

}  // namespace

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
    const ir::OpSchema& schema = node.schema();
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
        e.dtype = compute_dtype(value.dtype());
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
    Lowering l{kernel, node, {}, {}, compute_dtype(node.output_types[0].dtype)};
    for (ir::Entry e : indexed.inputs(id)) {
      if (!e.present()) {
        l.args.push_back(-1);
        l.dtypes.push_back(DType::undefined);
        continue;
      }
      if (e.index != 0) fail(ErrorKind::unsupported, node.describe(), ": reads a second output of a body node");
      l.args.push_back(expr_of[e.node_id]);
      l.dtypes.push_back(storage_of[e.node_id]);
    }
    int32_t e = find_row(node)->build(l);
    if (kernel.exprs[static_cast<size_t>(e)].dtype != l.out)
      fail(ErrorKind::internal, node.describe(), ": expression has dtype ",
           dtype_name(kernel.exprs[static_cast<size_t>(e)].dtype), ", the node ", dtype_name(l.out));
    expr_of[id] = storage_of[id] == DType::float16 ? round_to_float16(kernel, e) : e;
  }
  for (ir::Entry out : indexed.outputs()) {
    if (!out.present() || out.index != 0) fail(ErrorKind::invalid_model, "fused body output is not a node's first output");
    int32_t e = expr_of[out.node_id];
    if (storage_of[out.node_id] == DType::float16) {
      // The float16 value that the rounding above (or the load) produced.
      const int32_t rounded = float16_source(kernel, e);
      e = rounded >= 0 ? rounded : kernel.add_op(ir::ExprOp::cast, DType::float16, e);
    }
    kernel.outputs.push_back(e);
  }
  kernel = canonicalize(kernel);
  return result;
}

}  // namespace graft::codegen

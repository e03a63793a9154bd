// The C-family rendering of kernel IR shared by the CUDA, OpenCL and C
// emitters (see c_source.h).
#include "c_source.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "graft/core/error.h"

namespace graft::codegen {

const CDialect kCudaDialect{.name = "CUDA",
                            .int64 = "long long",
                            .uint64 = "unsigned long long",
                            .u64_literal = "ULL",
                            .u64_zero = "0ULL",
                            .bits_to_double = "__longlong_as_double",
                            .bits_literal = "LL",
                            .suffixed_math = true,
                            .template_helpers = true,
                            .guard_selects = true};
const CDialect kOpenClDialect{.name = "OpenCL",
                              .int64 = "long",
                              .uint64 = "ulong",
                              .u64_literal = "UL",
                              .u64_zero = "(ulong)0",
                              .bits_to_double = "as_double",
                              .bits_literal = "L",
                              .vload_half = true,
                              .saturating_tanh = true};
const CDialect kC99Dialect{.name = "C",
                           .int64 = "int64_t",
                           .uint64 = "uint64_t",
                           .u64_literal = "ULL",
                           .u64_zero = "(uint64_t)0",
                           .bits_to_double = "",
                           .bits_literal = "LL",
                           .suffixed_math = true,
                           .decimal_float_literals = true,
                           .approximate_float32_math = true,
                           .helper_qualifier = "static inline ",
                           .float16 = false};

std::string c_type(DType t, const CDialect& dialect) {
  switch (t) {
    case DType::float16:
      if (!dialect.float16) fail(ErrorKind::internal, dialect.name, " emitter: no float16");
      return "float";
    case DType::float32:
      return "float";
    case DType::float64:
      return "double";
    case DType::int32:
      return "int";
    case DType::int64:
      return std::string(dialect.int64);
    case DType::boolean:
      return "bool";
    default:
      fail(ErrorKind::internal, dialect.name, " emitter: dtype ", dtype_name(t));
  }
}

std::string storage_c_type(DType t, const CDialect& dialect) {
  if (t == DType::float16) return dialect.vload_half ? "half" : "unsigned short";
  return t == DType::boolean ? "unsigned char" : c_type(t, dialect);
}

std::string load_element(DType t, const std::string& pointer, const std::string& index, const CDialect& dialect) {
  if (t == DType::float16)
    return dialect.vload_half ? "vload_half(" + index + ", " + pointer + ")" : "graft_h2f(" + pointer + "[" + index + "])";
  return "(" + c_type(t, dialect) + ")" + pointer + "[" + index + "]";
}

std::string store_element(DType t, const std::string& pointer, const std::string& index, const std::string& value,
                          const CDialect& dialect) {
  if (t == DType::float16)
    return dialect.vload_half ? "vstore_half(" + value + ", " + index + ", " + pointer + ")"
                              : pointer + "[" + index + "] = graft_f2h(" + value + ")";
  return pointer + "[" + index + "] = (" + storage_c_type(t, dialect) + ")" + value;
}

std::string constant_literal(const ir::Expr& e, const CDialect& dialect) {
  char text[40];
  if (dtype_is_float(e.dtype) && dialect.decimal_float_literals) {
    const double v = e.float_value;
    std::string literal;
    if (std::isnan(v)) {
      literal = "NAN";
    } else if (std::isinf(v)) {
      literal = v > 0 ? "INFINITY" : "(-INFINITY)";
    } else {
      std::snprintf(text, sizeof text, "%.17g", v);
      literal = text;
      if (literal.find_first_of(".e") == std::string::npos) literal += ".0";
    }
    return "((" + c_type(e.dtype, dialect) + ")" + literal + ")";
  }
  if (dtype_is_float(e.dtype)) {
    uint64_t bits;
    std::memcpy(&bits, &e.float_value, sizeof bits);
    std::snprintf(text, sizeof text, "0x%016" PRIx64, bits);
    return "((" + c_type(e.dtype, dialect) + ")" + std::string(dialect.bits_to_double) + "(" + text +
           std::string(dialect.bits_literal) + "))";
  }
  if (e.dtype == DType::boolean) return e.int_value ? "true" : "false";
  std::snprintf(text, sizeof text, "0x%016" PRIx64, static_cast<uint64_t>(e.int_value));
  return "((" + c_type(e.dtype, dialect) + ")(" + std::string(dialect.int64) + ")" + text +
         std::string(dialect.u64_literal) + ")";
}

std::string render_expression(const ir::KernelIR& ir, const ir::Expr& e, const CDialect& dialect,
                              std::string_view prefix) {
  auto a = [&](int k) { return std::string(prefix) + std::to_string(e.args[k]); };
  auto arg_dtype = [&](int k) { return ir.exprs[static_cast<size_t>(e.args[k])].dtype; };
  DType t = e.dtype;
  std::string T = c_type(t, dialect);
  bool is_float = dtype_is_float(t);
  // "expf" for float32 in CUDA and C, "exp" otherwise; graft_expf where the
  // dialect approximates.
  auto math = [&](const char* name, DType type) {
    const std::string_view n = name;
    if (dialect.approximate_float32_math && type == DType::float32 && (n == "exp" || n == "tanh" || n == "erf"))
      return "graft_" + std::string(n) + "f";
    return std::string(name) + (dialect.suffixed_math && type == DType::float32 ? "f" : "");
  };
  const std::string u64 = "(" + std::string(dialect.uint64) + ")", zero = std::string(dialect.u64_zero);
  auto wrap = [&](const char* op) { return "(" + T + ")(" + u64 + a(0) + " " + op + " " + u64 + a(1) + ")"; };
  // graft_idiv<int> in CUDA, graft_idiv_i32 in OpenCL.
  auto helper = [&](const char* name) {
    if (dialect.template_helpers) return std::string(name) + "<" + T + ">";
    return std::string(name) + (t == DType::int32 ? "_i32" : "_i64");
  };
  switch (e.op) {
    case ir::ExprOp::input:
    case ir::ExprOp::constant:
      return {};
    case ir::ExprOp::neg:
      return is_float ? "-" + a(0) : "(" + T + ")(" + zero + " - " + u64 + a(0) + ")";
    case ir::ExprOp::abs:
      return is_float ? math("fabs", t) + "(" + a(0) + ")"
                      : "(" + a(0) + " < 0 ? (" + T + ")(" + zero + " - " + u64 + a(0) + ") : " + a(0) + ")";
    case ir::ExprOp::exp:
      return math("exp", t) + "(" + a(0) + ")";
    case ir::ExprOp::expm1:
      return math("expm1", t) + "(" + a(0) + ")";
    case ir::ExprOp::log:
      return math("log", t) + "(" + a(0) + ")";
    case ir::ExprOp::log1p:
      return math("log1p", t) + "(" + a(0) + ")";
    case ir::ExprOp::sqrt:
      return math("sqrt", t) + "(" + a(0) + ")";
    case ir::ExprOp::tanh:
      if (dialect.saturating_tanh && is_float) {
        // The smallest |x| whose tanh rounds to 1: atanh(1 - 2^-25), atanh(1 - 2^-54).
        const std::string bound = t == DType::float64 ? "19.061547465398498" : "9.0109133f";
        return "(" + math("fabs", t) + "(" + a(0) + ") > " + bound + " ? " + math("copysign", t) + "((" + T + ")1, " +
               a(0) + ") : " + math("tanh", t) + "(" + a(0) + "))";
      }
      return math("tanh", t) + "(" + a(0) + ")";
    case ir::ExprOp::erf:
      return math("erf", t) + "(" + a(0) + ")";
    case ir::ExprOp::sin:
      return math("sin", t) + "(" + a(0) + ")";
    case ir::ExprOp::cos:
      return math("cos", t) + "(" + a(0) + ")";
    case ir::ExprOp::floor:
      return math("floor", t) + "(" + a(0) + ")";
    case ir::ExprOp::ceil:
      return math("ceil", t) + "(" + a(0) + ")";
    case ir::ExprOp::round:
      return math("rint", t) + "(" + a(0) + ")";
    case ir::ExprOp::sigmoid: {
      std::string x = a(0), ex = math("exp", t);
      return "(" + x + " >= (" + T + ")0 ? (" + T + ")1 / ((" + T + ")1 + " + ex + "(-" + x + ")) : " + ex + "(" + x +
             ") / ((" + T + ")1 + " + ex + "(" + x + ")))";
    }
    case ir::ExprOp::sign:
      if (is_float)
        return "(" + a(0) + " != " + a(0) + " ? " + a(0) + " : (" + a(0) + " > 0 ? (" + T + ")1 : (" + a(0) +
               " < 0 ? (" + T + ")-1 : (" + T + ")0)))";
      return "(" + T + ")((" + a(0) + " > 0) - (" + a(0) + " < 0))";
    case ir::ExprOp::logical_not:
      return "!" + a(0);
    case ir::ExprOp::cast: {
      DType from = arg_dtype(0);
      if (t == DType::float16) return "graft_round_half(" + a(0) + ")";  // from float32
      if (t == DType::boolean) return "(" + a(0) + " != 0)";
      if (dtype_is_float(from) && !is_float) return "(" + T + ")graft_f2i((double)" + a(0) + ")";
      return "(" + T + ")" + a(0);
    }
    case ir::ExprOp::add:
      return is_float ? a(0) + " + " + a(1) : wrap("+");
    case ir::ExprOp::sub:
      return is_float ? a(0) + " - " + a(1) : wrap("-");
    case ir::ExprOp::mul:
      return is_float ? a(0) + " * " + a(1) : wrap("*");
    case ir::ExprOp::div:
      return is_float ? a(0) + " / " + a(1) : helper("graft_idiv") + "(" + a(0) + ", " + a(1) + ")";
    case ir::ExprOp::pow:
      return is_float ? math("pow", t) + "(" + a(0) + ", " + a(1) + ")"
                      : helper("graft_ipow") + "(" + a(0) + ", " + a(1) + ")";
    case ir::ExprOp::max:
    case ir::ExprOp::min: {
      const char* cmp = e.op == ir::ExprOp::max ? " > " : " < ";
      if (is_float)
        return "((" + a(0) + " != " + a(0) + " || " + a(0) + cmp + a(1) + ") ? " + a(0) + " : " + a(1) + ")";
      return "(" + a(0) + cmp + a(1) + " ? " + a(0) + " : " + a(1) + ")";
    }
    case ir::ExprOp::equal:
      return "(" + a(0) + " == " + a(1) + ")";
    case ir::ExprOp::less:
      return "(" + a(0) + " < " + a(1) + ")";
    case ir::ExprOp::less_equal:
      return "(" + a(0) + " <= " + a(1) + ")";
    case ir::ExprOp::greater:
      return "(" + a(0) + " > " + a(1) + ")";
    case ir::ExprOp::greater_equal:
      return "(" + a(0) + " >= " + a(1) + ")";
    case ir::ExprOp::logical_and:
      return "(" + a(0) + " && " + a(1) + ")";
    case ir::ExprOp::logical_or:
      return "(" + a(0) + " || " + a(1) + ")";
    case ir::ExprOp::logical_xor:
      return "(" + a(0) + " != " + a(1) + ")";
    case ir::ExprOp::select: {
      std::string plain = "(" + a(0) + " ? " + a(1) + " : " + a(2) + ")";
      // CUDA: a select on an ordered comparison of floats is a min or max, and
      // ptxas folds a clamp to [0, 1] built of two (HardSigmoid, Clip) into a
      // saturating FFMA/FADD, which turns NaN into 0 where the comparison
      // (false on NaN) picks the second branch: HardSigmoid(NaN) gave 0 on an
      // H100 where the reference gives 1. The guard says what the select
      // gives on NaN; its NaN test is inline PTX, which NVVM cannot fold
      // away (it did fold a plain `x != x`, the guard being redundant by the
      // select's own semantics).
      const ir::Expr& cond = ir.exprs[static_cast<size_t>(e.args[0])];
      bool ordered = cond.op == ir::ExprOp::less || cond.op == ir::ExprOp::less_equal || cond.op == ir::ExprOp::greater ||
                     cond.op == ir::ExprOp::greater_equal || cond.op == ir::ExprOp::equal;
      if (!dialect.guard_selects || !is_float || !ordered ||
          !dtype_is_float(ir.exprs[static_cast<size_t>(cond.args[0])].dtype))
        return plain;
      std::string tests;
      for (int k = 0; k < 2; ++k) {
        const ir::Expr& operand = ir.exprs[static_cast<size_t>(cond.args[k])];
        if (operand.op == ir::ExprOp::constant && !std::isnan(operand.float_value)) continue;
        tests += (tests.empty() ? "graft_isnan(" : " || graft_isnan(") + std::string(prefix) +
                 std::to_string(cond.args[k]) + ")";
      }
      if (tests.empty()) return plain;
      return "((" + tests + ") ? " + a(2) + " : " + plain + ")";
    }
  }
  fail(ErrorKind::internal, dialect.name, " emitter: op ", to_string(e.op));
}

void emit_values(std::ostream& out, const ir::KernelIR& ir, const CDialect& dialect, const std::string& indent,
                 const std::function<std::string(const ir::Expr&)>& load, std::string_view prefix) {
  for (size_t i = 0; i < ir.exprs.size(); ++i) {
    const ir::Expr& e = ir.exprs[i];
    out << indent << "const " << c_type(e.dtype, dialect) << " " << prefix << i << " = ";
    if (e.op == ir::ExprOp::input) {
      out << load(e);
    } else if (e.op == ir::ExprOp::constant) {
      out << constant_literal(e, dialect);
    } else {
      out << render_expression(ir, e, dialect, prefix);
    }
    out << ";\n";
  }
}

std::string integer_helpers(const CDialect& dialect) {
  GRAFT_CHECK(!dialect.template_helpers, "the dialect's integer helpers are templates");
  // $Q: qualifier, $L/$U: the 64-bit types, $S: suffix of signed 64-bit literals, $Z: unsigned zero.
  std::string text = R"($Qint graft_idiv_i32(int a, int b) {
  if (b == 0) return 0;
  if (b == -1) return (int)($Z - ($U)a);
  return a / b;
}
$Q$L graft_idiv_i64($L a, $L b) {
  if (b == 0) return 0;
  if (b == -1) return ($L)($Z - ($U)a);
  return a / b;
}
$Q$U graft_upow($U f, $L e) {
  $U r = 1, u = ($U)e;
  while (u) { if (u & 1$P) r *= f; f *= f; u >>= 1; }
  return r;
}
$Qint graft_ipow_i32(int base, int e) {
  if (e < 0) return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
  return (int)graft_upow(($U)base, e);
}
$Q$L graft_ipow_i64($L base, $L e) {
  if (e < 0) return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
  return ($L)graft_upow(($U)base, e);
}
$Q$L graft_f2i(double v) {
  if (isnan(v)) return 0;
  v = trunc(v);
  if (v >= 9223372036854775808.0) return 0x7fffffffffffffff$S;
  if (v < -9223372036854775808.0) return -0x7fffffffffffffff$S - 1;
  return ($L)v;
}
)";
  const std::pair<std::string_view, std::string_view> substitutions[] = {
      {"$Q", dialect.helper_qualifier}, {"$L", dialect.int64},        {"$U", dialect.uint64},
      {"$S", dialect.bits_literal},     {"$P", dialect.u64_literal},  {"$Z", dialect.u64_zero}};
  for (const auto& [from, to] : substitutions)
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
  return text;
}

}  // namespace graft::codegen

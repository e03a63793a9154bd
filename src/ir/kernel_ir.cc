// Kernel IR: validation, canonical form, stable hash and the binary form.
//
// Canonical form. Nodes get a structural hash bottom-up (op, dtype, constant,
// input index and the hashes of the arguments); commutative operands are
// sorted by that hash; nodes with equal content are merged (value numbering);
// then the nodes reachable from the outputs are renumbered in depth-first
// post-order, visiting outputs in order and arguments left to right. The
// result depends only on the computed DAG, not on the order in which the body
// graph listed its nodes.
#include "graft/ir/kernel_ir.h"

#include <algorithm>
#include <cstring>
#include <istream>
#include <map>
#include <ostream>
#include <sstream>
#include <tuple>

#include "graft/core/error.h"

namespace graft::ir {

std::string_view to_string(ExprOp op) {
  switch (op) {
    case ExprOp::input: return "input";
    case ExprOp::constant: return "constant";
    case ExprOp::neg: return "neg";
    case ExprOp::abs: return "abs";
    case ExprOp::exp: return "exp";
    case ExprOp::expm1: return "expm1";
    case ExprOp::log: return "log";
    case ExprOp::log1p: return "log1p";
    case ExprOp::sqrt: return "sqrt";
    case ExprOp::tanh: return "tanh";
    case ExprOp::sigmoid: return "sigmoid";
    case ExprOp::erf: return "erf";
    case ExprOp::sin: return "sin";
    case ExprOp::cos: return "cos";
    case ExprOp::floor: return "floor";
    case ExprOp::ceil: return "ceil";
    case ExprOp::round: return "round";
    case ExprOp::sign: return "sign";
    case ExprOp::logical_not: return "not";
    case ExprOp::cast: return "cast";
    case ExprOp::add: return "add";
    case ExprOp::sub: return "sub";
    case ExprOp::mul: return "mul";
    case ExprOp::div: return "div";
    case ExprOp::pow: return "pow";
    case ExprOp::max: return "max";
    case ExprOp::min: return "min";
    case ExprOp::equal: return "equal";
    case ExprOp::less: return "less";
    case ExprOp::less_equal: return "less_equal";
    case ExprOp::greater: return "greater";
    case ExprOp::greater_equal: return "greater_equal";
    case ExprOp::logical_and: return "and";
    case ExprOp::logical_or: return "or";
    case ExprOp::logical_xor: return "xor";
    case ExprOp::select: return "select";
  }
  return "?";
}

int arity(ExprOp op) {
  if (op == ExprOp::input || op == ExprOp::constant) return 0;
  if (op == ExprOp::select) return 3;
  if (op >= ExprOp::add) return 2;
  return 1;
}

bool is_commutative(ExprOp op) {
  switch (op) {
    case ExprOp::add:
    case ExprOp::mul:
    case ExprOp::max:
    case ExprOp::min:
    case ExprOp::equal:
    case ExprOp::logical_and:
    case ExprOp::logical_or:
    case ExprOp::logical_xor:
      return true;
    default:
      return false;
  }
}

namespace {

bool is_comparison(ExprOp op) { return op >= ExprOp::equal && op <= ExprOp::greater_equal; }
bool is_logical(ExprOp op) {
  return op == ExprOp::logical_and || op == ExprOp::logical_or || op == ExprOp::logical_xor ||
         op == ExprOp::logical_not;
}
bool is_float_only(ExprOp op) {
  switch (op) {
    case ExprOp::exp:
    case ExprOp::expm1:
    case ExprOp::log:
    case ExprOp::log1p:
    case ExprOp::sqrt:
    case ExprOp::tanh:
    case ExprOp::sigmoid:
    case ExprOp::erf:
    case ExprOp::sin:
    case ExprOp::cos:
    case ExprOp::floor:
    case ExprOp::ceil:
    case ExprOp::round:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool is_kernel_dtype(DType t) {
  return t == DType::float32 || t == DType::float64 || t == DType::int32 || t == DType::int64 ||
         t == DType::boolean || t == DType::float16;
}

int32_t KernelIR::add(Expr e) {
  exprs.push_back(e);
  return static_cast<int32_t>(exprs.size() - 1);
}

int32_t KernelIR::add_input(int32_t index, DType dtype) {
  Expr e;
  e.op = ExprOp::input;
  e.dtype = dtype;
  e.index = index;
  return add(e);
}

int32_t KernelIR::add_constant(DType dtype, double value) {
  Expr e;
  e.op = ExprOp::constant;
  e.dtype = dtype;
  if (dtype_is_float(dtype))
    e.float_value = value;
  else if (dtype == DType::boolean)
    e.int_value = value != 0;
  else
    e.int_value = static_cast<int64_t>(value);
  return add(e);
}

int32_t KernelIR::add_op(ExprOp op, DType dtype, int32_t a, int32_t b, int32_t c) {
  Expr e;
  e.op = op;
  e.dtype = dtype;
  e.args[0] = a;
  e.args[1] = b;
  e.args[2] = c;
  return add(e);
}

void KernelIR::validate() const {
  auto bad = [](size_t i, const auto&... what) {
    fail(ErrorKind::invalid_model, "kernel IR node %", i, ": ", what...);
  };
  if (outputs.empty()) fail(ErrorKind::invalid_model, "kernel IR has no outputs");
  for (DType t : input_dtypes)
    if (!is_kernel_dtype(t)) fail(ErrorKind::invalid_model, "kernel IR input dtype ", dtype_name(t), " is not supported");
  for (size_t i = 0; i < exprs.size(); ++i) {
    const Expr& e = exprs[i];
    if (static_cast<int>(e.op) >= kNumExprOps) bad(i, "unknown op ", static_cast<int>(e.op));
    if (!is_kernel_dtype(e.dtype)) bad(i, "dtype ", dtype_name(e.dtype), " is not supported");
    int n = arity(e.op);
    for (int k = 0; k < 3; ++k) {
      if (k < n) {
        if (e.args[k] < 0 || static_cast<size_t>(e.args[k]) >= i) bad(i, "argument ", k, " is out of order");
      } else if (e.args[k] != -1) {
        bad(i, "has an extra argument");
      }
    }
    auto arg_dtype = [&](int k) { return exprs[static_cast<size_t>(e.args[k])].dtype; };
    if (e.op == ExprOp::input) {
      if (e.index < 0 || static_cast<size_t>(e.index) >= input_dtypes.size()) bad(i, "input index ", e.index, " is out of range");
      if (input_dtypes[static_cast<size_t>(e.index)] != e.dtype) bad(i, "input dtype differs from the kernel's");
    } else if (e.op == ExprOp::cast) {
      // float16 is a storage dtype: it converts to and from float32 only.
      if ((e.dtype == DType::float16 && arg_dtype(0) != DType::float32) ||
          (arg_dtype(0) == DType::float16 && e.dtype != DType::float32))
        bad(i, "float16 converts to and from float32 only");
    } else if (e.dtype == DType::float16 || (n > 0 && arg_dtype(0) == DType::float16) ||
               (n > 1 && arg_dtype(1) == DType::float16) || (n > 2 && arg_dtype(2) == DType::float16)) {
      bad(i, to_string(e.op), " on float16 (a storage dtype: kernels compute float16 values in float32)");
    } else if (e.op == ExprOp::select) {
      if (arg_dtype(0) != DType::boolean) bad(i, "select condition must be bool");
      if (arg_dtype(1) != e.dtype || arg_dtype(2) != e.dtype) bad(i, "select operands must have the result dtype");
    } else if (is_comparison(e.op)) {
      if (e.dtype != DType::boolean || arg_dtype(0) != arg_dtype(1)) bad(i, "comparison dtypes are inconsistent");
    } else if (n > 0) {
      for (int k = 0; k < n; ++k)
        if (arg_dtype(k) != e.dtype) bad(i, "operand dtypes differ from the result dtype");
      if (is_logical(e.op) != (e.dtype == DType::boolean)) bad(i, to_string(e.op), " on dtype ", dtype_name(e.dtype));
      if (is_float_only(e.op) && !dtype_is_float(e.dtype)) bad(i, to_string(e.op), " needs a float dtype");
    }
  }
  for (int32_t o : outputs)
    if (o < 0 || static_cast<size_t>(o) >= exprs.size()) fail(ErrorKind::invalid_model, "kernel IR output refers to node %", o);
}

std::vector<DType> KernelIR::output_dtypes() const {
  std::vector<DType> result;
  for (int32_t o : outputs) result.push_back(exprs[static_cast<size_t>(o)].dtype);
  return result;
}

uint64_t fnv1a(std::string_view bytes, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

namespace {

/// Content of a node with arguments replaced by their value numbers.
using NodeKey = std::tuple<int, int, int32_t, int32_t, int32_t, int32_t, uint64_t, int64_t>;

uint64_t mix(uint64_t h, uint64_t v) {
  std::string_view bytes(reinterpret_cast<const char*>(&v), sizeof v);
  return fnv1a(bytes, h);
}

}  // namespace

KernelIR canonicalize(const KernelIR& ir) {
  ir.validate();
  // Value numbering with structural hashes.
  std::vector<uint64_t> structure(ir.exprs.size());
  std::vector<int32_t> number(ir.exprs.size());
  std::vector<Expr> unique;
  std::map<NodeKey, int32_t> seen;
  for (size_t i = 0; i < ir.exprs.size(); ++i) {
    Expr e = ir.exprs[i];
    int n = arity(e.op);
    for (int k = 0; k < n; ++k) e.args[k] = number[static_cast<size_t>(e.args[k])];
    if (is_commutative(e.op)) {
      auto h = [&](int32_t a) { return std::make_pair(structure[static_cast<size_t>(a)], a); };
      // The structural hashes are those of the numbered nodes (stored per number below).
      if (h(e.args[1]) < h(e.args[0])) std::swap(e.args[0], e.args[1]);
    }
    uint64_t bits = 0;
    std::memcpy(&bits, &e.float_value, sizeof bits);
    NodeKey key{static_cast<int>(e.op), static_cast<int>(e.dtype), e.args[0], e.args[1], e.args[2], e.index, bits, e.int_value};
    auto it = seen.find(key);
    if (it != seen.end()) {
      number[i] = it->second;
      continue;
    }
    uint64_t hash = mix(mix(mix(0xcbf29ce484222325ull, static_cast<uint64_t>(e.op)), static_cast<uint64_t>(e.dtype)),
                        static_cast<uint64_t>(e.index));
    hash = mix(mix(hash, bits), static_cast<uint64_t>(e.int_value));
    for (int k = 0; k < n; ++k) hash = mix(hash, structure[static_cast<size_t>(e.args[k])]);
    int32_t id = static_cast<int32_t>(unique.size());
    unique.push_back(e);
    structure[static_cast<size_t>(id)] = hash;
    seen.emplace(key, id);
    number[i] = id;
  }
  // Depth-first post-order from the outputs (iterative: bodies may be long chains).
  KernelIR result;
  result.input_dtypes = ir.input_dtypes;
  std::vector<int32_t> order(unique.size(), -1);
  for (int32_t out : ir.outputs) {
    int32_t root = number[static_cast<size_t>(out)];
    std::vector<std::pair<int32_t, int>> stack{{root, 0}};
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (order[static_cast<size_t>(node)] >= 0) {
        stack.pop_back();
        continue;
      }
      const Expr& e = unique[static_cast<size_t>(node)];
      if (next < arity(e.op)) {
        int32_t arg = e.args[next++];
        if (order[static_cast<size_t>(arg)] < 0) stack.push_back({arg, 0});
        continue;
      }
      Expr copy = e;
      for (int k = 0; k < arity(e.op); ++k) copy.args[k] = order[static_cast<size_t>(e.args[k])];
      order[static_cast<size_t>(node)] = result.add(copy);
      stack.pop_back();
    }
    result.outputs.push_back(order[static_cast<size_t>(root)]);
  }
  return result;
}

namespace {

constexpr char kMagic[4] = {'G', 'K', 'I', 'R'};
constexpr uint32_t kFormatVersion = 1;

template <typename T>
void put(std::ostream& out, T v) {
  out.write(reinterpret_cast<const char*>(&v), sizeof v);
}

template <typename T>
T get(std::istream& in) {
  T v{};
  if (!in.read(reinterpret_cast<char*>(&v), sizeof v))
    fail(ErrorKind::invalid_model, "kernel IR is truncated");
  return v;
}

}  // namespace

void write_kernel_ir(std::ostream& out, const KernelIR& ir) {
  out.write(kMagic, 4);
  put<uint32_t>(out, kFormatVersion);
  put<uint32_t>(out, static_cast<uint32_t>(ir.input_dtypes.size()));
  for (DType t : ir.input_dtypes) put<int32_t>(out, static_cast<int32_t>(t));
  put<uint32_t>(out, static_cast<uint32_t>(ir.exprs.size()));
  for (const Expr& e : ir.exprs) {
    put<uint8_t>(out, static_cast<uint8_t>(e.op));
    put<int32_t>(out, static_cast<int32_t>(e.dtype));
    for (int32_t a : e.args) put<int32_t>(out, a);
    put<int32_t>(out, e.index);
    put<double>(out, e.float_value);
    put<int64_t>(out, e.int_value);
  }
  put<uint32_t>(out, static_cast<uint32_t>(ir.outputs.size()));
  for (int32_t o : ir.outputs) put<int32_t>(out, o);
}

KernelIR read_kernel_ir(std::istream& in) {
  char magic[4];
  if (!in.read(magic, 4) || std::memcmp(magic, kMagic, 4) != 0)
    fail(ErrorKind::invalid_model, "kernel IR: bad magic (expected GKIR)");
  uint32_t version = get<uint32_t>(in);
  if (version != kFormatVersion)
    fail(ErrorKind::invalid_model, "kernel IR: format version ", version, " is not supported (expected ", kFormatVersion, ")");
  constexpr uint32_t kLimit = 1u << 20;
  KernelIR ir;
  uint32_t n_inputs = get<uint32_t>(in);
  if (n_inputs > kLimit) fail(ErrorKind::invalid_model, "kernel IR: ", n_inputs, " inputs is too many");
  for (uint32_t i = 0; i < n_inputs; ++i) {
    int32_t t = get<int32_t>(in);
    if (t < 0 || t > static_cast<int32_t>(DType::bfloat16)) fail(ErrorKind::invalid_model, "kernel IR: bad dtype ", t);
    ir.input_dtypes.push_back(static_cast<DType>(t));
  }
  uint32_t n_exprs = get<uint32_t>(in);
  if (n_exprs > kLimit) fail(ErrorKind::invalid_model, "kernel IR: ", n_exprs, " nodes is too many");
  for (uint32_t i = 0; i < n_exprs; ++i) {
    Expr e;
    uint8_t op = get<uint8_t>(in);
    if (op >= kNumExprOps) fail(ErrorKind::invalid_model, "kernel IR: unknown op ", int(op));
    e.op = static_cast<ExprOp>(op);
    int32_t t = get<int32_t>(in);
    if (t < 0 || t > static_cast<int32_t>(DType::bfloat16)) fail(ErrorKind::invalid_model, "kernel IR: bad dtype ", t);
    e.dtype = static_cast<DType>(t);
    for (int32_t& a : e.args) a = get<int32_t>(in);
    e.index = get<int32_t>(in);
    e.float_value = get<double>(in);
    e.int_value = get<int64_t>(in);
    ir.exprs.push_back(e);
  }
  uint32_t n_outputs = get<uint32_t>(in);
  if (n_outputs > kLimit) fail(ErrorKind::invalid_model, "kernel IR: ", n_outputs, " outputs is too many");
  for (uint32_t i = 0; i < n_outputs; ++i) ir.outputs.push_back(get<int32_t>(in));
  ir.validate();
  return ir;
}

std::string serialize(const KernelIR& ir) {
  std::ostringstream os;
  write_kernel_ir(os, ir);
  return os.str();
}

uint64_t stable_hash(const KernelIR& ir) { return fnv1a(serialize(ir)); }

std::string to_string(const KernelIR& ir) {
  std::ostringstream os;
  for (size_t i = 0; i < ir.exprs.size(); ++i) {
    const Expr& e = ir.exprs[i];
    os << "%" << i << " = " << to_string(e.op) << " " << dtype_name(e.dtype);
    if (e.op == ExprOp::input) os << " #" << e.index;
    if (e.op == ExprOp::constant) {
      if (dtype_is_float(e.dtype))
        os << " " << e.float_value;
      else
        os << " " << e.int_value;
    }
    for (int k = 0; k < arity(e.op); ++k) os << (k ? ", %" : " %") << e.args[k];
    os << "\n";
  }
  os << "outputs:";
  for (int32_t o : ir.outputs) os << " %" << o;
  os << "\n";
  return os.str();
}

}  // namespace graft::ir

// The kernel IR interpreter. A run of n elements is cut into tiles; for each
// tile every DAG node is evaluated in order into its own scratch tile (8 bytes
// per element, whatever the dtype), then the output nodes' tiles are stored.
// The tile length is chosen so that all nodes' tiles together stay within
// about 32 KiB (a typical L1 data cache). Each loop is instantiated per op and
// dtype, so the op switch runs once per tile and node, not per element.
#include "graft/codegen/interpreter.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "graft/core/error.h"
#include "scalar_semantics.h"

namespace graft::codegen {

namespace {

template <typename Fn>
void visit_kernel_dtype(DType t, Fn&& fn) {
  switch (t) {
    case DType::float32: fn.template operator()<float>(); return;
    case DType::float64: fn.template operator()<double>(); return;
    case DType::int32: fn.template operator()<int32_t>(); return;
    case DType::int64: fn.template operator()<int64_t>(); return;
    case DType::boolean: fn.template operator()<bool>(); return;
    default: fail(ErrorKind::internal, "interpreter: dtype ", dtype_name(t), " is not a kernel dtype");
  }
}

/// visit_kernel_dtype, and float16 (stored as float16_t): for the nodes that
/// load, store or convert values, the only ones float16 may appear in.
template <typename Fn>
void visit_storage_dtype(DType t, Fn&& fn) {
  if (t == DType::float16) {
    fn.template operator()<float16_t>();
    return;
  }
  visit_kernel_dtype(t, std::forward<Fn>(fn));
}

/// A float16 conversion (float16 converts to and from float32 only).
template <typename To, typename From>
To convert_storage(From v) {
  if constexpr (std::is_same_v<To, float16_t> || std::is_same_v<From, float16_t>) {
    if constexpr (std::is_same_v<To, float16_t> && std::is_same_v<From, float>) {
      return float16_t(v);
    } else if constexpr (std::is_same_v<To, float> && std::is_same_v<From, float16_t>) {
      return static_cast<float>(v);
    } else {
      fail(ErrorKind::internal, "interpreter: float16 converts to and from float32 only");
    }
  } else {
    return scalar::convert<To, From>(v);
  }
}

template <typename T, ir::ExprOp Op>
void unary_loop(const T* a, T* out, int64_t n) {
  for (int64_t j = 0; j < n; ++j) out[j] = scalar::unary<T>(Op, a[j]);
}

template <typename T, ir::ExprOp Op>
void binary_loop(const T* a, const T* b, T* out, int64_t n) {
  for (int64_t j = 0; j < n; ++j) out[j] = scalar::binary<T>(Op, a[j], b[j]);
}

template <typename T, ir::ExprOp Op>
void compare_loop(const T* a, const T* b, bool* out, int64_t n) {
  for (int64_t j = 0; j < n; ++j) out[j] = scalar::compare<T>(Op, a[j], b[j]);
}

template <typename T>
void unary(ir::ExprOp op, const T* a, T* out, int64_t n) {
  switch (op) {
#define GRAFT_UNARY_CASE(name) \
  case ir::ExprOp::name: return unary_loop<T, ir::ExprOp::name>(a, out, n);
    GRAFT_UNARY_CASE(neg)
    GRAFT_UNARY_CASE(abs)
    GRAFT_UNARY_CASE(exp)
    GRAFT_UNARY_CASE(expm1)
    GRAFT_UNARY_CASE(log)
    GRAFT_UNARY_CASE(log1p)
    GRAFT_UNARY_CASE(sqrt)
    GRAFT_UNARY_CASE(tanh)
    GRAFT_UNARY_CASE(sigmoid)
    GRAFT_UNARY_CASE(erf)
    GRAFT_UNARY_CASE(sin)
    GRAFT_UNARY_CASE(cos)
    GRAFT_UNARY_CASE(floor)
    GRAFT_UNARY_CASE(ceil)
    GRAFT_UNARY_CASE(round)
    GRAFT_UNARY_CASE(sign)
    GRAFT_UNARY_CASE(logical_not)
#undef GRAFT_UNARY_CASE
    default: fail(ErrorKind::internal, "interpreter: ", to_string(op), " is not unary");
  }
}

template <typename T>
void binary(ir::ExprOp op, const T* a, const T* b, T* out, int64_t n) {
  switch (op) {
#define GRAFT_BINARY_CASE(name) \
  case ir::ExprOp::name: return binary_loop<T, ir::ExprOp::name>(a, b, out, n);
    GRAFT_BINARY_CASE(add)
    GRAFT_BINARY_CASE(sub)
    GRAFT_BINARY_CASE(mul)
    GRAFT_BINARY_CASE(div)
    GRAFT_BINARY_CASE(pow)
    GRAFT_BINARY_CASE(max)
    GRAFT_BINARY_CASE(min)
    GRAFT_BINARY_CASE(logical_and)
    GRAFT_BINARY_CASE(logical_or)
    GRAFT_BINARY_CASE(logical_xor)
#undef GRAFT_BINARY_CASE
    default: fail(ErrorKind::internal, "interpreter: ", to_string(op), " is not binary");
  }
}

template <typename T>
void compare(ir::ExprOp op, const T* a, const T* b, bool* out, int64_t n) {
  switch (op) {
    case ir::ExprOp::equal: return compare_loop<T, ir::ExprOp::equal>(a, b, out, n);
    case ir::ExprOp::less: return compare_loop<T, ir::ExprOp::less>(a, b, out, n);
    case ir::ExprOp::less_equal: return compare_loop<T, ir::ExprOp::less_equal>(a, b, out, n);
    case ir::ExprOp::greater: return compare_loop<T, ir::ExprOp::greater>(a, b, out, n);
    case ir::ExprOp::greater_equal: return compare_loop<T, ir::ExprOp::greater_equal>(a, b, out, n);
    default: fail(ErrorKind::internal, "interpreter: ", to_string(op), " is not a comparison");
  }
}

bool is_comparison(ir::ExprOp op) { return op >= ir::ExprOp::equal && op <= ir::ExprOp::greater_equal; }

constexpr int64_t kL1Bytes = 32 * 1024;
constexpr int64_t kSlotBytes = 8;

}  // namespace

Interpreter::Interpreter(ir::KernelIR ir) : ir_(std::move(ir)) {
  ir_.validate();
  int64_t nodes = std::max<int64_t>(1, static_cast<int64_t>(ir_.exprs.size()));
  tile_ = std::clamp<int64_t>(kL1Bytes / (kSlotBytes * nodes), 16, 1024) / 16 * 16;
}

void Interpreter::run_contiguous(int64_t n, void* const* ptrs) const {
  std::vector<int64_t> ones(ir_.input_dtypes.size() + ir_.outputs.size(), 1);
  run_strided(n, ptrs, ones.data());
}

void Interpreter::run_strided(int64_t n, void* const* ptrs, const int64_t* strides) const {
  thread_local std::vector<uint64_t> scratch;
  size_t slots = ir_.exprs.size() * static_cast<size_t>(tile_);
  if (scratch.size() < slots) scratch.resize(slots);
  auto tile_of = [&](size_t node) { return reinterpret_cast<char*>(scratch.data() + node * static_cast<size_t>(tile_)); };
  size_t n_inputs = ir_.input_dtypes.size();
  for (int64_t start = 0; start < n; start += tile_) {
    int64_t len = std::min(tile_, n - start);
    for (size_t i = 0; i < ir_.exprs.size(); ++i) {
      const ir::Expr& e = ir_.exprs[i];
      char* out = tile_of(i);
      auto arg = [&](int k) { return tile_of(static_cast<size_t>(e.args[k])); };
      switch (e.op) {
        case ir::ExprOp::input:
          visit_storage_dtype(e.dtype, [&]<typename T>() {
            const T* src = static_cast<const T*>(ptrs[e.index]);
            int64_t s = strides[e.index];
            T* dst = reinterpret_cast<T*>(out);
            for (int64_t j = 0; j < len; ++j) dst[j] = src[(start + j) * s];
          });
          break;
        case ir::ExprOp::constant:
          visit_kernel_dtype(e.dtype, [&]<typename T>() {
            T value = dtype_is_float(e.dtype) ? static_cast<T>(e.float_value) : static_cast<T>(e.int_value);
            std::fill_n(reinterpret_cast<T*>(out), len, value);
          });
          break;
        case ir::ExprOp::cast:
          visit_storage_dtype(ir_.exprs[static_cast<size_t>(e.args[0])].dtype, [&]<typename From>() {
            visit_storage_dtype(e.dtype, [&]<typename To>() {
              const From* a = reinterpret_cast<const From*>(arg(0));
              To* o = reinterpret_cast<To*>(out);
              for (int64_t j = 0; j < len; ++j) o[j] = convert_storage<To, From>(a[j]);
            });
          });
          break;
        case ir::ExprOp::select:
          visit_kernel_dtype(e.dtype, [&]<typename T>() {
            const bool* c = reinterpret_cast<const bool*>(arg(0));
            const T* a = reinterpret_cast<const T*>(arg(1));
            const T* b = reinterpret_cast<const T*>(arg(2));
            T* o = reinterpret_cast<T*>(out);
            for (int64_t j = 0; j < len; ++j) o[j] = c[j] ? a[j] : b[j];
          });
          break;
        default:
          if (is_comparison(e.op)) {
            visit_kernel_dtype(ir_.exprs[static_cast<size_t>(e.args[0])].dtype, [&]<typename T>() {
              compare<T>(e.op, reinterpret_cast<const T*>(arg(0)), reinterpret_cast<const T*>(arg(1)),
                         reinterpret_cast<bool*>(out), len);
            });
          } else if (arity(e.op) == 1) {
            visit_kernel_dtype(e.dtype, [&]<typename T>() {
              unary<T>(e.op, reinterpret_cast<const T*>(arg(0)), reinterpret_cast<T*>(out), len);
            });
          } else {
            visit_kernel_dtype(e.dtype, [&]<typename T>() {
              binary<T>(e.op, reinterpret_cast<const T*>(arg(0)), reinterpret_cast<const T*>(arg(1)),
                        reinterpret_cast<T*>(out), len);
            });
          }
      }
    }
    for (size_t o = 0; o < ir_.outputs.size(); ++o) {
      size_t node = static_cast<size_t>(ir_.outputs[o]);
      size_t k = n_inputs + o;
      visit_storage_dtype(ir_.exprs[node].dtype, [&]<typename T>() {
        const T* src = reinterpret_cast<const T*>(tile_of(node));
        T* dst = static_cast<T*>(ptrs[k]);
        int64_t s = strides[k];
        for (int64_t j = 0; j < len; ++j) dst[(start + j) * s] = src[j];
      });
    }
  }
}

}  // namespace graft::codegen

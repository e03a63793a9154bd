// The C-family rendering of kernel IR that the CUDA, OpenCL and C emitters
// share: types, constants, one C expression per IR node and the integer
// helpers the expressions call, with the few differences of the three
// languages in a CDialect. Internal to src/codegen (ccodegen reaches the C
// dialect through graft/codegen/c_kernel_source.h).
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <string_view>

#include "graft/ir/kernel_ir.h"

namespace graft::codegen {

/// What differs between CUDA C++, OpenCL C and C99 in the generated source.
struct CDialect {
  std::string_view name;            ///< "CUDA", "OpenCL", "C": names the emitter in errors
  std::string_view int64;           ///< the 64-bit integer type: "long long", "long", "int64_t"
  std::string_view uint64;          ///< its unsigned type: "unsigned long long", "ulong", "uint64_t"
  std::string_view u64_literal;     ///< suffix of unsigned 64-bit literals: "ULL", "UL"
  std::string_view u64_zero;        ///< an unsigned 64-bit zero: "0ULL", "(ulong)0"
  std::string_view bits_to_double;  ///< reinterprets 64 bits as a double: "__longlong_as_double", "as_double"
  std::string_view bits_literal;    ///< suffix of the literal it takes (and of signed 64-bit literals): "LL", "L"
  bool suffixed_math = false;       ///< float32 math is expf, tanhf, ... (else overloaded exp, tanh)
  bool template_helpers = false;    ///< integer helpers are graft_idiv<T> (else graft_idiv_i32, _i64)
  /// Selects on float comparisons get an explicit NaN guard through
  /// graft_isnan (ptxas folds clamps into saturating arithmetic, which maps
  /// NaN to 0; see render_expression).
  bool guard_selects = false;
  /// float16 tensors: true, `half` pointers read and written with vload_half
  /// and vstore_half (OpenCL C without cl_khr_fp16); false, `unsigned short`
  /// bits converted by the prelude's graft_h2f and graft_f2h (CUDA).
  bool vload_half = false;
  /// Float constants as decimal literals of 17 significant digits (exact for
  /// every double), INFINITY and NAN, not through bits_to_double (which C
  /// lacks).
  bool decimal_float_literals = false;
  /// float32 exp, tanh and erf call the prelude's branch-free approximations
  /// graft_expf, graft_tanhf and graft_erff, which GCC vectorizes where
  /// libm's calls keep a loop scalar. Their error bounds are in c_kernel_source.h.
  bool approximate_float32_math = false;
  /// Float tanh is exactly +-1 where the correctly rounded result is (|x|
  /// above 9.0109 for float32, 19.0615 for float64) instead of the device's
  /// tanh: PoCL's tanhf returns 0.99999994 even at infinity, which Gelu's
  /// tanh form multiplies by x (-3e22 for -0 at x = -1e30).
  bool saturating_tanh = false;
  /// Qualifier of the helper functions of integer_helpers(): "" or "static inline ".
  std::string_view helper_qualifier = {};
  /// False where the dialect cannot hold float16 values (C: no half type).
  bool float16 = true;
};

extern const CDialect kCudaDialect;
extern const CDialect kOpenClDialect;
extern const CDialect kC99Dialect;

/// The C type of a value of dtype `t` (float for float16: a float16 value
/// is a float that float16 holds exactly, made by graft_round_half).
std::string c_type(DType t, const CDialect& dialect);
/// The C type a tensor of dtype `t` is stored as (bool as unsigned char,
/// float16 as half or unsigned short).
std::string storage_c_type(DType t, const CDialect& dialect);
/// The value of element `index` of `pointer` (a pointer to storage_c_type(t)).
std::string load_element(DType t, const std::string& pointer, const std::string& index, const CDialect& dialect);
/// The statement (without `;`) storing `value` as element `index` of `pointer`.
std::string store_element(DType t, const std::string& pointer, const std::string& index, const std::string& value,
                          const CDialect& dialect);
/// The literal of a constant node, exact to the bit (NaN payloads aside with
/// decimal_float_literals).
std::string constant_literal(const ir::Expr& e, const CDialect& dialect);
/// The C expression of node `e` of `ir` (not an input or constant), its
/// operands named <prefix><index>. Semantics are the reference kernels':
/// integer arithmetic wraps, x / 0 = 0, exact integer powers, float-to-integer
/// casts through graft_f2i; the prelude of each emitter defines the helpers.
std::string render_expression(const ir::KernelIR& ir, const ir::Expr& e, const CDialect& dialect,
                              std::string_view prefix = "v");
/// Writes one line per node of `ir`, `<indent>const T <prefix><i> = ...;`:
/// inputs as `load` renders them (from the node), constants and the other
/// nodes as above. Every emitter's per-element code is this, then its stores.
void emit_values(std::ostream& out, const ir::KernelIR& ir, const CDialect& dialect, const std::string& indent,
                 const std::function<std::string(const ir::Expr&)>& load, std::string_view prefix = "v");
/// The integer helpers render_expression calls in a dialect without
/// template_helpers (graft_idiv_i32/_i64, graft_ipow_i32/_i64, graft_f2i),
/// written in that dialect's types.
std::string integer_helpers(const CDialect& dialect);

}  // namespace graft::codegen

/// \file
/// Kernel IR rendered as C99: the C dialect of the renderer that the CUDA and
/// OpenCL emitters use (one C expression per IR node, the reference kernels'
/// integer rules), for code generators that write their own loops around the
/// per-element code, such as the ccodegen backend. float16 is not part of the
/// dialect (C has no half type).
///
/// float32 exp, tanh and erf call branch-free approximations that GCC
/// vectorizes without -ffast-math: exp is Cephes' range reduction with a
/// degree-6 polynomial (about 1 ulp), erf Abramowitz and Stegun 7.1.26
/// (absolute error below 1.5e-7), tanh 1 - 2 / (exp(2|x|) + 1) with a cubic
/// near 0. Every other function is <math.h>'s.
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "graft/ir/kernel_ir.h"

namespace graft::codegen {

/// The C that the rendered code needs before it: the includes (<math.h>,
/// <stdbool.h>, <stdint.h>) and the static inline helpers it calls
/// (graft_select, graft_expf, graft_erff, graft_tanhf, the integer helpers).
std::string c_kernel_prelude();

/// The C type of a value of dtype `t` (float, double, int, int64_t, bool).
std::string c_kernel_type(DType t);

/// Writes one line per node of `ir`, `<indent>const T <prefix><i> = ...;`:
/// inputs as `load` renders them, constants as exact literals, every other
/// node as its C expression. The value of node i is named <prefix><i>; pick a
/// prefix per IR when several share one scope. Throws internal for float16.
void emit_c_kernel_values(std::ostream& out, const ir::KernelIR& ir, const std::string& indent,
                          const std::string& prefix, const std::function<std::string(const ir::Expr&)>& load);

}  // namespace graft::codegen

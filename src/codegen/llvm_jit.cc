// The CPU emitter: kernel IR -> LLVM IR -> object code for the host CPU ->
// ORC LLJIT.
//
// Each kernel becomes one function over a dense run of n elements, n a
// multiple of the vector width W (the host's widest SIMD register in float32
// elements, 4 to 16):
//   void <prefix>_kernel(i64 n, i8** ptrs, i32 stream)
// (operands: kernel inputs, then outputs). It is written directly in vector
// IR, <W x T> for every value: one loop that loads W elements of each input,
// evaluates the DAG once, and stores W elements of each output, with ordinary
// or, when `stream` is set, non-temporal stores (then an sfence). Writing the
// vectors out makes the loop vectorizer and most of a pass pipeline
// unnecessary, and having one function with one copy of the DAG (no scalar
// remainder loop, no scalar strided variant) keeps instruction selection and
// register allocation, which dominate JIT latency, to one pass over it.
// JitRunner (C++, jit_runner.cc) handles the rest: the last partial vector of a run goes
// through zero-padded scratch buffers, and strided runs (broadcasting) go in
// blocks whose strided operands are copied to or from dense scratch buffers.
// run_kernel splits the iteration space over threads.
//
// Transcendental functions are written out as branch-free polynomial code so
// that they vectorize (bounds measured by tests/codegen/approximation_test.cc,
// stated in docs/codegen.md):
//   exp    Cody-Waite reduction by ln 2, Taylor polynomial (degree 7 for
//          float32, 13 for float64), scaling by 2^n in two steps (denormals).
//   expm1  Taylor polynomial for |x| < ln2/2, exp(x) - 1 elsewhere.
//   log    x = m 2^e with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s),
//          s = (m-1)/(m+1), odd series in s; e ln2 split into two parts.
//   log1p  log(u) * x / (u - 1) with u = 1 + x (Goldberg's correction).
//   tanh   sign(x) e / (e + 2), e = expm1(2|x|).
//   sigmoid  1 / (1 + exp(-x)) or e / (1 + e), as the reference kernel.
//   pow    exp(y log|x|) evaluated in float64 (float32 kernels) with the C
//          rules for negative bases, zeros, ones and infinities.
//   erf    float32: x P(x^2) / Q(x^2) (degrees 6 and 5) evaluated in float64
//          for |x| <= 4, +-1 beyond. float64 erf, and sin/cos of both types,
//          call libm lane by lane.
#include "llvm_jit.h"

#include "jit_runner.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <numbers>

#include "graft/core/error.h"

#if GRAFT_WITH_LLVM
#include <llvm/ADT/SmallString.h>
#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/SubtargetFeature.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#endif

namespace graft::codegen {

#if GRAFT_WITH_LLVM

namespace {

std::string to_message(llvm::Error error) { return llvm::toString(std::move(error)); }

/// Host target and the one LLJIT instance of the process.
struct Host {
  std::string init_error;
  std::string lanes_error;  // a nonsense GRAFT_JIT_LANES: an error, never a silent fallback
  std::unique_ptr<llvm::orc::JITTargetMachineBuilder> builder;
  std::unique_ptr<llvm::TargetMachine> machine;       // full instruction selection and scheduling
  std::unique_ptr<llvm::TargetMachine> fast_machine;  // CodeGenOpt::None: for cheap, memory-bound kernels
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::string target_id;
  int lanes = 4;  // elements per vector in kernels: the SIMD register width in float32 elements, 4 to 16
  std::mutex compile_mutex;
  std::atomic<uint64_t> next_dylib{0};
};

Host& host() {
  static Host* h = [] {
    auto* result = new Host;
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto detected = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!detected) {
      result->init_error = to_message(detected.takeError());
      return result;
    }
    detected->setCodeGenOptLevel(llvm::CodeGenOpt::Default);
    detected->setRelocationModel(llvm::Reloc::PIC_);
    result->builder = std::make_unique<llvm::orc::JITTargetMachineBuilder>(*detected);
    auto machine = result->builder->createTargetMachine();
    if (!machine) {
      result->init_error = to_message(machine.takeError());
      return result;
    }
    result->machine = std::move(*machine);
    llvm::orc::JITTargetMachineBuilder fast_builder = *result->builder;
    fast_builder.setCodeGenOptLevel(llvm::CodeGenOpt::None);
    auto fast_machine = fast_builder.createTargetMachine();
    if (!fast_machine) {
      result->init_error = to_message(fast_machine.takeError());
      return result;
    }
    result->fast_machine = std::move(*fast_machine);
    {
      // The widest SIMD register, as the target's cost model reports it for
      // a function with the host CPU's attributes.
      llvm::LLVMContext context;
      llvm::Module module("probe", context);
      auto* fn = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(context), false),
                                        llvm::Function::ExternalLinkage, "probe", module);
      fn->addFnAttr("target-cpu", result->machine->getTargetCPU());
      fn->addFnAttr("target-features", result->machine->getTargetFeatureString());
      uint64_t bits = result->machine->getTargetTransformInfo(*fn)
                          .getRegisterBitWidth(llvm::TargetTransformInfo::RGK_FixedWidthVector)
                          .getFixedSize();
      result->lanes = static_cast<int>(std::clamp<uint64_t>(bits / 32, 4, 16));
    }
    // Narrower vectors than the host's, so that the code paths of AVX2 and
    // SSE/NEON hosts are tested on wider ones (part of the cache key).
    if (const char* lanes = std::getenv("GRAFT_JIT_LANES")) {
      std::string value = lanes;
      if (value != "4" && value != "8" && value != "16") {
        result->lanes_error = "GRAFT_JIT_LANES must be 4, 8 or 16, got \"" + value + "\"";
        return result;
      }
      result->lanes = std::stoi(value);
    }
    auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(*result->builder).create();
    if (!jit) {
      result->init_error = to_message(jit.takeError());
      return result;
    }
    result->jit = std::move(*jit);
    result->target_id = "llvm-" LLVM_VERSION_STRING "|" + result->builder->getTargetTriple().str() + "|" +
                        result->builder->getCPU() + "|" + result->builder->getFeatures().getString() +
                        "|emitter-4|lanes-" + std::to_string(result->lanes);
    return result;
  }();
  return *h;
}

Host& usable_host() {
  Host& h = host();
  if (!h.lanes_error.empty()) fail(ErrorKind::invalid_argument, h.lanes_error);
  if (!h.init_error.empty()) fail(ErrorKind::unsupported, "LLVM JIT unavailable: ", h.init_error);
  return h;
}

/// Renders one kernel into an LLVM module.
class Emitter {
 public:
  Emitter(llvm::LLVMContext& context, llvm::Module& module, const ir::KernelIR& ir, int lanes)
      : ctx_(context), module_(module), ir_(ir), b_(context), lanes_(lanes) {}

  /// True when a streaming variant makes sense: outputs of 4 or 8 bytes
  /// (aligned full-vector non-temporal stores).
  bool can_stream() const {
    for (DType t : ir_.output_dtypes())
      if (dtype_size(t) != 4 && dtype_size(t) != 8) return false;
    return true;
  }

  /// Emits the kernel function and the constant `<prefix>_streaming_lanes`
  /// (i64: kStreamLanes when the kernel has the non-temporal store path, else 0).
  ///
  /// void <prefix>_kernel(i64 n, i8** ptrs, i32 stream): n elements, a
  /// multiple of lanes_, every operand dense (the runner handles tails and
  /// strided operands); a loop over vectors of lanes_ elements that loads,
  /// evaluates the DAG, and stores with ordinary or (stream != 0)
  /// non-temporal stores, then an sfence. With `one_block_loops` the two
  /// kinds of store get a loop each, whose body is one basic block (the DAG
  /// twice: for cheap DAGs under the quick code generator, whose register
  /// allocator spills every value live across blocks); else one loop
  /// evaluates the DAG once and branches to one of two store blocks.
  void emit_kernel(const std::string& prefix, bool with_stream, bool one_block_loops) {
    llvm::Type* i64 = b_.getInt64Ty();
    auto* type =
        llvm::FunctionType::get(b_.getVoidTy(), {i64, b_.getInt8PtrTy()->getPointerTo(), b_.getInt32Ty()}, false);
    auto* fn = llvm::Function::Create(type, llvm::Function::ExternalLinkage, prefix + "_kernel", module_);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    fn->addParamAttr(1, llvm::Attribute::NoAlias);
    fn->addParamAttr(1, llvm::Attribute::ReadOnly);
    Host& h = host();
    if (h.machine) {
      fn->addFnAttr("target-cpu", h.machine->getTargetCPU());
      fn->addFnAttr("target-features", h.machine->getTargetFeatureString());
    }
    llvm::Value* n = fn->getArg(0);
    auto* entry = llvm::BasicBlock::Create(ctx_, "entry", fn);
    auto* done = llvm::BasicBlock::Create(ctx_, "done", fn);
    auto* exit = llvm::BasicBlock::Create(ctx_, "exit", fn);

    b_.SetInsertPoint(entry);
    llvm::Value* stream = with_stream ? b_.CreateICmpNE(fn->getArg(2), b_.getInt32(0)) : nullptr;
    size_t n_inputs = ir_.input_dtypes.size();
    size_t n_ops = n_inputs + ir_.outputs.size();
    std::vector<DType> operand_dtypes = ir_.input_dtypes;
    for (DType t : ir_.output_dtypes()) operand_dtypes.push_back(t);
    std::vector<bool> used(n_ops, false);
    for (const ir::Expr& e : ir_.exprs)
      if (e.op == ir::ExprOp::input) used[static_cast<size_t>(e.index)] = true;
    for (size_t k = n_inputs; k < n_ops; ++k) used[k] = true;
    std::vector<llvm::Value*> pointers(n_ops, nullptr);
    for (size_t k = 0; k < n_ops; ++k) {
      if (!used[k]) continue;
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(b_.getInt8PtrTy(), fn->getArg(1), k);
      llvm::Value* raw = b_.CreateLoad(b_.getInt8PtrTy(), slot);
      pointers[k] = b_.CreateBitCast(raw, storage_type(operand_dtypes[k])->getPointerTo());
    }
    llvm::Value* nonempty = b_.CreateICmpSGT(n, b_.getInt64(0));

    llvm::MDNode* nontemporal = llvm::MDNode::get(ctx_, {llvm::ConstantAsMetadata::get(b_.getInt32(1))});
    llvm::PHINode* i = nullptr;
    auto vector_pointer = [&](size_t k) {
      llvm::Value* address = b_.CreateInBoundsGEP(storage_type(operand_dtypes[k]), pointers[k], i);
      return b_.CreateBitCast(address, vec(storage_type(operand_dtypes[k]))->getPointerTo());
    };
    // Starts a loop block: the induction variable, loads, the DAG; returns
    // the output vectors.
    auto emit_body = [&](llvm::BasicBlock* loop, llvm::BasicBlock* from) {
      b_.SetInsertPoint(loop);
      i = b_.CreatePHI(i64, 2, "i");
      i->addIncoming(b_.getInt64(0), from);
      inputs_.assign(n_inputs, nullptr);
      for (size_t k = 0; k < n_inputs; ++k) {
        if (!used[k]) continue;
        llvm::Type* loaded = vec(storage_type(operand_dtypes[k]));
        inputs_[k] = b_.CreateAlignedLoad(loaded, vector_pointer(k), llvm::Align(dtype_size(operand_dtypes[k])));
      }
      std::vector<llvm::Value*> values(ir_.exprs.size(), nullptr);
      for (size_t e = 0; e < ir_.exprs.size(); ++e) values[e] = emit_expr(ir_.exprs[e], values);
      std::vector<llvm::Value*> results;
      for (int32_t output : ir_.outputs) {
        llvm::Value* v = values[static_cast<size_t>(output)];
        if (ir_.exprs[static_cast<size_t>(output)].dtype == DType::boolean) v = b_.CreateZExt(v, vec(b_.getInt8Ty()));
        results.push_back(v);
      }
      return results;
    };
    auto emit_stores = [&](const std::vector<llvm::Value*>& results, bool streaming) {
      for (size_t o = 0; o < results.size(); ++o) {
        size_t k = n_inputs + o;
        uint64_t size = dtype_size(operand_dtypes[k]);
        // Streaming: n is a multiple of kStreamLanes and the outputs are 64-byte aligned.
        uint64_t align = streaming ? std::min<uint64_t>(64, size * static_cast<uint64_t>(lanes_)) : size;
        auto* store = b_.CreateAlignedStore(results[o], vector_pointer(k), llvm::Align(align));
        if (streaming) store->setMetadata(llvm::LLVMContext::MD_nontemporal, nontemporal);
      }
    };
    auto close_loop = [&](llvm::BasicBlock* loop) {
      llvm::Value* next = b_.CreateAdd(i, b_.getInt64(lanes_));
      i->addIncoming(next, b_.GetInsertBlock());
      b_.CreateCondBr(b_.CreateICmpSLT(next, n), loop, done);
    };

    if (!with_stream || one_block_loops) {
      auto* loop = llvm::BasicBlock::Create(ctx_, "loop", fn, done);
      auto* stream_loop = with_stream ? llvm::BasicBlock::Create(ctx_, "stream_loop", fn, done) : nullptr;
      if (with_stream) {
        auto* start = llvm::BasicBlock::Create(ctx_, "start", fn, loop);
        b_.CreateCondBr(nonempty, start, done);
        b_.SetInsertPoint(start);
        b_.CreateCondBr(stream, stream_loop, loop);
        emit_stores(emit_body(stream_loop, start), true);
        close_loop(stream_loop);
        emit_stores(emit_body(loop, start), false);
        close_loop(loop);
      } else {
        b_.CreateCondBr(nonempty, loop, done);
        emit_stores(emit_body(loop, entry), false);
        close_loop(loop);
      }
    } else {
      auto* loop = llvm::BasicBlock::Create(ctx_, "loop", fn, done);
      auto* store_dense = llvm::BasicBlock::Create(ctx_, "store_dense", fn, done);
      auto* store_stream = llvm::BasicBlock::Create(ctx_, "store_stream", fn, done);
      auto* latch = llvm::BasicBlock::Create(ctx_, "latch", fn, done);
      b_.CreateCondBr(nonempty, loop, done);
      std::vector<llvm::Value*> results = emit_body(loop, entry);
      b_.CreateCondBr(stream, store_stream, store_dense);
      b_.SetInsertPoint(store_dense);
      emit_stores(results, false);
      b_.CreateBr(latch);
      b_.SetInsertPoint(store_stream);
      emit_stores(results, true);
      b_.CreateBr(latch);
      b_.SetInsertPoint(latch);
      close_loop(loop);
    }

    b_.SetInsertPoint(done);
    if (with_stream) {
      auto* fence = llvm::BasicBlock::Create(ctx_, "fence", fn, exit);
      b_.CreateCondBr(stream, fence, exit);
      b_.SetInsertPoint(fence);
      b_.CreateIntrinsic(llvm::Intrinsic::x86_sse_sfence, {}, {});  // order the streaming stores
    }
    b_.CreateBr(exit);
    b_.SetInsertPoint(exit);
    b_.CreateRetVoid();

    new llvm::GlobalVariable(module_, i64, true, llvm::GlobalValue::ExternalLinkage,
                             b_.getInt64(with_stream ? kStreamLanes : 0), prefix + "_streaming_lanes");
  }

 private:
  // ---- types and constants
  /// The vector of lanes_ elements of `scalar`.
  llvm::Type* vec(llvm::Type* scalar) { return llvm::FixedVectorType::get(scalar, static_cast<unsigned>(lanes_)); }
  llvm::Type* value_type(DType t) { return vec(scalar_type(t)); }
  llvm::Type* scalar_type(DType t) {
    switch (t) {
      case DType::float32: return b_.getFloatTy();
      case DType::float64: return b_.getDoubleTy();
      case DType::int32: return b_.getInt32Ty();
      case DType::int64: return b_.getInt64Ty();
      case DType::boolean: return b_.getInt1Ty();
      case DType::float16: return b_.getInt16Ty();  // its bits: see half_to_float
      default: fail(ErrorKind::internal, "LLVM emitter: dtype ", dtype_name(t));
    }
  }
  llvm::Type* storage_type(DType t) { return t == DType::boolean ? b_.getInt8Ty() : scalar_type(t); }
  llvm::Value* cf(llvm::Type* t, double v) { return llvm::ConstantFP::get(t, v); }
  llvm::Value* ci(llvm::Type* t, int64_t v) { return llvm::ConstantInt::get(t, static_cast<uint64_t>(v), true); }
  llvm::Type* int_of(llvm::Type* t) { return vec(is_double(t) ? b_.getInt64Ty() : b_.getInt32Ty()); }
  static bool is_double(llvm::Type* t) { return t->getScalarType()->isDoubleTy(); }

  llvm::Value* intrinsic(llvm::Intrinsic::ID id, llvm::Value* x) {
    return b_.CreateIntrinsic(id, {x->getType()}, {x});
  }
  llvm::Value* fma(llvm::Value* a, llvm::Value* b, llvm::Value* c) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {a->getType()}, {a, b, c});
  }
  /// Horner evaluation of sum coefficients[k] x^k.
  llvm::Value* poly(llvm::Value* x, const std::vector<double>& coefficients) {
    llvm::Type* t = x->getType();
    llvm::Value* r = cf(t, coefficients.back());
    for (size_t k = coefficients.size() - 1; k-- > 0;) r = fma(r, x, cf(t, coefficients[k]));
    return r;
  }
  llvm::Value* is_nan(llvm::Value* x) { return b_.CreateFCmpUNO(x, x); }
  /// A C library function of one argument, called lane by lane.
  llvm::Value* libm_call(const char* name, llvm::Value* x) {
    llvm::Type* scalar = x->getType()->getScalarType();
    llvm::FunctionCallee callee = module_.getOrInsertFunction(name, scalar, scalar);
    llvm::Value* result = llvm::PoisonValue::get(x->getType());
    for (int lane = 0; lane < lanes_; ++lane) {
      llvm::Value* y = b_.CreateCall(callee, {b_.CreateExtractElement(x, static_cast<uint64_t>(lane))});
      result = b_.CreateInsertElement(result, y, static_cast<uint64_t>(lane));
    }
    return result;
  }

  // ---- approximations
  llvm::Value* exp_approx(llvm::Value* x) {
    llvm::Type* t = x->getType();
    bool wide = is_double(t);
    llvm::Type* it = int_of(t);
    double hi = wide ? 709.782712893384 : 88.72283935546875;
    double lo = wide ? -745.1332191019411 : -103.97208;
    llvm::Value* nan = is_nan(x);
    llvm::Value* xc = b_.CreateSelect(b_.CreateFCmpOGT(x, cf(t, hi)), cf(t, hi), x);
    xc = b_.CreateSelect(b_.CreateFCmpOLT(xc, cf(t, lo)), cf(t, lo), xc);
    xc = b_.CreateSelect(nan, cf(t, 0), xc);
    llvm::Value* n = intrinsic(llvm::Intrinsic::roundeven, b_.CreateFMul(xc, cf(t, std::numbers::log2e)));
    double ln2_hi = wide ? 6.93147180369123816490e-01 : 0.693359375;
    double ln2_lo = wide ? 1.90821492927058770002e-10 : -2.12194440e-4;
    llvm::Value* r = fma(n, cf(t, -ln2_hi), xc);
    r = fma(n, cf(t, -ln2_lo), r);
    int degree = wide ? 13 : 7;
    std::vector<double> c(static_cast<size_t>(degree) + 1);
    double factorial = 1;
    for (int k = 0; k <= degree; ++k) {
      if (k > 0) factorial *= k;
      c[static_cast<size_t>(k)] = 1.0 / factorial;
    }
    llvm::Value* p = poly(r, c);
    llvm::Value* ni = b_.CreateFPToSI(n, it);
    llvm::Value* n1 = b_.CreateAShr(ni, ci(it, 1));
    llvm::Value* n2 = b_.CreateSub(ni, n1);
    int mantissa = wide ? 52 : 23, bias = wide ? 1023 : 127;
    auto scale = [&](llvm::Value* k) {
      return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(k, ci(it, bias)), ci(it, mantissa)), t);
    };
    llvm::Value* result = b_.CreateFMul(b_.CreateFMul(p, scale(n1)), scale(n2));
    result = b_.CreateSelect(b_.CreateFCmpOGT(x, cf(t, hi)), cf(t, INFINITY), result);
    result = b_.CreateSelect(b_.CreateFCmpOLT(x, cf(t, lo)), cf(t, 0), result);
    return b_.CreateSelect(nan, x, result);
  }

  llvm::Value* expm1_approx(llvm::Value* x) {
    llvm::Type* t = x->getType();
    int degree = is_double(t) ? 14 : 8;
    std::vector<double> c(static_cast<size_t>(degree) + 1, 0.0);
    double factorial = 1;
    for (int k = 1; k <= degree; ++k) {
      factorial *= k;
      c[static_cast<size_t>(k)] = 1.0 / factorial;
    }
    llvm::Value* small = b_.CreateFCmpOLT(intrinsic(llvm::Intrinsic::fabs, x), cf(t, 0.34657359027997264));
    llvm::Value* series = b_.CreateFMul(x, poly(x, std::vector<double>(c.begin() + 1, c.end())));
    llvm::Value* large = b_.CreateFSub(exp_approx(x), cf(t, 1));
    return b_.CreateSelect(small, series, large);
  }

  llvm::Value* log_approx(llvm::Value* x) {
    llvm::Type* t = x->getType();
    bool wide = is_double(t);
    llvm::Type* it = int_of(t);
    int mantissa = wide ? 52 : 23, bias = wide ? 1023 : 127, shift = wide ? 54 : 24;
    double min_normal = wide ? 2.2250738585072014e-308 : 1.17549435e-38;
    llvm::Value* subnormal = b_.CreateFCmpOLT(x, cf(t, min_normal));
    llvm::Value* xs = b_.CreateSelect(subnormal, b_.CreateFMul(x, cf(t, std::ldexp(1.0, shift))), x);
    llvm::Value* xi = b_.CreateBitCast(xs, it);
    llvm::Value* e = b_.CreateSub(b_.CreateLShr(xi, ci(it, mantissa)), ci(it, bias));
    e = b_.CreateAdd(e, b_.CreateSelect(subnormal, ci(it, -shift), ci(it, 0)));
    int64_t mantissa_mask = (int64_t(1) << mantissa) - 1;
    llvm::Value* mi = b_.CreateOr(b_.CreateAnd(xi, ci(it, mantissa_mask)), ci(it, int64_t(bias) << mantissa));
    llvm::Value* m = b_.CreateBitCast(mi, t);
    llvm::Value* big = b_.CreateFCmpOGT(m, cf(t, std::numbers::sqrt2));
    m = b_.CreateSelect(big, b_.CreateFMul(m, cf(t, 0.5)), m);
    e = b_.CreateAdd(e, b_.CreateZExt(big, it));
    llvm::Value* f = b_.CreateFSub(m, cf(t, 1));
    llvm::Value* s = b_.CreateFDiv(f, b_.CreateFAdd(f, cf(t, 2)));
    llvm::Value* z = b_.CreateFMul(s, s);
    int terms = wide ? 12 : 5;
    std::vector<double> c;
    for (int k = 0; k < terms; ++k) c.push_back(1.0 / (2 * k + 1));
    llvm::Value* lf = b_.CreateFMul(b_.CreateFAdd(s, s), poly(z, c));
    llvm::Value* ef = b_.CreateSIToFP(e, t);
    double ln2_hi = wide ? 6.93147180369123816490e-01 : 0.693359375;
    double ln2_lo = wide ? 1.90821492927058770002e-10 : -2.12194440e-4;
    llvm::Value* result = fma(ef, cf(t, ln2_hi), fma(ef, cf(t, ln2_lo), lf));
    result = b_.CreateSelect(b_.CreateFCmpOEQ(x, cf(t, 0)), cf(t, -INFINITY), result);
    result = b_.CreateSelect(b_.CreateFCmpOLT(x, cf(t, 0)), cf(t, NAN), result);
    result = b_.CreateSelect(b_.CreateFCmpOEQ(x, cf(t, INFINITY)), cf(t, INFINITY), result);
    return b_.CreateSelect(is_nan(x), x, result);
  }

  llvm::Value* log1p_approx(llvm::Value* x) {
    llvm::Type* t = x->getType();
    llvm::Value* u = b_.CreateFAdd(x, cf(t, 1));
    llvm::Value* corrected = b_.CreateFMul(log_approx(u), b_.CreateFDiv(x, b_.CreateFSub(u, cf(t, 1))));
    llvm::Value* result = b_.CreateSelect(b_.CreateFCmpOEQ(u, cf(t, 1)), x, corrected);
    result = b_.CreateSelect(b_.CreateFCmpOEQ(u, cf(t, INFINITY)), u, result);
    return b_.CreateSelect(b_.CreateFCmpOEQ(u, cf(t, 0)), cf(t, -INFINITY), result);
  }

  llvm::Value* tanh_approx(llvm::Value* x) {
    llvm::Type* t = x->getType();
    double limit = is_double(t) ? 40 : 20;
    llvm::Value* a = intrinsic(llvm::Intrinsic::fabs, x);
    a = b_.CreateSelect(b_.CreateFCmpOGT(a, cf(t, limit)), cf(t, limit), a);
    llvm::Value* e = expm1_approx(b_.CreateFAdd(a, a));
    llvm::Value* r = b_.CreateFDiv(e, b_.CreateFAdd(e, cf(t, 2)));
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, r, x);
  }

  llvm::Value* sigmoid_approx(llvm::Value* x) {
    llvm::Type* t = x->getType();
    llvm::Value* e = exp_approx(b_.CreateFNeg(intrinsic(llvm::Intrinsic::fabs, x)));
    llvm::Value* one_plus = b_.CreateFAdd(cf(t, 1), e);
    llvm::Value* positive = b_.CreateFDiv(cf(t, 1), one_plus);
    llvm::Value* negative = b_.CreateFDiv(e, one_plus);
    return b_.CreateSelect(b_.CreateFCmpOGE(x, cf(t, 0)), positive, negative);
  }

  llvm::Value* pow_approx(llvm::Value* x, llvm::Value* y) {
    llvm::Type* t = x->getType();
    llvm::Type* wide = vec(b_.getDoubleTy());
    llvm::Value* xw = is_double(t) ? x : b_.CreateFPExt(x, wide);
    llvm::Value* yw = is_double(t) ? y : b_.CreateFPExt(y, wide);
    llvm::Value* ax = intrinsic(llvm::Intrinsic::fabs, xw);
    llvm::Value* r = exp_approx(b_.CreateFMul(yw, log_approx(ax)));
    llvm::Value* y_floor = intrinsic(llvm::Intrinsic::floor, yw);
    llvm::Value* y_integer = b_.CreateFCmpOEQ(y_floor, yw);
    llvm::Value* half = b_.CreateFMul(yw, cf(wide, 0.5));
    llvm::Value* y_odd = b_.CreateAnd(y_integer, b_.CreateFCmpUNE(intrinsic(llvm::Intrinsic::floor, half), half));
    llvm::Value* sign_bit = b_.CreateICmpSLT(b_.CreateBitCast(xw, vec(b_.getInt64Ty())), ci(vec(b_.getInt64Ty()), 0));
    r = b_.CreateSelect(b_.CreateAnd(b_.CreateFCmpOLT(xw, cf(wide, 0)), b_.CreateNot(y_integer)), cf(wide, NAN), r);
    r = b_.CreateSelect(b_.CreateAnd(sign_bit, y_odd), b_.CreateFNeg(r), r);
    llvm::Value* y_inf = b_.CreateFCmpOEQ(intrinsic(llvm::Intrinsic::fabs, yw), cf(wide, INFINITY));
    r = b_.CreateSelect(b_.CreateAnd(b_.CreateFCmpOEQ(ax, cf(wide, 1)), y_inf), cf(wide, 1), r);
    r = b_.CreateSelect(b_.CreateOr(b_.CreateFCmpOEQ(yw, cf(wide, 0)), b_.CreateFCmpOEQ(xw, cf(wide, 1))), cf(wide, 1), r);
    return is_double(t) ? r : b_.CreateFPTrunc(r, t);
  }

  llvm::Value* erf_approx(llvm::Value* x) {
    llvm::Type* t = x->getType();
    if (is_double(t)) return libm_call("erf", x);
    // float32: erf(x) = x P(x^2) / Q(x^2) on |x| <= 4 (beyond, erf rounds to
    // +-1 in float32), evaluated in float64 so that only the final rounding
    // to float32 adds to the fit's error. P (degree 6) and Q (degree 5, all
    // coefficients positive, so Q > 0) are a near-minimax fit of
    // erf(sqrt t)/sqrt t on t in [0, 16], relative error 2.0e-9, made for
    // graft by tools/fit_erf.py (linearized least squares with Lawson
    // reweighting, mpmath); the same odd rational form as Eigen's and XLA's
    // float erf, with more terms for float64 evaluation.
    static const std::vector<double> p = {1.1283791693734044,     0.18520511533302236,    0.05431696135665726,
                                          0.0038496632620069627,  0.00037960139166381875, 4.68452855706574e-06,
                                          -1.3201056015349612e-08};
    static const std::vector<double> q = {1.0,
                                          0.49746717364084625,
                                          0.11395902056865237,
                                          0.015462167518477716,
                                          0.001307570450728851,
                                          6.310824939432237e-05};
    llvm::Type* wide = vec(b_.getDoubleTy());
    llvm::Value* xw = b_.CreateFPExt(x, wide);
    llvm::Value* clamped = b_.CreateSelect(b_.CreateFCmpOGT(xw, cf(wide, 4)), cf(wide, 4), xw);
    clamped = b_.CreateSelect(b_.CreateFCmpOLT(clamped, cf(wide, -4)), cf(wide, -4), clamped);
    llvm::Value* square = b_.CreateFMul(clamped, clamped);
    llvm::Value* r = b_.CreateFDiv(b_.CreateFMul(clamped, poly(square, p)), poly(square, q));
    r = b_.CreateFPTrunc(r, t);
    return b_.CreateSelect(is_nan(x), x, r);
  }

  llvm::Value* integer_pow(llvm::Value* base, llvm::Value* exponent) {
    llvm::Type* t = base->getType();
    unsigned bits = t->getScalarSizeInBits();
    llvm::Value* result = ci(t, 1);
    llvm::Value* factor = base;
    llvm::Value* e = exponent;
    for (unsigned k = 0; k < bits; ++k) {
      llvm::Value* bit = b_.CreateICmpNE(b_.CreateAnd(e, ci(t, 1)), ci(t, 0));
      result = b_.CreateSelect(bit, b_.CreateMul(result, factor), result);
      factor = b_.CreateMul(factor, factor);
      e = b_.CreateLShr(e, ci(t, 1));
    }
    llvm::Value* odd = b_.CreateICmpNE(b_.CreateAnd(exponent, ci(t, 1)), ci(t, 0));
    llvm::Value* negative_result = b_.CreateSelect(
        b_.CreateICmpEQ(base, ci(t, 1)), ci(t, 1),
        b_.CreateSelect(b_.CreateICmpEQ(base, ci(t, -1)), b_.CreateSelect(odd, ci(t, -1), ci(t, 1)), ci(t, 0)));
    return b_.CreateSelect(b_.CreateICmpSLT(exponent, ci(t, 0)), negative_result, result);
  }

  // ---- float16: values are their bits in i16 lanes, converted with integer
  // and float32 arithmetic. LLVM's `half` would do it with F16C, but its
  // optimizer then narrows float32 operations on converted values (fabs,
  // compares) to half ones, which x86 computes lane by lane; these
  // conversions are opaque to it, and need no F16C.

  /// The float32 value of float16 bits (exact).
  llvm::Value* half_to_float(llvm::Value* h) {
    llvm::Type* i32 = vec(b_.getInt32Ty());
    llvm::Type* f32 = vec(b_.getFloatTy());
    llvm::Value* w = b_.CreateZExt(h, i32);
    llvm::Value* sign = b_.CreateShl(b_.CreateAnd(w, ci(i32, 0x8000)), ci(i32, 16));
    llvm::Value* magnitude = b_.CreateAnd(w, ci(i32, 0x7fff));
    // Normal numbers, infinities and NaNs: the exponent rebiased (by twice
    // as much for the all-ones exponent of the last two).
    llvm::Value* normal = b_.CreateAdd(b_.CreateShl(magnitude, ci(i32, 13)), ci(i32, (127 - 15) << 23));
    normal = b_.CreateSelect(b_.CreateICmpUGE(magnitude, ci(i32, 0x7c00)),
                             b_.CreateAdd(normal, ci(i32, (128 - 16) << 23)), normal);
    // Subnormal numbers and zero: magnitude * 2^-24, exact in float32.
    llvm::Value* subnormal =
        b_.CreateBitCast(b_.CreateFMul(b_.CreateUIToFP(magnitude, f32), cf(f32, 0x1p-24)), i32);
    llvm::Value* bits = b_.CreateSelect(b_.CreateICmpULT(magnitude, ci(i32, 0x400)), subnormal, normal);
    return b_.CreateBitCast(b_.CreateOr(bits, sign), f32);
  }

  /// `x` rounded to the nearest float16 value (ties to even, beyond 65504
  /// from 65520 on: infinity), as a float32; NaN stays as it is.
  llvm::Value* round_to_half(llvm::Value* x) {
    llvm::Type* i32 = vec(b_.getInt32Ty());
    llvm::Type* f32 = x->getType();
    llvm::Value* bits = b_.CreateBitCast(x, i32);
    llvm::Value* magnitude = b_.CreateAnd(bits, ci(i32, 0x7fffffff));
    llvm::Value* sign = b_.CreateAnd(bits, ci(i32, INT32_MIN));
    // Normal range: the mantissa rounded to 10 bits, to nearest even.
    llvm::Value* odd = b_.CreateAnd(b_.CreateLShr(magnitude, ci(i32, 13)), ci(i32, 1));
    llvm::Value* normal =
        b_.CreateAnd(b_.CreateAdd(magnitude, b_.CreateAdd(odd, ci(i32, 0xfff))), ci(i32, ~int64_t{0x1fff}));
    // Below 2^-14, float16's step is 2^-24: adding 0.5 makes it float32's,
    // whose rounding (to even) then does it.
    llvm::Value* a = b_.CreateBitCast(magnitude, f32);
    llvm::Value* subnormal = b_.CreateBitCast(b_.CreateFSub(b_.CreateFAdd(a, cf(f32, 0.5)), cf(f32, 0.5)), i32);
    llvm::Value* r = b_.CreateSelect(b_.CreateICmpULT(magnitude, ci(i32, 0x38800000)), subnormal, normal);
    r = b_.CreateSelect(b_.CreateICmpUGE(magnitude, ci(i32, 0x477ff000)), ci(i32, 0x7f800000), r);  // >= 65520
    r = b_.CreateSelect(b_.CreateICmpUGT(magnitude, ci(i32, 0x7f800000)), magnitude, r);           // NaN
    return b_.CreateBitCast(b_.CreateOr(r, sign), f32);
  }

  /// The float16 bits of `x` rounded (a NaN keeps the top of its payload,
  /// as graft::float16_t does).
  llvm::Value* float_to_half(llvm::Value* x) {
    llvm::Type* i32 = vec(b_.getInt32Ty());
    llvm::Value* bits = b_.CreateBitCast(round_to_half(x), i32);
    llvm::Value* magnitude = b_.CreateAnd(bits, ci(i32, 0x7fffffff));
    llvm::Value* sign = b_.CreateAnd(b_.CreateLShr(bits, ci(i32, 16)), ci(i32, 0x8000));
    llvm::Value* normal = b_.CreateSub(b_.CreateLShr(magnitude, ci(i32, 13)), ci(i32, (127 - 15) << 10));
    llvm::Value* subnormal =
        b_.CreateFPToUI(b_.CreateFMul(b_.CreateBitCast(magnitude, x->getType()), cf(x->getType(), 0x1p24)), i32);
    llvm::Value* h = b_.CreateSelect(b_.CreateICmpULT(magnitude, ci(i32, 0x38800000)), subnormal, normal);
    llvm::Value* nan = b_.CreateOr(ci(i32, 0x7e00), b_.CreateAnd(b_.CreateLShr(magnitude, ci(i32, 13)), ci(i32, 0x3ff)));
    h = b_.CreateSelect(b_.CreateICmpEQ(magnitude, ci(i32, 0x7f800000)), ci(i32, 0x7c00), h);
    h = b_.CreateSelect(b_.CreateICmpUGT(magnitude, ci(i32, 0x7f800000)), nan, h);
    return b_.CreateTrunc(b_.CreateOr(h, sign), vec(b_.getInt16Ty()));
  }

  llvm::Value* cast(llvm::Value* x, DType from, DType to) {
    if (from == to) return x;
    if (from == DType::float16) return half_to_float(x);  // to float32 (ir::KernelIR::validate)
    if (to == DType::float16) return float_to_half(x);    // from float32
    llvm::Type* target = value_type(to);
    if (to == DType::boolean)
      return dtype_is_float(from) ? b_.CreateFCmpUNE(x, cf(x->getType(), 0)) : b_.CreateICmpNE(x, ci(x->getType(), 0));
    if (from == DType::boolean) return dtype_is_float(to) ? b_.CreateUIToFP(x, target) : b_.CreateZExt(x, target);
    if (dtype_is_float(from) && dtype_is_float(to))
      return to == DType::float64 ? b_.CreateFPExt(x, target) : b_.CreateFPTrunc(x, target);
    if (dtype_is_float(to)) return b_.CreateSIToFP(x, target);
    if (dtype_is_float(from)) {
      // Saturate at the int64 range, NaN -> 0 (llvm.fptosi.sat would do it but
      // does not vectorize in LLVM 14); fptosi only sees in-range values.
      llvm::Type* ft = x->getType();
      llvm::Value* too_big = b_.CreateFCmpOGE(x, cf(ft, 9223372036854775808.0));
      llvm::Value* too_small = b_.CreateFCmpOLT(x, cf(ft, -9223372036854775808.0));
      llvm::Value* in_range = b_.CreateNot(b_.CreateOr(b_.CreateOr(too_big, too_small), is_nan(x)));
      llvm::Type* i64 = vec(b_.getInt64Ty());
      llvm::Value* wide = b_.CreateFPToSI(b_.CreateSelect(in_range, x, cf(ft, 0)), i64);
      wide = b_.CreateSelect(too_big, ci(i64, INT64_MAX), wide);
      wide = b_.CreateSelect(too_small, ci(i64, INT64_MIN), wide);
      return to == DType::int64 ? wide : b_.CreateTrunc(wide, target);
    }
    return to == DType::int64 ? b_.CreateSExt(x, target) : b_.CreateTrunc(x, target);
  }

  llvm::Value* emit_expr(const ir::Expr& e, const std::vector<llvm::Value*>& v) {
    auto arg = [&](int k) { return v[static_cast<size_t>(e.args[k])]; };
    auto arg_dtype = [&](int k) { return ir_.exprs[static_cast<size_t>(e.args[k])].dtype; };
    llvm::Type* t = value_type(e.dtype);
    bool is_float = dtype_is_float(e.dtype);
    switch (e.op) {
      case ir::ExprOp::input: {
        llvm::Value* loaded = inputs_[static_cast<size_t>(e.index)];
        if (e.dtype == DType::boolean) return b_.CreateICmpNE(loaded, ci(loaded->getType(), 0));
        return loaded;
      }
      case ir::ExprOp::constant:
        if (is_float) return cf(t, e.float_value);
        if (e.dtype == DType::boolean) return ci(t, e.int_value ? 1 : 0);
        return ci(t, e.int_value);
      case ir::ExprOp::neg: return is_float ? b_.CreateFNeg(arg(0)) : b_.CreateSub(ci(t, 0), arg(0));
      case ir::ExprOp::abs:
        if (is_float) return intrinsic(llvm::Intrinsic::fabs, arg(0));
        return b_.CreateSelect(b_.CreateICmpSLT(arg(0), ci(t, 0)), b_.CreateSub(ci(t, 0), arg(0)), arg(0));
      case ir::ExprOp::exp: return exp_approx(arg(0));
      case ir::ExprOp::expm1: return expm1_approx(arg(0));
      case ir::ExprOp::log: return log_approx(arg(0));
      case ir::ExprOp::log1p: return log1p_approx(arg(0));
      case ir::ExprOp::sqrt: return intrinsic(llvm::Intrinsic::sqrt, arg(0));
      case ir::ExprOp::tanh: return tanh_approx(arg(0));
      case ir::ExprOp::sigmoid: return sigmoid_approx(arg(0));
      case ir::ExprOp::erf: return erf_approx(arg(0));
      case ir::ExprOp::sin: return libm_call(e.dtype == DType::float32 ? "sinf" : "sin", arg(0));
      case ir::ExprOp::cos: return libm_call(e.dtype == DType::float32 ? "cosf" : "cos", arg(0));
      case ir::ExprOp::floor: return intrinsic(llvm::Intrinsic::floor, arg(0));
      case ir::ExprOp::ceil: return intrinsic(llvm::Intrinsic::ceil, arg(0));
      case ir::ExprOp::round: return intrinsic(llvm::Intrinsic::roundeven, arg(0));
      case ir::ExprOp::sign: {
        llvm::Value* x = arg(0);
        if (is_float) {
          llvm::Value* r = b_.CreateSelect(b_.CreateFCmpOGT(x, cf(t, 0)), cf(t, 1),
                                           b_.CreateSelect(b_.CreateFCmpOLT(x, cf(t, 0)), cf(t, -1), cf(t, 0)));
          return b_.CreateSelect(is_nan(x), x, r);
        }
        return b_.CreateSub(b_.CreateZExt(b_.CreateICmpSGT(x, ci(t, 0)), t), b_.CreateZExt(b_.CreateICmpSLT(x, ci(t, 0)), t));
      }
      case ir::ExprOp::logical_not: return b_.CreateNot(arg(0));
      case ir::ExprOp::cast: {
        // float32 -> float16 -> float32 (a float16 op's rounding): one step.
        const ir::Expr& source = ir_.exprs[static_cast<size_t>(e.args[0])];
        if (arg_dtype(0) == DType::float16 && source.op == ir::ExprOp::cast)
          return round_to_half(v[static_cast<size_t>(source.args[0])]);
        return cast(arg(0), arg_dtype(0), e.dtype);
      }
      case ir::ExprOp::add: return is_float ? b_.CreateFAdd(arg(0), arg(1)) : b_.CreateAdd(arg(0), arg(1));
      case ir::ExprOp::sub: return is_float ? b_.CreateFSub(arg(0), arg(1)) : b_.CreateSub(arg(0), arg(1));
      case ir::ExprOp::mul: return is_float ? b_.CreateFMul(arg(0), arg(1)) : b_.CreateMul(arg(0), arg(1));
      case ir::ExprOp::div: {
        if (is_float) return b_.CreateFDiv(arg(0), arg(1));
        llvm::Value* a = arg(0);
        llvm::Value* d = arg(1);
        llvm::Value* zero = b_.CreateICmpEQ(d, ci(t, 0));
        llvm::Value* minus_one = b_.CreateICmpEQ(d, ci(t, -1));
        llvm::Value* safe = b_.CreateSelect(b_.CreateOr(zero, minus_one), ci(t, 1), d);
        llvm::Value* q = b_.CreateSDiv(a, safe);
        q = b_.CreateSelect(minus_one, b_.CreateSub(ci(t, 0), a), q);
        return b_.CreateSelect(zero, ci(t, 0), q);
      }
      case ir::ExprOp::pow: return is_float ? pow_approx(arg(0), arg(1)) : integer_pow(arg(0), arg(1));
      case ir::ExprOp::max:
      case ir::ExprOp::min: {
        llvm::Value* a = arg(0);
        llvm::Value* c = arg(1);
        bool is_max = e.op == ir::ExprOp::max;
        if (is_float) {
          llvm::Value* pick_a = b_.CreateOr(is_nan(a), is_max ? b_.CreateFCmpOGT(a, c) : b_.CreateFCmpOLT(a, c));
          return b_.CreateSelect(pick_a, a, c);
        }
        return b_.CreateSelect(is_max ? b_.CreateICmpSGT(a, c) : b_.CreateICmpSLT(a, c), a, c);
      }
      case ir::ExprOp::equal:
      case ir::ExprOp::less:
      case ir::ExprOp::less_equal:
      case ir::ExprOp::greater:
      case ir::ExprOp::greater_equal: {
        DType operand = arg_dtype(0);
        llvm::Value* a = arg(0);
        llvm::Value* c = arg(1);
        if (dtype_is_float(operand)) {
          switch (e.op) {
            case ir::ExprOp::equal: return b_.CreateFCmpOEQ(a, c);
            case ir::ExprOp::less: return b_.CreateFCmpOLT(a, c);
            case ir::ExprOp::less_equal: return b_.CreateFCmpOLE(a, c);
            case ir::ExprOp::greater: return b_.CreateFCmpOGT(a, c);
            default: return b_.CreateFCmpOGE(a, c);
          }
        }
        bool u = operand == DType::boolean;
        switch (e.op) {
          case ir::ExprOp::equal: return b_.CreateICmpEQ(a, c);
          case ir::ExprOp::less: return u ? b_.CreateICmpULT(a, c) : b_.CreateICmpSLT(a, c);
          case ir::ExprOp::less_equal: return u ? b_.CreateICmpULE(a, c) : b_.CreateICmpSLE(a, c);
          case ir::ExprOp::greater: return u ? b_.CreateICmpUGT(a, c) : b_.CreateICmpSGT(a, c);
          default: return u ? b_.CreateICmpUGE(a, c) : b_.CreateICmpSGE(a, c);
        }
      }
      case ir::ExprOp::logical_and: return b_.CreateAnd(arg(0), arg(1));
      case ir::ExprOp::logical_or: return b_.CreateOr(arg(0), arg(1));
      case ir::ExprOp::logical_xor: return b_.CreateXor(arg(0), arg(1));
      case ir::ExprOp::select: return b_.CreateSelect(arg(0), arg(1), arg(2));
    }
    fail(ErrorKind::internal, "LLVM emitter: op ", to_string(e.op));
  }

  llvm::LLVMContext& ctx_;
  llvm::Module& module_;
  const ir::KernelIR& ir_;
  llvm::IRBuilder<> b_;
  int lanes_;                         // elements per vector
  std::vector<llvm::Value*> inputs_;  // per input: this iteration's loaded vector
};

/// True when the kernel calls a transcendental function (its speed then
/// depends on the quality of the generated code).
bool is_compute_heavy(const ir::KernelIR& ir) {
  for (const ir::Expr& e : ir.exprs) {
    switch (e.op) {
      case ir::ExprOp::exp:
      case ir::ExprOp::expm1:
      case ir::ExprOp::log:
      case ir::ExprOp::log1p:
      case ir::ExprOp::tanh:
      case ir::ExprOp::sigmoid:
      case ir::ExprOp::erf:
      case ir::ExprOp::sin:
      case ir::ExprOp::cos:
      case ir::ExprOp::pow:
        return true;
      default:
        break;
    }
  }
  return false;
}

/// The optimization pipeline of every kernel.
constexpr const char* kPipeline = "function(early-cse,instcombine)";

std::unique_ptr<llvm::Module> build_module(llvm::LLVMContext& context, const ir::KernelIR& ir, const std::string& prefix) {
  ir.validate();
  auto module = std::make_unique<llvm::Module>(prefix, context);
  Host& h = host();
  if (h.machine) {
    module->setDataLayout(h.machine->createDataLayout());
    module->setTargetTriple(h.machine->getTargetTriple().str());
  }
  Emitter emitter(context, *module, ir, h.lanes);
  emitter.emit_kernel(prefix, emitter.can_stream() && module->getTargetTriple().rfind("x86_64", 0) == 0,
                      !is_compute_heavy(ir));
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*module, &os))
    fail(ErrorKind::internal, "LLVM emitter produced invalid IR: ", os.str());
  return module;
}

}  // namespace

bool llvm_jit_available() {
  Host& h = host();
  if (!h.lanes_error.empty()) fail(ErrorKind::invalid_argument, h.lanes_error);
  return h.init_error.empty();
}

std::string llvm_target_id() { return usable_host().target_id; }

std::string emit_llvm_ir(const ir::KernelIR& ir, const std::string& symbol_prefix) {
  llvm::LLVMContext context;
  auto module = build_module(context, ir, symbol_prefix);
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, nullptr);
  return os.str();
}

std::string compile_to_object(const ir::KernelIR& ir, const std::string& symbol_prefix) {
  Host& h = usable_host();
  llvm::LLVMContext context;
  auto module = build_module(context, ir, symbol_prefix);
  std::lock_guard<std::mutex> lock(h.compile_mutex);
  {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder builder(h.machine.get());
    builder.registerModuleAnalyses(mam);
    builder.registerCGSCCAnalyses(cgam);
    builder.registerFunctionAnalyses(fam);
    builder.registerLoopAnalyses(lam);
    builder.crossRegisterProxies(lam, fam, cgam, mam);
    // A short pipeline instead of O2 (JIT latency): the emitted IR is already
    // vector SSA without memory traffic besides the loads and stores of the
    // operands, so it only needs CSE and peephole simplification.
    llvm::ModulePassManager passes;
    if (auto err = builder.parsePassPipeline(passes, kPipeline))
      fail(ErrorKind::internal, "LLVM pass pipeline: ", to_message(std::move(err)));
    passes.run(*module, mam);
  }
  if (std::getenv("GRAFT_DUMP_KERNELS")) {  // debugging aid: the optimized IR on stderr
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os, nullptr);
    std::fprintf(stderr, "%s\n", os.str().c_str());
  }
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager codegen;
  // JIT latency: kernels without transcendental functions are memory-bound,
  // so the quick instruction selector and register allocator cost them
  // nothing at run time and cut compile time about 2.5x; the others get the
  // full code generator (5-15% faster code than the quick one for them, for
  // about twice the compile time; CodeGenOpt::Less was no faster to compile).
  llvm::TargetMachine& machine = is_compute_heavy(ir) ? *h.machine : *h.fast_machine;
  if (machine.addPassesToEmitFile(codegen, os, nullptr, llvm::CGFT_ObjectFile))
    fail(ErrorKind::unsupported, "LLVM target cannot emit object files");
  codegen.run(*module);
  return std::string(buffer.begin(), buffer.end());
}

std::shared_ptr<const KernelRunner> load_object(const ir::KernelIR& ir, const std::string& object,
                                                const std::string& symbol_prefix) {
  Host& h = usable_host();
  std::string name = "graft_kernel_" + std::to_string(h.next_dylib.fetch_add(1));
  auto dylib = h.jit->createJITDylib(name);
  if (!dylib) fail(ErrorKind::internal, "LLJIT: ", to_message(dylib.takeError()));
  auto generator = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      h.jit->getDataLayout().getGlobalPrefix());
  if (!generator) fail(ErrorKind::internal, "LLJIT: ", to_message(generator.takeError()));
  dylib->addGenerator(std::move(*generator));
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(object, name);
  if (auto err = h.jit->addObjectFile(*dylib, std::move(buffer)))
    fail(ErrorKind::invalid_model, "LLJIT cannot load kernel object: ", to_message(std::move(err)));
  auto kernel = h.jit->lookup(*dylib, symbol_prefix + "_kernel");
  if (!kernel) fail(ErrorKind::invalid_model, "LLJIT: ", to_message(kernel.takeError()));
  auto lanes = h.jit->lookup(*dylib, symbol_prefix + "_streaming_lanes");
  if (!lanes) fail(ErrorKind::invalid_model, "LLJIT: ", to_message(lanes.takeError()));
  int64_t streaming_lanes = *reinterpret_cast<const int64_t*>(lanes->getAddress());
  if (streaming_lanes != 0 && streaming_lanes != kStreamLanes)
    fail(ErrorKind::invalid_model, "LLJIT: kernel object with ", streaming_lanes, " streaming lanes");
  return make_jit_runner(reinterpret_cast<CompiledKernelFunction>(kernel->getAddress()), h.lanes, streaming_lanes, ir,
                         nullptr);  // the code stays in the LLJIT instance, which lives as long as the process
}

}  // namespace graft::codegen

extern "C" __attribute__((visibility("default"))) const graft::codegen::LlvmJitTable* graft_llvm_jit_table() {
  using namespace graft::codegen;
  static const LlvmJitTable table{LlvmJitTable::kAbiVersion, &llvm_jit_available, &llvm_target_id, &emit_llvm_ir,
                                  &compile_to_object, &load_object};
  return &table;
}

namespace graft::codegen {

#else  // !GRAFT_WITH_LLVM

bool llvm_jit_available() { return false; }
bool llvm_jit_loaded() { return false; }
std::string llvm_jit_plugin_path() { return {}; }
std::string llvm_jit_unavailable_reason() { return "graft was built without LLVM (GRAFT_WITH_LLVM=OFF)"; }
std::string llvm_target_id() { fail(ErrorKind::unsupported, "graft was built without LLVM (GRAFT_WITH_LLVM=OFF)"); }
std::string emit_llvm_ir(const ir::KernelIR&, const std::string&) {
  fail(ErrorKind::unsupported, "graft was built without LLVM (GRAFT_WITH_LLVM=OFF)");
}
std::string compile_to_object(const ir::KernelIR&, const std::string&) {
  fail(ErrorKind::unsupported, "graft was built without LLVM (GRAFT_WITH_LLVM=OFF)");
}
std::shared_ptr<const KernelRunner> load_object(const ir::KernelIR&, const std::string&, const std::string&) {
  fail(ErrorKind::unsupported, "graft was built without LLVM (GRAFT_WITH_LLVM=OFF)");
}

#endif

}  // namespace graft::codegen

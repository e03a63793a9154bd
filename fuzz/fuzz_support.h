/// \file
/// What the libFuzzer harnesses of fuzz/ share: the process setup, the
/// session options and small inputs a model is planned and run with, and
/// the rule that a bad input may end in a graft::Error and nothing else.
///
/// A harness calls prepare_fuzzing_process() from LLVMFuzzerInitialize and
/// wraps its work in expect_graft_errors(); any other exception escapes to
/// libFuzzer and is reported as a crash, as are sanitizer reports, hangs
/// (-timeout) and allocations past -rss_limit_mb / -malloc_limit_mb.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "graft/core/error.h"
#include "graft/runtime/session.h"

namespace graft::fuzz {

/// Bytes a fuzzed run's intermediate values may hold (SessionOptions::max_memory).
constexpr uint64_t kRunMemoryLimit = uint64_t{64} << 20;
/// Bytes of all generated inputs of one run; a model whose inputs need more is loaded and planned but not run.
constexpr size_t kMaxInputBytes = size_t{1} << 20;
/// How long one fuzzed run may take before it is cancelled (RunLimits::deadline).
constexpr int kRunDeadlineMilliseconds = 2000;

/// Once per process: interpreted fused kernels (GRAFT_JIT=0: an LLVM compile
/// per kernel would cost more than a whole execution), one thread, and no
/// GRAFT_* setting inherited from the caller's environment.
void prepare_fuzzing_process();

/// One thread, the memory limit, the default CPU backends.
runtime::SessionOptions fuzzing_session_options();

/// Runs `session` once on generated inputs (symbolic dimensions 1, values
/// small and varied) within kRunMemoryLimit and kRunDeadlineMilliseconds.
/// Inputs of unknown rank, sequences and optionals are given as the ONNX
/// model allows (none for an optional); a model whose inputs exceed
/// kMaxInputBytes is not run. Errors are the caller's to expect.
void run_on_small_inputs(const runtime::Session& session);

/// Runs `session` once on generated inputs of `types` (one per input, every
/// dimension known), within the same limits; not run when the inputs would
/// exceed kMaxInputBytes.
void run_at_types(const runtime::Session& session, const std::vector<ir::ValueType>& types);

/// Loads a model (ONNX or artifact) from bytes, then plans and runs it as
/// run_on_small_inputs does.
void load_plan_and_run(std::string_view model_bytes);

/// Calls `body`; a graft::Error (any kind) is a handled bad input. Other
/// exceptions propagate: graft promises a graft::Error for every bad input.
template <typename Body>
void expect_graft_errors(Body&& body) {
  try {
    body();
  } catch (const graft::Error&) {
  }
}

/// Writes `bytes` to this process's scratch file with `suffix` and returns
/// its path (for readers that take a path: .npy files, cache entries).
std::string write_scratch_file(std::string_view bytes, const std::string& suffix);

/// This process's scratch directory (created on first use, under TMPDIR).
const std::string& scratch_directory();

}  // namespace graft::fuzz

// The `fuse` backend: runs graft.FusedPointwise bodies as one generated
// kernel. compile() lowers the body to kernel IR through the op table and
// asks the compile cache for a CPU runner (LLVM JIT, else the interpreter);
// because the cache key holds no shapes, compiling the same body for another
// input shape reuses the kernel already compiled.
//
// Saved form: the kernel IR and the captured constant tensors, not object
// code. Object code is specific to the CPU (and LLVM version) it was built
// for, while an artifact may be loaded on another machine; the compile cache
// (memory, and GRAFT_CACHE_DIR on disk) makes rebuilding it on load cheap.
// Loading never reruns the fusion pass or the op table.
#include <istream>
#include <map>
#include <mutex>
#include <ostream>

#include "graft/codegen/compile_cache.h"
#include "graft/codegen/kernel_runner.h"
#include "graft/codegen/op_expressions.h"
#include "graft/codegen/output_groups.h"
#include "graft/core/parallel.h"
#include "graft/fusion/explain_unfused.h"
#include "graft/fusion/fuse_pointwise.h"
#include "graft/fusion/fusible.h"
#include "graft/ir/graph.h"
#include "graft/backend/backend.h"

namespace graft::backends {

using namespace graft::backend;
namespace {

constexpr char kModuleMagic[4] = {'G', 'F', 'U', 'S'};
constexpr uint32_t kModuleVersion = 1;

class FuseModule final : public CompiledModule {
 public:
  explicit FuseModule(codegen::LoweredKernel kernel) : kernel_(std::move(kernel)) {
    if (kernel_.ir.outputs.size() < 2) {
      runner_ = codegen::CompileCache::global().cpu_runner_in_background(kernel_.ir);
    } else {
      // The whole kernel's runner is made on the first run whose outputs
      // share one iteration space: where they never do, only the partial
      // kernels are compiled. A bad GRAFT_JIT or GRAFT_CACHE_DIR is still an
      // error of compiling, as for one output.
      (void)codegen::jit_enabled_by_environment();
      (void)codegen::cache_directory_from_environment();
    }
  }
  std::string type_key() const override { return "fuse"; }

  std::vector<Tensor> run(std::span<const Tensor> inputs, ModuleRunContext& context) const override {
    ScopedNumThreads threads(std::max(1, context.num_threads));
    std::vector<Tensor> all;
    std::span<const Tensor> operands = inputs;
    if (!kernel_.captured.empty()) {
      all.assign(inputs.begin(), inputs.end());
      all.insert(all.end(), kernel_.captured.begin(), kernel_.captured.end());
      operands = all;
    }
    const std::vector<Shape> input_shapes = codegen::kernel_input_shapes(kernel_.ir, operands);
    const std::vector<Shape> output_shapes = codegen::kernel_output_shapes(kernel_.ir, input_shapes);
    if (kernel_.ir.outputs.size() < 2) {
      std::vector<Tensor> outputs = allocate_outputs(kernel_.ir, {{0}}, operands, output_shapes, context);
      codegen::run_kernel_into(kernel_.ir, *runner_, operands, input_shapes, outputs);
      return outputs;
    }
    // Outputs of different shapes (see output_groups.h) run as one kernel
    // per group.
    const std::vector<std::vector<int32_t>> groups = codegen::group_outputs_by_iteration_space(output_shapes);
    std::vector<Tensor> outputs = allocate_outputs(kernel_.ir, groups, operands, output_shapes, context);
    if (groups.size() == 1) {
      codegen::run_kernel_into(kernel_.ir, whole_runner(), operands, input_shapes, outputs);
      return outputs;
    }
    for (const std::vector<int32_t>& group : groups) {
      const PartialKernel& part = partial_kernel(group);
      std::vector<Tensor> group_outputs;  // a partial kernel's outputs are the group's, in its order
      for (int32_t o : group) group_outputs.push_back(outputs[static_cast<size_t>(o)]);
      codegen::run_kernel_into(part.ir, *part.runner, operands, input_shapes, group_outputs);
    }
    return outputs;
  }

  void save(std::ostream& out) const override {
    out.write(kModuleMagic, 4);
    write_u32(out, kModuleVersion);
    ir::write_kernel_ir(out, kernel_.ir);
    write_u32(out, static_cast<uint32_t>(kernel_.captured.size()));
    for (const Tensor& t : kernel_.captured) {
      write_u32(out, static_cast<uint32_t>(t.dtype()));
      write_u32(out, static_cast<uint32_t>(t.rank()));
      for (int64_t d : t.shape()) out.write(reinterpret_cast<const char*>(&d), sizeof d);
      out.write(static_cast<const char*>(t.raw_data()), static_cast<std::streamsize>(t.nbytes()));
    }
  }

 private:
  static void write_u32(std::ostream& out, uint32_t v) { out.write(reinterpret_cast<const char*>(&v), sizeof v); }

  /// The outputs of one run: each written into the buffer of the input the
  /// executor offers it (a constant it updates in place,
  /// ModuleRunContext::output_may_overwrite_input) when that input has the
  /// output's dtype and shape and no other group's kernel reads it (a group's
  /// own kernel reads each element before it writes it); else from the pool.
  static std::vector<Tensor> allocate_outputs(const ir::KernelIR& ir, const std::vector<std::vector<int32_t>>& groups,
                                              std::span<const Tensor> operands, std::span<const Shape> output_shapes,
                                              ModuleRunContext& context) {
    const std::vector<DType> dtypes = ir.output_dtypes();
    std::vector<Tensor> outputs(output_shapes.size());
    std::span<const int32_t> offered = context.output_may_overwrite_input;
    std::vector<bool> taken(operands.size(), false);
    for (size_t g = 0; g < groups.size(); ++g) {
      for (int32_t o : groups[g]) {
        const size_t out = static_cast<size_t>(o);
        const int32_t in = out < offered.size() ? offered[out] : -1;
        if (in >= 0 && static_cast<size_t>(in) < operands.size() && !taken[static_cast<size_t>(in)] &&
            operands[static_cast<size_t>(in)].dtype() == dtypes[out] &&
            operands[static_cast<size_t>(in)].shape() == output_shapes[out] &&
            read_only_by_group(ir, groups, g, in) && no_other_view(operands, in)) {
          taken[static_cast<size_t>(in)] = true;
          outputs[out] = operands[static_cast<size_t>(in)];
        } else {
          outputs[out] = context.pool.allocate(dtypes[out], output_shapes[out]);
        }
      }
    }
    return outputs;
  }

  /// Whether no other operand sees the bytes of operand `input` in another
  /// arrangement (a view of another shape or offset would be read at other
  /// elements than those being written).
  static bool no_other_view(std::span<const Tensor> operands, int32_t input) {
    const Tensor& target = operands[static_cast<size_t>(input)];
    for (const Tensor& other : operands)
      if (&other != &target && other.is_defined() && other.storage() == target.storage() &&
          (other.raw_data() != target.raw_data() || other.shape() != target.shape()))
        return false;
    return true;
  }

  /// Whether no output outside group `g` depends on kernel input `input`.
  static bool read_only_by_group(const ir::KernelIR& ir, const std::vector<std::vector<int32_t>>& groups, size_t g,
                                 int32_t input) {
    if (groups.size() == 1) return true;
    // Which expressions depend on the input (expressions are in topological order).
    std::vector<bool> depends(ir.exprs.size(), false);
    for (size_t e = 0; e < ir.exprs.size(); ++e) {
      const ir::Expr& expr = ir.exprs[e];
      if (expr.op == ir::ExprOp::input) {
        depends[e] = expr.index == input;
        continue;
      }
      for (int k = 0; k < ir::arity(expr.op); ++k)
        if (expr.args[k] >= 0 && depends[static_cast<size_t>(expr.args[k])]) depends[e] = true;
    }
    for (size_t other = 0; other < groups.size(); ++other) {
      if (other == g) continue;
      for (int32_t o : groups[other])
        if (depends[static_cast<size_t>(ir.outputs[static_cast<size_t>(o)])]) return false;
    }
    return true;
  }

  /// A kernel computing only some of the outputs, and its runner.
  struct PartialKernel {
    ir::KernelIR ir;
    std::shared_ptr<const codegen::KernelRunner> runner;
  };

  /// The partial kernel of `outputs`, made on first use (its runner comes
  /// from the compile cache, which keys it by its IR like any kernel).
  const PartialKernel& partial_kernel(const std::vector<int32_t>& outputs) const {
    std::lock_guard<std::mutex> lock(partial_mutex_);
    auto it = partial_.find(outputs);
    if (it == partial_.end()) {
      ir::KernelIR ir = codegen::kernel_for_outputs(kernel_.ir, outputs);
      auto runner = codegen::CompileCache::global().cpu_runner_in_background(ir);
      it = partial_.emplace(outputs, PartialKernel{std::move(ir), std::move(runner)}).first;
    }
    return it->second;
  }

  /// The runner of the kernel computing every output (made on first use
  /// when there are several outputs).
  const codegen::KernelRunner& whole_runner() const {
    std::call_once(whole_runner_made_,
                   [&] { runner_ = codegen::CompileCache::global().cpu_runner_in_background(kernel_.ir); });
    return *runner_;
  }

  codegen::LoweredKernel kernel_;
  mutable std::shared_ptr<const codegen::KernelRunner> runner_;
  mutable std::once_flag whole_runner_made_;
  mutable std::mutex partial_mutex_;
  mutable std::map<std::vector<int32_t>, PartialKernel> partial_;  // node-based: references stay valid
};

class FuseBackend final : public Backend {
 public:
  std::string name() const override { return std::string(fusion::kFuseBackend); }
  int default_rank() const override { return 50; }
  /// The pointwise chains no backend took become graft.FusedPointwise nodes
  /// (the linear-time fusion pass, src/fusion), after every property-based backend.
  bool claim_remaining(std::unique_ptr<ir::Graph>& graph, partition::PartitionReport* report) const override {
    const bool changed = fusion::fuse_pointwise(graph);
    if (report) fusion::record_fusion_in_report(*graph, *report);
    return changed;
  }
  std::unique_ptr<CompiledModule> compile(const ir::Graph& subgraph, const CompileOptions&) const override {
    return std::make_unique<FuseModule>(codegen::lower_body(subgraph));
  }
};

uint32_t read_u32(std::istream& in) {
  uint32_t v = 0;
  if (!in.read(reinterpret_cast<char*>(&v), sizeof v)) fail(ErrorKind::invalid_model, "fuse module: truncated");
  return v;
}

std::unique_ptr<CompiledModule> load_fuse_module(std::istream& in, const ir::Graph&, std::span<const Tensor> tensors) {
  if (!tensors.empty()) fail(ErrorKind::invalid_model, "fuse module: stores no tensors, got ", tensors.size());
  char magic[4];
  if (!in.read(magic, 4) || std::string_view(magic, 4) != std::string_view(kModuleMagic, 4))
    fail(ErrorKind::invalid_model, "fuse module: bad magic (expected GFUS)");
  uint32_t version = read_u32(in);
  if (version != kModuleVersion)
    fail(ErrorKind::invalid_model, "fuse module: version ", version, " is not supported (expected ", kModuleVersion, ")");
  codegen::LoweredKernel kernel;
  kernel.ir = ir::read_kernel_ir(in);
  uint32_t captured = read_u32(in);
  if (captured > kernel.ir.input_dtypes.size())
    fail(ErrorKind::invalid_model, "fuse module: ", captured, " captured tensors for ", kernel.ir.input_dtypes.size(),
         " kernel inputs");
  for (uint32_t i = 0; i < captured; ++i) {
    DType dtype = static_cast<DType>(read_u32(in));
    if (!ir::is_kernel_dtype(dtype)) fail(ErrorKind::invalid_model, "fuse module: bad captured dtype");
    uint32_t rank = read_u32(in);
    if (rank > static_cast<uint32_t>(ir::kMaxKernelRank)) fail(ErrorKind::invalid_model, "fuse module: bad captured rank");
    Shape shape(rank);
    for (int64_t& d : shape)
      if (!in.read(reinterpret_cast<char*>(&d), sizeof d) || d < 0 || d > (int64_t(1) << 40))
        fail(ErrorKind::invalid_model, "fuse module: bad captured dimension");
    size_t nbytes = shape_nbytes(shape, dtype_size(dtype), "captured tensor");
    if (nbytes > (size_t(1) << 32)) fail(ErrorKind::invalid_model, "fuse module: captured tensor too large");
    Tensor t(dtype, shape);
    if (!in.read(static_cast<char*>(t.raw_data()), static_cast<std::streamsize>(nbytes)))
      fail(ErrorKind::invalid_model, "fuse module: truncated captured tensor");
    kernel.captured.push_back(std::move(t));
  }
  size_t body_inputs = kernel.ir.input_dtypes.size() - captured;
  for (uint32_t i = 0; i < captured; ++i)
    if (kernel.captured[i].dtype() != kernel.ir.input_dtypes[body_inputs + i])
      fail(ErrorKind::invalid_model, "fuse module: captured tensor ", i, " has the wrong dtype");
  return std::make_unique<FuseModule>(std::move(kernel));
}

}  // namespace

GRAFT_REGISTER_BACKEND(FuseBackend);
GRAFT_REGISTER_MODULE_LOADER("fuse", load_fuse_module);

}  // namespace graft::backends

#include "dnnl_thread_variants.h"

#include <memory>

#include "dnnl_threads.h"

namespace graft::dnnl_backend {

namespace {

bool is_forward(const_dnnl_primitive_desc_t pd) {
  dnnl_prop_kind_t prop = dnnl_prop_kind_undef;
  if (dnnl_primitive_desc_query(pd, dnnl_query_prop_kind, 0, &prop) != dnnl_success) return true;  // matmul has none
  return prop == dnnl_forward_inference || prop == dnnl_forward_training || prop == dnnl_prop_kind_undef;
}

// `step`'s primitive created again under the calling thread's OpenMP count,
// or an empty primitive when that is not possible or not the same.
dnnl::primitive recreate(const DnnlProgram& program, const Step& step) {
  const_dnnl_primitive_desc_t original = nullptr;
  if (dnnl_primitive_get_primitive_desc(step.primitive.get(), &original) != dnnl_success || !original) return {};
  dnnl_primitive_kind_t kind = dnnl_undefined_primitive;
  if (dnnl_primitive_desc_query(original, dnnl_query_primitive_kind, 0, &kind) != dnnl_success) return {};
  if (!is_forward(original)) return {};
  const_dnnl_primitive_attr_t attr = nullptr;
  if (dnnl_primitive_desc_get_attr(original, &attr) != dnnl_success) return {};
  dnnl_primitive_desc_t raw = nullptr;
  if (kind == dnnl_reorder) {
    // A reorder has no operation descriptor: it is made from its two layouts.
    const dnnl_memory_desc_t* from = dnnl_primitive_desc_query_md(original, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t* to = dnnl_primitive_desc_query_md(original, dnnl_query_dst_md, 0);
    if (!from || !to) return {};
    if (dnnl_reorder_primitive_desc_create(&raw, from, program.engine.get(), to, program.engine.get(), attr) !=
        dnnl_success)
      return {};
  } else {
    const_dnnl_op_desc_t op_desc = nullptr;
    if (dnnl_primitive_desc_query(original, dnnl_query_op_d, 0, &op_desc) != dnnl_success || !op_desc) return {};
    if (dnnl_primitive_desc_create(&raw, op_desc, attr, program.engine.get(), nullptr) != dnnl_success) return {};
  }
  std::unique_ptr<dnnl_primitive_desc, decltype(&dnnl_primitive_desc_destroy)> created(raw, &dnnl_primitive_desc_destroy);
  // The same layouts for every argument the step passes, and room in the
  // program's scratchpad.
  for (const auto& [arg, slot] : step.args) {
    const dnnl_memory_desc_t* was = dnnl_primitive_desc_query_md(original, dnnl_query_exec_arg_md, arg);
    const dnnl_memory_desc_t* now = dnnl_primitive_desc_query_md(created.get(), dnnl_query_exec_arg_md, arg);
    if (!was || !now || !dnnl_memory_desc_equal(was, now)) return {};
  }
  const dnnl_memory_desc_t* scratchpad = dnnl_primitive_desc_query_md(created.get(), dnnl_query_scratchpad_md, 0);
  if (scratchpad && dnnl_memory_desc_get_size(scratchpad) > program.scratchpad_bytes) return {};
  return dnnl::primitive(created.get());
}

}  // namespace

std::vector<dnnl::primitive> primitives_for_threads(const DnnlProgram& program, int threads) {
  ScopedOmpThreads scope(threads);
  std::vector<dnnl::primitive> primitives(program.steps.size());
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const Step& step = program.steps[i];
    if (step.threads > 0) continue;  // created for a fixed count (one thread) already
    try {
      primitives[i] = recreate(program, step);
    } catch (const dnnl::error&) {
      primitives[i] = dnnl::primitive();  // keeps its own
    }
  }
  return primitives;
}

}  // namespace graft::dnnl_backend

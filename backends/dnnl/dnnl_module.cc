// Running a dnnl program. Each run takes one arena from the run's pool (its
// activations at planned offsets, then the largest primitive scratchpad),
// allocates the outputs from the pool and executes the primitives in order on
// a stream of its own. Converted weights are shared by all runs: each run
// compares the storage and version of every weight's sources with those the
// cached conversion was made from and converts again when they differ.
#include "dnnl_module.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <ostream>
#include <set>
#include <unordered_map>

#include "dnnl_reference_step.h"
#include "dnnl_shared_weights.h"
#include "dnnl_thread_variants.h"
#include "dnnl_threads.h"
#include "graft/core/error.h"
#include "graft/core/tensor_bytes_key.h"
#include "graft/backend/module_stream.h"

namespace graft::dnnl_backend {
namespace {

std::shared_ptr<void> aligned_buffer(size_t bytes) {
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (!p) fail(ErrorKind::internal, "dnnl backend: cannot allocate ", bytes, " bytes for a weight");
  return std::shared_ptr<void>(p, std::free);
}

}  // namespace

DnnlModule::DnnlModule(DnnlProgram program)
    : program_(std::move(program)),
      built_threads_(omp_get_max_threads()),
      last_use_sources_(program_.weights.size()),
      cache_(program_.weights.size()) {
  std::map<const Storage*, std::pair<size_t, size_t>> last;  // storage -> (weight, source) of its last read
  for (size_t w = 0; w < program_.weights.size(); ++w)
    for (size_t i = 0; i < program_.weights[w].sources.size(); ++i) {
      const WeightSource& s = program_.weights[w].sources[i];
      if (s.input < 0) last[s.constant.storage().get()] = {w, i};
    }
  for (const auto& [storage, use] : last)
    if (!program_.weights[use.first].identity) last_use_sources_[use.first].push_back(use.second);
}

DnnlModuleStats DnnlModule::stats() const {
  DnnlModuleStats s;
  s.activation_reorders = program_.activation_reorders;
  s.fused_nodes = program_.fused_nodes;
  s.weights = static_cast<int>(program_.weights.size());
  s.weight_conversions = conversions_.load();
  s.shared_conversions = shared_conversions_.load();
  s.arena_bytes = program_.arena_bytes;
  for (const Step& step : program_.steps) {
    if (step.reference) {
      ++s.reference_kernel_steps;
      continue;
    }
    ++s.primitives;
    s.serial_primitives += step.threads == 1;
    s.reference_primitives += step.implementation.rfind("ref:", 0) == 0;  // not "ref", oneDNN's gemm-based RNN
    s.jit_gemm_matmuls += step.implementation.rfind("gemm:jit", 0) == 0;
    s.winograd_convolutions += step.implementation.find("wino") != std::string::npos;
    s.gemm_convolutions += step.implementation.rfind("x64:gemm", 0) == 0;
    s.deconvolutions += step.primitive.get_kind() == dnnl::primitive::kind::deconvolution;
    const auto kind = step.primitive.get_kind();
    for (const auto& [arg, slot] : step.args)
      if (arg == DNNL_ARG_SRC && program_.slots[slot].desc.data_type() == dnnl::memory::data_type::u8) {
        s.int8_convolutions += kind == dnnl::primitive::kind::convolution;
        s.int8_matmuls += kind == dnnl::primitive::kind::matmul;
        s.uint8_pools += kind == dnnl::primitive::kind::pooling_v2 || kind == dnnl::primitive::kind::pooling;
      }
    for (const auto& [arg, slot] : step.args)
      s.requantizing_products +=
          (kind == dnnl::primitive::kind::convolution || kind == dnnl::primitive::kind::matmul) &&
          arg == DNNL_ARG_DST && program_.slots[slot].desc.data_type() == dnnl::memory::data_type::u8;
    for (const auto& [arg, slot] : step.args)
      s.uint8_adds += kind == dnnl::primitive::kind::binary && arg == DNNL_ARG_SRC_0 &&
                      program_.slots[slot].desc.data_type() == dnnl::memory::data_type::u8;
    for (const auto& [arg, slot] : step.args)
      s.uint8_concats += kind == dnnl::primitive::kind::concat && arg == DNNL_ARG_DST &&
                         program_.slots[slot].desc.data_type() == dnnl::memory::data_type::u8;
  }
  s.built_threads = built_threads_;
  std::lock_guard<std::mutex> lock(variants_mutex_);
  for (const auto& [threads, primitives] : variants_) {
    s.fewer_thread_counts.push_back(threads);
    int recreated = 0;
    for (const dnnl::primitive& p : *primitives) recreated += p ? 1 : 0;
    s.recreated_primitives.push_back(recreated);
  }
  return s;
}

void DnnlModule::check_inputs(std::span<const Tensor> inputs) const {
  if (inputs.size() != program_.input_slots.size())
    fail(ErrorKind::invalid_argument, "dnnl module: expected ", program_.input_slots.size(), " inputs, got ",
         inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const dnnl::memory::desc& d = program_.slots[program_.input_slots[i]].desc;
    const DType dtype = program_.input_dtypes[i];
    if (inputs[i].dtype() != dtype || inputs[i].nbytes() != d.get_size())
      fail(ErrorKind::invalid_argument, "dnnl module: input ", i, " is ", inputs[i].type_string(), ", not the ",
           dtype_name(dtype), " shape it was compiled for");
  }
}

std::vector<uint32_t> DnnlModule::storable_weights() const {
  std::vector<uint32_t> indices;
  for (size_t w = 0; w < program_.weights.size(); ++w) {
    const Weight& weight = program_.weights[w];
    bool constant = !weight.identity;
    for (const WeightSource& s : weight.sources) constant = constant && s.input < 0;
    if (constant) indices.push_back(static_cast<uint32_t>(w));
  }
  return indices;
}

void DnnlModule::save(std::ostream& out) const {
  std::vector<uint32_t> indices = storable_weights();
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    for (uint32_t w : indices) {
      converted(w, weight_sources(program_.weights[w], {}));
      release_sources_after(w);
    }
  }
  out << kSavedFormat;
  backend::ModuleWriter writer(out);
  writer.u32(static_cast<uint32_t>(indices.size()));
  for (uint32_t w : indices) writer.u32(w);
}

std::vector<Tensor> DnnlModule::saved_tensors() const {
  std::vector<Tensor> tensors;
  std::lock_guard<std::mutex> lock(cache_mutex_);
  for (uint32_t w : storable_weights()) {
    const Converted& c = converted(w, weight_sources(program_.weights[w], {}));
    size_t bytes = program_.weights[w].desc.get_size();
    std::shared_ptr<void> keep = c.buffer;
    auto storage = std::make_shared<Storage>(keep.get(), bytes, [keep] {});
    tensors.emplace_back(DType::uint8, Shape{static_cast<int64_t>(bytes)}, storage);
  }
  return tensors;
}

std::vector<Tensor> DnnlModule::superseded_constants() const {
  // A constant some step reads as it is (an identity weight) stays; so do
  // scalars (the program builder reads those while it builds) and every
  // source of a converted weight that has one of those among its sources:
  // re-converting it after a change needs them all.
  std::set<TensorBytesKey> read_directly;
  for (const Step& step : program_.steps)
    for (const auto& [arg, slot] : step.args) {
      const Slot& root = program_.slots[program_.slots[slot].root >= 0 ? program_.slots[slot].root : slot];
      if (root.kind != SlotKind::weight || !program_.weights[root.index].identity) continue;
      for (const WeightSource& s : program_.weights[root.index].sources)
        if (s.input < 0) read_directly.insert(tensor_bytes_key(s.constant));
    }
  std::vector<Tensor> superseded;
  std::set<TensorBytesKey> listed;
  for (uint32_t w : storable_weights()) {
    const Weight& weight = program_.weights[w];
    bool all = !weight.builder_reads_sources;
    for (const WeightSource& s : weight.sources)
      all = all && s.constant.numel() > 1 && !read_directly.count(tensor_bytes_key(s.constant));
    if (!all) continue;
    for (const WeightSource& s : weight.sources)
      if (listed.insert(tensor_bytes_key(s.constant)).second) superseded.push_back(s.constant);
  }
  return superseded;
}

void DnnlModule::restore_converted(std::span<const uint32_t> indices, std::span<const Tensor> weights) {
  if (indices.size() != weights.size())
    fail(ErrorKind::invalid_model, "dnnl module: lists ", indices.size(), " converted weights but ", weights.size(),
         " are stored");
  std::vector<uint32_t> storable = storable_weights();
  std::vector<bool> seen(program_.weights.size(), false);
  std::lock_guard<std::mutex> lock(cache_mutex_);
  for (size_t i = 0; i < indices.size(); ++i) {
    const uint32_t w = indices[i];
    if (!std::binary_search(storable.begin(), storable.end(), w) || seen[w])
      fail(ErrorKind::invalid_model, "dnnl module: stored converted weight ", w, " is not one this subgraph converts");
    seen[w] = true;
    const Weight& weight = program_.weights[w];
    const Tensor& t = weights[i];
    if (t.dtype() != DType::uint8 || t.nbytes() != weight.desc.get_size())
      fail(ErrorKind::invalid_model, "dnnl module: stored converted weight ", weight.label, " is ", t.type_string(),
           ", expected ", weight.desc.get_size(), " bytes");
    Converted c;
    for (const Tensor& source : weight_sources(weight, {})) {
      c.storages.push_back(source.storage().get());
      c.offsets.push_back(source.byte_offset());
      c.versions.push_back(source.version());
    }
    // Aliases the stored tensor's storage (the artifact's mapping): no copy.
    c.buffer = std::shared_ptr<void>(t.storage(), const_cast<void*>(t.raw_data()));
    cache_[w] = std::move(c);
  }
}

std::vector<Tensor> DnnlModule::weight_sources(const Weight& weight, std::span<const Tensor> inputs) const {
  std::vector<Tensor> sources;
  for (const WeightSource& s : weight.sources) sources.push_back(s.input >= 0 ? inputs[s.input] : s.constant);
  return sources;
}

const DnnlModule::Converted& DnnlModule::converted(size_t w, const std::vector<Tensor>& sources) const {
  const Weight& weight = program_.weights[w];
  Converted& c = cache_[w];
  bool fresh = c.buffer != nullptr && c.storages.size() == sources.size();
  for (size_t i = 0; fresh && i < sources.size(); ++i)
    fresh = c.storages[i] == sources[i].storage().get() && c.offsets[i] == sources[i].byte_offset() &&
            c.versions[i] == sources[i].version();
  if (!fresh) {
    Converted next;
    for (const Tensor& t : sources) {
      next.storages.push_back(t.storage().get());
      next.offsets.push_back(t.byte_offset());
      next.versions.push_back(t.version());
    }
    // Another module (another plan's, another shape's) may have converted
    // these sources to this layout already.
    const std::string key = SharedConversions::key_of(weight, sources);
    if (!key.empty())
      if (std::shared_ptr<void> shared = SharedConversions::global().find(key)) {
        next.buffer = std::move(shared);
        c = std::move(next);
        shared_conversions_.fetch_add(1);
        return c;
      }
    for (const Tensor& t : sources)
      if (t.storage()->is_placeholder())
        fail(ErrorKind::invalid_argument, "dnnl module: weight ", weight.label,
             " must be converted again (one of its sources changed), but this artifact stores a source of it only "
             "in converted form");
    // The fill writes every element: not zero-filled first.
    std::shared_ptr<void> plain;
    void* plain_bytes = const_cast<void*>(sources[0].raw_data());
    if (weight.fill) {
      plain = aligned_buffer(weight.plain.get_size());
      weight.fill(sources, plain.get());
      plain_bytes = plain.get();
    }
    next.buffer = aligned_buffer(weight.desc.get_size());
    dnnl::stream stream(program_.engine);
    dnnl::memory from(weight.plain, program_.engine, plain_bytes);
    dnnl::memory to(weight.desc, program_.engine, next.buffer.get());
    weight.convert.execute(stream, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
    stream.wait();
    if (!key.empty()) SharedConversions::global().insert(key, next.buffer);
    c = std::move(next);
    conversions_.fetch_add(1);
  }
  return c;
}

std::vector<void*> DnnlModule::prepare_weights(std::span<const Tensor> inputs,
                                               std::vector<std::shared_ptr<void>>& hold) const {
  std::vector<void*> pointers(program_.weights.size(), nullptr);
  std::unique_lock<std::mutex> lock(cache_mutex_, std::defer_lock);
  for (size_t w = 0; w < program_.weights.size(); ++w) {
    const Weight& weight = program_.weights[w];
    std::vector<Tensor> sources = weight_sources(weight, inputs);
    if (weight.identity) {
      pointers[w] = const_cast<void*>(sources[0].raw_data());
      continue;
    }
    if (!lock.owns_lock()) lock.lock();
    const Converted& c = converted(w, sources);
    hold.push_back(c.buffer);
    pointers[w] = c.buffer.get();
    release_sources_after(w);
  }
  return pointers;
}

void DnnlModule::release_sources_after(size_t w) const {
  for (size_t i : last_use_sources_[w]) {
    const Tensor& t = program_.weights[w].sources[i].constant;
    Storage& storage = *t.storage();
    if (storage.releasable() && !storage.is_placeholder() && t.byte_offset() == 0 && t.nbytes() == storage.nbytes())
      storage.release_to_placeholder();
  }
}

std::shared_ptr<const std::vector<dnnl::primitive>> DnnlModule::primitives_for(int threads) const {
  std::lock_guard<std::mutex> lock(variants_mutex_);
  auto& variant = variants_[threads];
  if (!variant) variant = std::make_shared<const std::vector<dnnl::primitive>>(primitives_for_threads(program_, threads));
  return variant;
}

namespace {

// A reference step between primitives: those before it have finished (the
// stream is in order and CPU primitives complete before execute returns).
template <typename MemoryOf>
void run_reference(const Step& step, MemoryOf& memory_of, backend::BufferPool& pool, int threads) {
  const ReferenceStep& reference = *step.reference;
  std::vector<void*> inputs(reference.node->inputs.size(), nullptr), outputs;
  for (const auto& [arg, slot] : step.args) {
    void* handle = memory_of(slot).get_data_handle();
    if (arg >= kReferenceOutputArgument) {
      outputs.resize(std::max(outputs.size(), static_cast<size_t>(arg - kReferenceOutputArgument) + 1));
      outputs[static_cast<size_t>(arg - kReferenceOutputArgument)] = handle;
    } else {
      inputs[static_cast<size_t>(arg)] = handle;
    }
  }
  run_reference_step(reference, inputs, outputs, pool, threads);
}

}  // namespace

std::vector<Tensor> DnnlModule::run(std::span<const Tensor> inputs, backend::ModuleRunContext& context) const {
  check_inputs(inputs);
  ScopedOmpThreads threads(context.num_threads);
  std::vector<std::shared_ptr<void>> hold;
  std::vector<void*> weights;
  std::vector<Tensor> outputs;
  try {
    weights = prepare_weights(inputs, hold);
  } catch (const dnnl::error& e) {
    fail(ErrorKind::internal, "dnnl module: weight conversion failed: ", e.what());
  }
  for (const Shape& shape : program_.output_shapes) outputs.push_back(context.pool.allocate(DType::float32, shape));
  size_t arena_total = program_.arena_bytes + program_.scratchpad_bytes;
  Tensor arena;
  if (arena_total > 0) arena = context.pool.allocate(DType::uint8, {static_cast<int64_t>(arena_total)});
  char* arena_base = arena_total > 0 ? static_cast<char*>(arena.raw_data()) : nullptr;

  std::vector<dnnl::memory> memories(program_.slots.size());
  auto memory_of = [&](int slot) -> dnnl::memory& {
    dnnl::memory& m = memories[slot];
    if (m) return m;
    const Slot& s = program_.slots[slot];
    const Slot& root = s.root >= 0 ? program_.slots[s.root] : s;
    void* handle = nullptr;
    switch (root.kind) {
      case SlotKind::arena: handle = arena_base + root.offset; break;
      case SlotKind::input: handle = const_cast<void*>(inputs[root.index].raw_data()); break;
      case SlotKind::output: handle = outputs[root.index].raw_data(); break;
      case SlotKind::weight: handle = weights[root.index]; break;
    }
    m = dnnl::memory(s.desc, program_.engine, static_cast<char*>(handle) + s.byte_offset);
    return m;
  };
  try {
    dnnl::stream stream(program_.engine);
    std::unordered_map<int, dnnl::memory> args;
    const int run_threads = omp_get_max_threads();
    // A run on fewer threads than the program was built for (cores taken by
    // other processes) runs every forward primitive in a form made again for
    // its count, where one could be made (dnnl_thread_variants.h: oneDNN
    // 2.6's convolutions, matmuls, jit reorders and softmaxes keep the thread
    // count they were created with); the other steps run as built.
    std::shared_ptr<const std::vector<dnnl::primitive>> fewer;
    if (run_threads < built_threads_) fewer = primitives_for(run_threads);
    int current_threads = run_threads;
    for (size_t index = 0; index < program_.steps.size(); ++index) {
      const Step& step = program_.steps[index];
      // A whole network can be one dnnl subgraph: deadlines and cancellation
      // are checked between its primitives too, not only around it.
      if (index > 0 && context.limits && backend::run_limits_reached(*context.limits)) {
        stream.wait();
        backend::fail_run_limits(*context.limits, " before primitive " + std::to_string(index + 1) + " of " +
                                                      std::to_string(program_.steps.size()) + " of a dnnl subgraph");
      }
      int step_threads = step.threads > 0 ? step.threads : run_threads;
      if (step_threads != current_threads) {
        omp_set_num_threads(step_threads);
        current_threads = step_threads;
      }
      if (step.reference) {
        run_reference(step, memory_of, context.pool, current_threads);
        continue;
      }
      args.clear();
      for (const auto& [arg, slot] : step.args) args.emplace(arg, memory_of(slot));
      if (step.scratchpad.get_size() > 0)
        args.emplace(DNNL_ARG_SCRATCHPAD,
                     dnnl::memory(step.scratchpad, program_.engine, arena_base + program_.arena_bytes));
      const dnnl::primitive& primitive = fewer && (*fewer)[index] ? (*fewer)[index] : step.primitive;
      primitive.execute(stream, args);
    }
    stream.wait();
  } catch (const dnnl::error& e) {
    fail(ErrorKind::internal, "dnnl module: a primitive failed: ", e.what());
  }
  for (Tensor& t : outputs) t.mark_modified();
  return outputs;
}

}  // namespace graft::dnnl_backend

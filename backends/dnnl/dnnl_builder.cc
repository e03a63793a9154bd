// Builder: the DnnlProgram under construction. It gives every value of the
// subgraph a slot (module inputs are plain; constants become identity
// weights), makes views (a reshape, a transpose, a slice: another descriptor
// over the same bytes) and conversions between layouts, each made once per
// (slot, layout) and reused, and appends the steps. Also the helpers over
// oneDNN memory descriptors that every emitter uses.
#include "dnnl_builder.h"

#include <cstring>

#include "dnnl_threads.h"
#include "graft/ir/updated_constant.h"
#include "graft/ops/quantized_weight.h"

namespace graft::dnnl_backend {

using dnnl::memory;
using ir::Entry;
using ir::OpId;

memory::dims row_major_strides(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

memory::desc plain_desc(const Dims& dims) {
  return memory::desc(dims, memory::data_type::f32, row_major_strides(dims));
}
// Size-1 dimensions address nothing, but oneDNN compares strides when it
// matches formats, and a transpose that only moves a size-1 dimension (batch
// 1) must still read as the plain layout it is; otherwise a binary op
// between it and a plain tensor falls back to oneDNN's reference
// implementation (100x slower).
memory::desc strided_desc(const Dims& dims, Dims strides) {
  for (size_t i = dims.size(); i-- > 0;)
    if (dims[i] == 1) strides[i] = i + 1 < dims.size() ? strides[i + 1] * dims[i + 1] : 1;
  return memory::desc(dims, memory::data_type::f32, strides);
}
memory::desc any_desc(const Dims& dims) { return memory::desc(dims, memory::data_type::f32, memory::format_tag::any); }

Dims dims_of(const ir::ValueType& type) {
  Dims dims;
  for (const ir::Dim& d : type.dims) dims.push_back(d.value);
  if (dims.empty()) dims.push_back(1);
  return dims;
}

Dims expand_rank(Dims dims, size_t rank) {
  while (dims.size() < rank) dims.insert(dims.begin(), 1);
  return dims;
}

int64_t product(const Dims& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t d = begin; d < end; ++d)
    if (__builtin_mul_overflow(n, dims[d], &n))
      fail(ErrorKind::resource_exhausted, "a tensor of dimensions ", shape_to_string(Shape(dims.begin(), dims.end())),
           " has more elements than 64 bits count");
  return n;
}

bool is_plain(const memory::desc& desc) { return desc == plain_desc(desc.dims()); }

Dims strides_of(const memory::desc& desc) {
  const auto& blocking = desc.data.format_desc.blocking;
  return Dims(blocking.strides, blocking.strides + desc.data.ndims);
}

std::optional<Dims> reshaped_strides(const Dims& from, const Dims& strides, const Dims& to) {
  // Runs of dimensions that step through memory as one (an outer dimension's
  // stride is the inner one's extent times its stride): (extent, innermost stride).
  std::vector<std::pair<int64_t, int64_t>> runs;
  for (size_t d = 0; d < from.size(); ++d) {
    if (from[d] == 0) return std::nullopt;
    if (from[d] == 1) continue;
    if (!runs.empty() && runs.back().second == strides[d] * from[d]) {
      runs.back().first *= from[d];
      runs.back().second = strides[d];
    } else {
      runs.push_back({from[d], strides[d]});
    }
  }
  // Each run is split into consecutive dimensions of `to`, innermost last.
  Dims result(to.size(), 1);
  size_t next = to.size();
  for (size_t r = runs.size(); r-- > 0;) {
    int64_t covered = 1;
    while (covered < runs[r].first) {
      if (next == 0) return std::nullopt;
      --next;
      result[next] = runs[r].second * covered;
      covered *= to[next];
    }
    if (covered != runs[r].first) return std::nullopt;
  }
  while (next > 0) {  // leading size-1 dimensions: the stride a row-major layout gives them
    if (to[--next] != 1) return std::nullopt;
    result[next] = next + 1 < to.size() ? result[next + 1] * to[next + 1] : 1;
  }
  return result;
}

bool is_unblocked(const memory::desc& desc) {
  return desc.data.format_kind == dnnl_blocked && desc.data.format_desc.blocking.inner_nblks == 0 &&
         desc.data.offset0 == 0;
}

bool on_reference_code(const dnnl::primitive_desc_base& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}

bool is_constant(const ir::Node& n) { return n.op() == OpId::Constant; }
bool is_input(const ir::Node& n) { return n.op() == OpId::Input; }
bool is_weight_source(const ir::Node& n) { return is_constant(n) || is_input(n) || ops::is_quantized_weight(n); }
bool is_scalar_constant(const ir::Node& n) {
  return is_constant(n) && n.constant_value.numel() == 1 && !ir::is_updated_in_place(n);
}

Builder::Builder(const ir::Graph& graph) : graph_(graph), indexed_(graph), serial_limit_(serial_step_microseconds()) {
  program_.engine = dnnl::engine(dnnl::engine::kind::cpu, 0);
  entry_slot_.assign(indexed_.num_entries(), -1);
  emitted_.assign(indexed_.num_nodes(), false);
  is_output_.assign(indexed_.num_entries(), false);
  for (Entry e : indexed_.outputs()) is_output_[indexed_.entry_id(e)] = true;
  for (uint32_t id = 0; id < indexed_.num_nodes(); ++id) {
    const OpId op = indexed_.node(id).op();
    trains_convolutions_ = trains_convolutions_ || op == OpId::ConvInputGrad || op == OpId::ConvWeightGrad;
  }
}

void Builder::bind_inputs() {
  for (size_t i = 0; i < graph_.inputs().size(); ++i) {
    const ir::Node& in = *graph_.inputs()[i];
    const ir::ValueType& type = in.output_types[0];
    const Dims dims = dims_of(type);
    memory::desc desc = plain_desc(dims);
    if (type.dtype != DType::float32) {
      const int64_t bytes = product(dims, 0, dims.size()) * static_cast<int64_t>(dtype_size(type.dtype));
      desc = memory::desc({bytes}, memory::data_type::u8, memory::format_tag::a);
    }
    int slot = add_slot(desc, SlotKind::input, static_cast<int>(i));
    program_.input_slots.push_back(slot);
    program_.input_dtypes.push_back(type.dtype);
    entry_slot_[indexed_.entry_id(indexed_.id_of(in), 0)] = slot;
  }
}

int Builder::slot_of(Entry e) {
  uint32_t id = indexed_.entry_id(e);
  if (entry_slot_[id] >= 0) return entry_slot_[id];
  const ir::Node& n = indexed_.node(e.node_id);
  if (!is_constant(n) && !ops::is_quantized_weight(n))
    fail(ErrorKind::internal, "dnnl backend: value of ", n.describe(), " used before it is computed");
  Weight w;
  w.sources = {source_of(e)};
  w.plain = w.desc = plain_desc(dims_of(n.output_types[0]));
  w.identity = true;
  w.label = n.name;
  entry_slot_[id] = add_weight(std::move(w));
  return entry_slot_[id];
}

bool Builder::holds_other_value(int slot, Entry except) const {
  for (size_t i = 0; i < entry_slot_.size(); ++i)
    if (entry_slot_[i] == slot && i != indexed_.entry_id(except)) return true;
  return false;
}

int Builder::add_slot(const memory::desc& desc, SlotKind kind, int index) {
  // A buffer of its own starts at its first byte; only views carry offsets.
  GRAFT_CHECK(desc.data.offset0 == 0, "dnnl: a new buffer with an offset descriptor");
  Slot s;
  s.desc = desc;
  s.kind = kind;
  s.index = index;
  program_.slots.push_back(s);
  converted_.emplace_back();
  return static_cast<int>(program_.slots.size()) - 1;
}

int Builder::view(int slot, const memory::desc& desc, bool exact) {
  if (exact ? std::memcmp(&program_.slots[slot].desc.data, &desc.data, sizeof(desc.data)) == 0
            : program_.slots[slot].desc == desc)
    return slot;
  GRAFT_CHECK(desc.data.offset0 != 0 || desc.get_size() <= program_.slots[slot].desc.get_size(),
              "dnnl view larger than its slot");
  int root = program_.slots[slot].root >= 0 ? program_.slots[slot].root : slot;
  Slot s;
  s.desc = desc;
  // The descriptor's offset becomes the view's byte offset (views of views add up).
  s.byte_offset = program_.slots[slot].byte_offset + static_cast<size_t>(desc.data.offset0) * sizeof(float);
  s.desc.data.offset0 = 0;
  s.kind = program_.slots[root].kind;
  s.index = program_.slots[root].index;
  s.root = root;
  program_.slots.push_back(s);
  converted_.emplace_back();
  int v = static_cast<int>(program_.slots.size()) - 1;
  program_.slots[root].has_views = true;
  return v;
}

void Builder::place_in(int root, int parent, size_t byte_offset) {
  std::vector<Slot>& slots = program_.slots;
  GRAFT_CHECK(slots[root].root < 0 && slots[root].kind == SlotKind::arena && slots[parent].root < 0 &&
                  slots[parent].kind == SlotKind::arena && root != parent,
              "dnnl: placing a slot that is not an arena buffer of its own");
  for (Slot& s : slots)
    if (s.root == root) {
      s.root = parent;
      s.byte_offset += byte_offset;
    }
  slots[root].root = parent;
  slots[root].byte_offset = byte_offset;
  slots[root].has_views = false;
  slots[parent].has_views = true;
}

int Builder::as_desc(int slot, const memory::desc& desc, const std::string& label) {
  if (program_.slots[slot].desc == desc) return slot;
  for (const auto& [d, s] : converted_[slot])
    if (d == desc) return s;
  int result;
  const Slot& from = program_.slots[slot];
  if (from.kind == SlotKind::weight) {
    const Weight& source = program_.weights[from.index];
    Weight w;
    w.sources = source.sources;
    w.plain = source.identity ? source.plain : source.desc;
    w.desc = desc;
    w.label = label;
    GRAFT_CHECK(source.identity, "dnnl: converting a converted weight");
    result = add_weight(std::move(w));
  } else {
    result = add_slot(desc);
    add_reorder(slot, result, label);
  }
  converted_[slot].push_back({desc, result});
  return result;
}

int Builder::as_plain(int slot, const std::string& label) {
  return as_desc(slot, plain_desc(program_.slots[slot].desc.dims()), label);
}

int Builder::dense(int slot, const std::string& label) {
  const memory::desc& d = program_.slots[slot].desc;
  int64_t elements = product(d.dims(), 0, d.dims().size());
  if (d.data.offset0 == 0 && d.get_size() == static_cast<size_t>(elements) * sizeof(float)) return slot;
  return as_plain(slot, label);
}

int Builder::operand_like(Entry e, memory::desc like, const std::string& label) {
  const Dims d = expand_rank(dims(e), like.dims().size());
  int slot = slot_of(e);
  if (d == like.dims()) return view(as_desc(slot, like, label), like, true);
  return view(as_plain(slot, label), plain_desc(d));
}

dnnl::primitive_attr Builder::new_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void Builder::add_reorder(int from, int to, const std::string& label) {
  dnnl::reorder::primitive_desc pd(program_.engine, program_.slots[from].desc, program_.engine, program_.slots[to].desc,
                                   new_attr());
  if (program_.slots[from].desc != program_.slots[to].desc) ++program_.activation_reorders;
  add_step(dnnl::reorder(pd), pd, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}, "reorder for " + label);
}

void Builder::add_step(dnnl::primitive primitive, const dnnl::primitive_desc_base& pd,
                       std::vector<std::pair<int, int>> args, const std::string& label) {
  Step s;
  s.primitive = std::move(primitive);
  s.args = std::move(args);
  s.scratchpad = pd.scratchpad_desc();
  s.label = label;
  s.implementation = pd.impl_info_str();
  program_.steps.push_back(std::move(s));
}

void Builder::add_reference_step(std::shared_ptr<const ReferenceStep> reference, std::vector<std::pair<int, int>> args,
                                 const std::string& label) {
  Step s;
  s.reference = std::move(reference);
  s.args = std::move(args);
  s.label = label;
  s.implementation = "graft reference kernel";
  program_.steps.push_back(std::move(s));
}

void Builder::with_threads_for(double microseconds, const std::function<void()>& emit) {
  size_t first = program_.steps.size();
  const bool serial = microseconds < serial_limit_;
  {
    ScopedOmpThreads threads(serial ? 1 : 0);
    emit();
  }
  if (serial)
    for (size_t i = first; i < program_.steps.size(); ++i) program_.steps[i].threads = 1;
}

}  // namespace graft::dnnl_backend

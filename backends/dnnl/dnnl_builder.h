/// \file
/// What the files of compile() share: helpers over oneDNN memory descriptors
/// and Builder, the DnnlProgram under construction (its slots, steps and
/// weights, and the slot of each value of the subgraph). The driver
/// (dnnl_program.cc), the post-op fusion and the emitters of each op family
/// (dnnl_conv.cc, dnnl_matmul.cc, ...) add to the program through it.
/// Internal to backends/dnnl.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dnnl_program.h"
#include "graft/ir/graph.h"
#include "graft/ir/indexed_graph.h"

namespace graft::dnnl_backend {

using Dims = dnnl::memory::dims;

/// Row-major strides of `dims`.
Dims row_major_strides(const Dims& dims);
/// A plain (row-major) float32 descriptor.
dnnl::memory::desc plain_desc(const Dims& dims);
/// A strided float32 descriptor whose size-1 dimensions carry the strides a
/// row-major layout would give them, so that a view that only moves a size-1
/// dimension still reads as the plain layout it is.
dnnl::memory::desc strided_desc(const Dims& dims, Dims strides);
/// A float32 descriptor that lets the primitive pick the layout (format_tag::any).
dnnl::memory::desc any_desc(const Dims& dims);
/// The extents of a concrete value type; {1} for a scalar.
Dims dims_of(const ir::ValueType& type);
/// `dims` with leading ones up to `rank`.
Dims expand_rank(Dims dims, size_t rank);
/// The product of dims[begin, end).
int64_t product(const Dims& dims, size_t begin, size_t end);
/// Whether `desc` is the plain layout of its dims.
bool is_plain(const dnnl::memory::desc& desc);
/// The outer strides of a blocked-format descriptor, one per dimension.
Dims strides_of(const dnnl::memory::desc& desc);
/// The strides that read a strided (unblocked) layout of extents `from`
/// with `strides` as extents `to` (same number of elements) without moving
/// data, as a reshape of a plain layout would; nullopt when no strides do
/// (the reshape merges dimensions that are not adjacent in memory).
std::optional<Dims> reshaped_strides(const Dims& from, const Dims& strides, const Dims& to);
/// Plain or strided (any order of dimensions), without inner blocks.
bool is_unblocked(const dnnl::memory::desc& desc);
/// Whether oneDNN picked its reference code ("ref:any", ...) for `pd`:
/// correct but 10-100x slower than its jit kernels.
bool on_reference_code(const dnnl::primitive_desc_base& pd);

/// Whether `n` is a Constant node.
bool is_constant(const ir::Node& n);
/// Whether `n` is a graph input.
bool is_input(const ir::Node& n);
/// Whether `n` may be a weight's source: a Constant, a graph input, or a
/// quantized weight (ops::is_quantized_weight: int8 products read its int8
/// values, anything else its float32 values, dequantized once at build time).
bool is_weight_source(const ir::Node& n);
/// Whether `n` is a one-element Constant whose value a primitive may hold as
/// a literal (not one a training step updates in place: ir::is_updated_in_place).
bool is_scalar_constant(const ir::Node& n);

/// The program under construction for one subgraph. Slots are indices into
/// program().slots; a reference to a slot's descriptor stays valid only until
/// the next slot is added.
class Builder {
 public:
  explicit Builder(const ir::Graph& graph);

  /// Gives module input i a plain slot (float32), or a slot of its bytes
  /// (other dtypes: only reference steps read them).
  void bind_inputs();
  /// The finished program (the builder is left empty).
  DnnlProgram take_program() { return std::move(program_); }

  // ---- the subgraph ----
  const ir::IndexedGraph& graph() const { return indexed_; }
  /// Whether each entry (by entry id) is a subgraph output.
  const std::vector<bool>& output_entries() const { return is_output_; }
  bool is_output(ir::Entry e) const { return is_output_[indexed_.entry_id(e)]; }
  Dims dims(ir::Entry e) const { return dims_of(indexed_.node(e.node_id).output_types[e.index]); }
  ir::Entry input(const ir::Node& n, size_t i) const { return indexed_.entry_of(n.inputs[i]); }
  bool has_input(const ir::Node& n, size_t i) const { return i < n.inputs.size() && n.inputs[i]; }
  bool emitted(uint32_t node) const { return emitted_[node]; }
  /// Whether the subgraph holds convolution gradients (a training step's
  /// backward): its forward convolutions are then created for training, so
  /// that they pick the layouts the backward primitives read.
  bool trains_convolutions() const { return trains_convolutions_; }
  void mark_emitted(uint32_t node) { emitted_[node] = true; }

  // ---- the program ----
  DnnlProgram& program() { return program_; }
  const dnnl::engine& engine() const { return program_.engine; }
  const Slot& slot(int s) const { return program_.slots[s]; }
  const dnnl::memory::desc& desc(int s) const { return program_.slots[s].desc; }

  // ---- values ----
  /// The slot of a value; constants become identity weights in plain layout.
  int slot_of(ir::Entry e);
  /// Records that output `output` of node `node` lives in `slot`.
  void set_slot(uint32_t node, uint32_t output, int slot) { entry_slot_[indexed_.entry_id(node, output)] = slot; }
  /// Marks a value dead: its slot has been handed to another value.
  void forget(ir::Entry e) { entry_slot_[indexed_.entry_id(e)] = -1; }
  /// Whether a value other than `except` lives in `slot`.
  bool holds_other_value(int slot, ir::Entry except) const;

  // ---- slots ----
  int add_slot(const dnnl::memory::desc& desc, SlotKind kind = SlotKind::arena, int index = -1);
  /// `slot` read through `desc` (a view of its bytes, unless the descriptors
  /// are equal). oneDNN calls two descriptors equal when they lay out the
  /// same bytes (cdab and acdb of a batch of 1); `exact` makes a view unless
  /// `desc` is spelled the same, for primitives whose fast paths compare how
  /// formats are spelled.
  int view(int slot, const dnnl::memory::desc& desc, bool exact = false);
  /// Makes the arena buffer `root` (with its views) part of the arena buffer
  /// `parent`, from `byte_offset` on: the steps that write and read `root`
  /// then write and read those bytes of `parent` (a Concat's inputs placed
  /// in its destination). Nothing may write `root`'s value again afterwards:
  /// it is no longer a root, which keeps in-place sums out of it.
  void place_in(int root, int parent, size_t byte_offset);
  /// `slot` converted to `desc` (a cached reorder, or a cached weight conversion).
  int as_desc(int slot, const dnnl::memory::desc& desc, const std::string& label);
  /// `slot` in plain layout.
  int as_plain(int slot, const std::string& label);
  /// `slot` itself when its descriptor covers its bytes densely from offset 0
  /// (plain, blocked, or a permutation), else a plain copy: the views of a
  /// Slice, Split or Gather, whose descriptors primitives would copy to their
  /// destinations.
  int dense(int slot, const std::string& label);
  /// The second operand of a binary op whose first is read through `like`:
  /// of the same shape, in that layout (spelled as `like` is); broadcast, a
  /// plain view of the rank of `like`. `like` is a copy: adding slots moves
  /// the slot descriptors it may come from.
  int operand_like(ir::Entry e, dnnl::memory::desc like, const std::string& label);
  /// Records that `converted` holds the value of `slot` in another layout
  /// (a copy made elsewhere: an input copied into a Concat's destination).
  void record_conversion(int slot, int converted) { converted_[slot].push_back({desc(converted), converted}); }
  /// The slots that hold `slot`'s value converted to other layouts.
  std::vector<int> conversions_of(int slot) const {
    std::vector<int> slots;
    for (const auto& [d, s] : converted_[slot]) slots.push_back(s);
    return slots;
  }
  /// Drops the cached conversions of `slot` (its value was overwritten).
  void forget_conversions(int slot) { converted_[slot].clear(); }

  // ---- batch statistics ----
  /// The slots of the batch mean and variance that a training-mode
  /// BatchNormalization computed over the value `x`, so that the gradient
  /// over the same `x` reads them instead of computing them again; {-1, -1}
  /// when none did.
  std::pair<int, int> batch_statistics(ir::Entry x) const {
    auto it = batch_statistics_.find(indexed_.entry_id(x));
    return it == batch_statistics_.end() ? std::pair{-1, -1} : it->second;
  }
  void set_batch_statistics(ir::Entry x, int mean, int variance) {
    batch_statistics_[indexed_.entry_id(x)] = {mean, variance};
  }

  // ---- steps ----
  /// Primitive attributes are handles: every primitive gets its own, with a
  /// user-mode scratchpad.
  static dnnl::primitive_attr new_attr();
  void add_reorder(int from, int to, const std::string& label);
  void add_step(dnnl::primitive primitive, const dnnl::primitive_desc_base& pd, std::vector<std::pair<int, int>> args,
                const std::string& label);
  /// Appends a step that runs a node on graft's reference kernel (dnnl_reference_step.h).
  void add_reference_step(std::shared_ptr<const ReferenceStep> reference, std::vector<std::pair<int, int>> args,
                          const std::string& label);
  /// Runs `emit`, which adds the steps of one node or group, with one OpenMP
  /// thread when `microseconds` (its estimated single-thread time) is below
  /// serial_step_microseconds(): the steps are then created for, and run
  /// with, one thread; else with the compile's.
  void with_threads_for(double microseconds, const std::function<void()>& emit);

  // ---- weights (dnnl_weights.cc) ----
  /// Adds a weight (and the reorder that converts it, unless identity); returns its slot.
  int add_weight(Weight w);
  /// Where the weight value `e` comes from: a constant or a module input.
  WeightSource source_of(ir::Entry e);
  /// Whether `e` may be a weight's source (a constant or a module input).
  bool is_source(ir::Entry e) const;
  /// The constant `e` broadcast (numpy rules) to `out`, as a weight in plain layout.
  int broadcast_constant(ir::Entry e, const Dims& out, const std::string& label);

 private:
  const ir::Graph& graph_;
  ir::IndexedGraph indexed_;
  DnnlProgram program_;
  const double serial_limit_;  // read once per compile (the wait policy)
  std::vector<int> entry_slot_;
  std::vector<std::vector<std::pair<dnnl::memory::desc, int>>> converted_;
  std::vector<bool> emitted_;
  std::vector<bool> is_output_;
  bool trains_convolutions_ = false;
  std::map<uint32_t, std::pair<int, int>> batch_statistics_;  // entry id of x -> (mean, variance) slots
};

}  // namespace graft::dnnl_backend

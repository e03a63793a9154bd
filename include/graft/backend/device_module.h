/// \file
/// The compiled module of a device backend whose nodes each run as one
/// kernel (the OpenCL and CUDA backends): the lifecycle they share, with the
/// launching left to the backend (DESIGN.md section 8).
///
///   create   at plan time: BatchNormalization after a Conv is folded into
///            it (as dnnl does on the CPU), the body's pointwise chains are
///            fused (one kernel each), then the backend creates every node's
///            kernel from its concrete types, or refuses naming the node;
///   compile  the first run of a body: the backend builds its kernels'
///            programs, and the body's constants are uploaded once and kept
///            resident; when a weight of the model changes (its version) the
///            body is folded, fused and uploaded again at the next run, while
///            runs still holding the old body finish with it;
///   run      every kernel queued on the run's queue through the backend's
///            launcher; values die into the pool as soon as their last reader
///            is queued. Nothing waits on the host.
///
/// Inputs and outputs are device tensors (device_tensor.h): placement puts
/// copies at the segment's boundaries, not the module.
#pragma once

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graft/backend/compiled_module.h"
#include "graft/backend/device_api.h"
#include "graft/core/device.h"
#include "graft/ir/graph.h"

namespace graft::backend {

/// One node's kernel on a device, as a DeviceModule holds it; a backend's
/// kernel interface derives from it (compile and enqueue are its own).
class DeviceNodeKernel {
 public:
  virtual ~DeviceNodeKernel() = default;
  /// The input that output 0 is a view of (Reshape, Flatten, Squeeze,
  /// Unsqueeze: same bytes, another shape), or -1. When set, the module
  /// passes that input's buffer as output 0 and the kernel may do nothing.
  virtual int aliased_input() const { return -1; }
};

/// A run's launches on one queue: the backend's launch context (scratch
/// memory given back once the queued work is done) and its device views.
class DeviceKernelLauncher {
 public:
  virtual ~DeviceKernelLauncher() = default;
  /// Queues `kernel`'s work: one device tensor per node input (undefined for
  /// an absent optional input; constants are resident device tensors too) and
  /// one per output, allocated by the module from the node's output types.
  /// Must not wait on the host.
  virtual void enqueue(const DeviceNodeKernel& kernel, std::span<const Tensor> inputs,
                       std::span<const Tensor> outputs) = 0;
};

/// The launcher of a device whose kernels take views of device tensors (a
/// device pointer, a cl_mem): `Context` is one run's launch context (its
/// scratch memory lives until the run's work is done), `view_of` makes a
/// `View` of a device tensor, and `Kernel::enqueue(context, input views,
/// output views)` queues a node's work.
template <typename Context, typename View, typename Kernel, View (*view_of)(const Tensor&)>
class ViewLauncher final : public DeviceKernelLauncher {
 public:
  template <typename... ContextArgs>
  explicit ViewLauncher(ContextArgs&&... context_args) : context_(std::forward<ContextArgs>(context_args)...) {}

  void enqueue(const DeviceNodeKernel& kernel, std::span<const Tensor> inputs,
               std::span<const Tensor> outputs) override {
    in_views_.clear();
    for (const Tensor& t : inputs) in_views_.push_back(view_of(t));
    out_views_.clear();
    for (const Tensor& t : outputs) out_views_.push_back(view_of(t));
    static_cast<const Kernel&>(kernel).enqueue(context_, in_views_, out_views_);
  }

 private:
  Context context_;
  std::vector<View> in_views_, out_views_;
};

/// Weight uploads (constants copied to a device) by every DeviceModule of
/// the process on devices of `type`: tests check that many runs upload each
/// weight once.
uint64_t weight_uploads(DeviceType type);

class DeviceModule : public CompiledModule {
 public:
  std::vector<Tensor> run(std::span<const Tensor> inputs, ModuleRunContext& context) const final;
  /// Saves the module's magic, format version and device id only: an artifact
  /// keeps the subgraph, from which the loader creates the kernels again.
  void save(std::ostream& out) const final;
  /// Reads what save() wrote for a module of `magic` (a loader's first step):
  /// the device id. Throws invalid_model naming `type_key` on bad bytes.
  static int load_device_index(std::istream& in, std::span<const Tensor> tensors, std::string_view magic,
                               std::string_view type_key);

  /// Kernels (after folding and fusion) the module queues per run.
  size_t num_kernels() const;
  Device device() const { return device_; }

 protected:
  /// `magic`: four bytes naming the module type in artifacts ("GOCL").
  /// Derived constructors call create_kernels() once their hooks can run.
  DeviceModule(const ir::Graph& subgraph, Device device, std::string_view magic);
  /// Folds, fuses and creates the body's kernels; throws unsupported naming
  /// the node when one cannot run on the device.
  void create_kernels();

  /// Why `node` (concrete types) cannot run on the device; "" when it can.
  virtual std::string kernel_support(const ir::Node& node) const = 0;
  /// The kernel of a supported node.
  virtual std::unique_ptr<DeviceNodeKernel> create_kernel(const ir::Node& node) const = 0;
  /// Builds `kernel`'s programs: once per body, before its first enqueue.
  virtual void compile_kernel(DeviceNodeKernel& kernel) const = 0;
  /// A launcher for one run's kernels on `queue`.
  virtual std::unique_ptr<DeviceKernelLauncher> start_launches(DeviceQueue& queue) const = 0;

 private:
  /// The body as it runs (folded, fused), its kernels and resident weights;
  /// replaced as a whole when a weight of the original subgraph changes.
  struct State;
  std::shared_ptr<State> make_state() const;
  /// The current state, made again first when a weight changed.
  std::shared_ptr<State> current_state() const;

  std::unique_ptr<ir::Graph> original_;  ///< the subgraph as compiled
  Device device_;
  std::string magic_;
  mutable std::mutex state_mutex_;
  mutable std::shared_ptr<State> state_;
};

}  // namespace graft::backend

#include "graft/backend/executor.h"

#include "graft/backend/backend.h"
#include "graft/backend/device_tensor.h"
#include "graft/core/kernel_interrupt.h"
#include "graft/core/parallel.h"

namespace graft::backend {

namespace {

// How the message of a run stopped inside a kernel ends; the executor adds the node.
constexpr char kInsideKernel[] = " inside";

// The check long kernels make (KernelInterrupt): `state` is the run's RunLimits.
void stop_inside_kernel(const void* state) {
  const RunLimits& limits = *static_cast<const RunLimits*>(state);
  if (run_limits_reached(limits)) fail_run_limits(limits, kInsideKernel);
}

}  // namespace

/// The run's queues, one per device, made on first use. The host waits for
/// all of them before the run returns (and, should it throw, as they are
/// destroyed).
class RunQueues {
 public:
  /// Profiled queues (device timestamps) when `profiling`.
  explicit RunQueues(bool profiling) : profiling_(profiling) {}
  const std::shared_ptr<DeviceQueue>& on(Device device) {
    for (auto& [d, q] : queues_)
      if (d == device) return q;
    DeviceAPI& api = device_api(device.type);
    queues_.emplace_back(device, std::shared_ptr<DeviceQueue>(profiling_ ? api.create_profiled_queue(device.id)
                                                                         : api.create_queue(device.id)));
    return queues_.back().second;
  }
  void synchronize_all() {
    for (auto& [d, q] : queues_) device_api(d.type).synchronize(*q);
  }

 private:
  bool profiling_ = false;
  std::vector<std::pair<Device, std::shared_ptr<DeviceQueue>>> queues_;
};

Executor::Executor(const ir::Graph& graph) : Executor(graph, ModuleTable{}) {}

Executor::Executor(const ir::Graph& graph, ModuleTable modules)
    : graph_(graph), indexed_(graph), modules_(std::move(modules)) {
  const size_t entries = indexed_.num_entries();
  last_use_.assign(entries, ir::Entry::kAbsent);
  keep_.assign(entries, false);
  input_position_.assign(indexed_.num_nodes(), -1);
  for (uint32_t id = 0; id < indexed_.num_nodes(); ++id) {
    const ir::Node& n = indexed_.node(id);
    if (n.schema().category == ir::OpCategory::source)
      for (int k = 0; k < n.num_outputs(); ++k) keep_[indexed_.entry_id(id, static_cast<uint32_t>(k))] = true;
    for (const ir::Entry& e : indexed_.inputs(id))
      if (e.present()) last_use_[indexed_.entry_id(e)] = id;
  }
  for (const ir::Entry& e : indexed_.outputs()) keep_[indexed_.entry_id(e)] = true;
  sync_after_.assign(indexed_.num_nodes(), false);
  for (uint32_t id = 0; id < indexed_.num_nodes(); ++id)
    if (indexed_.node(id).op() == ir::OpId::CopyToHost)
      sync_after_[id] = last_use_[indexed_.entry_id(id, 0)] != ir::Entry::kAbsent;
  const auto& inputs = graph.inputs();
  for (size_t i = 0; i < inputs.size(); ++i) input_position_[indexed_.id_of(*inputs[i])] = static_cast<int32_t>(i);
  find_constants_updated_in_place();
}

void Executor::find_constants_updated_in_place() {
  output_may_overwrite_input_.assign(indexed_.num_nodes(), {});
  for (uint32_t id = 0; id < indexed_.num_nodes(); ++id) {
    const ir::Node& constant = indexed_.node(id);
    if (constant.op() != ir::OpId::Constant || !constant.attributes.has(kUpdatedByAttribute)) continue;
    const std::string next = constant.attributes.get_string(kUpdatedByAttribute, "");
    const uint32_t entry = indexed_.entry_id(id, 0);
    const uint32_t reader = last_use_[entry];
    if (reader == ir::Entry::kAbsent) continue;
    for (size_t k = 0; k < graph_.output_names().size(); ++k) {
      const ir::Entry& out = indexed_.outputs()[k];
      if (graph_.output_names()[k] != next || !out.present() || out.node_id != reader) continue;
      auto readers_inputs = indexed_.inputs(reader);
      for (size_t i = 0; i < readers_inputs.size(); ++i) {
        if (!readers_inputs[i].present() || indexed_.entry_id(readers_inputs[i]) != entry) continue;
        std::vector<int32_t>& slots = output_may_overwrite_input_[reader];
        slots.resize(static_cast<size_t>(indexed_.node(reader).num_outputs()), -1);
        slots[out.index] = static_cast<int32_t>(i);
        break;
      }
    }
  }
}

std::vector<Tensor> Executor::run(std::span<const Tensor> inputs, BufferPool& pool, const RunOptions& options,
                                  RunStats* stats) const {
  GRAFT_CHECK(inputs.size() == graph_.inputs().size(), "executor got ", inputs.size(), " inputs, graph has ",
              graph_.inputs().size());
  // A body's first check: the node that runs the body (a Loop, once per
  // iteration) adds "in the body of" its name.
  if (options.nested && run_limits_reached(options.limits)) fail_run_limits(options.limits, "");
  if (!options.nested) check_limits(options.limits, nullptr);
  ScopedNumThreads threads(options.num_threads);
  // Long reference kernels check the run's limits in their outer loops.
  const bool limited = options.limits.cancel ||
                       options.limits.deadline != std::chrono::steady_clock::time_point::max();
  ScopedKernelInterrupt kernel_interrupt(limited ? KernelInterrupt{&stop_inside_kernel, &options.limits}
                                                 : current_kernel_interrupt());
  if (!options.nested) pool.begin_run();
  RunQueues queues(options.profile && stats);
  DeviceProfile device_profile;
  const auto run_start = std::chrono::steady_clock::now();
  std::vector<Tensor> pinned;  // host values whose copy to a device may still be reading them
  uint64_t bytes_to_device = 0, bytes_to_host = 0;
  std::vector<Tensor> values(indexed_.num_entries());
  ops::SubgraphRunner run_body = [&pool, &options](const ir::Graph& body, const std::vector<Tensor>& body_inputs) {
    Executor body_executor(body);
    RunOptions body_options = options;
    body_options.nested = true;
    body_options.profile = false;
    return body_executor.run(body_inputs, pool, body_options);
  };
  std::vector<Tensor> node_inputs;
  std::vector<bool> dies;
  for (uint32_t id = 0; id < indexed_.num_nodes(); ++id) {
    const ir::Node& n = indexed_.node(id);
    uint32_t first_entry = indexed_.entry_id(id, 0);
    if (n.schema().category == ir::OpCategory::source) {
      if (input_position_[id] >= 0) values[first_entry] = inputs[static_cast<size_t>(input_position_[id])];
      else values[first_entry] = n.constant_value;
      continue;
    }
    check_limits(options.limits, &n);
    const CompiledModule* module = n.index() < modules_.size() ? modules_[n.index()].get() : nullptr;
    if (!module && !n.schema().kernel) fail(ErrorKind::unsupported, n.describe(), ": no kernel for this op");
    auto in_entries = indexed_.inputs(id);
    node_inputs.assign(in_entries.size(), Tensor());
    dies.assign(in_entries.size(), false);
    for (size_t k = 0; k < in_entries.size(); ++k) {
      if (!in_entries[k].present()) continue;
      uint32_t e = indexed_.entry_id(in_entries[k]);
      node_inputs[k] = values[e];
      dies[k] = !keep_[e] && last_use_[e] == id;
    }
    auto start = options.profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    std::vector<Tensor> outs;
    try {
      if (n.op() == ir::OpId::CopyToDevice || n.op() == ir::OpId::CopyToHost) {
        outs.push_back(copy_across(n, node_inputs.at(0), queues, pinned));
        (n.op() == ir::OpId::CopyToDevice ? bytes_to_device : bytes_to_host) += node_inputs[0].nbytes();
        if (sync_after_[id]) device_api(node_inputs[0].device().type).synchronize(*queues.on(node_inputs[0].device()));
      } else if (module) {
        const bool on_device = n.device.type != DeviceType::cpu;
        ModuleRunContext module_context{pool, options.num_threads, on_device ? queues.on(n.device) : nullptr,
                                        on_device && options.profile && stats ? &device_profile : nullptr,
                                        &options.limits, output_may_overwrite_input_[id]};
        outs = module->run(node_inputs, module_context);
        if (outs.size() != static_cast<size_t>(n.num_outputs()))
          fail(ErrorKind::internal, n.describe(), ": module '", module->type_key(), "' returned ", outs.size(),
               " outputs, expected ", n.num_outputs());
      } else {
        ops::KernelContext ctx(n, std::move(node_inputs), dies, pool, options.num_threads, run_body);
        n.schema().kernel(ctx);
        outs = std::move(ctx.outputs());
      }
    } catch (const std::bad_alloc&) {
      fail(ErrorKind::resource_exhausted, n.describe(), ": the host is out of memory");
    } catch (const Error& e) {
      // A memory limit reached in the pool, or a deadline passed in a Loop's
      // body: name the node it happened in.
      const bool named = std::string_view(e.what()).find("node '") != std::string_view::npos;
      if (e.kind() == ErrorKind::cancelled) {
        // From inside this node's kernel, or from a Loop's body.
        if (std::string_view(e.what()).ends_with(kInsideKernel)) fail(ErrorKind::cancelled, e.what(), " ", n.describe());
        fail(ErrorKind::cancelled, e.what(), " in the body of ", n.describe());
      }
      if (e.kind() != ErrorKind::resource_exhausted || named) throw;
      fail(ErrorKind::resource_exhausted, n.describe(), ": ", e.what());
    }
    if (options.profile && stats) {
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
      int64_t model_nodes = 1;
      if (n.subgraph) {
        model_nodes = 0;
        for (const auto& inner : n.subgraph->nodes())
          model_nodes += inner->schema().category == ir::OpCategory::source ? 0 : 1;
      }
      stats->timings.push_back({n.name, n.op_type(), n.backend.empty() ? fallback_backend().name() : n.backend, us, start, model_nodes});
    }
    for (size_t k = 0; k < outs.size(); ++k) values[first_entry + k] = std::move(outs[k]);
    node_inputs = std::vector<Tensor>();
    // Drop inputs whose last reader was this node so their buffers can be reused.
    for (const ir::Entry& e : in_entries) {
      if (!e.present()) continue;
      uint32_t entry = indexed_.entry_id(e);
      if (!keep_[entry] && last_use_[entry] == id) values[entry] = Tensor();
    }
    // Outputs nobody reads are dropped at once.
    for (size_t k = 0; k < outs.size(); ++k) {
      uint32_t entry = first_entry + static_cast<uint32_t>(k);
      if (!keep_[entry] && last_use_[entry] == ir::Entry::kAbsent) values[entry] = Tensor();
    }
  }
  queues.synchronize_all();
  pinned.clear();
  if (options.profile && stats) {
    // Device kernels' own times, beside the host's time to queue them.
    for (const DeviceProfile::Kernel& k : device_profile.kernels) {
      const Device device = k.begin->device();
      double us = device_api(device.type).elapsed_microseconds(*k.begin, *k.end);
      if (us < 0) continue;
      stats->timings.push_back({k.node, k.op, to_string(device) + " device", us, run_start, 1});
    }
  }
  std::vector<Tensor> results;
  results.reserve(indexed_.outputs().size());
  for (const ir::Entry& e : indexed_.outputs()) {
    const Tensor& t = values[indexed_.entry_id(e)];
    if (!t.is_defined())
      fail(ErrorKind::internal, "graph output '", graph_.value_name(ir::Value{&indexed_.mutable_node(e.node_id), static_cast<int>(e.index)}),
           "' was not computed");
    results.push_back(t);
  }
  if (stats) {
    stats->memory = pool.stats();
    stats->bytes_to_device += bytes_to_device;
    stats->bytes_to_host += bytes_to_host;
  }
  return results;
}

void Executor::check_limits(const RunLimits& limits, const ir::Node* node) {
  if (!run_limits_reached(limits)) return;
  // Before the first node, planning and compiling (a new shape's first run) took the time.
  fail_run_limits(limits, node ? " before " + node->describe() : " before its first node");
}

Tensor Executor::copy_across(const ir::Node& node, const Tensor& value, RunQueues& queues,
                             std::vector<Tensor>& pinned) const {
  if (!value.is_defined() || value.is_sequence() || value.is_none())
    fail(ErrorKind::invalid_argument, node.describe(), ": only tensors cross a device boundary, got ",
         value.is_defined() ? value.type_string() : "no value");
  if (node.op() == ir::OpId::CopyToDevice) {
    const Device device = node.device;
    if (device.type == DeviceType::cpu) fail(ErrorKind::internal, node.describe(), ": a copy to the host device");
    const std::shared_ptr<DeviceQueue>& queue = queues.on(device);
    if (value.on_device()) {
      if (value.device() == device) return value;
      // Another device: its queue's work first, then through this device's API.
      device_api(value.device().type).synchronize(*queues.on(value.device()));
    }
    Tensor out = make_device_tensor(value.dtype(), value.shape(), device, queue);
    if (value.nbytes() == 0) return out;
    DeviceAPI& api = device_api(device.type);
    if (value.on_device() && value.device().type == device.type) {
      api.copy_on_device(*queue, device_buffer(out), 0, device_buffer(value), 0, value.nbytes());
    } else {
      Tensor host = value.on_device() ? copy_to_host(value, *queues.on(value.device())) : value;
      api.copy_to_device(*queue, device_buffer(out), 0, host.raw_data(), host.nbytes());
      pinned.push_back(host);
    }
    return out;
  }
  if (!value.on_device()) return value;  // already on the host
  Tensor host(value.dtype(), value.shape());
  if (value.nbytes())
    device_api(value.device().type)
        .copy_to_host(*queues.on(value.device()), host.raw_data(), device_buffer(value), 0, value.nbytes());
  return host;
}

}  // namespace graft::backend

// The shared lifecycle of per-node device modules (graft/backend/device_module.h).
#include "graft/backend/device_module.h"

#include <cstring>
#include <istream>
#include <ostream>

#include "graft/backend/device_tensor.h"
#include "graft/core/error.h"
#include "graft/fusion/fuse_pointwise.h"
#include "graft/ir/indexed_graph.h"
#include "graft/ir/op_id.h"
#include "graft/passes/pass.h"

namespace graft::backend {

namespace {

constexpr uint32_t kModuleFormatVersion = 1;
std::atomic<uint64_t> uploads_by_type[3];

std::atomic<uint64_t>& uploads_of(DeviceType type) {
  const auto index = static_cast<size_t>(type);
  GRAFT_CHECK(index < std::size(uploads_by_type), "device type ", static_cast<int>(type), " has no upload counter");
  return uploads_by_type[index];
}

/// The device copy of constant `node`, uploaded on a queue of its own and
/// waited for: runs on other queues read it next.
Tensor upload_constant(const ir::Node& node, Device device) {
  const Tensor& value = node.constant_value;
  if (value.storage() && value.storage()->is_placeholder())
    fail(ErrorKind::invalid_argument, node.describe(), ": the weight's bytes were not kept (a placeholder)");
  DeviceAPI& api = device_api(device.type);
  std::unique_ptr<DeviceQueue> queue = api.create_queue(device.id);
  DeviceBuffer buffer = api.allocate(device, value.nbytes());
  if (value.nbytes()) api.copy_to_device(*queue, buffer, 0, value.raw_data(), value.nbytes());
  api.synchronize(*queue);
  uploads_of(device.type)++;
  return adopt_device_buffer(value.dtype(), value.shape(), std::move(buffer));
}

}  // namespace

uint64_t weight_uploads(DeviceType type) { return uploads_of(type).load(); }

struct DeviceModule::State {
  std::unique_ptr<ir::Graph> body;
  std::unique_ptr<ir::IndexedGraph> indexed;
  std::vector<std::unique_ptr<DeviceNodeKernel>> kernels;  ///< per topological id; null for Input/Constant
  size_t num_kernels = 0;
  std::vector<uint32_t> last_use;          ///< per entry
  std::vector<bool> keep;                  ///< per entry: an output or a constant
  std::vector<int32_t> constant_of;        ///< per node id: index into constants, or -1
  std::vector<const ir::Node*> constants;  ///< the body's Constant nodes
  /// The original subgraph's weights and the versions this state was made from.
  std::vector<std::pair<Tensor, uint64_t>> sources;
  std::once_flag compiled;
  std::mutex resident_mutex;
  std::vector<Tensor> resident;  ///< per constant: its device copy, uploaded at first use
};

DeviceModule::DeviceModule(const ir::Graph& subgraph, Device device, std::string_view magic)
    : original_(subgraph.clone()), device_(device), magic_(magic) {
  GRAFT_CHECK(magic_.size() == 4, "a device module's magic has 4 bytes, got '", magic_, "'");
}

void DeviceModule::create_kernels() { state_ = make_state(); }

size_t DeviceModule::num_kernels() const { return current_state()->num_kernels; }

std::shared_ptr<DeviceModule::State> DeviceModule::make_state() const {
  auto state = std::make_shared<State>();
  for (const auto& node : original_->nodes())
    if (node->op() == ir::OpId::Constant) state->sources.emplace_back(node->constant_value, node->constant_value.version());
  state->body = original_->clone();
  passes::PassContext pass_context;
  passes::run_pipeline(state->body, {"fold-batch-norm", "eliminate-dead-code"}, pass_context);
  fusion::fuse_pointwise(state->body);
  state->indexed = std::make_unique<ir::IndexedGraph>(*state->body);
  const ir::IndexedGraph& g = *state->indexed;
  state->kernels.resize(g.num_nodes());
  state->constant_of.assign(g.num_nodes(), -1);
  state->last_use.assign(g.num_entries(), ir::Entry::kAbsent);
  state->keep.assign(g.num_entries(), false);
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    const ir::Node& node = g.node(id);
    for (const ir::Entry& e : g.inputs(id))
      if (e.present()) state->last_use[g.entry_id(e)] = id;
    if (node.op() == ir::OpId::Input) continue;
    if (node.op() == ir::OpId::Constant) {
      state->constant_of[id] = static_cast<int32_t>(state->constants.size());
      state->constants.push_back(&node);
      state->keep[g.entry_id(id, 0)] = true;
      continue;
    }
    std::string why = kernel_support(node);
    if (!why.empty()) fail(ErrorKind::unsupported, node.describe(), " cannot run on ", to_string(device_), ": ", why);
    state->kernels[id] = create_kernel(node);
    ++state->num_kernels;
  }
  for (const ir::Entry& e : g.outputs()) state->keep[g.entry_id(e)] = true;
  state->resident.resize(state->constants.size());
  return state;
}

std::shared_ptr<DeviceModule::State> DeviceModule::current_state() const {
  std::lock_guard lock(state_mutex_);
  GRAFT_CHECK(state_, type_key(), " module used before create_kernels()");
  for (const auto& [weight, version] : state_->sources) {
    if (weight.version() == version) continue;
    state_ = make_state();  // runs still holding the old state finish with it
    break;
  }
  return state_;
}

void DeviceModule::save(std::ostream& out) const {
  out.write(magic_.data(), 4);
  out.write(reinterpret_cast<const char*>(&kModuleFormatVersion), 4);
  const int32_t device = device_.id;
  out.write(reinterpret_cast<const char*>(&device), 4);
}

int DeviceModule::load_device_index(std::istream& in, std::span<const Tensor> tensors, std::string_view magic,
                                    std::string_view type_key) {
  if (!tensors.empty()) fail(ErrorKind::invalid_model, type_key, " module: stores no tensors, got ", tensors.size());
  char read_magic[4];
  uint32_t version = 0;
  int32_t device = 0;
  if (!in.read(read_magic, 4) || std::memcmp(read_magic, magic.data(), 4) != 0)
    fail(ErrorKind::invalid_model, type_key, " module: bad magic (expected ", magic, ")");
  if (!in.read(reinterpret_cast<char*>(&version), 4) || version != kModuleFormatVersion)
    fail(ErrorKind::invalid_model, type_key, " module: version ", version, " is not supported (expected ",
         kModuleFormatVersion, ")");
  if (!in.read(reinterpret_cast<char*>(&device), 4) || device < 0 || device > 4096)
    fail(ErrorKind::invalid_model, type_key, " module: truncated or bad device id");
  return device;
}

std::vector<Tensor> DeviceModule::run(std::span<const Tensor> inputs, ModuleRunContext& context) const {
  if (!context.queue || !(context.queue->device() == device_))
    fail(ErrorKind::internal, type_key(), " module on ", to_string(device_), " run without a queue on that device");
  std::shared_ptr<State> state = current_state();
  std::call_once(state->compiled, [&] {
    for (const auto& kernel : state->kernels)
      if (kernel) compile_kernel(*kernel);
  });
  const ir::IndexedGraph& g = *state->indexed;
  GRAFT_CHECK(inputs.size() == state->body->inputs().size(), type_key(), " module got ", inputs.size(),
              " inputs, expected ", state->body->inputs().size());
  std::vector<Tensor> values(g.num_entries());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (t.is_defined() && t.nbytes() > 0 && !(t.device() == device_))
      fail(ErrorKind::internal, type_key(), " module on ", to_string(device_), ": input ", i, " is on ",
           to_string(t.device()), " (placement inserts the copies)");
    values[g.entry_id(g.id_of(*state->body->inputs()[i]), 0)] = t;
  }
  std::unique_ptr<DeviceKernelLauncher> launcher = start_launches(*context.queue);
  DeviceAPI& api = device_api(device_.type);
  std::shared_ptr<DeviceEvent> previous;  // profiled runs: the point the next kernel starts from
  if (context.profile) previous = api.record_event(*context.queue);
  std::vector<Tensor> node_inputs, node_outputs;
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    if (int32_t c = state->constant_of[id]; c >= 0) {
      std::lock_guard lock(state->resident_mutex);
      Tensor& resident = state->resident[static_cast<size_t>(c)];
      if (!resident.is_defined()) resident = upload_constant(*state->constants[static_cast<size_t>(c)], device_);
      values[g.entry_id(id, 0)] = resident;
      continue;
    }
    const DeviceNodeKernel* kernel = state->kernels[id].get();
    if (!kernel) continue;  // an Input
    const ir::Node& node = g.node(id);
    node_inputs.clear();
    for (const ir::Entry& e : g.inputs(id)) node_inputs.push_back(e.present() ? values[g.entry_id(e)] : Tensor());
    node_outputs.clear();
    const uint32_t first = g.entry_id(id, 0);
    for (int o = 0; o < node.num_outputs(); ++o) {
      const ir::ValueType& type = node.output_types[static_cast<size_t>(o)];
      Shape shape = *type.concrete_shape();
      Tensor out;
      if (o == 0 && kernel->aliased_input() >= 0) {
        const Tensor& source = values[g.entry_id(g.inputs(id)[static_cast<size_t>(kernel->aliased_input())])];
        out = source.nbytes() ? Tensor(type.dtype, shape, source.storage(), 0, device_)
                              : make_device_tensor(type.dtype, shape, device_, context.queue);
      } else {
        out = make_device_tensor(type.dtype, shape, device_, context.queue);
      }
      node_outputs.push_back(out);
      values[first + static_cast<uint32_t>(o)] = std::move(out);
    }
    launcher->enqueue(*kernel, node_inputs, node_outputs);
    node_inputs.clear();  // the values below die into the pool now, not one node later
    node_outputs.clear();
    if (context.profile) {
      std::shared_ptr<DeviceEvent> done = api.record_event(*context.queue);
      context.profile->kernels.push_back({node.name.empty() ? node.op_type() : node.name, node.op_type(), previous, done});
      previous = std::move(done);
    }
    for (const ir::Entry& e : g.inputs(id)) {
      if (!e.present()) continue;
      uint32_t entry = g.entry_id(e);
      if (!state->keep[entry] && state->last_use[entry] == id) values[entry] = Tensor();
    }
  }
  std::vector<Tensor> outputs;
  for (const ir::Entry& e : g.outputs()) outputs.push_back(values[g.entry_id(e)]);
  return outputs;
}

}  // namespace graft::backend

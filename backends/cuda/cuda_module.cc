// The CUDA module (cuda_module.h): the OpenCL module's structure, on CUDA
// streams and device pointers.
#include "cuda_module.h"

#include <cstring>
#include <istream>
#include <ostream>

#include "graft/backend/device_tensor.h"
#include "graft/core/error.h"
#include "graft/fusion/fuse_pointwise.h"
#include "graft/ir/indexed_graph.h"
#include "graft/passes/pass.h"
#include "graft/ir/op_id.h"

namespace graft::cuda {

namespace {
std::atomic<uint64_t> uploads{0};
constexpr char kModuleMagic[4] = {'G', 'C', 'U', 'D'};
constexpr uint32_t kModuleVersion = 1;

std::unique_ptr<backend::CompiledModule> load_cuda_module(std::istream& in, const ir::Graph& subgraph,
                                                            std::span<const Tensor> tensors) {
  if (!tensors.empty()) fail(ErrorKind::invalid_model, "cuda module: stores no tensors, got ", tensors.size());
  char magic[4];
  uint32_t version = 0;
  int32_t device = 0;
  if (!in.read(magic, 4) || std::memcmp(magic, kModuleMagic, 4) != 0)
    fail(ErrorKind::invalid_model, "cuda module: bad magic (expected GCUD)");
  if (!in.read(reinterpret_cast<char*>(&version), 4) || version != kModuleVersion)
    fail(ErrorKind::invalid_model, "cuda module: version ", version, " is not supported (expected ", kModuleVersion, ")");
  if (!in.read(reinterpret_cast<char*>(&device), 4) || device < 0 || device > 4096)
    fail(ErrorKind::invalid_model, "cuda module: truncated or bad device id");
  return std::make_unique<CudaModule>(subgraph, device);
}

GRAFT_REGISTER_MODULE_LOADER("cuda", load_cuda_module);

CuTensor view_of(const Tensor& t) {
  CuTensor view{0, t.dtype(), t.shape()};
  if (t.is_defined() && t.nbytes() > 0) view.address = reinterpret_cast<uintptr_t>(backend::device_handle(t));
  return view;
}
}  // namespace

uint64_t weight_uploads() { return uploads.load(); }

struct CudaModule::State {
  std::unique_ptr<ir::Graph> body;
  std::unique_ptr<ir::IndexedGraph> indexed;
  std::vector<std::unique_ptr<NodeKernel>> kernels;  ///< per topological id; null for Input/Constant
  size_t num_kernels = 0;
  std::vector<uint32_t> last_use;                    ///< per entry
  std::vector<bool> keep;                            ///< per entry: an output or a constant
  std::vector<int32_t> constant_of;                  ///< per node id: index into constants, or -1
  std::vector<const ir::Node*> constants;            ///< the body's Constant nodes
  /// The original subgraph's weights and the versions this state was made from.
  std::vector<std::pair<Tensor, uint64_t>> sources;
  std::once_flag compiled;
  std::mutex resident_mutex;
  std::vector<Tensor> resident;  ///< per constant: its device copy, uploaded at first use
};

CudaModule::CudaModule(const ir::Graph& subgraph, int device_index)
    : original_(subgraph.clone()), device_index_(device_index), device_{DeviceType::cuda, device_index} {
  state_ = make_state();
}

size_t CudaModule::num_kernels() const { return current_state()->num_kernels; }

std::shared_ptr<CudaModule::State> CudaModule::make_state() const {
  auto state = std::make_shared<State>();
  for (const auto& node : original_->nodes())
    if (node->op() == ir::OpId::Constant) state->sources.emplace_back(node->constant_value, node->constant_value.version());
  state->body = original_->clone();
  // BatchNormalization after a Conv folds into the Conv's weights, as dnnl
  // folds it on the CPU; pointwise chains become one kernel each.
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
    if (!why.empty()) fail(ErrorKind::unsupported, node.describe(), " cannot run on CUDA: ", why);
    state->kernels[id] = find_kernel(node.op())->factory(make_kernel_request(node));
    ++state->num_kernels;
  }
  for (const ir::Entry& e : g.outputs()) state->keep[g.entry_id(e)] = true;
  state->resident.resize(state->constants.size());
  return state;
}

std::shared_ptr<CudaModule::State> CudaModule::current_state() const {
  std::lock_guard lock(state_mutex_);
  for (const auto& [weight, version] : state_->sources) {
    if (weight.version() == version) continue;
    state_ = make_state();  // runs still holding the old state finish with it
    break;
  }
  return state_;
}

namespace {

/// The device copy of constant `value`, uploaded on a queue of its own and
/// waited for: runs on other queues read it next.
Tensor upload_constant(const ir::Node& node, Device device) {
  const Tensor& value = node.constant_value;
  if (value.storage() && value.storage()->is_placeholder())
    fail(ErrorKind::invalid_argument, node.describe(), ": the weight's bytes were not kept (a placeholder)");
  backend::DeviceAPI& api = backend::device_api(DeviceType::cuda);
  std::unique_ptr<backend::DeviceQueue> queue = api.create_queue(device.id);
  backend::DeviceBuffer buffer = api.allocate(device, value.nbytes());
  if (value.nbytes()) api.copy_to_device(*queue, buffer, 0, value.raw_data(), value.nbytes());
  api.synchronize(*queue);
  uploads++;
  return backend::adopt_device_buffer(value.dtype(), value.shape(), std::move(buffer));
}

}  // namespace

void CudaModule::save(std::ostream& out) const {
  out.write(kModuleMagic, 4);
  out.write(reinterpret_cast<const char*>(&kModuleVersion), 4);
  const int32_t device = device_index_;
  out.write(reinterpret_cast<const char*>(&device), 4);
}

std::vector<Tensor> CudaModule::run(std::span<const Tensor> inputs, backend::ModuleRunContext& context) const {
  if (!context.queue || !(context.queue->device() == device_))
    fail(ErrorKind::internal, "CUDA module on ", to_string(device_), " run without a queue on that device");
  std::shared_ptr<State> state = current_state();
  std::call_once(state->compiled, [&] {
    for (const auto& kernel : state->kernels)
      if (kernel) kernel->compile(device_index_);
  });
  const ir::IndexedGraph& g = *state->indexed;
  GRAFT_CHECK(inputs.size() == state->body->inputs().size(), "CUDA module got ", inputs.size(),
              " inputs, expected ", state->body->inputs().size());
  std::vector<Tensor> values(g.num_entries());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (t.is_defined() && t.nbytes() > 0 && !(t.device() == device_))
      fail(ErrorKind::internal, "CUDA module on ", to_string(device_), ": input ", i, " is on ",
           to_string(t.device()), " (placement inserts the copies)");
    values[g.entry_id(g.id_of(*state->body->inputs()[i]), 0)] = t;
  }
  CudaLaunchContext launch(device_index_, *context.queue);
  backend::DeviceAPI& api = backend::device_api(DeviceType::cuda);
  std::shared_ptr<backend::DeviceEvent> previous;  // profiled runs: the point the next kernel starts from
  if (context.profile) previous = api.record_event(*context.queue);
  std::vector<CuTensor> in_views, out_views;
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    if (int32_t c = state->constant_of[id]; c >= 0) {
      std::lock_guard lock(state->resident_mutex);
      Tensor& resident = state->resident[static_cast<size_t>(c)];
      if (!resident.is_defined()) resident = upload_constant(*state->constants[static_cast<size_t>(c)], device_);
      values[g.entry_id(id, 0)] = resident;
      continue;
    }
    const NodeKernel* kernel = state->kernels[id].get();
    if (!kernel) continue;  // an Input
    const ir::Node& node = g.node(id);
    in_views.clear();
    for (const ir::Entry& e : g.inputs(id)) in_views.push_back(e.present() ? view_of(values[g.entry_id(e)]) : CuTensor{});
    out_views.clear();
    const uint32_t first = g.entry_id(id, 0);
    for (int o = 0; o < node.num_outputs(); ++o) {
      const ir::ValueType& type = node.output_types[static_cast<size_t>(o)];
      Shape shape = *type.concrete_shape();
      Tensor out;
      if (o == 0 && kernel->aliased_input() >= 0) {
        const Tensor& source = values[g.entry_id(g.inputs(id)[static_cast<size_t>(kernel->aliased_input())])];
        out = source.nbytes() ? Tensor(type.dtype, shape, source.storage(), 0, device_)
                              : backend::make_device_tensor(type.dtype, shape, device_, context.queue);
      } else {
        out = backend::make_device_tensor(type.dtype, shape, device_, context.queue);
      }
      out_views.push_back(view_of(out));
      values[first + static_cast<uint32_t>(o)] = std::move(out);
    }
    kernel->enqueue(launch, in_views, out_views);
    if (context.profile) {
      std::shared_ptr<backend::DeviceEvent> done = api.record_event(*context.queue);
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

}  // namespace graft::cuda


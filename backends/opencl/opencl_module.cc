// The OpenCL module (opencl_module.h).
#include "opencl_module.h"

#ifdef GRAFT_HAVE_OPENCL_HEADERS

#include <cstring>
#include <istream>
#include <ostream>

#include "graft/backend/device_tensor.h"
#include "graft/core/error.h"
#include "graft/fusion/fuse_pointwise.h"
#include "graft/ir/op_id.h"

namespace graft::opencl {

namespace {
std::atomic<uint64_t> uploads{0};
constexpr char kModuleMagic[4] = {'G', 'O', 'C', 'L'};
constexpr uint32_t kModuleVersion = 1;

std::unique_ptr<backend::CompiledModule> load_opencl_module(std::istream& in, const ir::Graph& subgraph,
                                                            std::span<const Tensor> tensors) {
  if (!tensors.empty()) fail(ErrorKind::invalid_model, "opencl module: stores no tensors, got ", tensors.size());
  char magic[4];
  uint32_t version = 0;
  int32_t device = 0;
  if (!in.read(magic, 4) || std::memcmp(magic, kModuleMagic, 4) != 0)
    fail(ErrorKind::invalid_model, "opencl module: bad magic (expected GOCL)");
  if (!in.read(reinterpret_cast<char*>(&version), 4) || version != kModuleVersion)
    fail(ErrorKind::invalid_model, "opencl module: version ", version, " is not supported (expected ", kModuleVersion, ")");
  if (!in.read(reinterpret_cast<char*>(&device), 4) || device < 0 || device > 4096)
    fail(ErrorKind::invalid_model, "opencl module: truncated or bad device id");
  return std::make_unique<OpenClModule>(subgraph, device);
}

GRAFT_REGISTER_MODULE_LOADER("opencl", load_opencl_module);

ClTensor view_of(const Tensor& t) {
  ClTensor view{nullptr, t.dtype(), t.shape()};
  if (t.is_defined() && t.nbytes() > 0) view.buffer = static_cast<cl_mem>(backend::device_handle(t));
  return view;
}
}  // namespace

uint64_t weight_uploads() { return uploads.load(); }

OpenClModule::OpenClModule(const ir::Graph& subgraph, int device_index)
    : body_(subgraph.clone()), device_index_(device_index), device_{DeviceType::opencl, device_index} {
  // Pointwise chains become one kernel each, as on the CPU.
  fusion::fuse_pointwise(body_);
  indexed_ = std::make_unique<ir::IndexedGraph>(*body_);
  const ir::IndexedGraph& g = *indexed_;
  kernels_.resize(g.num_nodes());
  constant_of_.assign(g.num_nodes(), -1);
  last_use_.assign(g.num_entries(), ir::Entry::kAbsent);
  keep_.assign(g.num_entries(), false);
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    const ir::Node& node = g.node(id);
    for (const ir::Entry& e : g.inputs(id))
      if (e.present()) last_use_[g.entry_id(e)] = id;
    if (node.op() == ir::OpId::Input) continue;
    if (node.op() == ir::OpId::Constant) {
      constant_of_[id] = static_cast<int32_t>(constants_.size());
      constants_.push_back(&node);
      keep_[g.entry_id(id, 0)] = true;
      continue;
    }
    std::string why = kernel_support(node);
    if (!why.empty()) fail(ErrorKind::unsupported, node.describe(), " cannot run on OpenCL: ", why);
    kernels_[id] = find_kernel(node.op())->factory(make_kernel_request(node));
  }
  for (const ir::Entry& e : g.outputs()) keep_[g.entry_id(e)] = true;
  resident_.resize(constants_.size());
  resident_version_.assign(constants_.size(), 0);
}

void OpenClModule::compile_once() const {
  std::call_once(compiled_, [&] {
    ClDevice& device = ClDevice::get(device_index_);
    for (const auto& kernel : kernels_)
      if (kernel) kernel->compile(device);
  });
}

Tensor OpenClModule::resident_constant(size_t c) const {
  std::lock_guard lock(constants_mutex_);
  const Tensor& value = constants_[c]->constant_value;
  if (resident_[c].is_defined() && resident_version_[c] == value.version()) return resident_[c];
  if (value.storage() && value.storage()->is_placeholder())
    fail(ErrorKind::invalid_argument, constants_[c]->describe(), ": the weight's bytes were not kept (a placeholder)");
  // Uploaded on a queue of its own and waited for: runs on other queues read it next.
  backend::DeviceAPI& api = backend::device_api(DeviceType::opencl);
  std::unique_ptr<backend::DeviceQueue> queue = api.create_queue(device_index_);
  backend::DeviceBuffer buffer = api.allocate(device_, value.nbytes());
  if (value.nbytes()) api.copy_to_device(*queue, buffer, 0, value.raw_data(), value.nbytes());
  api.synchronize(*queue);
  resident_[c] = backend::adopt_device_buffer(value.dtype(), value.shape(), std::move(buffer));
  resident_version_[c] = value.version();
  uploads++;
  return resident_[c];
}

void OpenClModule::save(std::ostream& out) const {
  out.write(kModuleMagic, 4);
  out.write(reinterpret_cast<const char*>(&kModuleVersion), 4);
  const int32_t device = device_index_;
  out.write(reinterpret_cast<const char*>(&device), 4);
}

std::vector<Tensor> OpenClModule::run(std::span<const Tensor> inputs, backend::ModuleRunContext& context) const {
  if (!context.queue || !(context.queue->device() == device_))
    fail(ErrorKind::internal, "OpenCL module on ", to_string(device_), " run without a queue on that device");
  compile_once();
  const ir::IndexedGraph& g = *indexed_;
  GRAFT_CHECK(inputs.size() == body_->inputs().size(), "OpenCL module got ", inputs.size(), " inputs, expected ",
              body_->inputs().size());
  std::vector<Tensor> values(g.num_entries());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (t.is_defined() && t.nbytes() > 0 && !(t.device() == device_))
      fail(ErrorKind::internal, "OpenCL module on ", to_string(device_), ": input ", i, " is on ",
           to_string(t.device()), " (placement inserts the copies)");
    values[g.entry_id(g.id_of(*body_->inputs()[i]), 0)] = t;
  }
  ClDevice& device = ClDevice::get(device_index_);
  ClLaunchContext launch(device, *context.queue);
  backend::DeviceAPI& api = backend::device_api(DeviceType::opencl);
  std::shared_ptr<backend::DeviceEvent> previous;  // profiled runs: the point the next kernel starts from
  if (context.profile) previous = api.record_event(*context.queue);
  std::vector<ClTensor> in_views, out_views;
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    if (constant_of_[id] >= 0) {
      values[g.entry_id(id, 0)] = resident_constant(static_cast<size_t>(constant_of_[id]));
      continue;
    }
    const NodeKernel* kernel = kernels_[id].get();
    if (!kernel) continue;  // an Input
    const ir::Node& node = g.node(id);
    in_views.clear();
    for (const ir::Entry& e : g.inputs(id)) in_views.push_back(e.present() ? view_of(values[g.entry_id(e)]) : ClTensor{});
    out_views.clear();
    const uint32_t first = g.entry_id(id, 0);
    for (int o = 0; o < node.num_outputs(); ++o) {
      const ir::ValueType& type = node.output_types[static_cast<size_t>(o)];
      Shape shape = *type.concrete_shape();
      Tensor out;
      if (o == 0 && kernel->aliased_input() >= 0) {
        const Tensor& source = values[g.entry_id(g.inputs(id)[static_cast<size_t>(kernel->aliased_input())])];
        out = Tensor(type.dtype, shape, source.storage(), 0, device_);
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
      if (!keep_[entry] && last_use_[entry] == id) values[entry] = Tensor();
    }
  }
  std::vector<Tensor> outputs;
  for (const ir::Entry& e : g.outputs()) outputs.push_back(values[g.entry_id(e)]);
  return outputs;
}

}  // namespace graft::opencl

#endif  // GRAFT_HAVE_OPENCL_HEADERS

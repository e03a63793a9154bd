// Pointwise work on the OpenCL device: every op with a pointwise expression
// (a single node) and graft.FusedPointwise bodies, rendered from the kernel
// IR by the OpenCL emitter (codegen/opencl_emitter.h). Outputs that share no
// iteration space run as one kernel per group, as the `fuse` backend does.
#include "opencl_kernel.h"

#ifdef GRAFT_HAVE_OPENCL_HEADERS

#include <mutex>

#include "graft/codegen/op_expressions.h"
#include "graft/codegen/opencl_emitter.h"
#include "graft/codegen/output_groups.h"
#include "graft/core/error.h"
#include "graft/ir/op_id.h"

namespace graft::opencl {

namespace {

class PointwiseKernel final : public NodeKernel {
 public:
  PointwiseKernel(codegen::LoweredKernel lowered, std::vector<ClType> outputs, size_t num_inputs)
      : lowered_(std::move(lowered)), outputs_(std::move(outputs)), num_inputs_(num_inputs) {}

  void compile(ClDevice& device) override {
    std::vector<Shape> shapes;
    for (const ClType& t : outputs_) shapes.push_back(t.shape);
    codegen::GroupedKernels grouped = codegen::kernels_by_output_group(lowered_.ir, shapes);
    groups_ = std::move(grouped.groups);
    // One program per kernel IR for the process (the emitter's cache): the
    // same fused chain in another node, module or session is not rebuilt.
    for (const ir::KernelIR& ir : grouped.kernels) kernels_.push_back(std::make_unique<codegen::OpenClKernel>(ir));
    // Captured constants (non-scalar Constant nodes of a fused body): uploaded once.
    if (!lowered_.captured.empty()) {
      backend::DeviceAPI& api = backend::device_api(DeviceType::opencl);
      std::unique_ptr<backend::DeviceQueue> queue = api.create_queue(device.index());
      for (const Tensor& t : lowered_.captured) {
        captured_.push_back(api.allocate(Device{DeviceType::opencl, device.index()}, t.nbytes()));
        if (t.nbytes()) api.copy_to_device(*queue, captured_.back(), 0, t.raw_data(), t.nbytes());
      }
      api.synchronize(*queue);
      for (size_t i = 0; i < captured_.size(); ++i)
        captured_views_.push_back(codegen::OpenClBuffer::borrow(captured_[i].handle(), captured_[i].size()));
    }
  }

  void enqueue(ClLaunchContext& context, std::span<const ClTensor> inputs,
               std::span<const ClTensor> outputs) const override {
    std::unique_ptr<codegen::OpenClQueue> queue = codegen::OpenClQueue::borrow(context.queue());
    std::vector<codegen::OpenClBuffer> views;
    views.reserve(inputs.size() + outputs.size() + 1);
    std::vector<codegen::OpenClOperand> in, out;
    for (size_t i = 0; i < num_inputs_; ++i) {
      const ClTensor& t = inputs[i];
      if (t.buffer) {
        views.push_back(codegen::OpenClBuffer::borrow(t.buffer, t.nbytes()));
        in.push_back({&views.back(), t.shape});
      } else {
        in.push_back({nullptr, t.shape});
      }
    }
    for (size_t c = 0; c < captured_views_.size(); ++c)
      in.push_back({&captured_views_[c], lowered_.captured[c].shape()});
    for (const ClTensor& t : outputs) {
      views.push_back(codegen::OpenClBuffer::borrow(t.buffer, t.nbytes()));
      out.push_back({&views.back(), t.shape});
    }
    codegen::OpenClLaunchOptions options;
    options.queue = queue.get();
    if (groups_.size() == 1) {
      kernels_[0]->launch(in, out, options);
      return;
    }
    for (size_t g = 0; g < groups_.size(); ++g) {
      std::vector<codegen::OpenClOperand> group_out;
      for (int32_t o : groups_[g]) group_out.push_back(out[static_cast<size_t>(o)]);
      kernels_[g]->launch(in, group_out, options);
    }
  }

 private:
  codegen::LoweredKernel lowered_;
  std::vector<ClType> outputs_;
  size_t num_inputs_;
  std::vector<std::vector<int32_t>> groups_;
  std::vector<std::unique_ptr<codegen::OpenClKernel>> kernels_;
  std::vector<backend::DeviceBuffer> captured_;
  std::vector<codegen::OpenClBuffer> captured_views_;
};

std::string device_check() {
  std::string why = codegen::opencl_unavailable_reason();
  if (!why.empty()) return "the pointwise kernels need a double-precision OpenCL device: " + why;
  return {};
}

/// Single ops with a pointwise expression, and graft.FusedPointwise nodes.
std::string pointwise_support(const KernelRequest& request) {
  std::string why = device_check();
  if (!why.empty()) return why;
  for (const ClType& t : request.outputs)
    if (t.shape.size() > ir::kMaxKernelRank) return "rank above 8";
  return codegen::why_not_lowerable(request.node);
}

std::unique_ptr<NodeKernel> make_pointwise_kernel(const KernelRequest& request) {
  return std::make_unique<PointwiseKernel>(codegen::lower_node(request.node), request.outputs, request.inputs.size());
}

}  // namespace

GRAFT_REGISTER_OPENCL_KERNEL(FusedPointwise, pointwise_support, make_pointwise_kernel);

// Every op with a pointwise expression (ops/pointwise_expression.h).
#define GRAFT_OPENCL_POINTWISE(OP) GRAFT_REGISTER_OPENCL_KERNEL(OP, pointwise_support, make_pointwise_kernel);
GRAFT_OPENCL_POINTWISE(Abs)
GRAFT_OPENCL_POINTWISE(Neg)
GRAFT_OPENCL_POINTWISE(Exp)
GRAFT_OPENCL_POINTWISE(Log)
GRAFT_OPENCL_POINTWISE(Sqrt)
GRAFT_OPENCL_POINTWISE(Reciprocal)
GRAFT_OPENCL_POINTWISE(Tanh)
GRAFT_OPENCL_POINTWISE(Sigmoid)
GRAFT_OPENCL_POINTWISE(Sin)
GRAFT_OPENCL_POINTWISE(Cos)
GRAFT_OPENCL_POINTWISE(Floor)
GRAFT_OPENCL_POINTWISE(Ceil)
GRAFT_OPENCL_POINTWISE(Round)
GRAFT_OPENCL_POINTWISE(Sign)
GRAFT_OPENCL_POINTWISE(Erf)
GRAFT_OPENCL_POINTWISE(Relu)
GRAFT_OPENCL_POINTWISE(LeakyRelu)
GRAFT_OPENCL_POINTWISE(Elu)
GRAFT_OPENCL_POINTWISE(Selu)
GRAFT_OPENCL_POINTWISE(Celu)
GRAFT_OPENCL_POINTWISE(Softplus)
GRAFT_OPENCL_POINTWISE(Softsign)
GRAFT_OPENCL_POINTWISE(HardSigmoid)
GRAFT_OPENCL_POINTWISE(HardSwish)
GRAFT_OPENCL_POINTWISE(Gelu)
GRAFT_OPENCL_POINTWISE(Mish)
GRAFT_OPENCL_POINTWISE(ThresholdedRelu)
GRAFT_OPENCL_POINTWISE(Swish)
GRAFT_OPENCL_POINTWISE(Shrink)
GRAFT_OPENCL_POINTWISE(IsNaN)
GRAFT_OPENCL_POINTWISE(IsInf)
GRAFT_OPENCL_POINTWISE(Identity)
GRAFT_OPENCL_POINTWISE(Not)
GRAFT_OPENCL_POINTWISE(Add)
GRAFT_OPENCL_POINTWISE(Sub)
GRAFT_OPENCL_POINTWISE(Mul)
GRAFT_OPENCL_POINTWISE(Div)
GRAFT_OPENCL_POINTWISE(Pow)
GRAFT_OPENCL_POINTWISE(PRelu)
GRAFT_OPENCL_POINTWISE(Max)
GRAFT_OPENCL_POINTWISE(Min)
GRAFT_OPENCL_POINTWISE(Sum)
GRAFT_OPENCL_POINTWISE(Mean)
GRAFT_OPENCL_POINTWISE(Equal)
GRAFT_OPENCL_POINTWISE(Less)
GRAFT_OPENCL_POINTWISE(LessOrEqual)
GRAFT_OPENCL_POINTWISE(Greater)
GRAFT_OPENCL_POINTWISE(GreaterOrEqual)
GRAFT_OPENCL_POINTWISE(And)
GRAFT_OPENCL_POINTWISE(Or)
GRAFT_OPENCL_POINTWISE(Xor)
GRAFT_OPENCL_POINTWISE(Clip)
GRAFT_OPENCL_POINTWISE(Where)
GRAFT_OPENCL_POINTWISE(Cast)
GRAFT_OPENCL_POINTWISE(CastLike)
#undef GRAFT_OPENCL_POINTWISE

}  // namespace graft::opencl

#endif  // GRAFT_HAVE_OPENCL_HEADERS

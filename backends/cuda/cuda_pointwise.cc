// Pointwise work on the CUDA device: every op with a pointwise expression
// (a single node) and graft.FusedPointwise bodies, rendered from the kernel
// IR by the CUDA emitter (codegen/cuda_emitter.h) and compiled by NVRTC
// through the compile cache (PTX per kernel IR and architecture, never per
// shape; in GRAFT_CACHE_DIR when set). Outputs that share no iteration space
// run as one kernel per group, as the `fuse` backend does.
#include <mutex>

#include "cuda_kernel.h"
#include "graft/codegen/cuda_emitter.h"
#include "graft/codegen/op_expressions.h"
#include "graft/codegen/output_groups.h"
#include "graft/core/error.h"
#include "graft/ir/kernel_ir.h"
#include "graft/ir/op_id.h"

namespace graft::cuda {

namespace {

class PointwiseKernel final : public NodeKernel {
 public:
  PointwiseKernel(codegen::LoweredKernel lowered, std::vector<CuType> outputs, size_t num_inputs)
      : lowered_(std::move(lowered)), outputs_(std::move(outputs)), num_inputs_(num_inputs) {}

  void compile(int device) override {
    std::vector<Shape> shapes;
    for (const CuType& t : outputs_) shapes.push_back(t.shape);
    codegen::GroupedKernels grouped = codegen::kernels_by_output_group(lowered_.ir, shapes);
    groups_ = std::move(grouped.groups);
    // One PTX per kernel IR (the compile cache): the same fused chain in
    // another node, module or session is not compiled again.
    for (const ir::KernelIR& ir : grouped.kernels) kernels_.push_back(std::make_unique<codegen::CudaKernel>(ir));
    // Captured constants (non-scalar Constant nodes of a fused body): uploaded once.
    if (!lowered_.captured.empty()) {
      backend::DeviceAPI& api = backend::device_api(DeviceType::cuda);
      std::unique_ptr<backend::DeviceQueue> queue = api.create_queue(device);
      for (const Tensor& t : lowered_.captured) {
        captured_.push_back(api.allocate(Device{DeviceType::cuda, device}, t.nbytes()));
        if (t.nbytes()) api.copy_to_device(*queue, captured_.back(), 0, t.raw_data(), t.nbytes());
      }
      api.synchronize(*queue);
    }
  }

  void enqueue(CudaLaunchContext& context, std::span<const CuTensor> inputs,
               std::span<const CuTensor> outputs) const override {
    std::vector<codegen::CudaOperand> in, out;
    for (size_t i = 0; i < num_inputs_; ++i) in.push_back({inputs[i].address, inputs[i].shape});
    for (size_t c = 0; c < captured_.size(); ++c)
      in.push_back({reinterpret_cast<uintptr_t>(captured_[c].handle()), lowered_.captured[c].shape()});
    for (const CuTensor& t : outputs) out.push_back({t.address, t.shape});
    codegen::CudaLaunchOptions options;
    options.stream = context.stream();
    if (groups_.size() == 1) {
      kernels_[0]->launch(in, out, options);
      return;
    }
    for (size_t g = 0; g < groups_.size(); ++g) {
      std::vector<codegen::CudaOperand> group_out;
      for (int32_t o : groups_[g]) group_out.push_back(out[static_cast<size_t>(o)]);
      kernels_[g]->launch(in, group_out, options);
    }
  }

 private:
  codegen::LoweredKernel lowered_;
  std::vector<CuType> outputs_;
  size_t num_inputs_;
  std::vector<std::vector<int32_t>> groups_;
  std::vector<std::unique_ptr<codegen::CudaKernel>> kernels_;
  std::vector<backend::DeviceBuffer> captured_;
};

/// Single ops with a pointwise expression, and graft.FusedPointwise nodes.
std::string pointwise_support(const KernelRequest& request) {
  for (const CuType& t : request.outputs)
    if (t.shape.size() > ir::kMaxKernelRank) return "rank above 8";
  return codegen::why_not_lowerable(request.node);
}

std::unique_ptr<NodeKernel> make_pointwise_kernel(const KernelRequest& request) {
  return std::make_unique<PointwiseKernel>(codegen::lower_node(request.node), request.outputs, request.inputs.size());
}

}  // namespace

std::vector<ir::KernelIR> pointwise_kernel_irs(const ir::Node& node) {
  KernelRequest request = make_kernel_request(node);
  std::string why = pointwise_support(request);
  if (!why.empty()) fail(ErrorKind::unsupported, node.describe(), " is not pointwise on CUDA: ", why);
  std::vector<Shape> shapes;
  for (const CuType& t : request.outputs) shapes.push_back(t.shape);
  return codegen::kernels_by_output_group(codegen::lower_node(node).ir, shapes).kernels;
}

GRAFT_REGISTER_CUDA_KERNEL(FusedPointwise, pointwise_support, make_pointwise_kernel);

// Every op with a pointwise expression (ops/pointwise_expression.h).
#define GRAFT_CUDA_POINTWISE(OP) GRAFT_REGISTER_CUDA_KERNEL(OP, pointwise_support, make_pointwise_kernel);
GRAFT_CUDA_POINTWISE(Abs)
GRAFT_CUDA_POINTWISE(Neg)
GRAFT_CUDA_POINTWISE(Exp)
GRAFT_CUDA_POINTWISE(Log)
GRAFT_CUDA_POINTWISE(Sqrt)
GRAFT_CUDA_POINTWISE(Reciprocal)
GRAFT_CUDA_POINTWISE(Tanh)
GRAFT_CUDA_POINTWISE(Sigmoid)
GRAFT_CUDA_POINTWISE(Sin)
GRAFT_CUDA_POINTWISE(Cos)
GRAFT_CUDA_POINTWISE(Floor)
GRAFT_CUDA_POINTWISE(Ceil)
GRAFT_CUDA_POINTWISE(Round)
GRAFT_CUDA_POINTWISE(Sign)
GRAFT_CUDA_POINTWISE(Erf)
GRAFT_CUDA_POINTWISE(Relu)
GRAFT_CUDA_POINTWISE(LeakyRelu)
GRAFT_CUDA_POINTWISE(Elu)
GRAFT_CUDA_POINTWISE(Selu)
GRAFT_CUDA_POINTWISE(Celu)
GRAFT_CUDA_POINTWISE(Softplus)
GRAFT_CUDA_POINTWISE(Softsign)
GRAFT_CUDA_POINTWISE(HardSigmoid)
GRAFT_CUDA_POINTWISE(HardSwish)
GRAFT_CUDA_POINTWISE(Gelu)
GRAFT_CUDA_POINTWISE(Mish)
GRAFT_CUDA_POINTWISE(ThresholdedRelu)
GRAFT_CUDA_POINTWISE(Swish)
GRAFT_CUDA_POINTWISE(Shrink)
GRAFT_CUDA_POINTWISE(IsNaN)
GRAFT_CUDA_POINTWISE(IsInf)
GRAFT_CUDA_POINTWISE(Identity)
GRAFT_CUDA_POINTWISE(Not)
GRAFT_CUDA_POINTWISE(Add)
GRAFT_CUDA_POINTWISE(Sub)
GRAFT_CUDA_POINTWISE(Mul)
GRAFT_CUDA_POINTWISE(Div)
GRAFT_CUDA_POINTWISE(Pow)
GRAFT_CUDA_POINTWISE(PRelu)
GRAFT_CUDA_POINTWISE(Max)
GRAFT_CUDA_POINTWISE(Min)
GRAFT_CUDA_POINTWISE(Sum)
GRAFT_CUDA_POINTWISE(Mean)
GRAFT_CUDA_POINTWISE(Equal)
GRAFT_CUDA_POINTWISE(Less)
GRAFT_CUDA_POINTWISE(LessOrEqual)
GRAFT_CUDA_POINTWISE(Greater)
GRAFT_CUDA_POINTWISE(GreaterOrEqual)
GRAFT_CUDA_POINTWISE(And)
GRAFT_CUDA_POINTWISE(Or)
GRAFT_CUDA_POINTWISE(Xor)
GRAFT_CUDA_POINTWISE(Clip)
GRAFT_CUDA_POINTWISE(Where)
GRAFT_CUDA_POINTWISE(Cast)
GRAFT_CUDA_POINTWISE(CastLike)
#undef GRAFT_CUDA_POINTWISE

}  // namespace graft::cuda

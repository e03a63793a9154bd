/// \file
/// One node's reference kernel run on given input values outside a Session:
/// constant folding, the gradient's folding of shape computations, a
/// backend's preparation of weights from constants.
#pragma once

#include <vector>

#include "graft/ops/op_context.h"

namespace graft::ops {

/// Output tensors on the heap, not zero-filled: kernels write every element
/// of their outputs (the runtime's BufferPool hands them reused blocks too).
class HeapAllocator : public OutputAllocator {
 public:
  Tensor allocate(DType dtype, const Shape& shape) override { return Tensor::uninitialized(dtype, shape); }
};

/// The outputs of `node`'s reference kernel on `inputs` (an absent optional
/// input as an undefined Tensor), allocated by `allocator`, on `num_threads`
/// threads. Throws what the kernel throws.
std::vector<Tensor> evaluate_node(const ir::Node& node, std::vector<Tensor> inputs, OutputAllocator& allocator,
                                  int num_threads = 1);

/// evaluate_node with fresh heap tensors.
std::vector<Tensor> evaluate_node(const ir::Node& node, std::vector<Tensor> inputs, int num_threads = 1);

}  // namespace graft::ops

#include "graft/ops/evaluate_node.h"

#include <utility>

#include "graft/ir/graph.h"

namespace graft::ops {

std::vector<Tensor> evaluate_node(const ir::Node& node, std::vector<Tensor> inputs, OutputAllocator& allocator,
                                  int num_threads) {
  KernelContext context(node, std::move(inputs), {}, allocator, num_threads);
  node.schema().kernel(context);
  return context.outputs();
}

std::vector<Tensor> evaluate_node(const ir::Node& node, std::vector<Tensor> inputs, int num_threads) {
  HeapAllocator allocator;
  return evaluate_node(node, std::move(inputs), allocator, num_threads);
}

}  // namespace graft::ops

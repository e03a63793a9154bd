// A complete graft backend, "reluadd": it takes connected float32 Relu/Add
// regions (no broadcasting) and runs them with its own loop.
#include <algorithm>
#include <map>

#include "graft/ir/indexed_graph.h"
#include "graft/partition/op_support.h"
#include "graft/backend/backend.h"

namespace reluadd {
using namespace graft;

// What it takes: the op support checkers see each node with inferred types.
partition::Support same_float_shapes(const ir::Node& node) {
  const ir::ValueType& out = node.output_types[0];
  if (out.dtype != DType::float32) return partition::Support::no("only float32");
  for (const ir::Value& in : node.inputs)
    if (node.graph().type_of(in) != out) return partition::Support::no("no broadcasting");
  return partition::Support::yes();
}
GRAFT_REGISTER_OP_SUPPORT("reluadd", "Relu", same_float_shapes);
GRAFT_REGISTER_OP_SUPPORT("reluadd", "Add", same_float_shapes);

// How it runs one subgraph: node by node in topological order.
class Module final : public backend::CompiledModule {
 public:
  explicit Module(const ir::Graph& body) : body_(body.clone()), order_(*body_) {}
  std::string type_key() const override { return "reluadd"; }
  std::vector<Tensor> run(std::span<const Tensor> inputs, backend::ModuleRunContext&) const override {
    std::map<const ir::Node*, Tensor> values;
    for (size_t i = 0; i < inputs.size(); ++i) values[body_->inputs()[i]] = inputs[i];
    for (uint32_t id = 0; id < order_.num_nodes(); ++id) {
      const ir::Node& node = order_.node(id);
      if (node.op_type() == "Input") continue;
      if (node.op_type() == "Constant") {
        values[&node] = node.constant_value;
        continue;
      }
      const Tensor& a = values.at(node.inputs[0].node);
      const float* x = a.data<float>();
      const float* y = node.op_type() == "Add" ? values.at(node.inputs[1].node).data<float>() : nullptr;
      Tensor out(DType::float32, a.shape());
      float* z = out.data<float>();
      for (int64_t i = 0; i < a.numel(); ++i) z[i] = y ? x[i] + y[i] : std::max(x[i], 0.0f);
      values[&node] = out;
    }
    std::vector<Tensor> outputs;
    for (const ir::Value& v : body_->outputs()) outputs.push_back(values.at(v.node));
    return outputs;
  }

 private:
  std::unique_ptr<ir::Graph> body_;
  ir::IndexedGraph order_;
};

// The backend: a name and compile().
class Backend final : public backend::Backend {
 public:
  std::string name() const override { return "reluadd"; }
  int default_rank() const override { return 50; }
  std::unique_ptr<backend::CompiledModule> compile(const ir::Graph& body,
                                                   const backend::CompileOptions&) const override {
    return std::make_unique<Module>(body);
  }
};
GRAFT_REGISTER_BACKEND(Backend);

}  // namespace reluadd

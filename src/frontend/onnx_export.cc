// ONNX export: Constant nodes become initializers, Input nodes graph inputs,
// every other node a NodeProto. Unnamed values get unique generated names; a
// graph output whose name differs from its value's name goes through an
// Identity. The file is written atomically (temporary file + rename).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unordered_map>
#include <unordered_set>

#include "graft/frontend/onnx_import.h"
#include "graft/ir/indexed_graph.h"
#include "tensor_proto.h"

namespace graft::frontend {

namespace {

void set_type(const ir::ValueType& type, onnx::ValueInfoProto& info) {
  // An element type graft does not know (a control-flow body's value that
  // inference did not reach) is left out with the whole type: elem_type 0
  // (UNDEFINED) makes ONNX Runtime refuse the model ("Invalid tensor data
  // type 0"), while a missing type is inferred by the reader.
  if (type.dtype == DType::undefined) return;
  onnx::TypeProto* value_type = info.mutable_type();
  if (type.optional) value_type = value_type->mutable_optional_type()->mutable_elem_type();
  if (type.sequence) value_type = value_type->mutable_sequence_type()->mutable_elem_type();
  auto* tt = value_type->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(type.dtype));
  if (!type.has_rank) return;
  auto* shape = tt->mutable_shape();
  for (const ir::Dim& d : type.dims) {
    auto* dim = shape->add_dim();
    if (d.is_known()) dim->set_dim_value(d.value);
    else if (!d.symbol.empty()) dim->set_dim_param(d.symbol);
  }
}

class Exporter {
 public:
  void export_graph(const ir::Graph& g, onnx::GraphProto& gp) {
    ir::IndexedGraph indexed(g);
    gp.set_name(g.name.empty() ? "graft" : g.name);
    std::unordered_map<const ir::Node*, std::vector<std::string>> names;
    auto name_of = [&](ir::Value v) -> const std::string& {
      auto& list = names[v.node];
      if (auto preset = captured_.find(v.node); list.empty() && preset != captured_.end()) list = {preset->second};
      if (list.empty()) {
        list.resize(static_cast<size_t>(v.node->num_outputs()));
        for (int k = 0; k < v.node->num_outputs(); ++k) {
          std::string n = v.node->output_names[static_cast<size_t>(k)];
          if (n.empty() || used_.count(n)) n = unique("v" + std::to_string(counter_++));
          used_.insert(n);
          list[static_cast<size_t>(k)] = n;
        }
      }
      return list[static_cast<size_t>(v.index)];
    };
    for (const ir::Node* in : g.inputs()) {
      if (captured_.count(in)) continue;  // an outer value the body reads by its name
      auto* info = gp.add_input();
      info->set_name(name_of(ir::Value{const_cast<ir::Node*>(in), 0}));
      set_type(in->output_types[0], *info);
    }
    for (uint32_t id = 0; id < indexed.num_nodes(); ++id) {
      ir::Node& n = indexed.mutable_node(id);
      const ir::OpSchema& s = n.schema();
      if (s.name == "Input" && s.domain.empty()) continue;
      if (s.name == "Constant" && s.domain.empty()) {
        auto* t = gp.add_initializer();
        tensor_to_proto(n.constant_value, *t);
        t->set_name(name_of(n.output(0)));
        continue;
      }
      // graft's backward ops (autodiff) are plain nodes of domain "graft"; its
      // subgraph and device-copy nodes have no ONNX form.
      const bool exportable_graft_op = s.domain == "graft" && !n.subgraph && s.id != ir::OpId::Subgraph &&
                                       s.id != ir::OpId::FusedPointwise && s.id != ir::OpId::CopyToDevice &&
                                       s.id != ir::OpId::CopyToHost;
      if (!s.domain.empty() && !exportable_graft_op)
        fail(ErrorKind::unsupported, n.describe(), ": graft-domain ops have no ONNX form; export before partitioning");
      auto* np = gp.add_node();
      np->set_op_type(std::string(s.name));
      if (!s.domain.empty()) np->set_domain(std::string(s.domain));
      np->set_name(n.name);
      size_t declared = n.inputs.size() - static_cast<size_t>(n.num_captured_inputs);
      for (size_t i = 0; i < declared; ++i) np->add_input(n.inputs[i] ? name_of(n.inputs[i]) : std::string());
      for (int k = 0; k < n.num_outputs(); ++k) np->add_output(name_of(n.output(k)));
      // The names, in this graph, of the outer values its bodies read.
      std::vector<std::string> captured;
      for (size_t i = declared; i < n.inputs.size(); ++i) captured.push_back(n.inputs[i] ? name_of(n.inputs[i]) : "");
      for (const auto& [key, value] : n.attributes.all())
        export_attribute(key, value, captured, *np->add_attribute());
    }
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      const std::string& value_name = name_of(g.outputs()[i]);
      const std::string& out_name = g.output_names()[i];
      std::string final_name = value_name;
      if (out_name != value_name && !used_.count(out_name)) {
        auto* id = gp.add_node();
        id->set_op_type("Identity");
        id->add_input(value_name);
        id->add_output(out_name);
        used_.insert(out_name);
        final_name = out_name;
      }
      auto* info = gp.add_output();
      info->set_name(final_name);
      set_type(g.type_of(g.outputs()[i]), *info);
    }
  }

 private:
  std::string unique(std::string base) {
    while (used_.count(base)) base += "_";
    return base;
  }

  void export_attribute(const std::string& key, const ir::AttributeValue& value,
                        const std::vector<std::string>& captured, onnx::AttributeProto& a) {
    using A = onnx::AttributeProto;
    a.set_name(key);
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, int64_t>) { a.set_type(A::INT); a.set_i(v); }
          else if constexpr (std::is_same_v<T, float>) { a.set_type(A::FLOAT); a.set_f(v); }
          else if constexpr (std::is_same_v<T, std::string>) { a.set_type(A::STRING); a.set_s(v); }
          else if constexpr (std::is_same_v<T, Tensor>) { a.set_type(A::TENSOR); tensor_to_proto(v, *a.mutable_t()); }
          else if constexpr (std::is_same_v<T, std::shared_ptr<ir::Graph>>) {
            a.set_type(A::GRAPH);
            export_body(*v, captured, *a.mutable_g());
          } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            a.set_type(A::INTS);
            for (auto x : v) a.add_ints(x);
          } else if constexpr (std::is_same_v<T, std::vector<float>>) {
            a.set_type(A::FLOATS);
            for (auto x : v) a.add_floats(x);
          } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            a.set_type(A::STRINGS);
            for (const auto& x : v) a.add_strings(x);
          } else if constexpr (std::is_same_v<T, std::vector<Tensor>>) {
            a.set_type(A::TENSORS);
            for (const auto& x : v) tensor_to_proto(x, *a.add_tensors());
          }
        },
        value);
  }

  // A body's last Input nodes, one per captured value of its node (in order,
  // as the importer makes them), are outer values: they take the outer
  // names, which the body reads, and are not declared as body inputs.
  void export_body(const ir::Graph& body, const std::vector<std::string>& captured, onnx::GraphProto& gp) {
    Exporter inner;
    inner.used_ = used_;
    inner.counter_ = counter_;
    const std::vector<ir::Node*>& inputs = body.inputs();
    if (captured.size() <= inputs.size())
      for (size_t j = 0; j < captured.size(); ++j)
        inner.captured_[inputs[inputs.size() - captured.size() + j]] = captured[j];
    inner.export_graph(body, gp);
    counter_ = inner.counter_;
    used_.insert(inner.used_.begin(), inner.used_.end());
  }

  std::unordered_set<std::string> used_;
  std::unordered_map<const ir::Node*, std::string> captured_;  // body Input node -> outer name
  int64_t counter_ = 0;
};

}  // namespace

void save_onnx(const ir::Graph& graph, const std::string& path) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("graft");
  model.set_producer_version(GRAFT_VERSION);
  auto opsets = graph.opset_imports;
  if (!opsets.count("")) opsets[""] = 17;
  for (const auto& [domain, version] : opsets) {
    auto* op = model.add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
  }
  Exporter exporter;
  exporter.export_graph(graph, *model.mutable_graph());
  std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out || !model.SerializeToOstream(&out)) {
      std::remove(tmp.c_str());
      fail(ErrorKind::io, path, ": cannot write the model");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    fail(ErrorKind::io, path, ": cannot write the model (", ec.message(), ")");
  }
}

}  // namespace graft::frontend

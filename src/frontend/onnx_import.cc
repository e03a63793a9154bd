// ONNX import. A ModelProto is parsed with Debian's libonnx protobuf classes
// and validated field by field (nothing in the file is trusted), then turned
// into an ir::Graph in two phases per graph: create every node (collecting
// every unsupported op for one error), then wire inputs by name, so that an
// undefined name is reported by name and a cycle is caught by ir::verify.
//
// Control flow bodies (If/Loop/Scan GRAPH attributes) are imported
// recursively. Names a body reads from an enclosing scope are "captured": the
// node gets them appended to its inputs (Node::num_captured_inputs), and each
// of its bodies gets one Input node per captured name, after its declared
// inputs, in the same order.
#include "graft/frontend/onnx_import.h"

#include <filesystem>
#include <functional>
#include <optional>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "graft/ir/verify.h"
#include "tensor_proto.h"

namespace graft::frontend {

namespace {

constexpr size_t kMaxModelBytes = size_t{2} << 30;  // protobuf's own limit
// Opsets 19 to 22 changed, of the ops graft runs: AveragePool (dilations),
// Pad (wrap), Resize (half_pixel_symmetric), DFT (axis as an input),
// GridSample (linear/cubic, N-d), ReduceMax/ReduceMin (bool), Q/DQ (blocked
// quantization, refused; output_dtype), GroupNormalization (per-channel
// scale and bias, stash_type); the rest added element types (float8, 4-bit,
// bfloat16) that graft reports as unsupported where they occur.
constexpr int kMinOpset = 1, kMaxOpset = 22;
constexpr int kMaxNesting = 64;

std::string canonical_domain(const std::string& domain) { return domain == "ai.onnx" ? "" : domain; }

/// Names a graph reads but does not define (its free variables), in order of first use.
void collect_free_names(const onnx::GraphProto& g, std::vector<std::string>& out, std::unordered_set<std::string>& seen,
                        int depth) {
  if (depth > kMaxNesting) fail(ErrorKind::invalid_model, "subgraphs are nested more than ", kMaxNesting, " deep");
  std::unordered_set<std::string> defined;
  for (const auto& v : g.input()) defined.insert(v.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) defined.insert(o);
  auto use = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name) && seen.insert(name).second) out.push_back(name);
  };
  for (const auto& n : g.node()) {
    for (const auto& i : n.input()) use(i);
    for (const auto& a : n.attribute()) {
      std::vector<std::string> inner;
      std::unordered_set<std::string> inner_seen;
      if (a.has_g()) collect_free_names(a.g(), inner, inner_seen, depth + 1);
      for (const auto& sg : a.graphs()) collect_free_names(sg, inner, inner_seen, depth + 1);
      for (const auto& name : inner) use(name);
    }
  }
  for (const auto& o : g.output()) use(o.name());
}

class Importer {
 public:
  /// `raw_data`, when given, holds where each initializer of the main graph
  /// has its raw_data (see model_bytes.h).
  Importer(std::string what, std::string base_dir, const std::vector<std::optional<RawDataSlice>>* raw_data = nullptr)
      : what_(std::move(what)), base_dir_(std::move(base_dir)), raw_data_(raw_data) {}

  std::unique_ptr<ir::Graph> import_model(const onnx::ModelProto& model) {
    if (!model.has_ir_version() || model.ir_version() <= 0)
      fail(ErrorKind::invalid_model, what_, ": not a valid ONNX model (no IR version)");
    if (!model.has_graph()) fail(ErrorKind::invalid_model, what_, ": not a valid ONNX model (no graph)");
    std::map<std::string, int64_t> opsets;
    for (const auto& op : model.opset_import()) opsets[canonical_domain(op.domain())] = op.version();
    if (model.opset_import_size() == 0) opsets[""] = 1;  // IR version 2 default
    // A model importing only other domains (ai.onnx.ml, training) has no default opset; its ops are
    // then reported as unsupported one by one.
    int64_t onnx_opset = opsets.count("") ? opsets[""] : kMinOpset;
    if (onnx_opset < kMinOpset || onnx_opset > kMaxOpset)
      fail(ErrorKind::unsupported, what_, ": ONNX opset ", onnx_opset, " is not supported (graft supports ", kMinOpset,
           " to ", kMaxOpset, ")");
    auto graph = import_graph(model.graph(), opsets, {}, 0);
    if (!unsupported_.empty()) {
      std::string list;
      for (const auto& [op, nodes] : unsupported_) {
        list += (list.empty() ? "" : ", ") + op + " (node" + (nodes.size() > 1 ? "s " : " ");
        for (size_t i = 0; i < nodes.size() && i < 5; ++i) list += (i ? ", '" : "'") + nodes[i] + "'";
        if (nodes.size() > 5) list += ", ... " + std::to_string(nodes.size() - 5) + " more";
        list += ")";
      }
      fail(ErrorKind::unsupported, what_, ": unsupported ops: ", list);
    }
    if (graph->name.empty()) graph->name = model.graph().name();
    return graph;
  }

 private:
  ir::ValueType value_type(const onnx::ValueInfoProto& info) {
    if (!info.has_type()) return ir::ValueType{};
    const onnx::TypeProto* type = &info.type();
    const bool optional = type->has_optional_type();
    if (optional) {
      if (!type->optional_type().has_elem_type())
        fail(ErrorKind::invalid_model, what_, ": optional value '", info.name(), "' has no element type");
      type = &type->optional_type().elem_type();
    }
    const bool sequence = type->has_sequence_type();
    if (sequence) {
      if (!type->sequence_type().has_elem_type())
        fail(ErrorKind::invalid_model, what_, ": sequence value '", info.name(), "' has no item type");
      type = &type->sequence_type().elem_type();
    }
    if (!type->has_tensor_type())
      fail(ErrorKind::unsupported, what_, ": value '", info.name(), "' is not a tensor",
           sequence ? " sequence (sequences of sequences, maps or optionals are not supported)"
                    : ", a sequence of tensors or an optional one (map values are not supported)");
    const auto& tt = type->tensor_type();
    ir::ValueType t;
    t.sequence = sequence;
    t.optional = optional;
    if (tt.has_elem_type() && (tt.elem_type() < 0 || tt.elem_type() > 16))
      fail(ErrorKind::invalid_model, what_, ": value '", info.name(), "' has element type ", tt.elem_type(),
           ", not an ONNX tensor type");
    t.dtype = tt.has_elem_type() ? dtype_from_onnx(tt.elem_type()) : DType::undefined;
    if (t.dtype == DType::string || t.dtype == DType::complex64 || t.dtype == DType::complex128)
      fail(ErrorKind::unsupported, what_, ": value '", info.name(), "' has dtype ", dtype_name(t.dtype),
           ", which graft does not support");
    if (tt.has_shape()) {
      t.has_rank = true;
      for (const auto& d : tt.shape().dim()) {
        if (d.has_dim_value()) {
          if (d.dim_value() < 0)
            fail(ErrorKind::invalid_model, what_, ": value '", info.name(), "' has a negative dimension");
          t.dims.push_back(ir::Dim::known(d.dim_value()));
        } else if (d.has_dim_param()) {
          t.dims.push_back(ir::Dim::symbolic(d.dim_param()));
        } else {
          t.dims.push_back(ir::Dim{});
        }
      }
    }
    return t;
  }

  ir::AttributeValue attribute(const onnx::AttributeProto& a, const std::map<std::string, int64_t>& opsets,
                               const std::vector<std::string>& captured, int depth) {
    using A = onnx::AttributeProto;
    A::AttributeType type = a.type();
    if (type == A::UNDEFINED) {  // old models: infer from the field that is set
      if (a.has_f()) type = A::FLOAT;
      else if (a.has_i()) type = A::INT;
      else if (a.has_s()) type = A::STRING;
      else if (a.has_t()) type = A::TENSOR;
      else if (a.has_g()) type = A::GRAPH;
      else if (a.floats_size()) type = A::FLOATS;
      else if (a.strings_size()) type = A::STRINGS;
      else type = A::INTS;
    }
    std::string what = what_ + ": attribute '" + a.name() + "'";
    switch (type) {
      case A::FLOAT: return a.f();
      case A::INT: return static_cast<int64_t>(a.i());
      case A::STRING: return a.s();
      case A::TENSOR: return tensor_from_proto(a.t(), what, base_dir_);
      case A::GRAPH: return std::shared_ptr<ir::Graph>(import_graph(a.g(), opsets, captured, depth + 1));
      case A::FLOATS: return std::vector<float>(a.floats().begin(), a.floats().end());
      case A::INTS: return std::vector<int64_t>(a.ints().begin(), a.ints().end());
      case A::STRINGS: return std::vector<std::string>(a.strings().begin(), a.strings().end());
      case A::TENSORS: {
        std::vector<Tensor> ts;
        for (const auto& t : a.tensors()) ts.push_back(tensor_from_proto(t, what, base_dir_));
        return ts;
      }
      default: fail(ErrorKind::unsupported, what, " has an unsupported attribute type ", static_cast<int>(type));
    }
  }

  /// The value of an ONNX Constant node as a tensor.
  Tensor constant_value(const onnx::NodeProto& n) {
    std::string what = what_ + ": Constant '" + n.name() + "'";
    for (const auto& a : n.attribute()) {
      if (a.name() == "value") return tensor_from_proto(a.t(), what, base_dir_);
      if (a.name() == "value_float") return Tensor::scalar<float>(a.f());
      if (a.name() == "value_int") return Tensor::scalar<int64_t>(a.i());
      if (a.name() == "value_floats")
        return Tensor::from_vector(std::vector<float>(a.floats().begin(), a.floats().end()), {a.floats_size()});
      if (a.name() == "value_ints")
        return Tensor::from_vector(std::vector<int64_t>(a.ints().begin(), a.ints().end()), {a.ints_size()});
      if (a.name() == "sparse_value" || a.name() == "value_string" || a.name() == "value_strings")
        fail(ErrorKind::unsupported, what, ": attribute ", a.name(), " is not supported");
    }
    fail(ErrorKind::invalid_model, what, ": Constant has no value attribute");
  }

  std::unique_ptr<ir::Graph> import_graph(const onnx::GraphProto& gp, const std::map<std::string, int64_t>& opsets,
                                          const std::vector<std::string>& captured, int depth) {
    if (depth > kMaxNesting) fail(ErrorKind::invalid_model, what_, ": subgraphs are nested too deep");
    auto g = std::make_unique<ir::Graph>();
    g->opset_imports = opsets;
    g->name = gp.name();
    std::unordered_map<std::string, ir::Value> scope;
    auto define = [&](const std::string& name, ir::Value v, const char* kind) {
      if (name.empty()) return;
      if (!scope.emplace(name, v).second)
        fail(ErrorKind::invalid_model, what_, ": ", kind, " '", name, "' defines a value name used before");
    };
    std::unordered_set<std::string> initializer_names;
    for (const auto& t : gp.initializer()) initializer_names.insert(t.name());
    // Declared inputs (those with an initializer are weights, not inputs).
    for (const auto& in : gp.input()) {
      if (initializer_names.count(in.name())) continue;
      if (in.name().empty()) fail(ErrorKind::invalid_model, what_, ": a graph input has no name");
      ir::Node* node = g->add_input(in.name(), value_type(in));
      define(in.name(), node->output(0), "graph input");
    }
    for (const std::string& name : captured) {
      if (scope.count(name)) continue;  // shadowed by a declared input: the body's own
      ir::Node* node = g->add_input(name, ir::ValueType{});
      scope.emplace(name, node->output(0));
    }
    const bool raw_data_apart = depth == 0 && raw_data_ && !raw_data_->empty();
    GRAFT_CHECK(!raw_data_apart || raw_data_->size() == static_cast<size_t>(gp.initializer_size()),
                "raw data table does not match the initializers");
    for (int i = 0; i < gp.initializer_size(); ++i) {
      const onnx::TensorProto& t = gp.initializer(i);
      if (t.name().empty()) fail(ErrorKind::invalid_model, what_, ": an initializer has no name");
      const std::optional<RawDataSlice>* raw = raw_data_apart ? &(*raw_data_)[static_cast<size_t>(i)] : nullptr;
      ir::Node* node = g->add_constant(t.name(), tensor_from_proto(t, what_ + ": initializer '" + t.name() + "'",
                                                                   base_dir_, raw && *raw ? &**raw : nullptr));
      node->name = t.name();
      scope[t.name()] = node->output(0);  // an initializer overrides a same-named input
    }
    // Phase 1: create nodes.
    std::vector<std::pair<ir::Node*, const onnx::NodeProto*>> created;
    for (const auto& np : gp.node()) {
      std::string domain = canonical_domain(np.domain());
      std::string node_name = np.name().empty() ? (np.output_size() ? np.output(0) : np.op_type()) : np.name();
      if (domain.empty() && np.op_type() == "Constant") {
        if (np.output_size() != 1) fail(ErrorKind::invalid_model, what_, ": Constant '", node_name, "' needs one output");
        ir::Node* node = g->add_constant(np.output(0), constant_value(np));
        node->name = node_name;
        define(np.output(0), node->output(0), "node output");
        continue;
      }
      const ir::OpSchema* schema = ir::find_op(domain, np.op_type());
      if (!schema || !schema->is_implemented() || schema->category == ir::OpCategory::source) {
        unsupported_[domain.empty() ? np.op_type() : domain + "." + np.op_type()].push_back(node_name);
        continue;
      }
      // Captured names of this node's bodies, in order of first use.
      std::vector<std::string> node_captured;
      std::unordered_set<std::string> seen;
      for (const auto& a : np.attribute()) {
        if (a.has_g()) collect_free_names(a.g(), node_captured, seen, depth + 1);
        for (const auto& sg : a.graphs()) collect_free_names(sg, node_captured, seen, depth + 1);
      }
      ir::Node* node = g->add_node(np.op_type(), {}, np.output_size(), node_name, domain);
      for (const auto& a : np.attribute()) {
        if (a.name().empty()) fail(ErrorKind::invalid_model, what_, ": ", node->describe(), " has an unnamed attribute");
        node->attributes.set(a.name(), attribute(a, opsets, node_captured, depth));
      }
      node->num_captured_inputs = static_cast<int>(node_captured.size());
      for (int k = 0; k < np.output_size(); ++k) {
        node->output_names[static_cast<size_t>(k)] = np.output(k);
        define(np.output(k), node->output(k), "node output");
      }
      created.emplace_back(node, &np);
      captured_names_[node] = std::move(node_captured);
    }
    if (!unsupported_.empty()) return g;  // the caller reports them all
    // Phase 2: wire inputs by name.
    auto lookup = [&](const std::string& name, const ir::Node& reader) -> ir::Value {
      auto it = scope.find(name);
      if (it == scope.end())
        fail(ErrorKind::invalid_model, what_, ": ", reader.describe(), " reads '", name, "', which is not defined");
      return it->second;
    };
    for (auto& [node, np] : created) {
      for (const auto& name : np->input()) node->inputs.push_back(name.empty() ? ir::Value{} : lookup(name, *node));
      for (const auto& name : captured_names_[node]) node->inputs.push_back(lookup(name, *node));
    }
    for (const auto& out : gp.output()) {
      auto it = scope.find(out.name());
      if (it == scope.end())
        fail(ErrorKind::invalid_model, what_, ": graph output '", out.name(), "' is not produced by any node");
      g->add_output(it->second, out.name());
    }
    ir::verify(*g);
    return g;
  }

  std::string what_;
  std::string base_dir_;
  const std::vector<std::optional<RawDataSlice>>* raw_data_ = nullptr;
  std::map<std::string, std::vector<std::string>> unsupported_;
  std::unordered_map<const ir::Node*, std::vector<std::string>> captured_names_;
};

/// Parses and imports a model, initializer raw_data read from `source` straight
/// into the tensors; `parse_whole` is the ordinary protobuf parse for what the
/// wire walk leaves to protobuf.
std::unique_ptr<ir::Graph> import_from(const ByteSource& source, const std::function<bool(onnx::ModelProto&)>& parse_whole,
                                       const std::string& base_dir, const std::string& what) {
  if (source.size() == 0) fail(ErrorKind::invalid_model, what, ": not a valid ONNX model (the file is empty)");
  if (source.size() > kMaxModelBytes) fail(ErrorKind::invalid_model, what, ": model larger than 2 GiB");
  ModelWithoutRawData split;
  if (!parse_model_skipping_raw_data(source, split)) {
    split.raw_data.clear();
    if (!parse_whole(split.model))
      fail(ErrorKind::invalid_model, what,
           ": not a valid ONNX model (protobuf parsing failed: the bytes are truncated or not ONNX, or messages nest "
           "deeper than graft's limit of ", kProtobufNestingLimit, " levels, about ", kProtobufNestingLimit / 3,
           " subgraphs within subgraphs)");
  }
  Importer importer(what, base_dir, &split.raw_data);
  return importer.import_model(split.model);
}

}  // namespace

std::unique_ptr<ir::Graph> load_onnx_from_memory(const std::string& bytes, const std::string& base_dir,
                                                 const std::string& what) {
  MemoryByteSource source(bytes.data(), bytes.size());
  return import_from(source, [&](onnx::ModelProto& model) { return parse_message(model, bytes); }, base_dir, what);
}

std::unique_ptr<ir::Graph> load_onnx(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(ErrorKind::io, path, ": is a directory, not a file");
  FileByteSource source(path);
  if (source.size() > kMaxModelBytes)
    fail(ErrorKind::invalid_model, path, ": file is ", source.size(), " bytes, more than the ", kMaxModelBytes,
         " bytes allowed");
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  auto parse_whole = [&](onnx::ModelProto& model) {
    std::string bytes(static_cast<size_t>(source.size()), '\0');
    source.read(0, bytes.data(), bytes.size());
    return parse_message(model, bytes);
  };
  return import_from(source, parse_whole, dir, path);
}

}  // namespace graft::frontend

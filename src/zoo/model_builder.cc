#include "model_builder.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <sstream>

#include "graft/core/error.h"

namespace graft::zoo::detail {

static_assert(std::endian::native == std::endian::little, "raw_data is written in host order");

double ZooRandom::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  double u1 = 0;
  while (u1 <= 0) u1 = uniform01();
  double u2 = uniform01();
  double radius = std::sqrt(-2.0 * std::log(u1));
  double angle = 2.0 * M_PI * u2;
  spare_ = radius * std::sin(angle);
  has_spare_ = true;
  return radius * std::cos(angle);
}

onnx::AttributeProto attr_int(const std::string& name, int64_t value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(value);
  return a;
}

onnx::AttributeProto attr_float(const std::string& name, float value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(value);
  return a;
}

onnx::AttributeProto attr_ints(const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a.add_ints(v);
  return a;
}

onnx::AttributeProto attr_string(const std::string& name, const std::string& value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRING);
  a.set_s(value);
  return a;
}

onnx::AttributeProto attr_strings(const std::string& name, const std::vector<std::string>& values) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRINGS);
  for (const auto& v : values) a.add_strings(v);
  return a;
}

std::string scope_of(const std::string& module_path) {
  std::string scope, label;
  std::stringstream parts(module_path);
  std::string part;
  while (std::getline(parts, part, '.')) {
    bool numeric = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    label = numeric && !label.empty() ? label + "." + part : part;
    scope += "/" + label;
  }
  return scope;
}

namespace {

void set_value_info(onnx::ValueInfoProto* info, const std::string& name, int32_t elem_type,
                    const std::vector<DimSpec>& dims) {
  info->set_name(name);
  auto* tensor_type = info->mutable_type()->mutable_tensor_type();
  tensor_type->set_elem_type(elem_type);
  auto* shape = tensor_type->mutable_shape();
  for (const DimSpec& d : dims) {
    auto* dim = shape->add_dim();
    if (d.symbol.empty())
      dim->set_dim_value(d.value);
    else
      dim->set_dim_param(d.symbol);
  }
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

ModelBuilder::ModelBuilder(const std::string& graph_name, uint64_t seed) : random_(seed) {
  model_.set_ir_version(8);
  model_.set_producer_name("graft.zoo");
  model_.set_producer_version(GRAFT_VERSION);
  auto* opset = model_.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  graph_ = model_.mutable_graph();
  graph_->set_name(graph_name);
}

void ModelBuilder::add_input(const std::string& name, int32_t elem_type, const std::vector<DimSpec>& dims) {
  set_value_info(graph_->add_input(), name, elem_type, dims);
}

void ModelBuilder::add_output(const std::string& name, int32_t elem_type, const std::vector<DimSpec>& dims) {
  set_value_info(graph_->add_output(), name, elem_type, dims);
}

void ModelBuilder::mark_output(const std::string& value, const std::string& name, int32_t elem_type,
                               const std::vector<DimSpec>& dims) {
  for (auto& n : *graph_->mutable_node()) {
    for (auto& in : *n.mutable_input())
      if (in == value) in = name;
    for (auto& out : *n.mutable_output())
      if (out == value) out = name;
  }
  add_output(name, elem_type, dims);
}

std::string ModelBuilder::add_float_initializer(const std::string& name, const std::vector<int64_t>& shape,
                                                const std::vector<float>& values) {
  GRAFT_CHECK(static_cast<int64_t>(values.size()) == numel(shape), "zoo initializer ", name);
  onnx::TensorProto* t = graph_->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : shape) t->add_dims(d);
  std::string raw(values.size() * sizeof(float), '\0');
  if (!values.empty()) std::memcpy(raw.data(), values.data(), raw.size());
  t->set_raw_data(std::move(raw));
  return name;
}

std::string ModelBuilder::normal_weight(const std::string& name, const std::vector<int64_t>& shape, double stddev) {
  std::vector<float> values(static_cast<size_t>(numel(shape)));
  for (float& v : values) v = static_cast<float>(stddev * random_.normal());
  return add_float_initializer(name, shape, values);
}

std::string ModelBuilder::uniform_weight(const std::string& name, const std::vector<int64_t>& shape, double low,
                                         double high) {
  std::vector<float> values(static_cast<size_t>(numel(shape)));
  for (float& v : values) v = static_cast<float>(random_.uniform(low, high));
  return add_float_initializer(name, shape, values);
}

std::string ModelBuilder::float_constant(const std::string& name, const std::vector<int64_t>& shape,
                                         const std::vector<float>& values) {
  return add_float_initializer(name, shape, values);
}

std::string ModelBuilder::int64_constant(const std::string& name, const std::vector<int64_t>& shape,
                                         const std::vector<int64_t>& values) {
  GRAFT_CHECK(static_cast<int64_t>(values.size()) == numel(shape), "zoo initializer ", name);
  onnx::TensorProto* t = graph_->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : shape) t->add_dims(d);
  std::string raw(values.size() * sizeof(int64_t), '\0');
  if (!values.empty()) std::memcpy(raw.data(), values.data(), raw.size());
  t->set_raw_data(std::move(raw));
  return name;
}

std::string ModelBuilder::scalar(float value) {
  auto it = scalars_.find(value);
  if (it != scalars_.end()) return it->second;
  std::string name = "onnx::Constant_" + std::to_string(constant_counter_++);
  float_constant(name, {}, {value});
  scalars_.emplace(value, name);
  return name;
}

std::vector<std::string> ModelBuilder::node(const std::string& scope, const std::string& op_type,
                                            const std::vector<std::string>& inputs,
                                            const std::vector<onnx::AttributeProto>& attributes, int num_outputs) {
  int& count = scope_op_counts_[scope + "/" + op_type];
  std::string name = scope + "/" + op_type + (count > 0 ? "_" + std::to_string(count) : "");
  ++count;
  onnx::NodeProto* n = graph_->add_node();
  n->set_name(name);
  n->set_op_type(op_type);
  for (const auto& in : inputs) n->add_input(in);
  std::vector<std::string> outputs;
  for (int i = 0; i < num_outputs; ++i) {
    outputs.push_back(name + "_output_" + std::to_string(i));
    n->add_output(outputs.back());
  }
  for (const auto& a : attributes) *n->add_attribute() = a;
  return outputs;
}

std::string ModelBuilder::conv(const std::string& prefix, const std::string& x, int64_t in_channels,
                               int64_t out_channels, int64_t kernel, int64_t stride, int64_t pad, int64_t groups,
                               bool bias) {
  int64_t fan_in = in_channels / groups * kernel * kernel;
  std::vector<std::string> inputs{
      x, normal_weight(prefix + ".weight", {out_channels, in_channels / groups, kernel, kernel},
                       std::sqrt(2.0 / static_cast<double>(fan_in)))};
  if (bias) {
    double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    inputs.push_back(uniform_weight(prefix + ".bias", {out_channels}, -bound, bound));
  }
  return op(scope_of(prefix), "Conv", inputs,
            {attr_ints("dilations", {1, 1}), attr_int("group", groups), attr_ints("kernel_shape", {kernel, kernel}),
             attr_ints("pads", {pad, pad, pad, pad}), attr_ints("strides", {stride, stride})});
}

std::string ModelBuilder::batch_norm(const std::string& prefix, const std::string& x, int64_t channels,
                                     double gamma_scale) {
  std::string weight = uniform_weight(prefix + ".weight", {channels}, 0.8 * gamma_scale, 1.2 * gamma_scale);
  std::string bias = uniform_weight(prefix + ".bias", {channels}, -0.1, 0.1);
  std::string mean = uniform_weight(prefix + ".running_mean", {channels}, -0.1, 0.1);
  std::string var = uniform_weight(prefix + ".running_var", {channels}, 0.8, 1.2);
  return op(scope_of(prefix), "BatchNormalization", {x, weight, bias, mean, var},
            {attr_float("epsilon", 1e-5f), attr_float("momentum", 0.9f)});
}

std::string ModelBuilder::linear_gemm(const std::string& prefix, const std::string& x, int64_t in_features,
                                      int64_t out_features, double gain) {
  std::string weight = normal_weight(prefix + ".weight", {out_features, in_features},
                                     gain / std::sqrt(static_cast<double>(in_features)));
  double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  std::string bias = uniform_weight(prefix + ".bias", {out_features}, -bound, bound);
  return op(scope_of(prefix), "Gemm", {x, weight, bias},
            {attr_float("alpha", 1.0f), attr_float("beta", 1.0f), attr_int("transB", 1)});
}

std::string ModelBuilder::linear_matmul(const std::string& prefix, const std::string& x, int64_t in_features,
                                        int64_t out_features, double gain) {
  // The exporter stores the transposed weight (constant-folded Transpose) under
  // a generated name, and the bias under the module path.
  std::string weight = normal_weight("onnx::MatMul_" + std::to_string(constant_counter_++), {in_features, out_features},
                                     gain / std::sqrt(static_cast<double>(in_features)));
  double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  std::string bias = uniform_weight(prefix + ".bias", {out_features}, -bound, bound);
  std::string scope = scope_of(prefix);
  std::string product = op(scope, "MatMul", {x, weight});
  return op(scope, "Add", {bias, product});
}

std::string ModelBuilder::layer_norm(const std::string& prefix, const std::string& x, int64_t features, float epsilon) {
  std::string weight = uniform_weight(prefix + ".weight", {features}, 0.9, 1.1);
  std::string bias = uniform_weight(prefix + ".bias", {features}, -0.05, 0.05);
  return op(scope_of(prefix), "LayerNormalization", {x, weight, bias},
            {attr_int("axis", -1), attr_float("epsilon", epsilon)});
}

std::string ModelBuilder::serialize() const {
  std::string bytes;
  GRAFT_CHECK(model_.SerializeToString(&bytes), "zoo: could not serialize model ", graph_->name());
  return bytes;
}

}  // namespace graft::zoo::detail

// ModelBuilder: the small toolkit every zoo model family uses to write an ONNX
// graph the way PyTorch's exporter (torch.onnx.export, opset 17) writes it:
// weights are initializers named after the module path ("layer1.0.conv1.weight"),
// nodes are named "<scope>/<OpType>" with outputs "<node name>_output_<i>",
// and every attribute the exporter writes explicitly is written explicitly.
// Internal to src/zoo; the public interface is graft/zoo/zoo.h.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace graft::zoo::detail {

/// Deterministic random numbers from a seed, independent of the standard
/// library's distribution implementations (which differ between vendors).
class ZooRandom {
 public:
  explicit ZooRandom(uint64_t seed) : engine_(seed) {}
  /// Uniform in [0, 1) with 53 random bits.
  double uniform01() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  double uniform(double low, double high) { return low + (high - low) * uniform01(); }
  /// Standard normal (Box-Muller).
  double normal();

 private:
  std::mt19937_64 engine_;
  bool has_spare_ = false;
  double spare_ = 0;
};

/// One dimension of a graph input or output: a fixed extent or a symbolic name.
struct DimSpec {
  int64_t value = -1;
  std::string symbol;
  DimSpec(int64_t v) : value(v) {}                  // NOLINT: implicit on purpose
  DimSpec(const char* s) : symbol(s) {}             // NOLINT
  DimSpec(std::string s) : symbol(std::move(s)) {}  // NOLINT
};

/// Attribute constructors.
onnx::AttributeProto attr_int(const std::string& name, int64_t value);
onnx::AttributeProto attr_float(const std::string& name, float value);
onnx::AttributeProto attr_ints(const std::string& name, const std::vector<int64_t>& values);
onnx::AttributeProto attr_string(const std::string& name, const std::string& value);
onnx::AttributeProto attr_strings(const std::string& name, const std::vector<std::string>& values);

/// Builds one ONNX model.
class ModelBuilder {
 public:
  ModelBuilder(const std::string& graph_name, uint64_t seed);

  /// Declares a graph input / output.
  void add_input(const std::string& name, int32_t elem_type, const std::vector<DimSpec>& dims);
  void add_output(const std::string& name, int32_t elem_type, const std::vector<DimSpec>& dims);
  /// Renames the value `value` to `name` (the exporter's output_names) and
  /// declares it a graph output.
  void mark_output(const std::string& value, const std::string& name, int32_t elem_type,
                   const std::vector<DimSpec>& dims);

  /// Float initializer with N(0, stddev^2) entries.
  std::string normal_weight(const std::string& name, const std::vector<int64_t>& shape, double stddev);
  /// Float initializer with U(low, high) entries.
  std::string uniform_weight(const std::string& name, const std::vector<int64_t>& shape, double low, double high);
  /// Float / int64 initializers with the given values.
  std::string float_constant(const std::string& name, const std::vector<int64_t>& shape,
                             const std::vector<float>& values);
  std::string int64_constant(const std::string& name, const std::vector<int64_t>& shape,
                             const std::vector<int64_t>& values);
  /// A scalar float constant the way the exporter writes literals
  /// ("onnx::Div_123"-like names); one initializer per distinct value.
  std::string scalar(float value);

  /// Adds node `op_type` named "<scope>/<op_type>" (numbered when repeated in
  /// the scope) and returns its output names.
  std::vector<std::string> node(const std::string& scope, const std::string& op_type,
                                const std::vector<std::string>& inputs,
                                const std::vector<onnx::AttributeProto>& attributes = {}, int num_outputs = 1);
  /// Same, single output.
  std::string op(const std::string& scope, const std::string& op_type, const std::vector<std::string>& inputs,
                 const std::vector<onnx::AttributeProto>& attributes = {}) {
    return node(scope, op_type, inputs, attributes, 1)[0];
  }

  // Layers as torch.nn modules export them. `prefix` is the module path
  // ("layer1.0.conv1"); the scope is derived from it.

  /// nn.Conv2d: He-normal weight (fan-in, ReLU gain), optional bias.
  std::string conv(const std::string& prefix, const std::string& x, int64_t in_channels, int64_t out_channels,
                   int64_t kernel, int64_t stride, int64_t pad, int64_t groups = 1, bool bias = false);
  /// nn.BatchNorm2d in eval mode with non-trivial statistics. `gamma_scale`
  /// scales the learned weight (smaller for the last BN of a residual branch).
  std::string batch_norm(const std::string& prefix, const std::string& x, int64_t channels, double gamma_scale = 1.0);
  /// nn.Linear exported as Gemm(transB=1) (2-D input) with Xavier weight.
  std::string linear_gemm(const std::string& prefix, const std::string& x, int64_t in_features, int64_t out_features,
                          double gain = 1.0);
  /// nn.Linear on a >2-D input exported as MatMul with the transposed weight
  /// and an Add of the bias.
  std::string linear_matmul(const std::string& prefix, const std::string& x, int64_t in_features, int64_t out_features,
                            double gain = 1.0);
  /// nn.LayerNorm over the last dimension (LayerNormalization, opset 17).
  std::string layer_norm(const std::string& prefix, const std::string& x, int64_t features, float epsilon);
  std::string relu(const std::string& scope, const std::string& x) { return op(scope, "Relu", {x}); }

  /// Serializes the model (opset 17, IR version 8).
  std::string serialize() const;

 private:
  std::string add_float_initializer(const std::string& name, const std::vector<int64_t>& shape,
                                    const std::vector<float>& values);

  onnx::ModelProto model_;
  onnx::GraphProto* graph_;
  ZooRandom random_;
  std::map<std::string, int> scope_op_counts_;
  std::map<float, std::string> scalars_;
  int constant_counter_ = 0;
};

/// "layer1.0.conv1" -> "/layer1/layer1.0/conv1": the exporter's scope naming.
std::string scope_of(const std::string& module_path);

// One builder per family (one file each).
std::string build_mlp(uint64_t seed);
std::string build_gru_cell(uint64_t seed);
std::string build_resnet(int depth, uint64_t seed);
std::string build_mobilenet_v2(uint64_t seed);
std::string build_squeezenet(uint64_t seed);
std::string build_bert(uint64_t seed);
std::string build_gru(uint64_t seed);

}  // namespace graft::zoo::detail

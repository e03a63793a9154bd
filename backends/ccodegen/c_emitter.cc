// The ccodegen emitter: one C function per subgraph, shapes baked in.
//
// Algorithm. The subgraph is walked in topological order. Every value gets a
// C pointer variable: subgraph inputs point into the `inputs` array, float
// constants into `constants`, a value that is a subgraph output is written
// straight into its `outputs` slot, and every other value gets its own
// 64-byte-aligned slice of one scratch buffer whose total size the module
// allocates per run (no reuse between values: subgraphs are small, and
// distinct buffers keep the C easy to read). Reshape-like ops alias their
// input instead of copying, unless their result is a subgraph output.
//
// Each op becomes a loop nest. A pointwise op (one with a pointwise
// expression) is lowered to kernel IR by that expression, as for fused
// kernels, and the IR rendered as C by codegen's C dialect
// (graft/codegen/c_kernel_source.h); scalar constant operands become
// literals. The loop
// nest is the output's shape with each operand's broadcast strides, after
// merging dimensions that are contiguous for every operand, so a bias add over
// [128, 768] is two loops and a same-shape op one. MatMul and Gemm are row
// loops whose inner loop -O3 vectorizes (an axpy over B's rows, or for a
// transposed B a dot product with 16 independent accumulators). Softmax and
// the reductions are row loops. The outermost loop of each nest carries an
// OpenMP pragma (honoured when the module is compiled with -fopenmp) that only
// forks above a work threshold.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>

#include "c_op_table.h"
#include "graft/backends/ccodegen.h"
#include "graft/codegen/c_kernel_source.h"
#include "graft/core/error.h"
#include "graft/ir/graph.h"
#include "graft/ir/indexed_graph.h"
#include "graft/ir/kernel_ir.h"
#include "graft/ops/pointwise_expression.h"

namespace graft::backends {

namespace {

/// Loops with fewer elements than this stay on one thread.
constexpr int64_t kParallelThreshold = 1 << 15;

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

int64_t product(const Shape& shape, size_t begin = 0, size_t end = SIZE_MAX) {
  int64_t p = 1;
  for (size_t i = begin; i < std::min(end, shape.size()); ++i) p *= shape[i];
  return p;
}

/// Strides that read `shape` broadcast (numpy, right-aligned) to `target`.
std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& target) {
  std::vector<int64_t> own = contiguous_strides(shape);
  std::vector<int64_t> out(target.size(), 0);
  size_t offset = target.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i)
    out[offset + i] = (shape[i] == 1 && target[offset + i] != 1) ? 0 : own[i];
  return out;
}

/// A loop nest over `dims`; array a is indexed by sum(i_k * strides[a][k]).
struct LoopNest {
  Shape dims;
  std::vector<std::vector<int64_t>> strides;

  /// Drops unit dimensions and merges neighbours that are contiguous for every array.
  void simplify() {
    Shape d;
    std::vector<std::vector<int64_t>> s(strides.size());
    for (size_t k = 0; k < dims.size(); ++k) {
      if (dims[k] == 1) continue;
      bool merge = !d.empty();
      for (size_t a = 0; merge && a < strides.size(); ++a) merge = s[a].back() == strides[a][k] * dims[k];
      if (merge) {
        d.back() *= dims[k];
        for (size_t a = 0; a < strides.size(); ++a) s[a].back() = strides[a][k];
      } else {
        d.push_back(dims[k]);
        for (size_t a = 0; a < strides.size(); ++a) s[a].push_back(strides[a][k]);
      }
    }
    dims = d;
    strides = s;
  }

  /// The C index expression of array a inside the nest.
  std::string index(size_t a) const {
    std::string expr;
    for (size_t k = 0; k < dims.size(); ++k) {
      int64_t st = strides[a][k];
      if (st == 0) continue;
      std::string term = "i" + std::to_string(k) + (st == 1 ? "" : " * " + std::to_string(st));
      expr += (expr.empty() ? "" : " + ") + term;
    }
    return expr.empty() ? "0" : expr;
  }
};

class CEmitter {
 public:
  explicit CEmitter(const ir::Graph& graph) : graph_(graph), indexed_(graph) {}

  GeneratedC emit() {
    const std::string name_hint = graph_.name.empty() ? "subgraph" : graph_.name;
    collect_outputs();
    for (size_t i = 0; i < graph_.inputs().size(); ++i) {
      const ir::Node& in = *graph_.inputs()[i];
      uint32_t entry = indexed_.entry_id(indexed_.id_of(in), 0);
      Shape shape = concrete_float_shape(in, 0);
      result_.input_shapes.push_back(shape);
      declare(entry, "const float*", "inputs[" + std::to_string(i) + "]", value_label(in, 0), shape);
    }
    for (uint32_t id = 0; id < indexed_.num_nodes(); ++id) {
      const ir::Node& node = indexed_.node(id);
      if (node.schema().category == ir::OpCategory::source) continue;
      emit_node(id, node);
    }
    finish_outputs();

    std::ostringstream file;
    file << "/* Generated by graft's ccodegen backend from subgraph '" << name_hint << "'.\n"
         << " * Shapes are baked in; float32 throughout. Entry: " << entry_name() << ".\n";
    for (size_t i = 0; i < result_.input_shapes.size(); ++i)
      file << " *   input " << i << ": " << graft_label(graph_.inputs()[i]->output_names[0]) << " "
           << shape_to_string(result_.input_shapes[i]) << "\n";
    for (size_t i = 0; i < result_.output_shapes.size(); ++i)
      file << " *   output " << i << ": " << graft_label(graph_.output_names()[i]) << " "
           << shape_to_string(result_.output_shapes[i]) << "\n";
    file << " */\n#include <string.h>\n" << codegen::c_kernel_prelude();
    file << kMathHelpers;
    if (uses_dot_) file << kDotHelper;
    file << "void " << entry_name()
         << "(const float* const* inputs, float* const* outputs, const float* const* constants, float* scratch,\n    int num_threads) {\n"
         << "  (void)inputs; (void)outputs; (void)constants; (void)scratch; (void)num_threads;\n"
         << declarations_.str() << body_.str() << "}\n";
    result_.source = file.str();
    result_.entry = entry_name();
    result_.scratch_floats = scratch_floats_;
    return result_;
  }

 private:
  // The reductions' helpers (the pointwise helpers, graft_expf & co., come
  // with codegen's C prelude).
  static constexpr const char* kMathHelpers =
      "/* Largest of n floats `stride` apart, compared as integers whose order is the floats' order (a NaN\n"
      " * sorts above +inf, so it wins and reaches the result), which GCC vectorizes; -INFINITY for n = 0. */\n"
      "static inline float graft_max(const float* x, int64_t n, int64_t stride) {\n"
      "  int32_t acc = (int32_t)0x807fffff;  /* the key of -INFINITY */\n"
      "  for (int64_t j = 0; j < n; ++j) {\n"
      "    union { float f; int32_t i; } u;\n"
      "    u.f = x[j * stride];\n"
      "    const int32_t key = u.i ^ ((u.i >> 31) & 0x7fffffff);\n"
      "    acc = key > acc ? key : acc;\n"
      "  }\n"
      "  union { float f; int32_t i; } r;\n"
      "  r.i = acc ^ ((acc >> 31) & 0x7fffffff);\n"
      "  return r.f;\n"
      "}\n"
      "/* Sum of squares of n contiguous floats, 16 partial sums. */\n"
      "static inline float graft_sum_squares(const float* x, int64_t n) {\n"
      "  float acc[16] = {0};\n"
      "  int64_t j = 0;\n"
      "  for (; j + 16 <= n; j += 16)\n"
      "    for (int k = 0; k < 16; ++k) acc[k] += x[j + k] * x[j + k];\n"
      "  float sum = 0.0f;\n"
      "  for (int k = 0; k < 16; ++k) sum += acc[k];\n"
      "  for (; j < n; ++j) sum += x[j] * x[j];\n"
      "  return sum;\n"
      "}\n"
      "/* Sum of n floats `stride` apart; 16 partial sums let -O3 vectorize the contiguous case. */\n"
      "static inline float graft_sum(const float* x, int64_t n, int64_t stride) {\n"
      "  float sum = 0.0f;\n"
      "  if (stride != 1) {\n"
      "    for (int64_t j = 0; j < n; ++j) sum += x[j * stride];\n"
      "    return sum;\n"
      "  }\n"
      "  float acc[16] = {0};\n"
      "  int64_t j = 0;\n"
      "  for (; j + 16 <= n; j += 16)\n"
      "    for (int k = 0; k < 16; ++k) acc[k] += x[j + k];\n"
      "  for (int k = 0; k < 16; ++k) sum += acc[k];\n"
      "  for (; j < n; ++j) sum += x[j];\n"
      "  return sum;\n"
      "}\n\n";

  static constexpr const char* kDotHelper =
      "/* Dot product with 16 independent partial sums, so that -O3 vectorizes it without -ffast-math. */\n"
      "static inline float graft_dot(const float* a, const float* b, int64_t n) {\n"
      "  float acc[16] = {0};\n"
      "  int64_t k = 0;\n"
      "  for (; k + 16 <= n; k += 16)\n"
      "    for (int j = 0; j < 16; ++j) acc[j] += a[k + j] * b[k + j];\n"
      "  float sum = 0.0f;\n"
      "  for (int j = 0; j < 16; ++j) sum += acc[j];\n"
      "  for (; k < n; ++k) sum += a[k] * b[k];\n"
      "  return sum;\n"
      "}\n\n";

  struct Buffer {
    std::string var;
    Shape shape;
  };
  /// An operand a fused pointwise loop loads: buffer, strides in the loop's shape, local name.
  struct Leaf {
    std::string var;
    std::vector<int64_t> strides;
    std::string name;
  };
  /// Pointwise ops not yet stored: their loads and statements, computing `result`.
  struct PointwiseChain {
    Shape shape;
    std::vector<Leaf> leaves;
    std::vector<std::string> statements;
    std::string result;
  };

  std::string entry_name() const {
    // A hash of the body keeps names distinct when several modules share a process.
    uint64_t h = 1469598103934665603ull;
    for (char c : declarations_.str() + body_.str()) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    char buffer[40];
    std::snprintf(buffer, sizeof(buffer), "graft_subgraph_%016llx", static_cast<unsigned long long>(h));
    return buffer;
  }

  /// A value name safe inside a C comment.
  static std::string graft_label(const std::string& name) {
    std::string out;
    for (char c : name) out += (c == '*' || c == '/' || c == '\n' || c == '\r' || static_cast<unsigned char>(c) < 32) ? '_' : c;
    return "'" + out + "'";
  }

  std::string value_label(const ir::Node& node, int index) const {
    return graft_label(graph_.value_name(ir::Value{const_cast<ir::Node*>(&node), index}));
  }

  Shape concrete_float_shape(const ir::Node& node, int index) const {
    const ir::ValueType& type = node.output_types.at(static_cast<size_t>(index));
    if (type.dtype != DType::float32)
      fail(ErrorKind::unsupported, "ccodegen: ", node.describe(), " output ", index, " is ", type.to_string(),
           " (only float32)");
    auto shape = type.concrete_shape();
    if (!shape)
      fail(ErrorKind::unsupported, "ccodegen: ", node.describe(), " output ", index, " has no concrete shape (",
           type.to_string(), ")");
    return *shape;
  }

  void collect_outputs() {
    const auto& outputs = indexed_.outputs();
    for (size_t k = 0; k < outputs.size(); ++k) {
      uint32_t entry = indexed_.entry_id(outputs[k]);
      const ir::Node& producer = indexed_.node(outputs[k].node_id);
      Shape shape = concrete_float_shape(producer, static_cast<int>(outputs[k].index));
      result_.output_shapes.push_back(shape);
      // The first output slot of a computed value is written in place; any other is a copy at the end.
      if (producer.schema().category != ir::OpCategory::source && !direct_output_.count(entry))
        direct_output_[entry] = k;
    }
  }

  void declare(uint32_t entry, const std::string& type, const std::string& init, const std::string& label,
               const Shape& shape) {
    std::string var = "v" + std::to_string(entry);
    // Distinct variables never overlap where one is written (aliases reuse the variable).
    declarations_ << "  " << type << " restrict " << var << " = " << init << ";  /* " << label << " "
                  << shape_to_string(shape) << " */\n";
    buffers_[entry] = Buffer{var, shape};
  }

  /// The buffer of an input of node `id` that the op reads as float data.
  const Buffer& data_input(uint32_t id, size_t k) {
    const ir::Node& node = indexed_.node(id);
    auto inputs = indexed_.inputs(id);
    if (k >= inputs.size() || !inputs[k].present())
      fail(ErrorKind::unsupported, "ccodegen: ", node.describe(), " input ", k, " is absent");
    uint32_t entry = indexed_.entry_id(inputs[k]);
    auto it = buffers_.find(entry);
    if (it != buffers_.end()) return it->second;
    const ir::Node& producer = indexed_.node(inputs[k].node_id);
    if (producer.op() != ir::OpId::Constant)
      fail(ErrorKind::internal, "ccodegen: ", node.describe(), " reads a value that has no buffer");
    const Tensor& value = producer.constant_value;
    if (value.dtype() != DType::float32)
      fail(ErrorKind::unsupported, "ccodegen: ", node.describe(), " reads constant ", value_label(producer, 0), " of ",
           value.type_string(), " as data (only float32)");
    std::string slot = "constants[" + std::to_string(result_.constant_ids.size()) + "]";
    result_.constant_ids.push_back(inputs[k].node_id);
    declare(entry, "const float*", slot, "constant " + value_label(producer, 0), value.shape());
    return buffers_[entry];
  }

  /// Declares the buffer of output 0 of node `id` (an outputs slot or scratch).
  const Buffer& output_buffer(uint32_t id, const Shape& shape) {
    uint32_t entry = indexed_.entry_id(id, 0);
    const ir::Node& node = indexed_.node(id);
    auto direct = direct_output_.find(entry);
    if (direct != direct_output_.end()) {
      declare(entry, "float*", "outputs[" + std::to_string(direct->second) + "]", value_label(node, 0), shape);
    } else {
      size_t offset = scratch_floats_;
      scratch_floats_ += (static_cast<size_t>(product(shape)) + 15) / 16 * 16;
      declare(entry, "float*", "scratch + " + std::to_string(offset), value_label(node, 0), shape);
    }
    return buffers_[entry];
  }

  void emit_node(uint32_t id, const ir::Node& node) {
    std::optional<COp> op = find_c_op(node.op());
    if (!op) fail(ErrorKind::unsupported, "ccodegen: ", node.describe(), ": op not supported by ccodegen");
    if (node.num_outputs() != 1)
      fail(ErrorKind::unsupported, "ccodegen: ", node.describe(), ": only single-output ops");
    Shape out_shape = concrete_float_shape(node, 0);
    body_ << "  /* " << graft_label(node.name.empty() ? "#" + std::to_string(node.index()) : node.name) << " ("
          << node.op_type() << ") -> " << shape_to_string(out_shape) << " */\n";
    switch (op->kind) {
      case COpKind::pointwise: return emit_pointwise(id, node, out_shape);
      case COpKind::matmul: return emit_matmul(id, node, out_shape);
      case COpKind::gemm: return emit_gemm(id, node, out_shape);
      case COpKind::softmax: return emit_softmax(id, node, out_shape);
      case COpKind::reduce: return emit_reduce(id, node, out_shape);
      case COpKind::copy: return emit_copy(id, node, out_shape);
      case COpKind::transpose: return emit_transpose(id, node, out_shape);
      case COpKind::layer_norm: return emit_layer_norm(id, node, out_shape);
    }
  }

  /// Writes a loop nest; `statement` receives the index expressions of each array.
  void emit_loops(LoopNest nest, bool parallel, const std::function<std::string(const std::vector<std::string>&)>& statement) {
    nest.simplify();
    std::vector<std::string> indices;
    for (size_t a = 0; a < nest.strides.size(); ++a) indices.push_back(nest.index(a));
    std::string indent = "  ";
    int64_t total = product(nest.dims);
    for (size_t k = 0; k < nest.dims.size(); ++k) {
      if (k == 0 && parallel && total >= kParallelThreshold) body_ << indent << "#pragma omp parallel for num_threads(num_threads)\n";
      body_ << indent << "for (int64_t i" << k << " = 0; i" << k << " < " << nest.dims[k] << "; ++i" << k << ")\n";
      indent += "  ";
    }
    body_ << indent << statement(indices) << "\n";
  }

  /// True when node `id`'s result can be computed inside its one consumer's
  /// loop instead of being stored: the consumer is a pointwise op of the same
  /// output shape and the value is not a subgraph output.
  bool can_defer(uint32_t id, const Shape& shape) const {
    uint32_t entry = indexed_.entry_id(id, 0);
    for (const ir::Entry& e : indexed_.outputs())
      if (indexed_.entry_id(e) == entry) return false;
    auto consumers = indexed_.consumers(id);
    if (consumers.size() != 1) return false;
    const ir::Node& consumer = indexed_.node(consumers[0]);
    std::optional<COp> op = find_c_op(consumer.op());
    if (!op || op->kind != COpKind::pointwise || consumer.num_outputs() != 1) return false;
    auto consumer_shape = consumer.output_types[0].concrete_shape();
    return consumer_shape && *consumer_shape == shape;
  }

  /// Pointwise ops are chained: a result whose only reader is another
  /// pointwise op of the same shape is not stored but recomputed as a local
  /// inside that reader's loop, so a chain like GELU is one loop.
  void emit_pointwise(uint32_t id, const ir::Node& node, const Shape& out_shape) {
    std::string refusal = c_op_refusal(node);
    if (!refusal.empty()) fail(ErrorKind::unsupported, "ccodegen: ", node.describe(), ": ", refusal);
    auto inputs = indexed_.inputs(id);
    PointwiseChain chain{out_shape, {}, {}, {}};
    // The node's kernel IR: an IR input per operand (a loaded leaf or a
    // chained result, named in `operands`), a literal per scalar constant.
    ir::KernelIR kernel;
    std::vector<int32_t> args;
    std::vector<DType> dtypes;
    std::vector<std::string> operands;
    std::vector<uint32_t> merged;  // deferred entries already in the chain (Mul(x, x) reads one twice)
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (!inputs[k].present()) {
        args.push_back(-1);
        dtypes.push_back(DType::undefined);
        continue;
      }
      dtypes.push_back(DType::float32);
      const ir::Node& producer = indexed_.node(inputs[k].node_id);
      if (producer.op() == ir::OpId::Constant && producer.constant_value.dtype() == DType::float32 &&
          producer.constant_value.numel() == 1) {
        args.push_back(kernel.add_constant(DType::float32, producer.constant_value.data<float>()[0]));
        continue;
      }
      const uint32_t entry = indexed_.entry_id(inputs[k]);
      auto deferred = deferred_.find(entry);
      if (deferred != deferred_.end() && deferred->second.shape == out_shape) {
        PointwiseChain& inner = deferred->second;
        if (std::find(merged.begin(), merged.end(), entry) == merged.end()) {
          merged.push_back(entry);
          chain.leaves.insert(chain.leaves.end(), inner.leaves.begin(), inner.leaves.end());
          chain.statements.insert(chain.statements.end(), inner.statements.begin(), inner.statements.end());
        }
        operands.push_back(inner.result);
      } else {
        const Buffer& b = data_input(id, k);
        if (b.shape.size() > out_shape.size())
          fail(ErrorKind::internal, "ccodegen: ", node.describe(), ": operand of higher rank than its output");
        std::string name = "a" + std::to_string(local_counter_++);
        chain.leaves.push_back(Leaf{b.var, broadcast_strides(b.shape, out_shape), name});
        operands.push_back(name);
      }
      kernel.input_dtypes.push_back(DType::float32);
      args.push_back(kernel.add_input(static_cast<int32_t>(operands.size() - 1), DType::float32));
    }
    kernel.outputs.push_back(ops::lower_pointwise(kernel, node, args, dtypes));
    kernel = ir::canonicalize(kernel);
    const std::string prefix = "t" + std::to_string(local_counter_++) + "_";
    std::ostringstream values;
    codegen::emit_c_kernel_values(values, kernel, "", prefix,
                                  [&](const ir::Expr& e) { return operands[static_cast<size_t>(e.index)]; });
    std::istringstream lines(values.str());
    for (std::string line; std::getline(lines, line);) chain.statements.push_back(line);
    chain.result = prefix + std::to_string(kernel.outputs[0]);
    if (can_defer(id, out_shape)) {
      body_ << "  /* computed inside its reader's loop */\n";
      deferred_[indexed_.entry_id(id, 0)] = std::move(chain);
      return;
    }
    const Buffer& out = output_buffer(id, out_shape);
    LoopNest nest{out_shape, {contiguous_strides(out_shape)}};
    for (const Leaf& leaf : chain.leaves) nest.strides.push_back(leaf.strides);
    emit_loops(nest, true, [&](const std::vector<std::string>& idx) {
      std::string s = "{\n";
      std::string pad(2 * (nest.dims.size() + 2), ' ');
      for (size_t k = 0; k < chain.leaves.size(); ++k)
        s += pad + "const float " + chain.leaves[k].name + " = " + chain.leaves[k].var + "[" + idx[k + 1] + "];\n";
      for (const std::string& statement : chain.statements) s += pad + statement + "\n";
      return s + pad + out.var + "[" + idx[0] + "] = " + chain.result + ";\n" + pad.substr(2) + "}";
    });
  }

  /// Emits the offsets of batch index `b` into A and B for broadcast batch dims.
  void emit_batch_offsets(const Shape& batch, const std::vector<int64_t>& a_strides,
                          const std::vector<int64_t>& b_strides, const std::string& indent) {
    body_ << indent << "int64_t a_off = 0, b_off = 0, rest = b;\n";
    for (size_t k = batch.size(); k-- > 0;) {
      body_ << indent << "{ const int64_t i = rest % " << batch[k] << "; rest /= " << batch[k] << ";";
      if (a_strides[k]) body_ << " a_off += i * " << a_strides[k] << ";";
      if (b_strides[k]) body_ << " b_off += i * " << b_strides[k] << ";";
      body_ << " }\n";
    }
    body_ << indent << "(void)rest;\n";
  }

  void emit_matmul(uint32_t id, const ir::Node& node, const Shape& out_shape) {
    const Buffer& a = data_input(id, 0);
    const Buffer& b = data_input(id, 1);
    const Buffer& y = output_buffer(id, out_shape);
    if (a.shape.empty() || b.shape.empty()) fail(ErrorKind::unsupported, "ccodegen: ", node.describe(), ": 0-d operand");
    const bool a_vector = a.shape.size() == 1, b_vector = b.shape.size() == 1;
    const int64_t M = a_vector ? 1 : a.shape[a.shape.size() - 2];
    const int64_t K = a.shape.back();
    const int64_t N = b_vector ? 1 : b.shape.back();
    Shape a_batch(a.shape.begin(), a.shape.end() - (a_vector ? 1 : 2));
    Shape b_batch(b.shape.begin(), b.shape.end() - (b_vector ? 1 : 2));
    Shape batch(std::max(a_batch.size(), b_batch.size()), 1);
    for (size_t k = 0; k < batch.size(); ++k) {
      size_t from_end = batch.size() - k;
      int64_t da = from_end <= a_batch.size() ? a_batch[a_batch.size() - from_end] : 1;
      int64_t db = from_end <= b_batch.size() ? b_batch[b_batch.size() - from_end] : 1;
      batch[k] = std::max(da, db);
    }
    std::vector<int64_t> a_strides = broadcast_strides(a_batch, batch), b_strides = broadcast_strides(b_batch, batch);
    for (auto& s : a_strides) s *= M * K;
    for (auto& s : b_strides) s *= K * N;
    // Blocks of 8 rows x 256 columns accumulate in an 8 KiB tile that stays in
    // L1 while B's rows stream past once per block, not once per row.
    const int64_t row_blocks = (M + 7) / 8;
    const int64_t tasks = product(batch) * row_blocks;
    if (tasks * 8 * N * K >= kParallelThreshold && tasks > 1) body_ << "  #pragma omp parallel for num_threads(num_threads)\n";
    body_ << "  for (int64_t task = 0; task < " << tasks << "; ++task) {\n"
          << "    const int64_t b = task / " << row_blocks << ", m0 = (task % " << row_blocks << ") * 8;\n"
          << "    const int64_t rows = " << M << " - m0 < 8 ? " << M << " - m0 : 8;\n";
    emit_batch_offsets(batch, a_strides, b_strides, "    ");
    body_ << "    const float* abase = " << a.var << " + a_off + m0 * " << K << ";\n"
          << "    const float* bmat = " << b.var << " + b_off;\n"
          << "    float* ybase = " << y.var << " + (b * " << M << " + m0) * " << N << ";\n"
          << "    for (int64_t n0 = 0; n0 < " << N << "; n0 += 256) {\n"
          << "      const int64_t nn = " << N << " - n0 < 256 ? " << N << " - n0 : 256;\n"
          << "      float acc[8][256];\n"
          << "      for (int i = 0; i < 8; ++i)\n"
          << "        for (int64_t j = 0; j < 256; ++j) acc[i][j] = 0.0f;\n"
          << "      for (int64_t k = 0; k < " << K << "; ++k) {\n"
          << "        const float* brow = bmat + k * " << N << " + n0;\n"
          << "        for (int64_t i = 0; i < rows; ++i) {\n"
          << "          const float av = abase[i * " << K << " + k];\n"
          << "          for (int64_t j = 0; j < nn; ++j) acc[i][j] += av * brow[j];\n"
          << "        }\n"
          << "      }\n"
          << "      for (int64_t i = 0; i < rows; ++i)\n"
          << "        for (int64_t j = 0; j < nn; ++j) ybase[i * " << N << " + n0 + j] = acc[i][j];\n"
          << "    }\n  }\n";
  }

  void emit_gemm(uint32_t id, const ir::Node& node, const Shape& out_shape) {
    const Buffer& a = data_input(id, 0);
    const Buffer& b = data_input(id, 1);
    const Buffer* c = node.inputs.size() > 2 && node.inputs[2] ? &data_input(id, 2) : nullptr;
    const Buffer& y = output_buffer(id, out_shape);
    if (a.shape.size() != 2 || b.shape.size() != 2 || out_shape.size() != 2)
      fail(ErrorKind::unsupported, "ccodegen: ", node.describe(), ": Gemm operands must be 2-D");
    const bool trans_a = node.attributes.get_int("transA", 0) != 0, trans_b = node.attributes.get_int("transB", 0) != 0;
    const float alpha = node.attributes.get_float("alpha", 1.0f), beta = node.attributes.get_float("beta", 1.0f);
    const int64_t M = out_shape[0], N = out_shape[1], K = trans_a ? a.shape[0] : a.shape[1];
    std::string a_at = trans_a ? a.var + "[k * " + std::to_string(M) + " + m]" : "arow[k]";
    if (M * N * K >= kParallelThreshold) body_ << "  #pragma omp parallel for num_threads(num_threads)\n";
    body_ << "  for (int64_t m = 0; m < " << M << "; ++m) {\n"
          << "    const float* arow = " << a.var << " + m * " << K << ";\n    (void)arow;\n"
          << "    float* y = " << y.var << " + m * " << N << ";\n";
    if (trans_b && !trans_a) {
      uses_dot_ = true;
      body_ << "    for (int64_t n = 0; n < " << N << "; ++n) y[n] = graft_dot(arow, " << b.var << " + n * " << K << ", "
            << K << ");\n";
    } else {
      std::string b_at = trans_b ? b.var + "[n * " + std::to_string(K) + " + k]" : "brow[n]";
      body_ << "    for (int64_t n = 0; n < " << N << "; ++n) y[n] = 0.0f;\n"
            << "    for (int64_t k = 0; k < " << K << "; ++k) {\n"
            << "      const float av = " << a_at << ";\n"
            << "      const float* brow = " << b.var << " + k * " << N << ";\n      (void)brow;\n"
            << "      for (int64_t n = 0; n < " << N << "; ++n) y[n] += av * " << b_at << ";\n"
            << "    }\n";
    }
    std::string scaled = alpha == 1.0f ? "y[n]" : c_float_literal(alpha) + " * y[n]";
    if (c && beta != 0.0f) {
      std::vector<int64_t> cs = broadcast_strides(c->shape, out_shape);
      std::string c_at = c->var + "[m * " + std::to_string(cs[0]) + " + n * " + std::to_string(cs[1]) + "]";
      std::string c_term = beta == 1.0f ? c_at : c_float_literal(beta) + " * " + c_at;
      body_ << "    for (int64_t n = 0; n < " << N << "; ++n) y[n] = " << scaled << " + " << c_term << ";\n";
    } else if (alpha != 1.0f) {
      body_ << "    for (int64_t n = 0; n < " << N << "; ++n) y[n] = " << scaled << ";\n";
    }
    body_ << "  }\n";
  }

  void emit_softmax(uint32_t id, const ir::Node& node, const Shape& out_shape) {
    const Buffer& x = data_input(id, 0);
    const Buffer& y = output_buffer(id, out_shape);
    const int opset = node.opset_version == 0 ? 13 : node.opset_version;
    const int64_t rank = static_cast<int64_t>(out_shape.size());
    int64_t axis = node.attributes.get_int("axis", opset < 13 ? 1 : -1);
    if (axis < 0) axis += rank;
    if (rank == 0 || axis < 0 || axis >= rank)
      fail(ErrorKind::unsupported, "ccodegen: ", node.describe(), ": axis out of range");
    const auto a = static_cast<size_t>(axis);
    const int64_t outer = product(out_shape, 0, a);
    const int64_t n = opset < 13 ? product(out_shape, a) : out_shape[a];
    const int64_t inner = opset < 13 ? 1 : product(out_shape, a + 1);
    const bool log = node.op() == ir::OpId::LogSoftmax;
    std::string at = inner == 1 ? "[j]" : "[j * " + std::to_string(inner) + "]";
    if (outer * inner * n >= kParallelThreshold) body_ << "  #pragma omp parallel for num_threads(num_threads)\n";
    body_ << "  for (int64_t r = 0; r < " << outer * inner << "; ++r) {\n"
          << "    const int64_t base = (r / " << inner << ") * " << n * inner << " + r % " << inner << ";\n"
          << "    const float* x = " << x.var << " + base;\n"
          << "    float* y = " << y.var << " + base;\n"
          << "    const float mx = graft_max(x, " << n << ", " << inner << ");\n"
          << "    float sum = 0.0f;\n";
    if (log) {
      body_ << "    for (int64_t j = 0; j < " << n << "; ++j) y" << at << " = graft_expf(x" << at << " - mx);\n"
            << "    sum = graft_sum(y, " << n << ", " << inner << ");\n"
            << "    const float shift = mx + logf(sum);\n"
            << "    for (int64_t j = 0; j < " << n << "; ++j) y" << at << " = x" << at << " - shift;\n";
    } else {
      body_ << "    for (int64_t j = 0; j < " << n << "; ++j) y" << at << " = graft_expf(x" << at << " - mx);\n"
            << "    sum = graft_sum(y, " << n << ", " << inner << ");\n"
            << "    const float inv = 1.0f / sum;\n"
            << "    for (int64_t j = 0; j < " << n << "; ++j) y" << at << " *= inv;\n";
    }
    body_ << "  }\n";
  }

  /// The reduction axes of a Reduce node: the attribute, or a constant input.
  std::vector<int64_t> reduce_axes(uint32_t id, const ir::Node& node, int64_t rank, bool* noop) {
    std::vector<int64_t> axes = node.attributes.get_ints("axes", {});
    *noop = node.attributes.get_int("noop_with_empty_axes", 0) != 0;
    auto inputs = indexed_.inputs(id);
    if (inputs.size() > 1 && inputs[1].present()) {
      const ir::Node& producer = indexed_.node(inputs[1].node_id);
      if (producer.op() != ir::OpId::Constant)
        fail(ErrorKind::unsupported, "ccodegen: ", node.describe(), ": axes are not a constant");
      axes = producer.constant_value.to_int64_vector();
    }
    if (axes.empty() && !*noop)
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    for (int64_t& axis : axes) {
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank) fail(ErrorKind::unsupported, "ccodegen: ", node.describe(), ": axis out of range");
    }
    return axes;
  }

  void emit_reduce(uint32_t id, const ir::Node& node, const Shape& out_shape) {
    const Buffer& x = data_input(id, 0);
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    bool noop = false;
    std::vector<int64_t> axes = reduce_axes(id, node, rank, &noop);
    if (axes.empty()) return emit_copy(id, node, out_shape);
    const Buffer& y = output_buffer(id, out_shape);
    std::set<int64_t> reduced(axes.begin(), axes.end());
    const ir::OpId op = node.op();
    const std::string init = op == ir::OpId::ReduceMax ? "-INFINITY" : op == ir::OpId::ReduceMin ? "INFINITY" : "0.0f";
    auto combine = [&](const std::string& acc, const std::string& v) {
      if (op == ir::OpId::ReduceMax) return acc + " = fmaxf(" + acc + ", " + v + ");";
      if (op == ir::OpId::ReduceMin) return acc + " = fminf(" + acc + ", " + v + ");";
      return acc + " += " + v + ";";
    };
    int64_t in_count = product(x.shape), out_count = product(out_shape);
    int64_t group = out_count == 0 ? 0 : in_count / out_count;
    std::string finish = op == ir::OpId::ReduceMean ? " * " + c_float_literal(1.0f / static_cast<float>(group)) : "";
    bool trailing = true;
    for (int64_t d = 0; d < rank; ++d)
      if (reduced.count(d) != (d >= rank - static_cast<int64_t>(reduced.size()) ? 1u : 0u)) trailing = false;
    if (trailing) {
      if (in_count >= kParallelThreshold) body_ << "  #pragma omp parallel for num_threads(num_threads)\n";
      body_ << "  for (int64_t r = 0; r < " << out_count << "; ++r) {\n"
            << "    const float* x = " << x.var << " + r * " << group << ";\n"
            << "    float acc = " << init << ";\n"
            << "    for (int64_t j = 0; j < " << group << "; ++j) " << combine("acc", "x[j]") << "\n"
            << "    " << y.var << "[r] = acc" << finish << ";\n  }\n";
      return;
    }
    // General form: walk the input in order, accumulating into the output element each input element maps to.
    std::vector<int64_t> out_strides(x.shape.size(), 0);
    {
      int64_t stride = 1;
      for (size_t d = x.shape.size(); d-- > 0;) {
        if (reduced.count(static_cast<int64_t>(d))) continue;
        out_strides[d] = stride;
        stride *= x.shape[d];
      }
    }
    body_ << "  for (int64_t i = 0; i < " << out_count << "; ++i) " << y.var << "[i] = " << init << ";\n";
    LoopNest nest{x.shape, {out_strides, contiguous_strides(x.shape)}};
    emit_loops(nest, false, [&](const std::vector<std::string>& idx) {
      return combine(y.var + "[" + idx[0] + "]", x.var + "[" + idx[1] + "]");
    });
    if (!finish.empty())
      body_ << "  for (int64_t i = 0; i < " << out_count << "; ++i) " << y.var << "[i] *= " << finish.substr(3) << ";\n";
  }

  void emit_copy(uint32_t id, const ir::Node& node, const Shape& out_shape) {
    const Buffer& x = data_input(id, 0);
    if (product(x.shape) != product(out_shape))
      fail(ErrorKind::internal, "ccodegen: ", node.describe(), ": element count changes");
    uint32_t entry = indexed_.entry_id(id, 0);
    if (!direct_output_.count(entry)) {
      // Same bytes, new shape: alias the input (values are never written twice).
      std::string var = x.var;
      buffers_[entry] = Buffer{var, out_shape};
      body_ << "  /* aliases " << var << " */\n";
      return;
    }
    const Buffer& y = output_buffer(id, out_shape);
    body_ << "  memcpy(" << y.var << ", " << x.var << ", " << product(out_shape) << " * sizeof(float));\n";
  }

  /// LayerNormalization over dims [axis, rank): a row loop computing the mean,
  /// the centred row, its mean square, then scale and bias.
  void emit_layer_norm(uint32_t id, const ir::Node& node, const Shape& out_shape) {
    const Buffer& x = data_input(id, 0);
    const Buffer& scale = data_input(id, 1);
    auto inputs = indexed_.inputs(id);
    const Buffer* bias = inputs.size() > 2 && inputs[2].present() ? &data_input(id, 2) : nullptr;
    const int64_t rank = static_cast<int64_t>(out_shape.size());
    int64_t axis = node.attributes.get_int("axis", -1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) fail(ErrorKind::unsupported, "ccodegen: ", node.describe(), ": axis out of range");
    if (node.attributes.get_int("stash_type", 1) != 1)
      fail(ErrorKind::unsupported, "ccodegen: ", node.describe(), ": stash_type other than float");
    const float epsilon = node.attributes.get_float("epsilon", 1e-5f);
    const int64_t outer = product(out_shape, 0, static_cast<size_t>(axis));
    const int64_t n = product(out_shape, static_cast<size_t>(axis));
    auto per_element = [&](const Buffer* b) -> std::string {
      if (!b) return "";
      int64_t count = product(b->shape);
      if (count != n && count != 1)
        fail(ErrorKind::unsupported, "ccodegen: ", node.describe(), ": scale/bias of ", shape_to_string(b->shape),
             " (only the full normalized shape or a scalar)");
      return b->var + (count == 1 ? "[0]" : "[j]");
    };
    const std::string s = per_element(&scale), b = per_element(bias);
    const Buffer& y = output_buffer(id, out_shape);
    if (outer * n >= kParallelThreshold) body_ << "  #pragma omp parallel for num_threads(num_threads)\n";
    body_ << "  for (int64_t r = 0; r < " << outer << "; ++r) {\n"
          << "    const float* x = " << x.var << " + r * " << n << ";\n"
          << "    float* y = " << y.var << " + r * " << n << ";\n"
          << "    const float mean = graft_sum(x, " << n << ", 1) * " << c_float_literal(1.0f / static_cast<float>(n)) << ";\n"
          << "    for (int64_t j = 0; j < " << n << "; ++j) y[j] = x[j] - mean;\n"
          << "    const float inv_std = 1.0f / sqrtf(graft_sum_squares(y, " << n << ") * "
          << c_float_literal(1.0f / static_cast<float>(n)) << " + " << c_float_literal(epsilon) << ");\n"
          << "    for (int64_t j = 0; j < " << n << "; ++j) y[j] = y[j] * inv_std * " << s << (b.empty() ? "" : " + " + b)
          << ";\n  }\n";
  }

  void emit_transpose(uint32_t id, const ir::Node& node, const Shape& out_shape) {
    const Buffer& x = data_input(id, 0);
    const size_t rank = x.shape.size();
    std::vector<int64_t> perm = node.attributes.get_ints("perm", {});
    if (perm.empty())
      for (size_t d = rank; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
    if (perm.size() != rank) fail(ErrorKind::unsupported, "ccodegen: ", node.describe(), ": perm of wrong length");
    const Buffer& y = output_buffer(id, out_shape);
    std::vector<int64_t> in_strides = contiguous_strides(x.shape), read(rank);
    for (size_t k = 0; k < rank; ++k) {
      if (perm[k] < 0 || perm[k] >= static_cast<int64_t>(rank))
        fail(ErrorKind::unsupported, "ccodegen: ", node.describe(), ": bad perm");
      read[k] = in_strides[static_cast<size_t>(perm[k])];
    }
    LoopNest nest{out_shape, {contiguous_strides(out_shape), read}};
    emit_loops(nest, true, [&](const std::vector<std::string>& idx) {
      return y.var + "[" + idx[0] + "] = " + x.var + "[" + idx[1] + "];";
    });
  }

  void finish_outputs() {
    const auto& outputs = indexed_.outputs();
    for (size_t k = 0; k < outputs.size(); ++k) {
      uint32_t entry = indexed_.entry_id(outputs[k]);
      auto direct = direct_output_.find(entry);
      if (direct != direct_output_.end() && direct->second == k) continue;
      const Buffer* source = nullptr;
      auto it = buffers_.find(entry);
      if (it != buffers_.end()) {
        source = &it->second;
      } else {
        // An output that is a constant of the subgraph.
        const ir::Node& producer = indexed_.node(outputs[k].node_id);
        if (producer.op() != ir::OpId::Constant || producer.constant_value.dtype() != DType::float32)
          fail(ErrorKind::unsupported, "ccodegen: subgraph output ", k, " is not a computed float32 value");
        std::string slot = "constants[" + std::to_string(result_.constant_ids.size()) + "]";
        result_.constant_ids.push_back(outputs[k].node_id);
        declare(entry, "const float*", slot, "constant " + value_label(producer, 0), producer.constant_value.shape());
        source = &buffers_[entry];
      }
      body_ << "  memcpy(outputs[" << k << "], " << source->var << ", " << product(result_.output_shapes[k])
            << " * sizeof(float));\n";
    }
  }

  const ir::Graph& graph_;
  ir::IndexedGraph indexed_;
  GeneratedC result_;
  std::map<uint32_t, Buffer> buffers_;          // by entry id
  std::map<uint32_t, size_t> direct_output_;    // entry id -> output slot written in place
  std::ostringstream declarations_, body_;
  size_t scratch_floats_ = 0;
  bool uses_dot_ = false;
  std::map<uint32_t, PointwiseChain> deferred_;  // by entry id
  int local_counter_ = 0;
};

}  // namespace

GeneratedC generate_c(const ir::Graph& subgraph) { return CEmitter(subgraph).emit(); }

}  // namespace graft::backends

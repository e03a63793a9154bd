// Speed of the fuse-pointwise pass, and of fused against unfused models.
//
//   fusion_pass_bench [--repeat R] [--no-pass] [--no-e2e] [--scale-down K]
//                     [--graph bert-large-training|transformer|random100k|random1m]
//
// 1. Pass time on the forward+backward graph autodiff::gradient makes of a
//    24-layer BERT-large encoder (hidden 1024, 16 heads, FFN 4096, batch 8,
//    sequence 128, as the zoo's BERT is written: LayerNormalization nodes,
//    erf-GELU, head Reshape/Transpose; the loss a mean of squares), with
//    respect to every weight; on a synthetic forward+backward transformer graph of at least
//    20,000 nodes (XLNet-sized: per layer two LayerNorms written out as
//    pointwise ops, Q/K/V/output/FFN MatMuls with bias Adds, scaled masked
//    Softmax attention, erf-GELU; then a mirrored backward half whose nodes
//    are marked is_backward), and on random graphs of 100k and 1M nodes.
//    Printed: building the IndexedGraph, finding the subsets, building the
//    fused graph, the whole pass, and the whole pass per 10,000 nodes; the
//    median over R runs (default 5).
// 2. End to end: zoo bert, gru (one ONNX GRU node: nothing to fuse) and
//    gru_cell (the GRUCell export, whose gate arithmetic fuses), fusion on
//    against off in the same process,
//    median milliseconds per run.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <unordered_map>

#include "graft/autodiff/gradient.h"
#include "graft/codegen/compile_cache.h"
#include "graft/core/parallel.h"
#include "graft/frontend/onnx_import.h"
#include "graft/fusion/fuse_pointwise.h"
#include "graft/ir/indexed_graph.h"
#include "graft/ops/type_inference.h"
#include "graft/runtime/session.h"
#include "graft/zoo/zoo.h"

using namespace graft;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// CPU time of this thread in ms: the pass is single-threaded, and on a
/// shared machine wall time mostly measures the neighbours.
double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

/// Builds graphs without running type inference: every value is float32
/// [128, 1024] (the pass looks at dtypes and ranks only).
class GraphMaker {
 public:
  GraphMaker() : graph_(std::make_unique<ir::Graph>()) {
    graph_->opset_imports[""] = 17;
    type_ = ir::ValueType::of(DType::float32, {128, 1024});
  }
  ir::Value input(const std::string& name) { return graph_->add_input(name, type_)->output(0); }
  ir::Value constant(const std::string& name) {
    ir::Node* c = graph_->add_constant(name, Tensor(DType::float32, {1}));
    return c->output(0);
  }
  ir::Value op(const char* type, std::vector<ir::Value> inputs, bool backward = false) {
    ir::Node* n = graph_->add_node(type, inputs, 1);
    n->output_types[0] = type_;
    n->is_backward = backward;
    return n->output(0);
  }
  ir::Graph& graph() { return *graph_; }
  std::unique_ptr<ir::Graph> take() { return std::move(graph_); }

 private:
  std::unique_ptr<ir::Graph> graph_;
  ir::ValueType type_;
};

/// Forward+backward transformer of at least `min_nodes` nodes.
std::unique_ptr<ir::Graph> transformer_graph(size_t min_nodes) {
  GraphMaker m;
  ir::Value one = m.constant("one"), half = m.constant("half"), eps = m.constant("eps");
  ir::Value x = m.input("x");
  ir::Value mask = m.input("mask");
  // Forward nodes in order, with their inputs, for the mirrored backward half.
  std::vector<ir::Value> forward;
  auto fwd = [&](const char* type, std::vector<ir::Value> inputs) {
    ir::Value v = m.op(type, inputs);
    forward.push_back(v);
    return v;
  };
  auto layer_norm = [&](ir::Value h, int layer, const char* tag) {
    std::string p = "l" + std::to_string(layer) + tag;
    ir::Value mean = fwd("ReduceMean", {h});
    ir::Value d = fwd("Sub", {h, mean});
    ir::Value sq = fwd("Mul", {d, d});
    ir::Value var = fwd("ReduceMean", {sq});
    ir::Value std = fwd("Sqrt", {fwd("Add", {var, eps})});
    ir::Value norm = fwd("Div", {d, std});
    return fwd("Add", {fwd("Mul", {norm, m.constant(p + "_gamma")}), m.constant(p + "_beta")});
  };
  auto dense = [&](ir::Value h, const std::string& name) {
    return fwd("Add", {fwd("MatMul", {h, m.constant(name + "_w")}), m.constant(name + "_b")});
  };
  ir::Value h = x;
  int layer = 0;
  while (m.graph().num_nodes() * 2 < min_nodes) {  // the backward half adds a little more than the forward
    std::string p = "l" + std::to_string(layer);
    ir::Value a = layer_norm(h, layer, "ln1");
    ir::Value q = dense(a, p + "_q"), k = dense(a, p + "_k"), v = dense(a, p + "_v");
    ir::Value scores = fwd("Add", {fwd("Mul", {fwd("MatMul", {q, k}), half}), mask});
    ir::Value attention = fwd("MatMul", {fwd("Softmax", {scores}), v});
    h = fwd("Add", {dense(attention, p + "_o"), h});
    ir::Value b = layer_norm(h, layer, "ln2");
    ir::Value u = dense(b, p + "_ffn1");
    ir::Value gelu = fwd("Mul", {fwd("Mul", {u, half}), fwd("Add", {fwd("Erf", {fwd("Mul", {u, half})}), one})});
    h = fwd("Add", {dense(gelu, p + "_ffn2"), h});
    ++layer;
  }
  m.graph().add_output(h, "y");
  // Backward: each forward node, last first, turns its output gradient into
  // one gradient per input (MatMul and Softmax gradients are opaque, the
  // rest pointwise); gradients reaching one value are summed with Add.
  std::unordered_map<ir::Node*, ir::Value> grad;
  grad[h.node] = m.op("Mul", {h, one}, true);
  for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
    ir::Node* n = it->node;
    auto g_it = grad.find(n);
    if (g_it == grad.end()) continue;
    ir::Value g = g_it->second;
    std::string type = n->schema().name.data();
    for (const ir::Value& in : n->inputs) {
      if (in.node->schema().name == "Constant") continue;
      ir::Value d;
      if (type == "MatMul") d = m.op("MatMul", {g, in}, true);
      else if (type == "Softmax") d = m.op("Sub", {m.op("Mul", {g, *it}, true), m.op("ReduceSum", {g}, true)}, true);
      else if (type == "ReduceMean") d = m.op("Mul", {g, one}, true);
      else d = m.op("Mul", {g, in}, true);
      auto [slot, inserted] = grad.emplace(in.node, d);
      if (!inserted) slot->second = m.op("Add", {slot->second, d}, true);
    }
  }
  m.graph().add_output(grad[x.node], "dx");
  return m.take();
}

/// The gradient graph of a BERT-large encoder of `layers` layers, as
/// autodiff::gradient writes it (forward nodes, then backward ones marked
/// is_backward). Weights are zeros: the pass reads ops and shapes only.
std::unique_ptr<ir::Graph> bert_large_training_graph(int layers) {
  using enum ir::OpId;
  constexpr int64_t kBatch = 8, kSequence = 128, kHidden = 1024, kHeads = 16, kFeedForward = 4096;
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  auto op = [&](ir::OpId id, std::vector<ir::Value> inputs) { return g->add_node(id, inputs)->output(0); };
  auto ints = [&](const std::string& name, std::vector<int64_t> v) {
    const int64_t n = static_cast<int64_t>(v.size());
    return g->add_constant(name, Tensor::from_vector<int64_t>(std::move(v), {n}))->output(0);
  };
  auto scalar = [&](const std::string& name, float v) {
    return g->add_constant(name, Tensor::from_vector<float>({v}, {}))->output(0);
  };
  auto weight = [&](const std::string& name, graft::Shape shape) {
    return g->add_constant(name, Tensor(DType::float32, std::move(shape)))->output(0);
  };
  std::vector<std::string> weights;
  auto dense = [&](const std::string& name, ir::Value x, int64_t in, int64_t out) {
    weights.push_back(name + ".weight");
    weights.push_back(name + ".bias");
    return op(Add, {op(MatMul, {x, weight(name + ".weight", {in, out})}), weight(name + ".bias", {out})});
  };
  auto layer_norm = [&](const std::string& name, ir::Value x) {
    weights.push_back(name + ".weight");
    weights.push_back(name + ".bias");
    ir::Node* n = g->add_node(LayerNormalization, {x, weight(name + ".weight", {kHidden}), weight(name + ".bias", {kHidden})});
    n->attributes.set("axis", int64_t{-1});
    n->attributes.set("epsilon", 1e-12f);
    return n->output(0);
  };
  auto transpose = [&](ir::Value x, std::vector<int64_t> perm) {
    ir::Node* n = g->add_node(Transpose, {x});
    n->attributes.set("perm", perm);
    return n->output(0);
  };
  ir::Value split = ints("split_heads", {kBatch, kSequence, kHeads, kHidden / kHeads});
  ir::Value merge = ints("merge_heads", {kBatch, kSequence, kHidden});
  ir::Value root = scalar("sqrt_head_size", 8.0f), sqrt2 = scalar("sqrt2", 1.41421354f);
  ir::Value one = scalar("one", 1.0f), half = scalar("half", 0.5f);
  ir::Value x = g->add_input("hidden", ir::ValueType::of(DType::float32, {kBatch, kSequence, kHidden}))->output(0);
  for (int l = 0; l < layers; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l);
    auto heads = [&](const char* name, std::vector<int64_t> perm) {
      return transpose(op(Reshape, {dense(p + ".attention.self." + name, x, kHidden, kHidden), split}), perm);
    };
    ir::Value q = heads("query", {0, 2, 1, 3}), k = heads("key", {0, 2, 3, 1}), v = heads("value", {0, 2, 1, 3});
    ir::Node* softmax = g->add_node(Softmax, {op(Div, {op(MatMul, {q, k}), root})});
    softmax->attributes.set("axis", int64_t{-1});
    ir::Value context = op(Reshape, {transpose(op(MatMul, {softmax->output(0), v}), {0, 2, 1, 3}), merge});
    ir::Value attended = layer_norm(p + ".attention.output.LayerNorm",
                                    op(Add, {dense(p + ".attention.output.dense", context, kHidden, kHidden), x}));
    ir::Value u = dense(p + ".intermediate.dense", attended, kHidden, kFeedForward);
    ir::Value gelu = op(Mul, {op(Mul, {u, half}), op(Add, {op(Erf, {op(Div, {u, sqrt2})}), one})});
    x = layer_norm(p + ".output.LayerNorm", op(Add, {dense(p + ".output.dense", gelu, kFeedForward, kHidden), attended}));
  }
  ir::Node* loss = g->add_node(ReduceMean, {op(Mul, {x, x})});
  loss->attributes.set("keepdims", int64_t{0});
  g->add_output(loss->output(0), "loss");
  ops::infer_types(*g);
  return autodiff::gradient(*g, "loss", weights);
}

/// A random DAG of `n` nodes: 60% fusible (unary and binary pointwise), 40%
/// opaque (MatMul, Softmax, ReduceMean); inputs mostly from the last 16
/// nodes, sometimes from anywhere; the second half 30% backward.
std::unique_ptr<ir::Graph> random_graph(size_t n, uint64_t seed) {
  GraphMaker m;
  std::mt19937_64 rng(seed);
  std::vector<ir::Value> values;
  for (int i = 0; i < 8; ++i) values.push_back(m.input("in" + std::to_string(i)));
  auto operand = [&]() {
    if (rng() % 8 == 0) return values[rng() % values.size()];
    size_t window = std::min<size_t>(values.size(), 16);
    return values[values.size() - 1 - rng() % window];
  };
  static const char* kUnary[] = {"Relu", "Neg", "Tanh", "Sigmoid", "Exp"};
  static const char* kBinary[] = {"Add", "Sub", "Mul", "Max"};
  static const char* kOpaque[] = {"MatMul", "Softmax", "ReduceMean"};
  while (m.graph().num_nodes() < n) {
    bool backward = values.size() > n / 2 && rng() % 10 < 3;
    uint64_t kind = rng() % 10;
    ir::Value v;
    if (kind < 3) v = m.op(kUnary[rng() % 5], {operand()}, backward);
    else if (kind < 6) v = m.op(kBinary[rng() % 4], {operand(), operand()}, backward);
    else {
      const char* type = kOpaque[rng() % 3];
      v = std::strcmp(type, "MatMul") == 0 ? m.op(type, {operand(), operand()}, backward) : m.op(type, {operand()}, backward);
    }
    values.push_back(v);
  }
  for (size_t i = values.size() - 16; i < values.size(); ++i) m.graph().add_output(values[i], "out" + std::to_string(i));
  return m.take();
}

void bench_pass(const char* label, const std::function<std::unique_ptr<ir::Graph>()>& make, int repeat) {
  std::vector<double> index_ms, find_ms, build_ms, total_ms, free_ms;
  size_t nodes = 0, fused = 0, replaced = 0, after = 0;
  for (int r = 0; r < repeat; ++r) {
    // Each timed part starts right after a graph was built, not after one was
    // destroyed: glibc defers sorting freed chunks to the next large
    // allocation, which would charge the previous graph's destruction to it.
    auto graph = make();
    double start = thread_cpu_ms();
    fusion::fuse_pointwise(graph);
    total_ms.push_back(thread_cpu_ms() - start);
    start = thread_cpu_ms();
    graph.reset();
    free_ms.push_back(thread_cpu_ms() - start);

    graph = make();
    nodes = graph->num_nodes();
    start = thread_cpu_ms();
    ir::IndexedGraph indexed(*graph);
    index_ms.push_back(thread_cpu_ms() - start);
    start = thread_cpu_ms();
    fusion::FusionSubsets subsets = fusion::find_fusion_subsets(indexed);
    find_ms.push_back(thread_cpu_ms() - start);
    start = thread_cpu_ms();
    auto out = fusion::build_fused_graph(indexed, subsets);
    build_ms.push_back(thread_cpu_ms() - start);
    fused = subsets.num_subsets();
    replaced = 0;
    for (uint32_t s : subsets.sizes) replaced += s;
    after = out->num_nodes();
  }
  double total = median(total_ms);
  std::printf("%-34s %9zu nodes -> %8zu (%zu fused nodes replacing %zu)\n", label, nodes, after, fused, replaced);
  double per10k = 10000.0 / static_cast<double>(nodes);
  std::printf("    CPU ms: indexed graph %7.2f | find subsets %7.2f (%.3f per 10k nodes) | build graph (copying) %7.2f\n",
              median(index_ms), median(find_ms), median(find_ms) * per10k, median(build_ms));
  std::printf("    CPU ms: whole pass (index + find + build moving nodes) %7.2f = %.3f per 10k nodes; destroying the fused graph %.2f\n",
              total, total * per10k, median(free_ms));
}

/// `backends` empty: the default order (oneDNN first where it is built in).
void bench_model(const std::string& name, const std::vector<std::string>& backends, int repeat) {
  std::string bytes = zoo::build_zoo_model(name, 0);
  runtime::SessionOptions options;
  options.backends = backends;
  options.fusion = false;
  runtime::Session off(frontend::load_onnx_from_memory(bytes), options);
  options.fusion = true;
  runtime::Session on(frontend::load_onnx_from_memory(bytes), options);
  std::vector<Tensor> inputs;
  for (const auto& info : off.inputs()) {
    Shape shape;
    for (const ir::Dim& d : info.type.dims) shape.push_back(d.is_known() ? d.value : 1);
    Tensor t(info.type.dtype, shape);
    if (info.type.dtype == DType::int64)
      for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = (i * 7919) % 1000;
    else
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>((i % 17) - 8) / 8.0f;
    inputs.push_back(t);
  }
  off.run(inputs);  // plans
  on.run(inputs);
  codegen::CompileCache::global().wait_for_background_compiles();  // fused kernels compile after a first run
  // Alternate the two so that both see the same machine load.
  std::vector<double> off_ms, on_ms;
  for (int r = 0; r < repeat; ++r) {
    auto start = Clock::now();
    off.run(inputs);
    off_ms.push_back(ms_since(start));
    start = Clock::now();
    on.run(inputs);
    on_ms.push_back(ms_since(start));
  }
  size_t fused_count = 0, nodes = 0;
  for (const auto& n : on.graph().nodes()) fused_count += n->op_type() == "graft.FusedPointwise";
  nodes = off.graph().num_nodes();
  double a = median(off_ms), b = median(on_ms);
  std::string label = name + (backends.empty() ? " (default backends)" : " (backends ref)");
  std::printf("%-26s fusion off %9.2f ms (%zu nodes) | fusion on %9.2f ms (%zu nodes, %zu fused) | on/off %.3f  [%d threads]\n",
              label.c_str(), a, nodes, b, on.graph().num_nodes(), fused_count, b / a, default_num_threads());
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int repeat = 5;
  bool e2e = true, pass = true;
  size_t scale = 1;  // divides every graph size (quick runs)
  std::string only;  // one pass graph (profiling)
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--no-e2e") == 0) e2e = false;
    else if (std::strcmp(argv[i], "--no-pass") == 0) pass = false;
    else if (std::strcmp(argv[i], "--scale-down") == 0 && i + 1 < argc) scale = std::max(1, std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--graph") == 0 && i + 1 < argc) only = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: fusion_pass_bench [--repeat R] [--no-pass] [--no-e2e] [--scale-down K] "
                   "[--graph bert-large-training|transformer|random100k|random1m]\n");
      return 2;
    }
  }
  if (pass) std::printf("fuse-pointwise pass time (median of %d)\n", repeat);
  auto wanted = [&](const char* graph) { return pass && (only.empty() || only == graph); };
  if (wanted("bert-large-training")) {
    const int layers = std::max(1, 24 / static_cast<int>(scale));
    auto start = Clock::now();
    std::unique_ptr<ir::Graph> training = bert_large_training_graph(layers);
    std::printf("BERT-large, %d layers: gradient graph built in %.0f ms\n", layers, ms_since(start));
    bench_pass("BERT-large fwd+bwd (autodiff)", [&] { return training->clone(); }, repeat);
  }
  if (wanted("transformer"))
    bench_pass("transformer fwd+bwd (XLNet-sized)", [&] { return transformer_graph(20000 / scale); }, repeat);
  if (wanted("random100k")) bench_pass("random 100k", [&] { return random_graph(100000 / scale, 1); }, repeat);
  if (wanted("random1m")) bench_pass("random 1M", [&] { return random_graph(1000000 / scale, 2); }, std::min(repeat, 3));
  if (e2e) {
    std::printf("end to end, zoo models, fusion off vs on (median of %d runs)\n", repeat);
    for (const char* model : {"bert", "gru", "gru_cell"}) {
      bench_model(model, {}, repeat);
      bench_model(model, {"ref"}, repeat);
    }
  }
  return 0;
}

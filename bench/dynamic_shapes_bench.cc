// Models whose input shapes change from run to run (docs/dynamic-shapes.md).
//
//   dynamic_shapes_bench [--steps N] [--repeat R] [--threads T] [--write-onnx PATH]
//
// A GPT-style decoder with a key-value cache (token embedding, 2 pre-norm
// layers of d 256 with 4 heads and an erf-GELU MLP, tied LM head, vocabulary
// 1000), built here, run as a generation loop: one token per step, the past
// keys and values of the previous step as inputs, so the past length (a
// symbolic input dimension) grows by one every step and no two steps share
// input shapes. Three sessions run the same loop, alternated R times (default
// 3), median reported:
//   - per-shape plans: max_specialized_plans 1024 (graft before the plan
//     limit: a plan made and kept for every new shape);
//   - default: the first 4 shapes specialized, the rest on the generic plan;
//   - generic only: max_specialized_plans 0.
// Printed per session: ms per step (all steps, plan making included), plans
// kept, the growth of the process's resident memory over its first loop, and
// how far its last logits are from the per-shape session's.
// --write-onnx writes the decoder, for bench/compare/ort_decode_loop.js to run
// the same loop on ONNX Runtime.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>

#include "graft/frontend/onnx_import.h"
#include "graft/ops/type_inference.h"
#include "graft/runtime/session.h"

using namespace graft;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int64_t kVocab = 1000, kModel = 256, kHeads = 4, kHeadDim = kModel / kHeads, kLayers = 2;

class DecoderBuilder {
 public:
  DecoderBuilder() : g_(std::make_unique<ir::Graph>()), rng_(7) { g_->opset_imports[""] = 17; }

  std::unique_ptr<ir::Graph> build() {
    ir::Value ids =
        g_->add_input("ids", ir::ValueType{DType::int64, true, {ir::Dim::known(1), ir::Dim::symbolic("t")}})->output(0);
    std::vector<ir::Value> past;
    for (int64_t l = 0; l < kLayers; ++l)
      for (const char* kind : {"k", "v"})
        past.push_back(g_->add_input("past_" + std::string(kind) + std::to_string(l),
                                     ir::ValueType{DType::float32,
                                                   true,
                                                   {ir::Dim::known(1), ir::Dim::known(kHeads), ir::Dim::symbolic("p"),
                                                    ir::Dim::known(kHeadDim)}})
                           ->output(0));
    ir::Value embedding = weight("embedding", {kVocab, kModel}, 0.5f);
    ir::Value x = op("Gather", {embedding, ids});
    std::vector<std::pair<ir::Value, std::string>> presents;
    for (int64_t l = 0; l < kLayers; ++l) {
      std::string p = "l" + std::to_string(l) + "_";
      ir::Value h = layer_norm(x, p + "ln1");
      ir::Value q = heads(op("MatMul", {h, weight(p + "wq", {kModel, kModel})}));
      ir::Value k = op("Concat", {past[2 * l], heads(op("MatMul", {h, weight(p + "wk", {kModel, kModel})}))});
      last_->attributes.set("axis", int64_t{2});
      ir::Value v = op("Concat", {past[2 * l + 1], heads(op("MatMul", {h, weight(p + "wv", {kModel, kModel})}))});
      last_->attributes.set("axis", int64_t{2});
      presents.push_back({k, "present_k" + std::to_string(l)});
      presents.push_back({v, "present_v" + std::to_string(l)});
      ir::Value kt = op("Transpose", {k});
      last_->attributes.set("perm", std::vector<int64_t>{0, 1, 3, 2});
      ir::Value scores = op("Mul", {op("MatMul", {q, kt}), scalar(1.0f / std::sqrt(static_cast<float>(kHeadDim)))});
      ir::Value attention = op("Softmax", {scores});
      last_->attributes.set("axis", int64_t{-1});
      ir::Value merged = op("Transpose", {op("MatMul", {attention, v})});
      last_->attributes.set("perm", std::vector<int64_t>{0, 2, 1, 3});
      merged = op("Reshape", {merged, shape_constant({1, -1, kModel})});
      x = op("Add", {x, op("MatMul", {merged, weight(p + "wo", {kModel, kModel})})});
      ir::Value u = op("MatMul", {layer_norm(x, p + "ln2"), weight(p + "w1", {kModel, 4 * kModel})});
      ir::Value gelu =
          op("Mul", {op("Mul", {u, scalar(0.5f)}),
                     op("Add", {op("Erf", {op("Mul", {u, scalar(1.0f / std::sqrt(2.0f))})}), scalar(1.0f)})});
      x = op("Add", {x, op("MatMul", {gelu, weight(p + "w2", {4 * kModel, kModel})})});
    }
    ir::Value logits = op("MatMul", {layer_norm(x, "ln_f"), weight("head", {kModel, kVocab}, 0.5f)});
    g_->add_output(logits, "logits");
    for (const auto& [value, name] : presents) g_->add_output(value, name);
    return std::move(g_);
  }

 private:
  ir::Value op(const char* type, std::vector<ir::Value> inputs) {
    last_ = g_->add_node(type, inputs, 1, "n" + std::to_string(g_->num_nodes()));
    return last_->output(0);
  }
  ir::Value weight(const std::string& name, const Shape& shape, float scale = 0.0f) {
    Tensor t(DType::float32, shape);
    const float s = scale > 0 ? scale : 1.0f / std::sqrt(static_cast<float>(shape[0]));
    std::uniform_real_distribution<float> uniform(-s, s);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = uniform(rng_);
    return g_->add_constant(name, t)->output(0);
  }
  ir::Value scalar(float v) {
    return g_->add_constant("c" + std::to_string(g_->num_nodes()), Tensor::from_vector<float>({v}, {}))->output(0);
  }
  ir::Value shape_constant(std::vector<int64_t> dims) {
    const int64_t rank = static_cast<int64_t>(dims.size());
    return g_->add_constant("s" + std::to_string(g_->num_nodes()), Tensor::from_vector<int64_t>(dims, {rank}))
        ->output(0);
  }
  ir::Value layer_norm(ir::Value x, const std::string& name) {
    Tensor gamma(DType::float32, {kModel}), beta(DType::float32, {kModel});
    for (int64_t i = 0; i < kModel; ++i) {
      gamma.data<float>()[i] = 1.0f + 0.01f * static_cast<float>(i % 7);
      beta.data<float>()[i] = 0.01f * static_cast<float>(i % 5);
    }
    ir::Value out = op("LayerNormalization", {x, g_->add_constant(name + "_gamma", gamma)->output(0),
                                              g_->add_constant(name + "_beta", beta)->output(0)});
    last_->attributes.set("axis", int64_t{-1});
    return out;
  }
  /// [1, t, d] -> [1, heads, t, head_dim]
  ir::Value heads(ir::Value x) {
    ir::Value split = op("Reshape", {x, shape_constant({1, -1, kHeads, kHeadDim})});
    ir::Value out = op("Transpose", {split});
    last_->attributes.set("perm", std::vector<int64_t>{0, 2, 1, 3});
    return out;
  }

  std::unique_ptr<ir::Graph> g_;
  ir::Node* last_ = nullptr;
  std::mt19937 rng_;
};

/// Resident memory of this process in MiB.
double rss_mib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

struct LoopResult {
  double ms_per_step = 0;
  Tensor last_logits;
  std::vector<int64_t> tokens;  // generated, in order
};

/// One generation loop of `steps` tokens from an empty cache.
LoopResult generate(const runtime::Session& session, int steps) {
  std::vector<Tensor> past(2 * kLayers, Tensor(DType::float32, {1, kHeads, 0, kHeadDim}));
  LoopResult result;
  auto start = Clock::now();
  int64_t token = 1;
  for (int step = 0; step < steps; ++step) {
    Tensor ids(DType::int64, {1, 1});
    ids.data<int64_t>()[0] = token;
    std::vector<Tensor> inputs{ids};
    inputs.insert(inputs.end(), past.begin(), past.end());
    std::vector<Tensor> outputs = session.run(inputs);
    // Greedy decoding: the next token is the argmax of the logits.
    const float* logits = outputs[0].data<float>();
    token = std::max_element(logits, logits + kVocab) - logits;
    result.tokens.push_back(token);
    std::copy(outputs.begin() + 1, outputs.end(), past.begin());
    result.last_logits = outputs[0];
  }
  result.ms_per_step = std::chrono::duration<double, std::milli>(Clock::now() - start).count() / steps;
  return result;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int steps = 128, repeat = 3, threads = 2;
  std::string onnx_path;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
      steps = std::max(1, std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
      repeat = std::max(1, std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
      threads = std::max(1, std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--write-onnx") == 0 && i + 1 < argc)
      onnx_path = argv[++i];
    else {
      std::fprintf(stderr, "usage: dynamic_shapes_bench [--steps N] [--repeat R] [--threads T] [--write-onnx PATH]\n");
      return 2;
    }
  }
  if (!onnx_path.empty()) {
    std::unique_ptr<ir::Graph> decoder = DecoderBuilder().build();
    ops::infer_types(*decoder);
    frontend::save_onnx(*decoder, onnx_path);
    std::printf("wrote %s\n", onnx_path.c_str());
    return 0;
  }
  struct Mode {
    const char* label;
    int max_plans;
    std::unique_ptr<runtime::Session> session;
    std::vector<double> ms;
    double rss_growth = 0;
    Tensor logits;
    std::vector<int64_t> tokens;
  };
  std::vector<Mode> modes;
  modes.push_back({"per-shape plans (1024)", 1024, nullptr, {}, 0, {}, {}});
  modes.push_back({"default (4)", runtime::SessionOptions::kDefaultMaxSpecializedPlans, nullptr, {}, 0, {}, {}});
  modes.push_back({"generic only (0)", 0, nullptr, {}, 0, {}, {}});
  for (Mode& mode : modes) {
    runtime::SessionOptions options;
    options.num_threads = threads;
    options.max_specialized_plans = mode.max_plans;
    mode.session = std::make_unique<runtime::Session>(DecoderBuilder().build(), options);
  }
  std::printf("generation loop: %d steps of one token, decoder d %lld, %lld layers, %d threads; %d loops\n", steps,
              static_cast<long long>(kModel), static_cast<long long>(kLayers), threads, repeat);
  for (int r = 0; r < repeat; ++r) {
    for (size_t k = 0; k < modes.size(); ++k) {
      Mode& mode = modes[r % 2 ? modes.size() - 1 - k : k];  // alternate the order
      double before = rss_mib();
      LoopResult loop = generate(*mode.session, steps);
      if (mode.ms.empty()) mode.rss_growth = rss_mib() - before;
      mode.ms.push_back(loop.ms_per_step);
      mode.logits = loop.last_logits;
      mode.tokens = loop.tokens;
    }
  }
  // The first loop makes the plans (every shape is new); later loops meet
  // the same shapes again.
  auto later = [](const Mode& mode) {
    return mode.ms.size() > 1 ? median(std::vector<double>(mode.ms.begin() + 1, mode.ms.end())) : mode.ms[0];
  };
  for (const Mode& mode : modes) {
    double max_difference = 0;
    for (int64_t i = 0; i < kVocab; ++i)
      max_difference =
          std::max<double>(max_difference, std::abs(mode.logits.data<float>()[i] - modes[0].logits.data<float>()[i]));
    std::printf(
        "%-24s first loop %8.3f ms/step (%.3f of per-shape plans) | later loops %7.3f ms/step (%.3f) | plans "
        "kept %4zu | RSS growth over the first loop %7.1f MiB | last logits max |diff| %.2g\n",
        mode.label, mode.ms[0], mode.ms[0] / modes[0].ms[0], later(mode), later(mode) / later(modes[0]),
        mode.session->num_plans(), mode.rss_growth, max_difference);
  }
  std::string tokens;
  for (size_t i = 0; i < std::min<size_t>(12, modes[1].tokens.size()); ++i)
    tokens += (i ? "," : "") + std::to_string(modes[1].tokens[i]);
  std::printf("first tokens %s; the same in every session: %s\n", tokens.c_str(),
              modes[0].tokens == modes[1].tokens && modes[1].tokens == modes[2].tokens ? "yes" : "NO");
  return 0;
}

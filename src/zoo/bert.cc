// A 4-layer BERT-base encoder (Hugging Face BertModel: hidden 768, 12 heads
// of 64, FFN 3072, vocabulary 30522, sequence 128) as its ONNX export looks:
//   embeddings: Gather(word) + Gather(token type 0) + Gather(position ids)
//               -> LayerNormalization (epsilon 1e-12)
//   per layer:  query/key/value = MatMul + Add(bias)
//               -> Reshape [0,0,12,64] -> Transpose (key to [b,h,d,s])
//               scores = MatMul(q, k) / 8 -> Softmax -> MatMul(., v)
//               -> Transpose -> Reshape [0,0,768] -> dense (MatMul + Add)
//               -> Add(residual) -> LayerNormalization
//               FFN: MatMul + Add -> GELU written as x*0.5*(1+erf(x/sqrt2))
//               -> MatMul + Add -> Add(residual) -> LayerNormalization
//   pooler:     Gather(token 0) -> Gemm -> Tanh
// Reshape targets use 0 ("copy this dimension") so the batch stays symbolic.
// Without an attention mask input every position attends to every other, as
// in an export traced without attention_mask.
#include <cmath>
#include <numeric>

#include "model_builder.h"

namespace graft::zoo::detail {

namespace {

constexpr int64_t kVocabulary = 30522, kHidden = 768, kHeads = 12, kHeadSize = 64, kFeedForward = 3072;
constexpr int64_t kSequence = 128, kMaxPositions = 512, kLayers = 4;
constexpr float kLayerNormEpsilon = 1e-12f;

std::string gelu(ModelBuilder& b, const std::string& scope, const std::string& x) {
  std::string scaled = b.op(scope, "Div", {x, b.scalar(1.41421354f)});
  std::string erf = b.op(scope, "Erf", {scaled});
  std::string one_plus = b.op(scope, "Add", {erf, b.scalar(1.0f)});
  std::string half_x = b.op(scope, "Mul", {x, b.scalar(0.5f)});
  return b.op(scope, "Mul", {half_x, one_plus});
}

std::string encoder_layer(ModelBuilder& b, const std::string& prefix, const std::string& x,
                          const std::string& split_heads_shape, const std::string& merge_heads_shape) {
  std::string self = prefix + ".attention.self";
  std::string self_scope = scope_of(self);
  auto heads = [&](const std::string& name, const std::vector<int64_t>& perm) {
    std::string projected = b.linear_matmul(self + "." + name, x, kHidden, kHidden);
    std::string split = b.op(self_scope, "Reshape", {projected, split_heads_shape});
    return b.op(self_scope, "Transpose", {split}, {attr_ints("perm", perm)});
  };
  std::string query = heads("query", {0, 2, 1, 3});
  std::string key = heads("key", {0, 2, 3, 1});
  std::string value = heads("value", {0, 2, 1, 3});
  std::string scores = b.op(self_scope, "MatMul", {query, key});
  scores = b.op(self_scope, "Div", {scores, b.scalar(std::sqrt(static_cast<float>(kHeadSize)))});
  std::string probabilities = b.op(self_scope, "Softmax", {scores}, {attr_int("axis", -1)});
  std::string context = b.op(self_scope, "MatMul", {probabilities, value});
  context = b.op(self_scope, "Transpose", {context}, {attr_ints("perm", {0, 2, 1, 3})});
  context = b.op(self_scope, "Reshape", {context, merge_heads_shape});

  std::string attention_output = prefix + ".attention.output";
  std::string dense = b.linear_matmul(attention_output + ".dense", context, kHidden, kHidden);
  std::string residual = b.op(scope_of(attention_output), "Add", {dense, x});
  std::string attended = b.layer_norm(attention_output + ".LayerNorm", residual, kHidden, kLayerNormEpsilon);

  std::string intermediate = b.linear_matmul(prefix + ".intermediate.dense", attended, kHidden, kFeedForward);
  intermediate = gelu(b, scope_of(prefix + ".intermediate.intermediate_act_fn"), intermediate);
  std::string output = b.linear_matmul(prefix + ".output.dense", intermediate, kFeedForward, kHidden);
  residual = b.op(scope_of(prefix + ".output"), "Add", {output, attended});
  return b.layer_norm(prefix + ".output.LayerNorm", residual, kHidden, kLayerNormEpsilon);
}

}  // namespace

std::string build_bert(uint64_t seed) {
  ModelBuilder b("bert", seed);
  b.add_input("input_ids", onnx::TensorProto::INT64, {"batch", kSequence});

  std::string word_table = b.normal_weight("embeddings.word_embeddings.weight", {kVocabulary, kHidden}, 1.0);
  std::string position_table = b.normal_weight("embeddings.position_embeddings.weight", {kMaxPositions, kHidden}, 1.0);
  std::string type_table = b.normal_weight("embeddings.token_type_embeddings.weight", {2, kHidden}, 1.0);
  std::vector<int64_t> positions(kSequence);
  std::iota(positions.begin(), positions.end(), 0);
  std::string position_ids = b.int64_constant("embeddings.position_ids", {1, kSequence}, positions);
  std::string token_type_ids =
      b.int64_constant("embeddings.token_type_ids", {1, kSequence}, std::vector<int64_t>(kSequence, 0));

  std::string embeddings_scope = scope_of("embeddings");
  std::string words = b.op(scope_of("embeddings.word_embeddings"), "Gather", {word_table, "input_ids"});
  std::string types = b.op(scope_of("embeddings.token_type_embeddings"), "Gather", {type_table, token_type_ids});
  std::string x = b.op(embeddings_scope, "Add", {words, types});
  std::string positions_embedded =
      b.op(scope_of("embeddings.position_embeddings"), "Gather", {position_table, position_ids});
  x = b.op(embeddings_scope, "Add", {x, positions_embedded});
  x = b.layer_norm("embeddings.LayerNorm", x, kHidden, kLayerNormEpsilon);

  std::string split_heads_shape = b.int64_constant("onnx::Reshape_split_heads", {4}, {0, 0, kHeads, kHeadSize});
  std::string merge_heads_shape = b.int64_constant("onnx::Reshape_merge_heads", {3}, {0, 0, kHidden});
  for (int64_t layer = 0; layer < kLayers; ++layer)
    x = encoder_layer(b, "encoder.layer." + std::to_string(layer), x, split_heads_shape, merge_heads_shape);

  std::string first_token = b.int64_constant("onnx::Gather_first_token", {}, {0});
  std::string pooled = b.op(scope_of("pooler"), "Gather", {x, first_token}, {attr_int("axis", 1)});
  pooled = b.linear_gemm("pooler.dense", pooled, kHidden, kHidden);
  pooled = b.op(scope_of("pooler.activation"), "Tanh", {pooled});

  b.mark_output(x, "last_hidden_state", onnx::TensorProto::FLOAT, {"batch", kSequence, kHidden});
  b.mark_output(pooled, "pooler_output", onnx::TensorProto::FLOAT, {"batch", kHidden});
  return b.serialize();
}

}  // namespace graft::zoo::detail

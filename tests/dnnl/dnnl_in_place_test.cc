// Data movement that costs nothing: Concat inputs written in place into the
// destination (dnnl_concat.cc), attention's head split and merge as strided
// views read and written by the matmuls (dnnl_matmul.cc, Reshape views in
// dnnl_data_movement.cc). Every case is checked against the reference
// kernels; the step counts check that no concat or copy runs where none
// should. ctest runs these at oneDNN's default ISA and held to AVX2
// (dnnl_avx2).
#include <optional>

#include "../../backends/dnnl/dnnl_builder.h"
#include "dnnl_case.h"
#include "dnnl_test_util.h"

namespace graft::testing {
namespace {

// Where the structure checks of concats do not apply.
constexpr const char* kChannelsLast =
    "oneDNN 2.6's AVX-512 convolutions (brgconv) pick channels-last layouts, where a concatenation along channels "
    "is not consecutive bytes: the concat primitive runs (its result is checked above)";

Value relu_conv(Case& c, Value x, int64_t in, int64_t out, int64_t kernel) {
  const int64_t pad = kernel / 2;
  return c.op("Relu", {c.op("Conv", {x, c.constant({out, in, kernel, kernel}), c.constant({out})},
                            ints("pads", {pad, pad, pad, pad}))});
}

// squeezenet's fire module: two convolutions concatenated along channels,
// then a convolution. Steps: input reorder, three convolutions, output
// reorder; no concat.
TEST(DnnlConcat, ConvolutionsWriteIntoTheirPartOfTheDestination) {
  Case c;
  Value x = c.input({1, 16, 9, 9});
  Value squeeze = relu_conv(c, x, 16, 16, 1);
  Value cat = c.op("Concat", {relu_conv(c, squeeze, 16, 32, 1), relu_conv(c, squeeze, 16, 32, 3)}, one_int("axis", 1));
  auto stats = c.check({c.op("Conv", {cat, c.constant({16, 64, 1, 1})})});
  if (onednn_runs_avx512_core()) GTEST_SKIP() << kChannelsLast;
  EXPECT_EQ(stats.primitives, 6);  // reorder in, 4 convolutions, reorder out
  EXPECT_EQ(stats.activation_reorders, 2);
}

// densenet's dense block: concat k holds the inputs of concat k - 1 and one
// more, each read by a BatchNormalization + Relu and a convolution. Every
// concat is a prefix of the last one's buffer.
TEST(DnnlConcat, NestedConcatsShareOneBuffer) {
  Case c;
  Value x = c.input({1, 16, 7, 7});
  std::vector<Value> features = {relu_conv(c, x, 16, 32, 3)};
  int64_t channels = 32;
  for (int layer = 0; layer < 3; ++layer) {
    Value cat = features.size() == 1 ? features[0] : c.op("Concat", features, one_int("axis", 1));
    Value bn = c.op("BatchNormalization", {cat, c.constant({channels}), c.constant({channels}), c.constant({channels}),
                                           c.constant({channels}, true)});
    Value y = c.op("Conv", {c.op("Relu", {bn}), c.constant({16, channels, 3, 3})}, ints("pads", {1, 1, 1, 1}));
    features.push_back(y);
    channels += 16;
  }
  Value all_features = c.op("Concat", features, one_int("axis", 1));
  auto stats = c.check({c.op("Conv", {all_features, c.constant({8, channels, 1, 1})})});
  if (onednn_runs_avx512_core()) GTEST_SKIP() << kChannelsLast;
  // reorder in, 5 convolutions, 3 batch norms (each with its Relu), reorder out
  EXPECT_EQ(stats.primitives, 1 + 5 + 3 + 1);
}

// An input of the concat that other nodes read afterwards: a Relu, and a
// convolution whose residual it is. The residual's buffer is now part of the
// concat's destination, so the convolution's sum must not overwrite it.
TEST(DnnlConcat, InputsReadElsewhereKeepTheirValue) {
  Case c;
  Value x = c.input({1, 16, 6, 6});
  Value a = relu_conv(c, x, 16, 16, 3);
  Value b = relu_conv(c, x, 16, 16, 1);
  Value cat = c.op("Concat", {a, b}, one_int("axis", 1));
  Value merged = c.op("Conv", {cat, c.constant({16, 32, 1, 1})});
  Value residual = c.op("Add", {c.op("Conv", {a, c.constant({16, 16, 3, 3})}, ints("pads", {1, 1, 1, 1})), a});
  c.check({merged, residual, c.op("Sigmoid", {b}), cat});
}

// Offsets that are not a multiple of the channel block (12 channels first)
// run the concat primitive; a short last input (its block padded) is placed.
TEST(DnnlConcat, OffsetsOffTheChannelBlockFallBack) {
  for (bool short_first : {true, false}) {
    Case c;
    Value x = c.input({1, 16, 5, 5});
    Value a = relu_conv(c, x, 16, short_first ? 12 : 16, 1);
    Value b = relu_conv(c, x, 16, short_first ? 16 : 12, 3);
    Value cat = c.op("Concat", {a, b}, one_int("axis", 1));
    c.check({c.op("Conv", {cat, c.constant({8, 28, 3, 3})}, ints("pads", {1, 1, 1, 1}))});
  }
}

// A graph input and a constant cannot be written in place: they are copied
// into their parts; the convolution's output is placed. A batch of 2 is no
// concatenation of bytes: the concat primitive runs.
TEST(DnnlConcat, GraphInputsConstantsAndBatchesAreCopied) {
  for (int64_t batch : {1, 2}) {
    Case c;
    Value x = c.input({batch, 16, 4, 4});
    Value extra = c.input({batch, 16, 4, 4});
    Value cat = c.op("Concat", {relu_conv(c, x, 16, 16, 3), extra, c.constant({batch, 16, 4, 4})}, one_int("axis", 1));
    c.check({c.op("Conv", {cat, c.constant({8, 48, 1, 1})})});
  }
}

// Plain layouts concatenate in place too: two products' rows (batch 1).
TEST(DnnlConcat, PlainProductsAlongRows) {
  Case c;
  Value x = c.input({1, 4, 8});
  Value y = c.input({1, 3, 8});
  Value cat = c.op("Concat", {c.op("MatMul", {x, c.constant({8, 16})}), c.op("MatMul", {y, c.constant({8, 16})})},
                   one_int("axis", 1));
  auto stats = c.check({c.op("Relu", {cat})});
  EXPECT_EQ(stats.primitives, 3);  // two products, the Relu
}

// A training step's parameter is a module input, not a constant (it is
// updated in place between steps): x [2, 4, 8] times W^T for W [16, 8] (a
// linear layer as PyTorch exports it) runs as one 2-D product reading W
// through the Transpose's strides, where the batched product copied it to
// plain first.
TEST(DnnlLayouts, AWeightInputReadTransposedIsNotCopied) {
  Case c;
  Value x = c.input({2, 4, 8});
  Value w = c.input({16, 8});
  auto stats = c.check({c.op("MatMul", {x, c.op("Transpose", {w}, ints("perm", {1, 0}))})});
  EXPECT_EQ(stats.primitives, 1);
  EXPECT_EQ(stats.activation_reorders, 0);
}

// Inputs of different layouts (a transposed value beside plain ones, as a
// transformer's Q, K and V gradients meet): oneDNN 2.6's concat runs them on
// its reference code, so each is reordered into its part instead.
TEST(DnnlConcat, MixedLayoutsAreCopiedByReorders) {
  Case c;
  Value a = c.input({4, 3, 5});
  Value t = c.op("Transpose", {c.input({3, 5, 4})}, ints("perm", {2, 0, 1}));
  Value d = c.input({4, 3, 2});
  auto stats = c.check({c.op("Concat", {a, t, d}, one_int("axis", 2))});
  EXPECT_EQ(stats.primitives, 3);  // one reorder per input, into the destination
  EXPECT_EQ(stats.reference_primitives, 0);
}

// The same value twice: placed once, copied once.
TEST(DnnlConcat, RepeatedInput) {
  Case c;
  Value x = c.input({1, 16, 4, 4});
  Value a = relu_conv(c, x, 16, 16, 3);
  c.check({c.op("Conv", {c.op("Concat", {a, a}, one_int("axis", 1)), c.constant({8, 32, 1, 1})})});
}

// A subgraph output that later steps read through a view (here the
// product's [2, 4, 16] result, reshaped for a second product; in a training
// step a forward MatMul's result that the backward reads flattened) is
// written once, into the output tensor, and the view reads it there: no
// same-layout copy into the output.
TEST(DnnlOutputs, AnOutputReadThroughAViewIsNotCopied) {
  Case c;
  Value x = c.input({2, 4, 8});
  Value product = c.op("MatMul", {x, c.constant({8, 16})});
  Value flat =
      c.op("Reshape", {product, c.graph->add_constant("shape", Tensor::from_vector<int64_t>({8, 16}, {2}))->output(0)});
  Value second = c.op("MatMul", {flat, c.constant({16, 4})});
  auto stats = c.check({product, second});
  EXPECT_EQ(stats.primitives, 2);  // the two products; no reorder
  EXPECT_EQ(stats.activation_reorders, 0);
}

TEST(DnnlReshape, StridesOfAViewWhereDimensionsAreAdjacentInMemory) {
  using dnnl_backend::reshaped_strides;
  // A slice [1, 128, 768] of [1, 128, 2304] split into 12 heads of 64.
  EXPECT_EQ(reshaped_strides({1, 128, 768}, {128 * 2304, 2304, 1}, {1, 128, 12, 64}),
            (dnnl_backend::Dims{128 * 2304, 2304, 64, 1}));
  // A transposed context [1, 128, 12, 64] (heads outer in memory) merged: no view.
  EXPECT_EQ(reshaped_strides({1, 128, 12, 64}, {98304, 64, 8192, 1}, {1, 128, 768}), std::nullopt);
  // Its plain form merges; size-1 dimensions come and go.
  EXPECT_EQ(reshaped_strides({1, 128, 12, 64}, {98304, 768, 64, 1}, {128, 1, 768}), (dnnl_backend::Dims{768, 768, 1}));
  EXPECT_EQ(reshaped_strides({2, 3}, {1, 2}, {6}), std::nullopt);
  EXPECT_EQ(reshaped_strides({2, 0}, {1, 1}, {0}), std::nullopt);
}

// BERT's self-attention as exported: one fused q/k/v projection sliced into
// three, each reshaped into heads and transposed; the context transposed
// back and reshaped. The slices, head splits and the head merge are views
// that the matmuls read and write with their strides: on AVX2 (oneDNN's jit
// gemm) no copy runs at all. On AVX-512, brgemm reads some heads through
// plain copies, depending on their shapes (cheaper than its jit gemm
// fallback). PyTorch's export scales q before the product (q / sqrt(head
// size), an eltwise of the strided head): that copy to plain scales too,
// one reorder.
TEST(DnnlLayouts, AttentionHeadSplitAndMergeAreViews) {
  for (bool scale_q : {false, true}) {
    Case c;
    const int64_t seq = 8, heads = 4, head = 8, hidden = heads * head;
    Value x = c.input({1, seq, hidden});
    Value qkv = c.op("Add", {c.op("MatMul", {x, c.constant({hidden, 3 * hidden})}), c.constant({3 * hidden})});
    auto constant = [&](const std::vector<int64_t>& v) {
      return c.graph
          ->add_constant("k" + std::to_string(c.seed++),
                         Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())}))
          ->output(0);
    };
    auto split = [&](int64_t part, std::vector<int64_t> perm) {
      Value slice = c.op("Slice", {qkv, constant({part * hidden}), constant({(part + 1) * hidden}), constant({2})});
      return c.op("Transpose", {c.op("Reshape", {slice, constant({1, seq, heads, head})})}, ints("perm", perm));
    };
    Value q = split(0, {0, 2, 1, 3}), k = split(1, {0, 2, 3, 1}), v = split(2, {0, 2, 1, 3});
    Value two = c.graph->add_constant("d", Tensor::scalar(2.0f))->output(0);
    Value scores = scale_q ? c.op("MatMul", {c.op("Div", {q, two}), k}) : c.op("Div", {c.op("MatMul", {q, k}), two});
    Value context = c.op("MatMul", {c.op("Softmax", {scores}, one_int("axis", -1)), v});
    Value merged =
        c.op("Reshape", {c.op("Transpose", {context}, ints("perm", {0, 2, 1, 3})), constant({1, seq, hidden})});
    auto stats = c.check({c.op("MatMul", {merged, c.constant({hidden, hidden})})});
    EXPECT_EQ(stats.reference_primitives, 0);
    if (onednn_runs_avx512_core()) continue;  // brgemm may read copies of the heads
    // projection, scores (scaled), softmax, context, output projection
    // (written into the output tensor); the scaled copy of q
    EXPECT_EQ(stats.activation_reorders, scale_q ? 1 : 0);
    EXPECT_EQ(stats.primitives, scale_q ? 6 : 5);
  }
}

}  // namespace
}  // namespace graft::testing

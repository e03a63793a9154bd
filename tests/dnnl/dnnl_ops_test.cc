// Every op and post-op pattern the dnnl backend takes, against the reference
// kernels on the same graph and inputs (max relative error 1e-4).
#include <functional>

#include "../../backends/dnnl/dnnl_builder.h"
#include "../../backends/dnnl/dnnl_program.h"
#include "../../backends/dnnl/dnnl_support.h"
#include "dnnl_case.h"
#include "dnnl_test_util.h"
#include "graft/runtime/cpu_features.h"
#include "support/scoped_env.h"

namespace graft::testing {
namespace {

TEST(DnnlOps, ConvPadded) {
  Case c;
  Value x = c.input({1, 16, 9, 9});
  c.check({c.op("Conv", {x, c.constant({32, 16, 3, 3})}, ints("pads", {1, 1, 1, 1}))});
}

TEST(DnnlOps, ConvGroupedStridedWithBias) {
  Case c;
  Value x = c.input({2, 8, 10, 10});
  c.check({c.op("Conv", {x, c.constant({12, 4, 3, 3}), c.constant({12})},
                all({one_int("group", 2), ints("strides", {2, 2}), ints("pads", {1, 0, 1, 0})}))});
}

TEST(DnnlOps, ConvDepthwise) {
  Case c;
  Value x = c.input({1, 32, 12, 12});
  c.check({c.op("Conv", {x, c.constant({32, 1, 3, 3}), c.constant({32})},
                all({one_int("group", 32), ints("pads", {1, 1, 1, 1})}))});
}

TEST(DnnlOps, ConvDilatedAutoPad) {
  Case c;
  Value x = c.input({1, 8, 11, 13});
  c.check({c.op("Conv", {x, c.constant({8, 8, 3, 3})},
                all({ints("dilations", {2, 2}), ints("strides", {2, 1}), one_string("auto_pad", "SAME_UPPER")})),
           c.op("Conv", {x, c.constant({4, 8, 2, 2})}, one_string("auto_pad", "SAME_LOWER")),
           c.op("Conv", {x, c.constant({4, 8, 3, 3})}, one_string("auto_pad", "VALID"))});
}

TEST(DnnlOps, Conv1dAnd3d) {
  Case c;
  Value x1 = c.input({1, 4, 20});
  Value x3 = c.input({1, 4, 5, 6, 7});
  c.check({c.op("Conv", {x1, c.constant({6, 4, 5})}, ints("pads", {2, 2})),
           c.op("Conv", {x3, c.constant({6, 4, 3, 3, 3})}, ints("pads", {1, 1, 1, 1, 1, 1}))});
}

TEST(DnnlOps, ConvTranspose) {
  Case c;
  Value x = c.input({1, 8, 5, 5});
  c.check({c.op("ConvTranspose", {x, c.constant({8, 3, 3, 3}), c.constant({6})},
                all({one_int("group", 2), ints("strides", {2, 2}), ints("pads", {1, 1, 1, 1}),
                     ints("output_padding", {1, 1})})),
           c.op("ConvTranspose", {x, c.constant({8, 4, 4, 4})}, ints("strides", {2, 2}))});
}

// A ConvTranspose whose kernel equals its stride (Mask R-CNN's mask head, a
// U-Net's upsampling) runs as one matmul and a reorder that puts each input
// pixel's block in place, with its bias and eltwise post-ops; other strides,
// padding and groups stay on oneDNN's deconvolution.
TEST(DnnlConv, ConvTransposeWithKernelEqualToStrideIsAProduct) {
  Case c;
  Value x = c.input({3, 16, 5, 7});
  Value up = c.op("Relu", {c.op("ConvTranspose", {x, c.constant({16, 8, 2, 2}), c.constant({8})},
                                all({ints("strides", {2, 2}), ints("kernel_shape", {2, 2})}))});
  Value wide = c.op("ConvTranspose", {x, c.constant({16, 4, 3, 2})}, ints("strides", {3, 2}));
  auto stats = c.check({up, wide});
  EXPECT_EQ(stats.deconvolutions, 0);
  EXPECT_EQ(stats.reference_primitives, 0);

  Case padded;
  Value y = padded.input({1, 16, 5, 5});
  auto padded_stats = padded.check({padded.op("ConvTranspose", {y, padded.constant({16, 8, 2, 2})},
                                              all({ints("strides", {2, 2}), ints("pads", {1, 1, 1, 1})}))});
  EXPECT_EQ(padded_stats.deconvolutions, 1);
}

TEST(DnnlOps, MatMulBatchedAndBroadcast) {
  Case c;
  Value a = c.input({2, 3, 5, 4});
  Value b = c.input({2, 3, 4, 6});
  Value a3 = c.input({2, 5, 4});
  Value b1 = c.input({1, 4, 6});
  c.check({c.op("MatMul", {a, b}), c.op("MatMul", {a3, c.constant({4, 6})}), c.op("MatMul", {a3, b1})});
}

TEST(DnnlOps, GemmTransposedScaled) {
  Case c;
  Value a = c.input({7, 5});
  Value at = c.input({5, 7});
  c.check({c.op("Gemm", {a, c.constant({3, 5}), c.constant({3})},
                all({one_int("transB", 1), one_float("alpha", 0.5f), one_float("beta", 2.0f)})),
           c.op("Gemm", {at, c.constant({5, 3}), c.constant({7, 3})}, one_int("transA", 1)),
           c.op("Gemm", {a, c.constant({5, 3})})});
}

TEST(DnnlOps, Pools) {
  Case c;
  Value x = c.input({1, 16, 11, 11});
  c.check({c.op("MaxPool", {x}, all({ints("kernel_shape", {3, 3}), ints("strides", {2, 2}), ints("pads", {1, 1, 1, 1})})),
           c.op("MaxPool", {x}, all({ints("kernel_shape", {2, 2}), ints("strides", {2, 2}), one_int("ceil_mode", 1)})),
           c.op("MaxPool", {x}, all({ints("kernel_shape", {2, 2}), ints("dilations", {2, 2})})),
           c.op("AveragePool", {x}, all({ints("kernel_shape", {3, 3}), ints("pads", {1, 1, 1, 1}),
                                         one_int("count_include_pad", 1)})),
           c.op("AveragePool", {x}, all({ints("kernel_shape", {3, 3}), ints("strides", {2, 2}), ints("pads", {1, 1, 1, 1})})),
           c.op("AveragePool", {x}, all({ints("kernel_shape", {2, 2}), ints("strides", {2, 2}), one_int("ceil_mode", 1)})),
           c.op("GlobalAveragePool", {x}), c.op("GlobalMaxPool", {x})});
}

TEST(DnnlOps, BatchNormLrnSoftmax) {
  Case c;
  Value x = c.input({2, 8, 5, 5});
  Value s = c.input({4, 6, 10});
  c.check({c.op("BatchNormalization", {x, c.constant({8}), c.constant({8}), c.constant({8}), c.constant({8}, true)},
                one_float("epsilon", 1e-3f)),
           c.op("LRN", {x}, all({one_int("size", 5), one_float("alpha", 1e-3f), one_float("beta", 0.75f),
                                 one_float("bias", 2.0f)})),
           c.op("Softmax", {s}, one_int("axis", -1)), c.op("Softmax", {s}, one_int("axis", 1))});
}

TEST(DnnlOps, SoftmaxOpset11Coerces) {
  Case c;
  c.graph->opset_imports[""] = 11;
  Value s = c.input({4, 6, 10});
  c.check({c.op("Softmax", {s}, one_int("axis", 1))});
}

TEST(DnnlOps, LayerNormalization) {
  Case c;
  Value x = c.input({2, 7, 32});
  c.check({c.op("LayerNormalization", {x, c.constant({32}), c.constant({32})}, one_float("epsilon", 1e-5f)),
           c.op("LayerNormalization", {x, c.constant({7, 32})}, one_int("axis", 1))});
}

// The bias gradients and broadcast sums of backward graphs.
TEST(DnnlOps, ReduceSum) {
  Case c;
  Value x = c.input({2, 8, 5, 7});
  Value v = c.input({11});
  auto axes = [&](std::vector<int64_t> a) {
    return c.graph->add_constant("axes" + std::to_string(c.seed++), Tensor::from_vector<int64_t>(a, {static_cast<int64_t>(a.size())}))->output(0);
  };
  auto stats = c.check({c.op("ReduceSum", {x, axes({0, 2, 3})}, one_int("keepdims", 0)),
                        c.op("ReduceSum", {x, axes({1})}),
                        c.op("ReduceSum", {x, axes({-1, 0})}, one_int("keepdims", 0)),
                        c.op("ReduceSum", {x}, one_int("keepdims", 0)),
                        c.op("ReduceSum", {v, axes({0})})});
  // Leading or middle axes are moved innermost first: oneDNN 2.6 reduces
  // only those with its jit kernels.
  EXPECT_EQ(stats.reference_primitives, 0);
}

// A sum over leading axes only (a linear layer's bias gradient) runs on the
// reference kernel inside the program, which streams the tensor once
// (oneDNN 2.6 would transpose it first); the sum over a trailing axis is
// oneDNN's reduction.
TEST(DnnlOps, ReduceSumOverLeadingAxesRunsOnTheReferenceKernelInTheProgram) {
  Case c;
  Value x = c.input({8, 16, 32});
  auto axes = [&](std::vector<int64_t> a) {
    return c.graph
        ->add_constant("axes" + std::to_string(c.seed++),
                       Tensor::from_vector<int64_t>(a, {static_cast<int64_t>(a.size())}))
        ->output(0);
  };
  Value bias_grad = c.op("ReduceSum", {x, axes({0, 1})}, one_int("keepdims", 0));
  EXPECT_TRUE(dnnl_backend::sums_leading_axes_only(*bias_grad.node));
  Value rows = c.op("ReduceSum", {x, axes({2})});
  EXPECT_FALSE(dnnl_backend::sums_leading_axes_only(*rows.node));
  auto stats = c.check({bias_grad, rows});
  EXPECT_EQ(stats.reference_kernel_steps, 1);
  EXPECT_EQ(stats.reference_primitives, 0);
}

// oneDNN visits every tap of a pooling window, inside the input or not: a
// window far wider than its input (a fuzzer's kernel of 2^31 ran for hours in
// one primitive) is left to the reference kernel, which visits the taps inside.
TEST(DnnlOps, APoolingWindowFarWiderThanItsInputIsLeftToTheReference) {
  for (int64_t kernel : {int64_t{3}, int64_t{1} << 31}) {
    auto g = new_graph();
    Value x = g->add_input("x", ir::ValueType::of(DType::float32, {1, 3, 32, 32}))->output(0);
    ir::Node* pool = g->add_node("MaxPool", {x}, 1, "pool");
    pool->attributes.set("kernel_shape", std::vector<int64_t>{kernel, kernel - 1});
    pool->attributes.set("auto_pad", std::string("SAME_UPPER"));
    g->add_output(pool->output(0));
    ops::infer_types(*g);
    const dnnl_backend::SupportResult support = dnnl_backend::dnnl_supports(*pool);
    if (kernel == 3) {
      EXPECT_TRUE(support.supported) << support.reason;
    } else {
      EXPECT_FALSE(support.supported);
      EXPECT_NE(support.reason.find("far wider than the input"), std::string::npos) << support.reason;
    }
  }
}

TEST(DnnlOps, ReduceSumOpset11AxesAttribute) {
  Case c;
  c.graph->opset_imports[""] = 11;
  Value x = c.input({3, 4, 6});
  c.check({c.op("ReduceSum", {x}, all({ints("axes", {0, 2}), one_int("keepdims", 0)})), c.op("ReduceSum", {x})});
}

TEST(DnnlOps, ConcatOfConvs) {
  Case c;
  Value x = c.input({1, 16, 8, 8});
  Value a = c.op("Conv", {x, c.constant({16, 16, 1, 1})});
  Value b = c.op("Conv", {x, c.constant({8, 16, 3, 3})}, ints("pads", {1, 1, 1, 1}));
  Value y = c.input({1, 4, 8, 8});
  c.check({c.op("Concat", {a, b, y}, one_int("axis", 1))});
}

TEST(DnnlOps, StandaloneEltwiseAndBinary) {
  Case c;
  Value x = c.input({2, 8, 4, 4});
  Value y = c.input({2, 8, 4, 4});
  Value ch = c.input({1, 8, 1, 1});
  std::vector<Value> outs;
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "HardSwish", "Elu", "Gelu", "Abs", "Exp"}) outs.push_back(c.op(op, {x}));
  outs.push_back(c.op("LeakyRelu", {x}, one_float("alpha", 0.1f)));
  outs.push_back(c.op("HardSigmoid", {x}, all({one_float("alpha", 0.3f), one_float("beta", 0.4f)})));
  outs.push_back(c.op("Clip", {x, c.graph->add_constant("lo", Tensor::scalar(-0.25f))->output(0), c.graph->add_constant("hi", Tensor::scalar(0.5f))->output(0)}));
  outs.push_back(c.op("Add", {x, y}));
  outs.push_back(c.op("Mul", {ch, x}));
  outs.push_back(c.op("Sub", {x, ch}));
  outs.push_back(c.op("Div", {x, c.constant({8, 1, 1}, true)}));
  outs.push_back(c.op("Mul", {x, c.graph->add_constant("k", Tensor::scalar(3.0f))->output(0)}));
  outs.push_back(c.op("Sub", {c.graph->add_constant("k2", Tensor::scalar(1.0f))->output(0), x}));
  c.check(outs);
}

TEST(DnnlOps, FlattenAndReshape) {
  Case c;
  Value x = c.input({2, 16, 4, 4});
  Value conv = c.op("Conv", {x, c.constant({16, 16, 3, 3})}, ints("pads", {1, 1, 1, 1}));
  Value pooled = c.op("GlobalAveragePool", {conv});
  Value flat = c.op("Flatten", {pooled}, one_int("axis", 1));
  Value shape = c.graph->add_constant("shape", Tensor::from_vector<int64_t>({2, 8, 32}, {3}))->output(0);
  c.check({c.op("Gemm", {flat, c.constant({10, 16}), c.constant({10})}, one_int("transB", 1)),
           c.op("Reshape", {conv, shape})});
}

// ---- post-ops on conv and matmul ----

TEST(DnnlPostOps, EveryEltwiseOnConv) {
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "HardSwish", "Elu", "Gelu", "LeakyRelu", "HardSigmoid", "Clip"}) {
    SCOPED_TRACE(op);
    Case c;
    Value x = c.input({1, 16, 6, 6});
    Value conv = c.op("Conv", {x, c.constant({16, 16, 3, 3}), c.constant({16})}, ints("pads", {1, 1, 1, 1}));
    std::vector<Value> in = {conv};
    if (std::string(op) == "Clip") {
      in.push_back(c.graph->add_constant("lo", Tensor::scalar(-0.2f))->output(0));
      in.push_back(c.graph->add_constant("hi", Tensor::scalar(0.3f))->output(0));
    }
    auto stats = c.check({c.op(op, in)});
    EXPECT_GE(stats.fused_nodes, 1);
  }
}

TEST(DnnlPostOps, SwishBinaryAndSum) {
  Case c;
  Value x = c.input({1, 16, 6, 6});
  Value conv = c.op("Conv", {x, c.constant({16, 16, 3, 3})}, ints("pads", {1, 1, 1, 1}));
  Value swish = c.op("Mul", {conv, c.op("Sigmoid", {conv})});
  Value biased = c.op("Add", {swish, c.constant({1, 16, 1, 1})});
  Value scaled = c.op("Mul", {c.constant({16, 1, 1}), biased});
  Value conv2 = c.op("Conv", {scaled, c.constant({16, 16, 1, 1})});
  Value residual = c.op("Add", {conv2, scaled});
  auto stats = c.check({c.op("Relu", {residual})});
  EXPECT_EQ(stats.fused_nodes, 6);  // Sigmoid, Mul, Add, Mul | Add, Relu
}

TEST(DnnlPostOps, ResidualFromInputIsBinaryAdd) {
  Case c;
  Value x = c.input({1, 16, 6, 6});
  Value conv = c.op("Conv", {x, c.constant({16, 16, 3, 3})}, ints("pads", {1, 1, 1, 1}));
  auto stats = c.check({c.op("Relu", {c.op("Add", {x, conv})})});
  EXPECT_EQ(stats.fused_nodes, 2);
}

// conv -> SiLU -> + the conv's own input (efficientnet_v2's fused MBConv):
// the residual cannot be a sum (it must come first, and the input is the
// convolution's source), so it is a binary post-op read in the layout the
// convolution picks, which keeps the convolution off oneDNN's im2col + gemm
// fallback (0.8 ms instead of 5.8 on [1,24,112,112]).
TEST(DnnlPostOps, ResidualAfterAnActivationKeepsTheConvolutionBlocked) {
  Case c;
  Value x = c.input({1, 24, 28, 28});
  Value conv = c.op("Conv", {x, c.constant({24, 24, 3, 3}), c.constant({24})}, ints("pads", {1, 1, 1, 1}));
  Value silu = c.op("Mul", {conv, c.op("Sigmoid", {conv})});
  auto stats = c.check({c.op("Add", {silu, x})});
  EXPECT_EQ(stats.fused_nodes, 3);  // Sigmoid, Mul, Add
  EXPECT_EQ(stats.gemm_convolutions, 0);
}

TEST(DnnlPostOps, BatchNormFoldedIntoConv) {
  Case c;
  Value x = c.input({1, 8, 7, 7});
  Value conv = c.op("Conv", {x, c.constant({16, 8, 3, 3}), c.constant({16})}, ints("pads", {1, 1, 1, 1}));
  Value bn = c.op("BatchNormalization", {conv, c.constant({16}), c.constant({16}), c.constant({16}), c.constant({16}, true)});
  auto stats = c.check({c.op("Relu", {bn})});
  EXPECT_EQ(stats.fused_nodes, 2);
  EXPECT_EQ(stats.primitives, 3);  // reorder in, conv, reorder out
}

TEST(DnnlPostOps, MatMulBiasGeluAndScale) {
  Case c;
  Value x = c.input({2, 5, 16});
  Value h = c.op("Add", {c.op("MatMul", {x, c.constant({16, 32})}), c.constant({32})});
  Value gelu = c.op("Gelu", {h});
  Value q = c.input({2, 4, 5, 8});
  Value k = c.input({2, 4, 8, 5});
  Value scores = c.op("Div", {c.op("MatMul", {q, k}), c.graph->add_constant("s", Tensor::scalar(2.0f))->output(0)});
  auto stats = c.check({gelu, scores});
  EXPECT_EQ(stats.fused_nodes, 3);
}

}  // namespace
}  // namespace graft::testing

namespace graft::testing {
namespace {

// BERT's self-attention: transposes are strided views read (and, for the
// head merge, written) in place by the matmuls.
TEST(DnnlOps, AttentionWithTransposes) {
  Case c;
  Value x = c.input({2, 5, 16});
  Value split = c.graph->add_constant("split", Tensor::from_vector<int64_t>({0, 0, 4, 4}, {4}))->output(0);
  Value merge = c.graph->add_constant("merge", Tensor::from_vector<int64_t>({0, 0, 16}, {3}))->output(0);
  auto heads = [&](std::vector<int64_t> perm) {
    Value projected = c.op("Add", {c.op("MatMul", {x, c.constant({16, 16})}), c.constant({16})});
    return c.op("Transpose", {c.op("Reshape", {projected, split})}, ints("perm", perm));
  };
  Value q = heads({0, 2, 1, 3}), k = heads({0, 2, 3, 1}), v = heads({0, 2, 1, 3});
  Value scores = c.op("Div", {c.op("MatMul", {q, k}), c.graph->add_constant("d", Tensor::scalar(2.0f))->output(0)});
  Value context = c.op("MatMul", {c.op("Softmax", {scores}, one_int("axis", -1)), v});
  Value merged = c.op("Reshape", {c.op("Transpose", {context}, ints("perm", {0, 2, 1, 3})), merge});
  auto stats = c.check({merged, c.op("Transpose", {x}, {})});
  // The output transpose; the context's product writes the transposed layout itself.
  EXPECT_EQ(stats.activation_reorders, 1);
}

}  // namespace
}  // namespace graft::testing

namespace graft::testing {
namespace {

TEST(DnnlPostOps, BatchNormReluIsOnePrimitive) {
  Case c;
  Value x = c.input({2, 16, 5, 5});
  Value bn = c.op("BatchNormalization", {x, c.constant({16}), c.constant({16}), c.constant({16}), c.constant({16}, true)});
  auto stats = c.check({c.op("Relu", {bn})});
  EXPECT_EQ(stats.fused_nodes, 1);
  EXPECT_EQ(stats.primitives, 1);
}

}  // namespace
}  // namespace graft::testing

namespace graft::testing {
namespace {

// torch's fused in-projection: one MatMul, then Slices into q, k, v.
TEST(DnnlOps, SlicesOfAProjection) {
  Case c;
  Value x = c.input({2, 5, 8});
  Value qkv = c.op("MatMul", {x, c.constant({8, 24})});
  auto slice = [&](int64_t begin, int64_t end) {
    Value starts = c.graph->add_constant("st" + std::to_string(begin), Tensor::from_vector<int64_t>({begin}, {1}))->output(0);
    Value ends = c.graph->add_constant("en" + std::to_string(begin), Tensor::from_vector<int64_t>({end}, {1}))->output(0);
    Value axes = c.graph->add_constant("ax" + std::to_string(begin), Tensor::from_vector<int64_t>({-1}, {1}))->output(0);
    return c.op("Slice", {qkv, starts, ends, axes});
  };
  Value q = slice(0, 8), k = slice(8, 16), v = slice(16, 24);
  Value middle = c.op("Slice", {x, c.graph->add_constant("s", Tensor::from_vector<int64_t>({1, 2}, {2}))->output(0),
                                c.graph->add_constant("e", Tensor::from_vector<int64_t>({4, 7}, {2}))->output(0),
                                c.graph->add_constant("a", Tensor::from_vector<int64_t>({1, 2}, {2}))->output(0)});
  c.check({c.op("Add", {q, k}), c.op("Relu", {v}), middle});
}

}  // namespace
}  // namespace graft::testing

namespace graft::testing {
namespace {

// A GRU cell as exported: Gather of one time step, a Gemm, Split of its gates.
TEST(DnnlOps, GatherStepAndSplitGates) {
  Case c;
  Value x = c.input({2, 4, 6});
  Value step = c.op("Gather", {x, c.graph->add_constant("t", Tensor::from_vector<int64_t>({1}, {}))->output(0)});
  Value last = c.op("Gather", {x, c.graph->add_constant("l", Tensor::from_vector<int64_t>({-1}, {1}))->output(0)},
                    one_int("axis", 2));
  Value gates = c.op("Gemm", {step, c.constant({9, 6}), c.constant({9})}, one_int("transB", 1));
  ir::Node* split = c.graph->add_node("Split", {gates}, 3, "split");
  split->attributes.set("axis", int64_t{1});
  Value z = c.op("Sigmoid", {split->output(0)});
  Value r = c.op("Mul", {split->output(1), z});
  c.check({c.op("Add", {c.op("Tanh", {split->output(2)}), r}), last, step});
}

}  // namespace
}  // namespace graft::testing

namespace graft::testing {
namespace {

// A conv output read twice by one consumer (x * x) stops the post-op chain.
TEST(DnnlPostOps, ValueReadTwiceByOneNodeIsNotAPostOp) {
  Case c;
  Value x = c.input({1, 8, 5, 5});
  Value conv = c.op("Conv", {x, c.constant({8, 8, 3, 3})}, ints("pads", {1, 1, 1, 1}));
  auto stats = c.check({c.op("Relu", {c.op("Mul", {conv, conv})})});
  EXPECT_EQ(stats.fused_nodes, 0);
}

}  // namespace
}  // namespace graft::testing

namespace graft::testing {
namespace {

// With batch 1, a transpose that only moves the size-1 dimension is the plain
// layout: an Add of it and a plain tensor must use oneDNN's optimized binary
// implementation, not its reference one (which was 100x slower on BERT's
// residual Add).
TEST(DnnlLayouts, TransposeOfUnitDimensionReadsAsPlain) {
  Case c;
  Value x = c.input({128, 1, 64});
  Value y = c.input({1, 128, 64});
  Value t = c.op("Transpose", {x}, ints("perm", {1, 0, 2}));
  auto stats = c.check({c.op("Add", {t, y})});
  EXPECT_EQ(stats.reference_primitives, 0);
}

// Attention's batched products read heads as transposed views; oneDNN's
// brgemm takes them once copied to plain, instead of its jit gemm fallback
// (whose kernel generation cost 20 ms of BERT's first run).
TEST(DnnlLayouts, AttentionProductsOfTransposedHeadsUseBrgemm) {
  Case c;
  Value q = c.op("Transpose", {c.input({1, 32, 4, 16})}, ints("perm", {0, 2, 1, 3}));
  Value k = c.op("Transpose", {c.input({1, 32, 4, 16})}, ints("perm", {0, 2, 3, 1}));
  Value v = c.op("Transpose", {c.input({1, 32, 4, 16})}, ints("perm", {0, 2, 1, 3}));
  Value probs = c.op("Softmax", {c.op("MatMul", {q, k})}, one_int("axis", -1));
  auto stats = c.check({c.op("MatMul", {probs, v})});
  EXPECT_EQ(stats.reference_primitives, 0);
  if (!onednn_runs_avx512_core()) GTEST_SKIP() << "oneDNN 2.6 has brgemm matmuls only on AVX-512";
  EXPECT_EQ(stats.jit_gemm_matmuls, 0);
}

// A constant weight whose plain rows lie a multiple of 1 KiB apart is
// stored transposed where oneDNN's jit gemm runs the product (AVX2 and older
// ISAs; `ctest -R dnnl_avx2` runs this test there): packing the plain form
// at that stride ran BERT's FFN products at half speed. Other strides and
// single rows keep the plain layout; brgemm (AVX-512) packs its own blocked
// one. Every form computes the reference's results.
TEST(DnnlLayouts, JitGemmStoresWeightsWithAliasingRowsTransposed) {
  struct Product {
    int64_t rows, columns;
    bool transposed_on_jit_gemm;
  };
  for (const Product& p : {Product{16, 256, true}, Product{16, 250, false}, Product{1, 256, false}}) {
    SCOPED_TRACE(std::to_string(p.rows) + " x 64 x " + std::to_string(p.columns));
    Case c;
    Value product = c.op("MatMul", {c.input({1, p.rows, 64}), c.constant({64, p.columns})});
    Value out = c.op("Relu", {c.op("Add", {product, c.constant({p.columns})})});
    c.check({out});
    const dnnl_backend::DnnlProgram program = dnnl_backend::build_program(*c.graph);
    const dnnl_backend::Step* matmul = nullptr;
    for (const dnnl_backend::Step& step : program.steps)
      if (step.primitive && step.primitive.get_kind() == dnnl::primitive::kind::matmul) matmul = &step;
    ASSERT_NE(matmul, nullptr);
    const dnnl_backend::Weight* weight = nullptr;
    for (const dnnl_backend::Weight& w : program.weights)
      if (w.plain.dims() == dnnl::memory::dims{64, p.columns}) weight = &w;
    ASSERT_NE(weight, nullptr);
    if (matmul->implementation.rfind("gemm:jit", 0) != 0) {
      EXPECT_FALSE(dnnl_backend::is_unblocked(weight->desc)) << matmul->implementation << " packs its own layout";
      continue;
    }
    const dnnl::memory::dims transposed = {1, 64}, plain = {p.columns, 1};
    EXPECT_EQ(dnnl_backend::strides_of(weight->desc), p.transposed_on_jit_gemm ? transposed : plain);
  }
}

// Stride-1 3x3 convolutions with a large output run on Winograd where
// oneDNN has it (AVX-512 machines), with their post-ops (ReLU, residual sum);
// small outputs, strided and grouped ones stay direct. Results match the
// reference kernels within 1e-4 either way.
TEST(DnnlConv, LargeStrideOne3x3ConvolutionsUseWinograd) {
  Case c;
  Value x = c.input({1, 32, 28, 28});
  Value conv = c.op("Conv", {x, c.constant({32, 32, 3, 3}), c.constant({32})}, ints("pads", {1, 1, 1, 1}));
  Value conv2 = c.op("Conv", {c.op("Relu", {conv}), c.constant({32, 32, 3, 3})}, ints("pads", {1, 1, 1, 1}));
  Value out = c.op("Relu", {c.op("Add", {conv2, conv})});
  auto stats = c.check({out});
  if (onednn_runs_avx512_core()) {
    EXPECT_EQ(stats.winograd_convolutions, 2);  // oneDNN has Winograd there only
  }
  EXPECT_EQ(stats.fused_nodes, 2);  // Add, Relu on the second (the first one's value is read twice)

  Case small;
  Value y = small.input({1, 32, 14, 14});
  Value direct = small.op("Conv", {y, small.constant({32, 32, 3, 3})}, ints("pads", {1, 1, 1, 1}));
  Value strided = small.op("Conv", {small.input({1, 32, 58, 58}), small.constant({32, 32, 3, 3})},
                           all({ints("pads", {1, 1, 1, 1}), ints("strides", {2, 2})}));
  EXPECT_EQ(small.check({direct, strided}).winograd_convolutions, 0);
}

// Standalone binaries stay on oneDNN's jit code: a squeeze-excitation scale
// ([1,C,1,1]) of an activation whose channel count is not a multiple of 16
// (8-channel blocks, regnet), and a residual Add of a convolution's
// channels-last output and a transposed view of the same layout spelled
// another way (convnext). Both ran on the reference code before: 0.85 ms and
// 6 ms a call instead of microseconds.
TEST(DnnlLayouts, BinaryOpsAvoidTheReferenceImplementation) {
  Case se;
  Value x = se.input({1, 48, 28, 28});
  Value features = se.op("Conv", {x, se.constant({48, 8, 3, 3})}, all({ints("pads", {1, 1, 1, 1}), one_int("group", 6)}));
  Value pooled = se.op("GlobalAveragePool", {features});
  Value scale = se.op("Sigmoid", {se.op("Conv", {pooled, se.constant({48, 48, 1, 1})})});
  auto se_stats = se.check({se.op("Conv", {se.op("Mul", {features, scale}), se.constant({48, 48, 1, 1})})});
  EXPECT_EQ(se_stats.reference_primitives, 0);

  Case residual;
  Value y = residual.input({1, 96, 14, 14});
  Value depthwise = residual.op("Conv", {y, residual.constant({96, 1, 7, 7}), residual.constant({96})},
                                all({ints("pads", {3, 3, 3, 3}), one_int("group", 96)}));
  Value channels_last = residual.op("Transpose", {residual.input({1, 14, 14, 96})}, ints("perm", {0, 3, 1, 2}));
  // The convolution's value is read twice: the Add cannot be its sum post-op.
  auto residual_stats = residual.check({residual.op("Add", {channels_last, depthwise}), residual.op("Relu", {depthwise})});
  EXPECT_EQ(residual_stats.reference_primitives, 0);
}

// efficientnet's squeeze-excitation block: depthwise convolution with SiLU,
// GlobalAveragePool, 1x1 convolution with SiLU, 1x1 convolution with
// Sigmoid, the scale multiplied over the channels, a 1x1 projection. At
// AVX2 the convolutions pick 8-channel blocks, and oneDNN's jit binary
// reads the [1,C,1,1] scale of a blocked source only in that blocked
// layout: the scale, already blocked, is read as it is, where the block
// used to reorder the activation to channels-last and back (two reorders of
// the full activation). Two reorders remain at either ISA: the graph
// input's into the first convolution's layout and the output's to plain.
TEST(DnnlLayouts, SqueezeExcitationScaleKeepsTheBlockedLayout) {
  for (int64_t channels : {96, 40}) {  // 40: 8-channel blocks at AVX-512 too
    Case c;
    Value x = c.input({1, channels, 14, 14});
    auto silu = [&](Value v) { return c.op("Mul", {v, c.op("Sigmoid", {v})}); };
    Value features =
        silu(c.op("Conv", {x, c.constant({channels, 1, 3, 3}), c.constant({channels})},
                  all({ints("pads", {1, 1, 1, 1}), one_int("group", channels)})));
    Value pooled = c.op("GlobalAveragePool", {features});
    Value squeezed = silu(c.op("Conv", {pooled, c.constant({8, channels, 1, 1}), c.constant({8})}));
    Value scale = c.op("Sigmoid", {c.op("Conv", {squeezed, c.constant({channels, 8, 1, 1}), c.constant({channels})})});
    Value projected = c.op("Conv", {c.op("Mul", {features, scale}), c.constant({24, channels, 1, 1})});
    auto stats = c.check({projected});
    EXPECT_EQ(stats.reference_primitives, 0) << channels << " channels";
    EXPECT_LE(stats.activation_reorders, 2) << channels << " channels";
  }
}

// A ConvGRU's gates (RAFT's update block): sigmoid(conv(x)) * h and
// tanh(conv(x)) + h, with h an activation of the convolution's output shape.
// oneDNN 2.6 has no jit convolution with such a binary post-op and ran its
// reference code, 100x slower (140 ms a convolution of RAFT). The chain is cut
// before the binary, which runs as its own jit primitive; the convolution
// keeps its eltwise. Results match the reference kernels.
TEST(DnnlConv, FullShapeBinaryPostOpsKeepJitConvolutions) {
  Case c;
  Value x = c.input({1, 40, 12, 12});
  Value h = c.input({1, 24, 12, 12});
  Value gate = c.op("Sigmoid", {c.op("Conv", {x, c.constant({24, 40, 3, 3}), c.constant({24})}, ints("pads", {1, 1, 1, 1}))});
  Value candidate = c.op("Tanh", {c.op("Conv", {x, c.constant({24, 40, 3, 3})}, ints("pads", {1, 1, 1, 1}))});
  auto stats = c.check({c.op("Mul", {gate, h}), c.op("Relu", {c.op("Add", {candidate, h})})});
  EXPECT_EQ(stats.reference_primitives, 0);
}

// LSTM on oneDNN's vanilla LSTM: forward with biases and initial states,
// reverse with neither; all three outputs against the reference kernels.
TEST(DnnlOps, Lstm) {
  for (bool reverse : {false, true}) {
    Case c;
    const int64_t steps = 5, batch = 3, input_size = 6, hidden = 4;
    std::vector<Value> in = {c.input({steps, batch, input_size}), c.constant({1, 4 * hidden, input_size}),
                             c.constant({1, 4 * hidden, hidden})};
    if (!reverse) {
      in.push_back(c.constant({1, 8 * hidden}));
      in.push_back(Value{});  // sequence_lens
      in.push_back(c.input({1, batch, hidden}));
      in.push_back(c.constant({1, batch, hidden}));
    }
    ir::Node* lstm = c.graph->add_node("LSTM", in, 3, "lstm");
    lstm->attributes.set("hidden_size", hidden);
    if (reverse) lstm->attributes.set("direction", std::string("reverse"));
    c.check({lstm->output(0), lstm->output(1), lstm->output(2)});
  }
}

// GRU on oneDNN's GRU (linear_before_reset 0) and linear-before-reset GRU
// (1, what PyTorch exports), forward and reverse, with and without biases and
// an initial state.
TEST(DnnlOps, Gru) {
  for (int64_t linear_before_reset : {0, 1})
    for (bool reverse : {false, true}) {
      Case c;
      const int64_t steps = 4, batch = 2, input_size = 5, hidden = 16;
      std::vector<Value> in = {c.input({steps, batch, input_size}), c.constant({1, 3 * hidden, input_size}),
                               c.constant({1, 3 * hidden, hidden})};
      if (!reverse) {
        in.push_back(c.constant({1, 6 * hidden}));
        in.push_back(Value{});  // sequence_lens
        in.push_back(c.input({1, batch, hidden}));
      }
      ir::Node* gru = c.graph->add_node("GRU", in, 2, "gru");
      gru->attributes.set("hidden_size", hidden);
      gru->attributes.set("linear_before_reset", linear_before_reset);
      if (reverse) gru->attributes.set("direction", std::string("reverse"));
      c.check({gru->output(0), gru->output(1)});
    }
}

// An LSTM that oneDNN's vanilla LSTM cannot run is left to other backends,
// with the reason.
TEST(DnnlOps, LstmItDeclines) {
  Case c;
  ir::Node* lstm = c.graph->add_node(
      "LSTM", {c.input({5, 3, 6}), c.constant({1, 16, 6}), c.constant({1, 16, 4})}, 3, "lstm");
  lstm->attributes.set("hidden_size", int64_t{4});
  lstm->attributes.set("clip", 1.5f);
  ops::infer_types(*c.graph);
  EXPECT_FALSE(dnnl_backend::dnnl_supports(*lstm).supported);
}

// Window attention (swin): the scores of [windows, heads, 49, 49] get a
// constant position bias [heads, 49, 49], broadcast over the windows, and a
// constant mask [1, windows, 1, 49, 49] broadcast over the heads. oneDNN's
// brgemm matmul and jit binary have no code for those broadcasts and used
// their reference code (100 ms for one product of swin_t); the constants are
// broadcast once when weights are converted.
TEST(DnnlLayouts, ConstantsBroadcastOverBatchOrHeadsStayOffTheReferenceCode) {
  Case c;
  const int64_t windows = 4, heads = 3, tokens = 7, dim = 8;
  Value q = c.input({windows, heads, tokens, dim});
  Value k = c.input({windows, heads, dim, tokens});
  Value scores = c.op("Add", {c.op("MatMul", {q, k}), c.constant({heads, tokens, tokens})});
  Value split = c.op("Reshape", {scores, c.graph->add_constant("shape5", Tensor::from_vector<int64_t>(
                                                                           {1, windows, heads, tokens, tokens}, {5}))
                                             ->output(0)});
  Value masked = c.op("Add", {split, c.constant({1, windows, 1, tokens, tokens})});
  auto stats = c.check({c.op("Softmax", {masked}, one_int("axis", -1))});
  EXPECT_EQ(stats.reference_primitives, 0);
}

// Resize on oneDNN's resampling, against the reference kernel: bilinear as
// PyTorch exports it (pytorch_half_pixel) by 2x and 8x, by sizes and by
// scales, half_pixel down by 2, nearest (asymmetric + floor) by 2x and 3x; after a
// convolution, so the input is in a blocked layout. Modes oneDNN computes
// differently are declined.
TEST(DnnlOps, Resize) {
  struct Resize {
    std::string mode, coordinates;
    Shape in;
    std::vector<int64_t> out;
    bool by_scales;
  };
  for (const Resize& r : {Resize{"linear", "pytorch_half_pixel", {1, 16, 7, 7}, {14, 14}, true},
                          Resize{"linear", "pytorch_half_pixel", {1, 16, 7, 5}, {56, 40}, false},
                          Resize{"linear", "half_pixel", {1, 16, 8, 8}, {4, 4}, false},
                          Resize{"nearest", "asymmetric", {1, 16, 5, 6}, {10, 18}, true}}) {
    Case c;
    Value x = c.input(r.in);
    Value conv = c.op("Conv", {x, c.constant({16, 16, 1, 1})});
    Value empty_roi = c.graph->add_constant("roi", Tensor(DType::float32, {0}))->output(0);
    std::vector<Value> inputs = {conv, empty_roi};
    if (r.by_scales) {
      inputs.push_back(c.graph->add_constant("scales", Tensor::from_vector<float>(
                                                           {1, 1, static_cast<float>(r.out[0]) / r.in[2],
                                                            static_cast<float>(r.out[1]) / r.in[3]},
                                                           {4}))->output(0));
    } else {
      inputs.push_back(c.graph->add_constant("no_scales", Tensor(DType::float32, {0}))->output(0));
      inputs.push_back(c.graph->add_constant("sizes", Tensor::from_vector<int64_t>(
                                                          {r.in[0], r.in[1], r.out[0], r.out[1]}, {4}))->output(0));
    }
    Value y = c.op("Resize", inputs, all({one_string("mode", r.mode), one_string("coordinate_transformation_mode", r.coordinates),
                                          one_string("nearest_mode", "floor")}));
    auto stats = c.check({y});
    EXPECT_EQ(stats.reference_primitives, 0) << r.mode << " " << r.coordinates;
  }
  Case declined;
  Value x = declined.input({1, 4, 5, 5});
  Value roi = declined.graph->add_constant("roi", Tensor(DType::float32, {0}))->output(0);
  Value scales = declined.graph->add_constant("scales", Tensor::from_vector<float>({1, 1, 2, 2}, {4}))->output(0);
  Value y = declined.op("Resize", {x, roi, scales}, one_string("mode", "nearest"));  // round_prefer_floor, half_pixel
  ops::infer_types(*declined.graph);
  EXPECT_FALSE(dnnl_backend::dnnl_supports(*y.node).supported);
}

// Steps whose estimated single-thread time is a few microseconds run without
// a parallel region; large convolutions use every thread. Results match the
// reference either way.
TEST(DnnlThreads, SmallStepsRunOnOneThreadLargeOnesOnAll) {
  Case c;
  Value x = c.input({1, 64, 56, 56});
  Value big = c.op("Conv", {x, c.constant({64, 64, 3, 3})}, ints("pads", {1, 1, 1, 1}));
  Value pooled = c.op("GlobalAveragePool", {big});
  Value small = c.op("Conv", {pooled, c.constant({8, 64, 1, 1})});
  auto stats = c.check({c.op("Sigmoid", {small}), big});
  EXPECT_GE(stats.serial_primitives, 1);
  EXPECT_LT(stats.serial_primitives, stats.primitives);
}

// When idle OpenMP threads sleep (OMP_WAIT_POLICY=PASSIVE), each parallel
// region costs a wake-up: mid-sized steps (a 3x3 convolution on a 14x14 map,
// about 120 us estimated) run on one thread too; while they spin, only the
// small reorders do.
TEST(DnnlThreads, PassiveWaitingSerializesMidSizedSteps) {
  auto stats_with = [](const char* policy) {
    ScopedEnv env("OMP_WAIT_POLICY", policy);
    Case c;
    Value x = c.input({1, 32, 14, 14});
    return c.check({c.op("Conv", {x, c.constant({32, 32, 3, 3})}, ints("pads", {1, 1, 1, 1}))});
  };
  auto spinning = stats_with("ACTIVE");
  auto passive = stats_with("passive");
  EXPECT_LT(spinning.serial_primitives, spinning.primitives);  // the convolution uses every thread
  EXPECT_EQ(passive.serial_primitives, passive.primitives);
}

// oneDNN 2.6's jit post-ops give every eltwise post-op of one algorithm the
// parameters of the first: conv -> x * 3 -> relu -> x * 0.5 came out as
// x * 3 twice. Such a chain ends before the second one (a primitive of its
// own); chains of different algorithms, or repeated parameters, stay whole.
TEST(DnnlConv, EltwisePostOpsOfOneAlgorithmKeepTheirOwnParameters) {
  for (int variant = 0; variant < 5; ++variant) {
    Case c;
    Value x = c.input({1, 8, 6, 6});
    Value v = c.op("Relu", {c.op("Conv", {x, c.constant({8, 8, 3, 3})}, ints("pads", {1, 1, 1, 1}))});
    auto k = [&](float f) {
      return c.graph->add_constant("k" + std::to_string(c.seed++), Tensor::scalar<float>(f))->output(0);
    };
    if (variant == 0) v = c.op("Mul", {c.op("Relu", {c.op("Mul", {v, k(3.0f)})}), k(0.5f)});
    if (variant == 1) v = c.op("Mul", {c.op("Round", {c.op("Div", {v, k(0.02f)})}), k(0.02f)});
    if (variant == 2) v = c.op("Clip", {c.op("Sqrt", {c.op("Clip", {v, k(0.0f), k(4.0f)})}), k(0.5f), k(1.5f)});
    if (variant == 3) v = c.op("HardSigmoid", {c.op("Add", {v, k(1.0f)})});
    if (variant == 4) v = c.op("Mul", {c.op("Round", {c.op("Mul", {v, k(0.5f)})}), k(0.5f)});
    c.check({v});
  }
}
}  // namespace
}  // namespace graft::testing

// Finite differences (float64, central, h = 1e-6; |autodiff - numeric| <=
// 1e-6 + 1e-5 |numeric|) on the gradient builders of linear algebra, shape
// and data movement ops, reductions, softmax and the losses.
#include "gradient_check.h"

namespace graft::testing::autodiff_check {
namespace {

using ir::OpId;
using ir::Value;

TEST(LinearAlgebraGradient, MatMulBatchedBroadcastAndVectors) {
  for (const auto& shapes : std::vector<std::pair<Shape, Shape>>{{{3, 4}, {4, 2}},
                                                                 {{2, 3, 4}, {4, 5}},
                                                                 {{2, 3, 2, 4}, {4, 5}},
                                                                 {{2, 1, 3, 4}, {3, 4, 2}},
                                                                 {{4}, {4, 5}},
                                                                 {{3, 4}, {4}},
                                                                 {{4}, {4}},
                                                                 {{4}, {2, 4, 3}}}) {
    check_gradients("MatMul " + shape_to_string(shapes.first) + " x " + shape_to_string(shapes.second),
                    {{shapes.first}, {shapes.second}},
                    [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                      return {node(g, OpId::MatMul, {x[0], x[1]})};
                    });
  }
}

// A matrix applied to every matrix of a batch (a linear layer on [batch,
// seq, features]) gets its gradient as one product over all rows, not as a
// batched product summed over the batch.
TEST(LinearAlgebraGradient, AMatrixSharedByABatchGetsOneProduct) {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  Value x = g->add_input("x", ir::ValueType::of(DType::float32, {2, 3, 4}))->output(0);
  Value w = g->add_constant("w", random_tensor({4, 5}, 1))->output(0);
  Value y = node(*g, OpId::MatMul, {x, w});
  g->add_output(node(*g, OpId::ReduceSum, {y}, {{"keepdims", int64_t{0}}}), "loss");
  auto grad = autodiff::gradient(*g, "loss", {"w"});
  size_t gemms = 0, batched_products = 0;
  for (const auto& n : grad->nodes()) {
    if (!n->is_backward) continue;
    gemms += n->op() == OpId::Gemm;
    batched_products += n->op() == OpId::MatMul;
  }
  EXPECT_EQ(gemms, 1u);
  EXPECT_EQ(batched_products, 0u);
}

// nn.Linear as PyTorch exports it, x @ Transpose(W): W's gradient is one
// product dY^T x of W's own shape, not x^T dY transposed by a copy; and it
// is right (finite differences, through a Gemm and a MatMul reading W^T).
TEST(LinearAlgebraGradient, AWeightReadTransposedGetsItsGradientWithoutATranspose) {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  Value x = g->add_input("x", ir::ValueType::of(DType::float32, {2, 3, 4}))->output(0);
  Value w = g->add_constant("w", random_tensor({5, 4}, 1))->output(0);
  Value y = node(*g, OpId::MatMul, {x, node(*g, OpId::Transpose, {w}, {{"perm", std::vector<int64_t>{1, 0}}})});
  g->add_output(node(*g, OpId::ReduceSum, {y}, {{"keepdims", int64_t{0}}}), "loss");
  auto grad = autodiff::gradient(*g, "loss", {"w"});
  size_t gemms = 0, transposes = 0;
  for (const auto& n : grad->nodes()) {
    if (!n->is_backward) continue;
    gemms += n->op() == OpId::Gemm;
    transposes += n->op() == OpId::Transpose;
  }
  EXPECT_EQ(gemms, 1u);
  EXPECT_EQ(transposes, 0u);
  EXPECT_EQ(grad->type_of(grad->outputs()[1]).concrete_shape(), (Shape{5, 4}));

  for (bool batched : {false, true})
    check_gradients(std::string("x @ W^T, x ") + (batched ? "batched" : "a matrix"),
                    {{batched ? Shape{2, 3, 4} : Shape{3, 4}}, {{5, 4}}},
                    [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                      Value wt = node(g, OpId::Transpose, {x[1]}, {{"perm", std::vector<int64_t>{1, 0}}});
                      return {node(g, OpId::MatMul, {x[0], wt})};
                    });
  // A Gemm's weight gradient through a Transpose, every transposition.
  for (int64_t trans_a : {0, 1})
    for (int64_t trans_b : {0, 1})
      check_gradients("Gemm(a, W^T) transA=" + std::to_string(trans_a) + " transB=" + std::to_string(trans_b),
                      {{trans_a ? Shape{4, 3} : Shape{3, 4}}, {trans_b ? Shape{4, 5} : Shape{5, 4}}},
                      [&](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                        Value wt = node(g, OpId::Transpose, {x[1]}, {{"perm", std::vector<int64_t>{1, 0}}});
                        return {node(g, OpId::Gemm, {x[0], wt},
                                     {{"transA", trans_a}, {"transB", trans_b}, {"alpha", 0.5f}})};
                      });
}

// Slices that cut a value into pieces along one axis (a fused QKV
// projection split in three): the value's gradient is the Concat of the
// pieces' gradients, not a Sum of zero-padded copies; slices that overlap
// or leave a gap keep the Sum of Pads. Both are right (finite differences).
TEST(LinearAlgebraGradient, SlicesThatTileAnAxisGetTheirGradientsConcatenated) {
  struct Case {
    std::string name;
    std::vector<std::pair<int64_t, int64_t>> ranges;  // [start, end) along axis 1 of a [2, 6, 3] value
    bool tiles;
  };
  for (const Case& c : std::vector<Case>{{"three pieces", {{2, 4}, {0, 2}, {4, 6}}, true},
                                         {"overlapping", {{0, 4}, {2, 6}}, false},
                                         {"a gap", {{0, 2}, {3, 6}}, false}}) {
    auto build = [&](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
      std::vector<Value> outputs;
      for (const auto& [start, end] : c.ranges) {
        Value piece = node(g, OpId::Slice, {x[0], ints(g, {start}), ints(g, {end}), ints(g, {1})});
        outputs.push_back(node(g, OpId::Tanh, {piece}));
      }
      return outputs;
    };
    check_gradients("Slices, " + c.name, {{{2, 6, 3}}}, build);
    std::unique_ptr<ir::Graph> forward = make_forward({{{2, 6, 3}}}, build, 1);
    auto grad = autodiff::gradient(*forward, "loss", {"x0"});
    size_t concats = 0, pads = 0, sums = 0;
    for (const auto& n : grad->nodes()) {
      if (!n->is_backward) continue;
      concats += n->op() == OpId::Concat;
      pads += n->op() == OpId::Pad;
      sums += n->op() == OpId::Sum;
    }
    EXPECT_EQ(concats, c.tiles ? 1u : 0u) << c.name;
    EXPECT_EQ(pads, c.tiles ? 0u : c.ranges.size()) << c.name;
    EXPECT_EQ(sums, c.tiles ? 0u : 1u) << c.name;
  }
}

TEST(LinearAlgebraGradient, GemmEveryTranspositionWithBroadcastC) {
  for (int64_t trans_a : {0, 1})
    for (int64_t trans_b : {0, 1}) {
      const Shape a = trans_a ? Shape{4, 3} : Shape{3, 4};
      const Shape b = trans_b ? Shape{5, 4} : Shape{4, 5};
      check_gradients("Gemm transA=" + std::to_string(trans_a) + " transB=" + std::to_string(trans_b),
                      {{a}, {b}, {{5}}}, [&](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                        return {node(g, OpId::Gemm, {x[0], x[1], x[2]},
                                     {{"transA", trans_a}, {"transB", trans_b}, {"alpha", 0.5f}, {"beta", 2.0f}})};
                      });
    }
}

TEST(ShapeGradient, ReshapeFlattenSqueezeUnsqueezeTranspose) {
  check_gradients("Reshape", {{{2, 3, 4}}}, [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
    return {node(g, OpId::Tanh, {node(g, OpId::Reshape, {x[0], ints(g, {4, -1})})})};
  });
  check_gradients("Flatten", {{{2, 3, 4}}}, [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
    return {node(g, OpId::Flatten, {x[0]}, {{"axis", int64_t{2}}})};
  });
  check_gradients("Squeeze+Unsqueeze", {{{2, 1, 3}}},
                  [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                    Value s = node(g, OpId::Squeeze, {x[0], ints(g, {1})});
                    return {node(g, OpId::Unsqueeze, {node(g, OpId::Exp, {s}), ints(g, {0, 3})})};
                  });
  check_gradients("Transpose", {{{2, 3, 4}}}, [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
    return {node(g, OpId::Transpose, {x[0]}, {{"perm", std::vector<int64_t>{2, 0, 1}}}),
            node(g, OpId::Transpose, {x[0]})};
  });
}

TEST(ShapeGradient, ConcatSplitSlicePadExpand) {
  check_gradients("Concat", {{{2, 3}}, {{2, 1}}, {{2, 2}}},
                  [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                    return {node(g, OpId::Concat, {x[0], x[1], x[2]}, {{"axis", int64_t{-1}}})};
                  });
  check_gradients("Split, one output unused", {{{2, 6}}},
                  [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                    ir::Node* split = g.add_node(OpId::Split, {x[0], ints(g, {1, 2, 3})}, 3);
                    split->attributes.set("axis", int64_t{1});
                    return {split->output(0), node(g, OpId::Sin, {split->output(2)})};
                  });
  check_gradients("Slice", {{{4, 5}}}, [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
    return {node(g, OpId::Slice, {x[0], ints(g, {1, -4}), ints(g, {3, 100}), ints(g, {0, 1})})};
  });
  check_gradients("Slice with steps 2, -1 and -3", {{{7, 5, 8}}},
                  [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                    return {node(g, OpId::Slice,
                                 {x[0], ints(g, {1, -1, 6}), ints(g, {100, -100, 0}), ints(g, {0, 1, 2}),
                                  ints(g, {2, -1, -3})})};
                  });
  check_gradients("Slice with a step past the end and an empty range", {{{5, 4}}},
                  [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                    return {node(g, OpId::Slice, {x[0], ints(g, {3, 2}), ints(g, {4, 2}), ints(g, {0, 1}),
                                                  ints(g, {5, 1})})};
                  });
  check_gradients("Pad", {{{2, 3}}}, [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
    return {node(g, OpId::Pad, {x[0], ints(g, {0, 2, 1, 0}), doubles(g, {0.5}, {})})};
  });
  check_gradients("Expand", {{{3, 1}}}, [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
    return {node(g, OpId::Expand, {x[0], ints(g, {2, 3, 4})})};
  });
}

TEST(ShapeGradient, GatherOfAnEmbeddingWithRepeatedIndices) {
  check_gradients("Gather axis 0", {{{5, 3}}}, [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
    return {node(g, OpId::Gather, {x[0], ints(g, {1, 3, 1, -1, 0, 1}, {2, 3})})};
  });
  check_gradients("Gather axis 1", {{{2, 4, 3}}}, [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
    return {node(g, OpId::Gather, {x[0], ints(g, {2, 2, 0})}, {{"axis", int64_t{1}}})};
  });
}

TEST(ReductionGradient, EveryReduceWithAndWithoutKeepdims) {
  for (OpId op : {OpId::ReduceSum, OpId::ReduceMean, OpId::ReduceMax, OpId::ReduceMin, OpId::ReduceSumSquare,
                  OpId::ReduceL2, OpId::ReduceLogSumExp, OpId::ReduceL1, OpId::ReduceProd})
    for (int64_t keepdims : {0, 1}) {
      check_gradients(std::string(ir::op_name(op)) + " keepdims=" + std::to_string(keepdims), {{{2, 3, 4}}},
                      [&](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                        return {node(g, op, {x[0], ints(g, {0, -1})}, {{"keepdims", keepdims}}),
                                node(g, op, {x[0]}, {{"keepdims", keepdims}})};
                      });
    }
}

TEST(ReductionGradient, ReduceLogSumOfPositiveValues) {
  check_gradients("ReduceLogSum", {{{2, 3, 4}, Domain::positive}},
                  [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                    return {node(g, OpId::ReduceLogSum, {x[0], ints(g, {1})}, {{"keepdims", int64_t{0}}})};
                  });
}

TEST(ShapeGradient, TileGatherElementsGatherND) {
  check_gradients("Tile", {{{2, 3}}}, [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
    return {node(g, OpId::Tile, {x[0], ints(g, {3, 2})})};
  });
  check_gradients("GatherElements", {{{3, 4}}}, [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
    return {node(g, OpId::GatherElements, {x[0], ints(g, {0, 3, 3, 1, 2, 2, 0, 0}, {2, 4})}, {{"axis", int64_t{1}}})};
  });
  check_gradients("GatherND", {{{3, 4, 2}}}, [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
    return {node(g, OpId::GatherND, {x[0], ints(g, {0, 1, 2, 3, 0, 1}, {3, 2})})};
  });
}

TEST(ShapeGradient, CumSumTriluDepthToSpaceSpaceToDepth) {
  for (int64_t exclusive : {0, 1})
    for (int64_t reverse : {0, 1}) {
      check_gradients(
          "CumSum exclusive=" + std::to_string(exclusive) + " reverse=" + std::to_string(reverse), {{{3, 4}}},
          [&](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
            return {node(g, OpId::CumSum, {x[0], ints(g, {1}, {1})}, {{"exclusive", exclusive}, {"reverse", reverse}})};
          });
    }
  check_gradients("Trilu", {{{3, 4}}}, [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
    return {node(g, OpId::Trilu, {x[0], ints(g, {1}, {1})}, {{"upper", int64_t{0}}})};
  });
  for (std::string mode : {"DCR", "CRD"}) {
    check_gradients("DepthToSpace " + mode, {{{1, 8, 2, 3}}},
                    [&](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                      return {node(g, OpId::DepthToSpace, {x[0]}, {{"blocksize", int64_t{2}}, {"mode", mode}})};
                    });
  }
  check_gradients("SpaceToDepth", {{{1, 2, 4, 6}}},
                  [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                    return {node(g, OpId::SpaceToDepth, {x[0]}, {{"blocksize", int64_t{2}}})};
                  });
}

TEST(SoftmaxGradient, SoftmaxAndLogSoftmaxAlongAnyAxis) {
  for (OpId op : {OpId::Softmax, OpId::LogSoftmax})
    for (int64_t axis : {1, -1}) {
      check_gradients(std::string(ir::op_name(op)) + " axis " + std::to_string(axis), {{{2, 3, 4}}},
                      [&](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                        return {node(g, op, {x[0]}, {{"axis", axis}})};
                      });
    }
}

TEST(SoftmaxGradient, Opset11CoercesTo2D) {
  for (OpId op : {OpId::Softmax, OpId::LogSoftmax}) {
    auto build = [&](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
      ir::Node* n = g.add_node(op, {x[0]});
      n->opset_version = 11;  // normalizes each row of dims[1:] as one vector
      n->attributes.set("axis", int64_t{1});
      return {n->output(0)};
    };
    check_gradients(std::string(ir::op_name(op)) + " opset 11", {{{2, 3, 2}}}, build);
  }
}

TEST(SoftmaxGradient, LpNormalization) {
  for (int64_t p : {1, 2}) {
    check_gradients("LpNormalization p=" + std::to_string(p), {{{3, 4}}},
                    [&](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                      return {node(g, OpId::LpNormalization, {x[0]}, {{"p", p}, {"axis", int64_t{0}}})};
                    });
  }
}

TEST(LossGradient, SoftmaxCrossEntropyEveryReductionWeightsAndIgnoreIndex) {
  for (std::string reduction : {"mean", "sum", "none"})
    for (bool weighted : {false, true}) {
      check_gradients("SoftmaxCrossEntropyLoss " + reduction + (weighted ? " weighted" : ""), {{{4, 3, 2}}},
                      [&](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                        std::vector<Value> inputs{x[0], ints(g, {0, 2, 1, 1, 2, 0, -100, 1}, {4, 2})};
                        if (weighted) inputs.push_back(doubles(g, {0.5, 2.0, 1.5}, {3}));
                        return {node(g, OpId::SoftmaxCrossEntropyLoss, inputs,
                                     {{"reduction", reduction}, {"ignore_index", int64_t{-100}}})};
                      });
    }
}

TEST(LossGradient, NegativeLogLikelihoodAfterLogSoftmax) {
  for (std::string reduction : {"mean", "sum"}) {
    check_gradients("NegativeLogLikelihoodLoss " + reduction, {{{5, 4}}},
                    [&](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                      Value log_prob = node(g, OpId::LogSoftmax, {x[0]}, {{"axis", int64_t{1}}});
                      return {node(g, OpId::NegativeLogLikelihoodLoss,
                                   {log_prob, ints(g, {3, 0, 1, 1, 2}), doubles(g, {1.0, 0.5, 2.0, 1.0}, {4})},
                                   {{"reduction", reduction}})};
                    });
  }
}

TEST(LossGradient, MeanSquaredErrorAsAGraph) {
  check_gradients("MSE", {{{3, 4}}}, [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
    Value diff = node(g, OpId::Sub, {x[0], doubles(g, std::vector<double>(12, 0.25), {3, 4})});
    return {node(g, OpId::ReduceMean, {node(g, OpId::Mul, {diff, diff})}, {{"keepdims", int64_t{0}}})};
  });
}

}  // namespace
}  // namespace graft::testing::autodiff_check

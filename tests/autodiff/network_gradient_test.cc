// Finite differences (float64, central, h = 1e-6; |autodiff - numeric| <=
// 1e-6 + 1e-5 |numeric|) on the gradient builders of convolution, pooling,
// normalization and dropout, and on small networks made of them.
#include "gradient_check.h"

namespace graft::testing::autodiff_check {
namespace {

using ir::OpId;
using ir::Value;

TEST(ConvolutionGradient, StridesPaddingDilationGroupsAndBias) {
  struct Case {
    std::string name;
    Shape x, w;
    std::vector<std::pair<std::string, ir::AttributeValue>> attributes;
  };
  const std::vector<Case> cases = {
      {"plain", {2, 2, 5, 5}, {3, 2, 3, 3}, {}},
      {"stride 2, pads",
       {1, 2, 6, 5},
       {2, 2, 3, 2},
       {{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 0, 1, 1}}}},
      {"dilation", {1, 1, 7, 7}, {2, 1, 3, 3}, {{"dilations", std::vector<int64_t>{2, 1}}}},
      {"groups", {1, 4, 4, 4}, {4, 2, 2, 2}, {{"group", int64_t{2}}, {"auto_pad", std::string("SAME_UPPER")}}},
      {"1-D", {2, 3, 7}, {2, 3, 3}, {{"strides", std::vector<int64_t>{2}}}},
  };
  for (const Case& c : cases) {
    const int64_t m = c.w[0];
    check_gradients("Conv " + c.name, {{c.x}, {c.w}, {{m}}},
                    [&](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                      return {node(g, OpId::Conv, {x[0], x[1], x[2]}, c.attributes)};
                    });
  }
}

TEST(ConvolutionGradient, ConvTransposeWithStridesPadsAndGroups) {
  check_gradients("ConvTranspose", {{{2, 4, 3, 3}}, {{4, 1, 3, 2}}, {{2}}},
                  [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                    return {node(g, OpId::ConvTranspose, {x[0], x[1], x[2]},
                                 {{"strides", std::vector<int64_t>{2, 1}},
                                  {"pads", std::vector<int64_t>{1, 0, 0, 1}},
                                  {"output_padding", std::vector<int64_t>{1, 0}},
                                  {"group", int64_t{2}}})};
                  });
}

TEST(PoolingGradient, MaxAverageAndGlobalPools) {
  check_gradients("MaxPool", {{{1, 2, 5, 5}}}, [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
    return {node(g, OpId::MaxPool, {x[0]},
                 {{"kernel_shape", std::vector<int64_t>{3, 3}},
                  {"strides", std::vector<int64_t>{2, 2}},
                  {"pads", std::vector<int64_t>{1, 1, 1, 1}}})};
  });
  for (int64_t include_pad : {0, 1}) {
    check_gradients("AveragePool count_include_pad=" + std::to_string(include_pad), {{{2, 1, 5, 4}}},
                    [&](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                      return {node(g, OpId::AveragePool, {x[0]},
                                   {{"kernel_shape", std::vector<int64_t>{2, 3}},
                                    {"pads", std::vector<int64_t>{1, 1, 0, 1}},
                                    {"count_include_pad", include_pad}})};
                    });
  }
  // Windows wider than the input (most taps in the padding), as a fuzzer's
  // kernel of 2^31 is: the gradient kernels visit only the taps inside.
  check_gradients("MaxPool wider than its input", {{{1, 2, 3, 4}}},
                  [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                    return {node(g, OpId::MaxPool, {x[0]},
                                 {{"kernel_shape", std::vector<int64_t>{9, 7}},
                                  {"strides", std::vector<int64_t>{2, 1}},
                                  {"auto_pad", std::string("SAME_UPPER")}})};
                  });
  check_gradients("AveragePool wider than its input", {{{1, 2, 3, 4}}},
                  [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                    return {node(g, OpId::AveragePool, {x[0]},
                                 {{"kernel_shape", std::vector<int64_t>{8, 9}},
                                  {"pads", std::vector<int64_t>{7, 5, 6, 8}},
                                  {"count_include_pad", int64_t{1}}})};
                  });
  check_gradients("GlobalAveragePool + GlobalMaxPool", {{{2, 3, 2, 3}}},
                  [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                    return {node(g, OpId::GlobalAveragePool, {x[0]}), node(g, OpId::GlobalMaxPool, {x[0]})};
                  });
}

// Resize is linear in X: its gradient (graft.ResizeGrad) is the transposed
// interpolation, checked here for every mode, scales and sizes, non-integer
// and downscaling factors, a resized batch axis (no independent planes),
// tf_crop_and_resize's extrapolated points, and the older forms whose
// inputs and defaults differ (Resize-10, Upsample-9).
TEST(ResizeGradient, EveryModeScalesSizesAndOpset) {
  auto floats = [](ir::Graph& g, const std::vector<float>& values) {
    static int counter = 0;
    return g
        .add_constant("resize" + std::to_string(counter++),
                      Tensor::from_vector<float>(values, {static_cast<int64_t>(values.size())}))
        ->output(0);
  };
  struct Case {
    std::string name;
    Shape x;
    std::vector<float> roi, scales;
    std::vector<int64_t> sizes;
    std::vector<std::pair<std::string, ir::AttributeValue>> attributes;
  };
  const std::vector<Case> cases = {
      {"nearest x2", {1, 2, 3, 3}, {}, {1, 1, 2, 2}, {}, {}},
      {"nearest asymmetric floor x1.5",
       {1, 1, 4, 3},
       {},
       {1, 1, 1.5f, 1.7f},
       {},
       {{"coordinate_transformation_mode", std::string("asymmetric")}, {"nearest_mode", std::string("floor")}}},
      {"linear half_pixel x1.5 x2", {1, 2, 4, 3}, {}, {1, 1, 1.5f, 2}, {}, {{"mode", std::string("linear")}}},
      {"linear align_corners to sizes",
       {1, 2, 3, 4},
       {},
       {},
       {1, 2, 7, 5},
       {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("align_corners")}}},
      {"linear pytorch_half_pixel downscale",
       {1, 1, 6, 5},
       {},
       {},
       {1, 1, 3, 2},
       {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("pytorch_half_pixel")}}},
      {"cubic exclude_outside downscale and up",
       {1, 1, 5, 4},
       {},
       {},
       {1, 1, 3, 6},
       {{"mode", std::string("cubic")}, {"exclude_outside", int64_t{1}}}},
      {"linear over the batch axis too", {2, 2, 3, 3}, {}, {2, 1, 1.5f, 1}, {}, {{"mode", std::string("linear")}}},
      {"tf_crop_and_resize with extrapolation",
       {1, 1, 4, 4},
       {0, 0, 0.2f, -0.3f, 1, 1, 0.9f, 0.8f},
       {},
       {1, 1, 5, 6},
       {{"mode", std::string("linear")},
        {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
        {"extrapolation_value", 2.5f}}},
  };
  for (const Case& c : cases)
    check_gradients("Resize " + c.name, {{c.x}}, [&](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
      std::vector<Value> inputs = {x[0], c.roi.empty() ? Value{} : floats(g, c.roi),
                                   c.scales.empty() ? Value{} : floats(g, c.scales)};
      if (!c.sizes.empty()) inputs.push_back(ints(g, c.sizes));
      return {node(g, OpId::Resize, inputs, c.attributes)};
    });
  check_gradients("Resize-10 nearest", {{{1, 2, 3, 2}}},
                  [&](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                    g.opset_imports[""] = 10;
                    return {node(g, OpId::Resize, {x[0], floats(g, {1, 1, 2, 1.5f})})};
                  });
  check_gradients(
      "Upsample-9 linear", {{{1, 1, 3, 3}}}, [&](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
        g.opset_imports[""] = 9;
        return {node(g, OpId::Upsample, {x[0], floats(g, {1, 1, 2, 2})}, {{"mode", std::string("linear")}})};
      });
}

// graft.ResizeGrad read from a file may be malformed: a gradient of another
// shape than the resize gives, or an opset no Resize has, is an error that
// names it, not a read past d_y.
TEST(ResizeGradient, MalformedGradientNodesAreErrorsNamingTheProblem) {
  auto run = [](const Shape& dy_shape, int64_t opset) {
    auto g = std::make_unique<ir::Graph>();
    g->opset_imports[""] = 17;
    Value dy = g->add_input("dy", ir::ValueType::of(DType::float32, dy_shape))->output(0);
    Value x = g->add_input("x", ir::ValueType::of(DType::float32, {1, 1, 2, 2}))->output(0);
    Value scales = g->add_constant("scales", Tensor::from_vector<float>({1, 1, 2, 2}, {4}))->output(0);
    Value dx =
        node(*g, OpId::ResizeGrad, {dy, x, Value{}, scales}, {{"opset", opset}, {"mode", std::string("linear")}});
    g->add_output(dx, "dx");
    std::vector<Tensor> inputs = {Tensor(DType::float32, dy_shape), Tensor(DType::float32, {1, 1, 2, 2})};
    reference_session(*g)->run(inputs);
  };
  EXPECT_NO_THROW(run({1, 1, 4, 4}, 17));
  try {
    run({1, 1, 3, 4}, 17);
    ADD_FAILURE() << "a gradient of the wrong shape was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not the shape [1,1,4,4]"), std::string::npos) << e.what();
  }
  try {
    run({1, 1, 4, 4}, 3);
    ADD_FAILURE() << "opset 3 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("opset 3 is not a forward Resize or Upsample opset"), std::string::npos)
        << e.what();
  }
}

TEST(NormalizationGradient, LayerNormalizationOverTheLastAxes) {
  for (int64_t axis : {-1, 1}) {
    const Shape scale = axis == -1 ? Shape{4} : Shape{3, 4};
    check_gradients(
        "LayerNormalization axis " + std::to_string(axis), {{{2, 3, 4}}, {scale}, {scale}},
        [&](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
          return {node(g, OpId::LayerNormalization, {x[0], x[1], x[2]}, {{"axis", axis}, {"epsilon", 1e-3f}})};
        });
  }
}

TEST(NormalizationGradient, BatchNormalizationInTrainingAndInferenceMode) {
  for (int64_t training : {1, 0}) {
    check_gradients(
        "BatchNormalization training_mode=" + std::to_string(training), {{{3, 2, 2, 3}}, {{2}}, {{2}}},
        [&](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
          Value mean = doubles(g, {0.1, -0.2}, {2}), var = doubles(g, {0.8, 1.3}, {2});
          ir::Node* bn = g.add_node(OpId::BatchNormalization, {x[0], x[1], x[2], mean, var}, training ? 3 : 1);
          bn->attributes.set("training_mode", training);
          bn->attributes.set("epsilon", 1e-3f);
          return {bn->output(0)};
        });
  }
}

TEST(NormalizationGradient, InstanceNormalization) {
  check_gradients("InstanceNormalization", {{{2, 3, 2, 3}}, {{3}}, {{3}}},
                  [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                    return {node(g, OpId::InstanceNormalization, {x[0], x[1], x[2]}, {{"epsilon", 1e-3f}})};
                  });
}

TEST(NormalizationGradient, DropoutInInferenceModeIsTheIdentity) {
  check_gradients("Dropout", {{{2, 3}}}, [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
    return {node(g, OpId::Dropout, {x[0]})};
  });
}

// Training mode with a ratio of 0 (PyTorch's dropout=0.0 layers exported
// for training) keeps every element: its gradient is dy itself, without
// the mask (no Cast, no Mul), and the forward's mask is then unread.
TEST(NormalizationGradient, DropoutInTrainingModeWithRatioZeroIsTheIdentity) {
  auto with_ratio_zero = [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
    Value ratio = doubles(g, {0.0}, {});
    Value training = g.add_constant("training", Tensor::from_vector<bool>({true}, {}))->output(0);
    return {node(g, OpId::Dropout, {x[0], ratio, training}, {}, 2)};
  };
  check_gradients("Dropout ratio 0 in training mode", {{{2, 3}}}, with_ratio_zero);
  std::unique_ptr<ir::Graph> forward = make_forward({{{2, 3}}}, with_ratio_zero, 1);
  auto grad = autodiff::gradient(*forward, "loss", {"x0"});
  for (const auto& n : grad->nodes()) {
    if (!n->is_backward) continue;
    EXPECT_NE(n->op(), OpId::Cast) << n->describe();
    EXPECT_EQ(n->name.find("Dropout"), std::string::npos) << n->describe();
  }
}

TEST(RecurrentGradient, LstmGruAndRnnUnrolledEveryDirection) {
  // seq 3, batch 2, input 3, hidden 2; the loss reads Y and Y_h (and Y_c).
  for (OpId op : {OpId::LSTM, OpId::GRU, OpId::RNN})
    for (std::string direction : {"forward", "reverse", "bidirectional"})
      for (int64_t linear_before_reset : {0, 1}) {
        if (op != OpId::GRU && linear_before_reset) continue;
        const int64_t dirs = direction == "bidirectional" ? 2 : 1, hidden = 2;
        const int64_t gates = op == OpId::LSTM ? 4 : op == OpId::GRU ? 3 : 1;
        std::vector<InputSpec> inputs = {{{3, 2, 3}},
                                         {{dirs, gates * hidden, 3}},
                                         {{dirs, gates * hidden, hidden}},
                                         {{dirs, 2 * gates * hidden}},
                                         {{dirs, 2, hidden}}};
        if (op == OpId::LSTM) inputs.push_back({{dirs, 2, hidden}});
        check_gradients(std::string(ir::op_name(op)) + " " + direction +
                            " linear_before_reset=" + std::to_string(linear_before_reset),
                        inputs, [&](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                          std::vector<Value> in{x[0], x[1], x[2], x[3], Value{}, x[4]};
                          if (op == OpId::LSTM) in.push_back(x[5]);
                          ir::Node* n = g.add_node(op, in, op == OpId::LSTM ? 3 : 2);
                          n->attributes.set("hidden_size", hidden);
                          n->attributes.set("direction", direction);
                          if (op == OpId::GRU) n->attributes.set("linear_before_reset", linear_before_reset);
                          if (direction != "forward") {  // the defaults spelled out, as PyTorch's exporter does
                            std::vector<std::string> activations;
                            for (int64_t d = 0; d < dirs; ++d)
                              for (const char* f : op == OpId::LSTM  ? std::vector<const char*>{"Sigmoid", "Tanh", "Tanh"}
                                                   : op == OpId::GRU ? std::vector<const char*>{"Sigmoid", "Tanh"}
                                                                     : std::vector<const char*>{"Tanh"})
                                activations.push_back(f);
                            n->attributes.set("activations", activations);
                          }
                          std::vector<Value> out{n->output(0), n->output(1)};
                          if (op == OpId::LSTM) out.push_back(n->output(2));
                          return out;
                        });
      }
}

TEST(NetworkGradient, AConvolutionalClassifier) {
  // Conv -> BatchNormalization (training) -> Relu -> MaxPool -> Flatten -> Gemm -> SoftmaxCrossEntropyLoss.
  check_gradients(
      "CNN", {{{2, 1, 6, 6}}, {{3, 1, 3, 3}}, {{3}}, {{3}}, {{3}}, {{4, 12}}, {{4}}},
      [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
        Value conv = node(g, OpId::Conv, {x[0], x[1], x[2]}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
        ir::Node* bn = g.add_node(OpId::BatchNormalization,
                                  {conv, x[3], x[4], doubles(g, {0, 0, 0}, {3}), doubles(g, {1, 1, 1}, {3})}, 3);
        bn->attributes.set("training_mode", int64_t{1});
        Value relu = node(g, OpId::Relu, {bn->output(0)});
        Value pool = node(g, OpId::MaxPool, {relu},
                          {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{3, 3}}});
        Value flat = node(g, OpId::Flatten, {pool});
        Value logits = node(g, OpId::Gemm, {flat, x[5], x[6]}, {{"transB", int64_t{1}}});
        return {node(g, OpId::SoftmaxCrossEntropyLoss, {logits, ints(g, {2, 0})})};
      });
}

TEST(NetworkGradient, ATransformerBlock) {
  // Embedding Gather, LayerNorm, attention (MatMul, Softmax with a Where mask), GELU MLP, residuals.
  check_gradients(
      "transformer", {{{6, 4}}, {{4}}, {{4}}, {{4, 4}}, {{4, 4}}, {{4, 8}}, {{8, 4}}},
      [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
        Value tokens = ints(g, {1, 4, 4, 0, 5}, {1, 5});
        Value h = node(g, OpId::Gather, {x[0], tokens});
        Value n = node(g, OpId::LayerNormalization, {h, x[1], x[2]});
        Value q = node(g, OpId::MatMul, {n, x[3]}), k = node(g, OpId::MatMul, {n, x[4]});
        Value scores =
            node(g, OpId::MatMul, {q, node(g, OpId::Transpose, {k}, {{"perm", std::vector<int64_t>{0, 2, 1}}})});
        scores = node(g, OpId::Div, {scores, doubles(g, {2.0}, {})});
        std::vector<int64_t> causal;
        for (int i = 0; i < 5; ++i)
          for (int j = 0; j < 5; ++j) causal.push_back(j <= i);
        Value mask = node(g, OpId::Cast, {ints(g, causal, {5, 5})}, {{"to", static_cast<int64_t>(DType::boolean)}});
        scores = node(g, OpId::Where, {mask, scores, doubles(g, {-1e4}, {})});
        Value attention = node(g, OpId::MatMul, {node(g, OpId::Softmax, {scores}, {{"axis", int64_t{-1}}}), n});
        Value r = node(g, OpId::Add, {h, attention});
        Value mlp = node(g, OpId::MatMul, {node(g, OpId::Gelu, {node(g, OpId::MatMul, {r, x[5]})}), x[6]});
        return {node(g, OpId::Add, {r, mlp})};
      });
}

}  // namespace
}  // namespace graft::testing::autodiff_check

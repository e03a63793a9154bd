// torchvision's MobileNetV2 (width 1.0). ReLU6 is exported as Clip with min
// and max inputs (opset >= 11); the classifier's Dropout vanishes in eval
// mode; adaptive_avg_pool2d(x, 1) + flatten exports as GlobalAveragePool +
// Flatten. Layout:
//   features.0: Conv 3x3/2 (3->32) + BN + ReLU6
//   features.1..17: inverted residual blocks (expand 1x1, depthwise 3x3,
//                   project 1x1; Add when stride 1 and channels equal)
//   features.18: Conv 1x1 (320->1280) + BN + ReLU6
//   classifier.1: Linear(1280, 1000)
#include "model_builder.h"

namespace graft::zoo::detail {

namespace {

std::string conv_bn_relu6(ModelBuilder& b, const std::string& prefix, const std::string& x, int64_t in_channels,
                          int64_t out_channels, int64_t kernel, int64_t stride, int64_t groups) {
  std::string y = b.conv(prefix + ".0", x, in_channels, out_channels, kernel, stride, (kernel - 1) / 2, groups);
  y = b.batch_norm(prefix + ".1", y, out_channels);
  return b.op(scope_of(prefix + ".2"), "Clip", {y, b.scalar(0.0f), b.scalar(6.0f)});
}

}  // namespace

std::string build_mobilenet_v2(uint64_t seed) {
  ModelBuilder b("mobilenet_v2", seed);
  b.add_input("input", onnx::TensorProto::FLOAT, {"batch", 3, 224, 224});

  struct Stage {
    int64_t expand_ratio, channels, repeats, stride;
  };
  const Stage stages[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                          {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};

  std::string x = conv_bn_relu6(b, "features.0", "input", 3, 32, 3, 2, 1);
  int64_t in_channels = 32;
  int feature = 1;
  for (const Stage& stage : stages) {
    for (int64_t i = 0; i < stage.repeats; ++i, ++feature) {
      std::string prefix = "features." + std::to_string(feature) + ".conv";
      int64_t stride = i == 0 ? stage.stride : 1;
      int64_t hidden = in_channels * stage.expand_ratio;
      std::string y = x;
      int layer = 0;
      if (stage.expand_ratio != 1)
        y = conv_bn_relu6(b, prefix + "." + std::to_string(layer++), y, in_channels, hidden, 1, 1, 1);
      y = conv_bn_relu6(b, prefix + "." + std::to_string(layer++), y, hidden, hidden, 3, stride, hidden);
      y = b.conv(prefix + "." + std::to_string(layer++), y, hidden, stage.channels, 1, 1, 0);
      bool residual = stride == 1 && in_channels == stage.channels;
      y = b.batch_norm(prefix + "." + std::to_string(layer++), y, stage.channels, residual ? 0.5 : 1.0);
      if (residual) y = b.op(scope_of("features." + std::to_string(feature)), "Add", {x, y});
      x = y;
      in_channels = stage.channels;
    }
  }
  x = conv_bn_relu6(b, "features.18", x, in_channels, 1280, 1, 1, 1);
  x = b.op("", "GlobalAveragePool", {x});
  x = b.op("", "Flatten", {x}, {attr_int("axis", 1)});
  x = b.linear_gemm("classifier.1", x, 1280, 1000);
  b.mark_output(x, "output", onnx::TensorProto::FLOAT, {"batch", 1000});
  return b.serialize();
}

}  // namespace graft::zoo::detail

// torchvision's ResNet-18 and ResNet-50 (v1.5: the stride sits on the 3x3
// convolution of a bottleneck), exported in eval mode without folding the
// BatchNormalization nodes into the convolutions (as models exported with
// do_constant_folding=False or training=TrainingMode.PRESERVE look, and as the
// ONNX model zoo's resnet*-v1 files look). Layout:
//   conv1 7x7/2 -> bn1 -> relu -> maxpool 3x3/2 -> layer1..layer4
//   -> GlobalAveragePool -> Flatten -> fc (Gemm, 1000 classes).
// The last BatchNormalization of each residual branch gets a smaller scale so
// the sum of branch and shortcut keeps activations of order one.
#include "model_builder.h"

namespace graft::zoo::detail {

namespace {

struct ResNetBuilder {
  ModelBuilder& b;
  bool bottleneck;
  int64_t in_planes = 64;

  std::string downsample(const std::string& prefix, const std::string& x, int64_t out_channels, int64_t stride) {
    std::string y = b.conv(prefix + ".downsample.0", x, in_planes, out_channels, 1, stride, 0);
    return b.batch_norm(prefix + ".downsample.1", y, out_channels, 0.5);
  }

  std::string basic_block(const std::string& prefix, const std::string& x, int64_t planes, int64_t stride) {
    std::string y = b.conv(prefix + ".conv1", x, in_planes, planes, 3, stride, 1);
    y = b.batch_norm(prefix + ".bn1", y, planes);
    y = b.relu(scope_of(prefix + ".relu"), y);
    y = b.conv(prefix + ".conv2", y, planes, planes, 3, 1, 1);
    y = b.batch_norm(prefix + ".bn2", y, planes, 0.5);
    std::string shortcut = x;
    if (stride != 1 || in_planes != planes) shortcut = downsample(prefix, x, planes, stride);
    in_planes = planes;
    std::string sum = b.op(scope_of(prefix), "Add", {y, shortcut});
    return b.op(scope_of(prefix + ".relu"), "Relu", {sum});
  }

  std::string bottleneck_block(const std::string& prefix, const std::string& x, int64_t planes, int64_t stride) {
    const int64_t expansion = 4;
    std::string y = b.conv(prefix + ".conv1", x, in_planes, planes, 1, 1, 0);
    y = b.batch_norm(prefix + ".bn1", y, planes);
    y = b.relu(scope_of(prefix + ".relu"), y);
    y = b.conv(prefix + ".conv2", y, planes, planes, 3, stride, 1);
    y = b.batch_norm(prefix + ".bn2", y, planes);
    y = b.relu(scope_of(prefix + ".relu"), y);
    y = b.conv(prefix + ".conv3", y, planes, planes * expansion, 1, 1, 0);
    y = b.batch_norm(prefix + ".bn3", y, planes * expansion, 0.5);
    std::string shortcut = x;
    if (stride != 1 || in_planes != planes * expansion) shortcut = downsample(prefix, x, planes * expansion, stride);
    in_planes = planes * expansion;
    std::string sum = b.op(scope_of(prefix), "Add", {y, shortcut});
    return b.op(scope_of(prefix + ".relu"), "Relu", {sum});
  }
};

}  // namespace

std::string build_resnet(int depth, uint64_t seed) {
  ModelBuilder b("resnet" + std::to_string(depth), seed);
  b.add_input("input", onnx::TensorProto::FLOAT, {"batch", 3, 224, 224});
  ResNetBuilder net{b, depth >= 50};
  const int blocks18[] = {2, 2, 2, 2}, blocks50[] = {3, 4, 6, 3};
  const int* blocks = net.bottleneck ? blocks50 : blocks18;

  std::string x = b.conv("conv1", "input", 3, 64, 7, 2, 3);
  x = b.batch_norm("bn1", x, 64);
  x = b.relu(scope_of("relu"), x);
  x = b.op(scope_of("maxpool"), "MaxPool", {x},
           {attr_int("ceil_mode", 0), attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1}),
            attr_ints("strides", {2, 2})});
  const int64_t planes[] = {64, 128, 256, 512};
  for (int layer = 0; layer < 4; ++layer) {
    for (int block = 0; block < blocks[layer]; ++block) {
      std::string prefix = "layer" + std::to_string(layer + 1) + "." + std::to_string(block);
      int64_t stride = (layer > 0 && block == 0) ? 2 : 1;
      x = net.bottleneck ? net.bottleneck_block(prefix, x, planes[layer], stride)
                         : net.basic_block(prefix, x, planes[layer], stride);
    }
  }
  x = b.op(scope_of("avgpool"), "GlobalAveragePool", {x});
  x = b.op("", "Flatten", {x}, {attr_int("axis", 1)});
  x = b.linear_gemm("fc", x, net.in_planes, 1000);
  b.mark_output(x, "output", onnx::TensorProto::FLOAT, {"batch", 1000});
  return b.serialize();
}

}  // namespace graft::zoo::detail

// torchvision's SqueezeNet 1.1: convolutions with bias, no BatchNormalization,
// MaxPool with ceil_mode=1, Fire modules (squeeze 1x1 -> expand 1x1 and 3x3
// -> Concat on channels), a 1x1 convolution classifier and a global average
// pool. Layout (features.N / classifier.N as in torchvision):
//   Conv 3x3/2 (3->64), ReLU, MaxPool, Fire(64,16,64,64), Fire(128,16,64,64),
//   MaxPool, Fire(128,32,128,128), Fire(256,32,128,128), MaxPool,
//   Fire(256,48,192,192), Fire(384,48,192,192), Fire(384,64,256,256),
//   Fire(512,64,256,256); classifier: Conv 1x1 (512->1000), ReLU,
//   GlobalAveragePool, Flatten.
#include "model_builder.h"

namespace graft::zoo::detail {

namespace {

std::string fire(ModelBuilder& b, const std::string& prefix, const std::string& x, int64_t in_channels, int64_t squeeze,
                 int64_t expand1x1, int64_t expand3x3) {
  std::string s = b.conv(prefix + ".squeeze", x, in_channels, squeeze, 1, 1, 0, 1, true);
  s = b.relu(scope_of(prefix + ".squeeze_activation"), s);
  std::string e1 = b.conv(prefix + ".expand1x1", s, squeeze, expand1x1, 1, 1, 0, 1, true);
  e1 = b.relu(scope_of(prefix + ".expand1x1_activation"), e1);
  std::string e3 = b.conv(prefix + ".expand3x3", s, squeeze, expand3x3, 3, 1, 1, 1, true);
  e3 = b.relu(scope_of(prefix + ".expand3x3_activation"), e3);
  return b.op(scope_of(prefix), "Concat", {e1, e3}, {attr_int("axis", 1)});
}

std::string max_pool(ModelBuilder& b, const std::string& prefix, const std::string& x) {
  return b.op(scope_of(prefix), "MaxPool", {x},
              {attr_int("ceil_mode", 1), attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {0, 0, 0, 0}),
               attr_ints("strides", {2, 2})});
}

}  // namespace

std::string build_squeezenet(uint64_t seed) {
  ModelBuilder b("squeezenet1_1", seed);
  b.add_input("input", onnx::TensorProto::FLOAT, {"batch", 3, 224, 224});
  std::string x = b.conv("features.0", "input", 3, 64, 3, 2, 0, 1, true);
  x = b.relu(scope_of("features.1"), x);
  x = max_pool(b, "features.2", x);
  x = fire(b, "features.3", x, 64, 16, 64, 64);
  x = fire(b, "features.4", x, 128, 16, 64, 64);
  x = max_pool(b, "features.5", x);
  x = fire(b, "features.6", x, 128, 32, 128, 128);
  x = fire(b, "features.7", x, 256, 32, 128, 128);
  x = max_pool(b, "features.8", x);
  x = fire(b, "features.9", x, 256, 48, 192, 192);
  x = fire(b, "features.10", x, 384, 48, 192, 192);
  x = fire(b, "features.11", x, 384, 64, 256, 256);
  x = fire(b, "features.12", x, 512, 64, 256, 256);
  x = b.conv("classifier.1", x, 512, 1000, 1, 1, 0, 1, true);
  x = b.relu(scope_of("classifier.2"), x);
  x = b.op(scope_of("classifier.3"), "GlobalAveragePool", {x});
  x = b.op("", "Flatten", {x}, {attr_int("axis", 1)});
  b.mark_output(x, "output", onnx::TensorProto::FLOAT, {"batch", 1000});
  return b.serialize();
}

}  // namespace graft::zoo::detail

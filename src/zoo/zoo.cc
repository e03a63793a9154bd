// The zoo's registry: model name -> description and builder.
#include "graft/zoo/zoo.h"

#include <algorithm>

#include "graft/core/error.h"
#include "model_builder.h"

namespace graft::zoo {

namespace {

struct ZooEntry {
  const char* name;
  const char* description;
  std::string (*build)(uint64_t seed);
};

const std::vector<ZooEntry>& entries() {
  static const std::vector<ZooEntry> list = {
      {"bert", "BERT-base encoder, 4 layers (hidden 768, 12 heads, FFN 3072); int64 input_ids[batch,128]",
       detail::build_bert},
      {"gru", "one-layer GRU (hidden 500) with a residual Add; float32 input[2,batch,500], batch 100 by default",
       detail::build_gru},
      {"gru_cell",
       "GRU cell (hidden 500) as PyTorch exports nn.GRUCell (Gemm, Split, gate arithmetic), 2 steps with a residual; "
       "float32 x[2,100,500], h[100,500]",
       detail::build_gru_cell},
      {"mlp", "3-layer perceptron (Gemm+Relu, 784-512-256-10); float32 input[batch,784]", detail::build_mlp},
      {"mobilenet_v2", "torchvision MobileNetV2 (ReLU6 as Clip); float32 input[batch,3,224,224] -> 1000 classes",
       detail::build_mobilenet_v2},
      {"resnet18", "torchvision ResNet-18; float32 input[batch,3,224,224] -> 1000 classes",
       [](uint64_t seed) { return detail::build_resnet(18, seed); }},
      {"resnet50", "torchvision ResNet-50 (v1.5); float32 input[batch,3,224,224] -> 1000 classes",
       [](uint64_t seed) { return detail::build_resnet(50, seed); }},
      {"squeezenet", "torchvision SqueezeNet 1.1; float32 input[batch,3,224,224] -> 1000 classes",
       detail::build_squeezenet},
  };
  return list;
}

const ZooEntry& find_entry(const std::string& name) {
  for (const ZooEntry& e : entries())
    if (name == e.name) return e;
  std::string known;
  for (const ZooEntry& e : entries()) known += (known.empty() ? "" : ", ") + std::string(e.name);
  fail(ErrorKind::invalid_argument, "unknown zoo model '", name, "' (known: ", known, ")");
}

}  // namespace

std::vector<std::string> zoo_model_names() {
  std::vector<std::string> names;
  for (const ZooEntry& e : entries()) names.push_back(e.name);
  std::sort(names.begin(), names.end());
  return names;
}

std::string zoo_model_description(const std::string& name) { return find_entry(name).description; }

std::string build_zoo_model(const std::string& name, uint64_t seed) { return find_entry(name).build(seed); }

}  // namespace graft::zoo

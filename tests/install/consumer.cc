// A program that embeds an installed graft: it loads the model named on its
// command line, runs it on ones and prints the first output's shape and sum.
// Built by tests/install/install_test.sh against the installed package, once
// with CMake (find_package(graft CONFIG)) and once with pkg-config.
#include <cstdio>
#include <exception>

#include "graft/frontend/load_model.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer MODEL.onnx\n");
    return 2;
  }
  try {
    graft::runtime::SessionOptions options;
    options.num_threads = 2;
    std::unique_ptr<graft::runtime::Session> session = graft::frontend::load_model(argv[1], options);
    std::vector<graft::Tensor> inputs;
    for (const graft::runtime::ValueInfo& info : session->inputs()) {
      graft::Shape shape;
      for (const graft::ir::Dim& d : info.type.dims) shape.push_back(d.is_known() ? d.value : 1);
      graft::Tensor t(info.type.dtype, shape);
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 1.0f;
      inputs.push_back(t);
    }
    std::vector<graft::Tensor> outputs = session->run(inputs);
    double sum = 0;
    for (int64_t i = 0; i < outputs[0].numel(); ++i) sum += outputs[0].value_as_double(i);
    std::printf("output %s sum %.6g\n", outputs[0].type_string().c_str(), sum);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
  return 0;
}

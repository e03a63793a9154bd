// The C API test's fixture (CTest c_api_reference): writes the zoo's MLP as
// DIR/mlp.onnx, compiled for a [2,784] input as DIR/mlp.graft, an input as
// DIR/input.bin (float32 [2,784], raw) and what the C++ API computes from it
// as DIR/output.bin (float32 [2,10], raw), for c_api_test.c to compare with.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "graft/core/error.h"
#include "graft/frontend/load_model.h"
#include "graft/zoo/zoo.h"

namespace {

void write_file(const std::filesystem::path& path, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) graft::fail(graft::ErrorKind::io, "cannot write '", path.string(), "'");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: c_api_reference DIR\n";
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    const std::string model = graft::zoo::build_zoo_model("mlp", 0);
    write_file(dir / "mlp.onnx", model.data(), model.size());

    graft::Tensor input(graft::DType::float32, {2, 784});
    float* x = input.data<float>();
    for (int64_t i = 0; i < input.numel(); ++i) x[i] = static_cast<float>(std::sin(0.05 * static_cast<double>(i)));
    write_file(dir / "input.bin", input.raw_data(), input.nbytes());

    std::unique_ptr<graft::runtime::Session> session = graft::frontend::load_model((dir / "mlp.onnx").string());
    std::vector<graft::Tensor> outputs = session->run({input});
    write_file(dir / "output.bin", outputs.at(0).raw_data(), outputs.at(0).nbytes());

    graft::runtime::ArtifactCompileOptions options;
    options.session.backends = {"fuse"};  // quick to compile, also under the sanitizers
    options.input_shapes["input"] = {2, 784};
    graft::frontend::compile_artifact((dir / "mlp.onnx").string(), (dir / "mlp.graft").string(), options);
    std::cout << "wrote mlp.onnx, mlp.graft, input.bin and output.bin (" << outputs[0].type_string() << ") in "
              << dir.string() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "c_api_reference: " << e.what() << "\n";
    return 1;
  }
}

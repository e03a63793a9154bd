// graft grad MODEL.onnx --loss NAME --wrt initializers|W1,W2 -o train.onnx:
// writes the forward+backward graph (autodiff::gradient) as ONNX, with the
// loss and one `<W>_grad` output per differentiated value. Backward nodes are
// standard ONNX ops where one expresses the gradient; the rest are graft's
// backward ops (domain "graft"), which only graft runs.
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "command.h"
#include "graft/autodiff/gradient.h"
#include "graft/core/error.h"
#include "graft/frontend/onnx_import.h"

namespace graft::cli {

namespace {

struct GradOptions {
  std::string model;
  std::string output;
  std::string loss;
  std::string wrt = "initializers";
};

int write_gradient(const GradOptions& options) {
  if (options.model.empty()) fail(ErrorKind::invalid_argument, "grad: give a model");
  if (options.output.empty()) fail(ErrorKind::invalid_argument, "grad: give the output file with -o OUT.onnx");
  if (options.loss.empty()) fail(ErrorKind::invalid_argument, "grad: give the loss with --loss NAME");
  std::unique_ptr<ir::Graph> graph = frontend::load_onnx(options.model);
  std::vector<std::string> wrt;
  if (options.wrt == "initializers") {
    wrt = autodiff::trainable_initializers(*graph, options.loss);
  } else {
    std::stringstream parts(options.wrt);
    std::string name;
    while (std::getline(parts, name, ','))
      if (!name.empty()) wrt.push_back(name);
  }
  if (wrt.empty())
    fail(ErrorKind::invalid_argument, "grad: nothing to differentiate (--wrt '", options.wrt,
         "': the loss reads no floating-point initializer)");
  std::unique_ptr<ir::Graph> result = autodiff::gradient(*graph, options.loss, wrt);
  size_t backward = 0, graft_ops = 0;
  for (const auto& n : result->nodes()) {
    backward += n->is_backward && n->op() != ir::OpId::Constant;
    graft_ops += n->is_backward && !n->schema().domain.empty();
  }
  frontend::save_onnx(*result, options.output);
  std::cout << "differentiated " << options.loss << " with respect to " << wrt.size() << " value"
            << (wrt.size() == 1 ? "" : "s") << ": " << backward << " backward nodes (" << graft_ops
            << " of domain graft); wrote " << options.output << "\n";
  return 0;
}

std::function<int()> setup_grad(CLI::App& app) {
  auto options = std::make_shared<GradOptions>();
  CLI::App* sub = app.add_subcommand("grad", "write a model's forward+backward graph (loss and gradients) as ONNX");
  sub->add_option("model", options->model, "the .onnx model");
  sub->add_option("-o,--output", options->output, "the .onnx file to write");
  sub->add_option("--loss", options->loss, "the name of the scalar loss value");
  sub->add_option("--wrt", options->wrt,
                  "'initializers' (every floating-point initializer the loss reads; the default) or comma-separated "
                  "initializer and input names");
  return [options] { return write_gradient(*options); };
}

}  // namespace

GRAFT_CLI_COMMAND(setup_grad);

}  // namespace graft::cli

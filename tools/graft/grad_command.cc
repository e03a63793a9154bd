// graft grad MODEL.onnx --loss NAME --wrt initializers|W1,W2 [--shape X=2,3] [--recompute] -o train.onnx:
// writes the forward+backward graph (autodiff::gradient) as ONNX, with the
// loss and one `<W>_grad` output per differentiated value. Backward nodes are
// standard ONNX ops where one expresses the gradient; the rest are graft's
// backward ops (domain "graft"), which only graft runs.
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_support.h"
#include "command.h"
#include "graft/autodiff/gradient.h"
#include "graft/autodiff/recompute.h"
#include "graft/core/error.h"
#include "graft/frontend/onnx_import.h"
#include "graft/training/training_graph.h"

namespace graft::cli {

namespace {

struct GradOptions {
  std::string model;
  std::string output;
  std::string loss;
  std::string wrt = "initializers";
  std::vector<std::string> shapes;
  bool recompute = false;
};

/// Fixes the shapes of graph inputs (`--shape`): builders need known shapes,
/// and exports with dynamic axes leave them symbolic.
void set_input_shapes(ir::Graph& graph, const std::vector<std::string>& texts) {
  for (const auto& [name, dims] : parse_shape_flags(texts)) {
    ir::Node* input = nullptr;
    for (ir::Node* in : graph.inputs())
      if (in->output_names[0] == name) input = in;
    if (!input) fail(ErrorKind::invalid_argument, "--shape: the model has no input named '", name, "'");
    ir::ValueType& type = input->output_types[0];
    if (type.has_rank && type.dims.size() != dims.size())
      fail(ErrorKind::invalid_argument, "--shape ", name, ": ", dims.size(), " dimensions for an input of type ",
           type.to_string());
    for (size_t d = 0; d < dims.size() && type.has_rank; ++d)
      if (type.dims[d].is_known() && type.dims[d].value != dims[d])
        fail(ErrorKind::invalid_argument, "--shape ", name, ": dimension ", d, " is ", type.dims[d].value,
             " in the model");
    type = ir::ValueType::of(type.dtype, Shape(dims.begin(), dims.end()));
  }
}

bool holds_graft_ops(const ir::Graph& graph) {
  for (const auto& n : graph.nodes())
    if (!n->schema().domain.empty()) return true;
  return false;
}

int write_gradient(const GradOptions& options) {
  if (options.model.empty()) fail(ErrorKind::invalid_argument, "grad: give a model");
  if (options.output.empty()) fail(ErrorKind::invalid_argument, "grad: give the output file with -o OUT.onnx");
  if (options.loss.empty()) fail(ErrorKind::invalid_argument, "grad: give the loss with --loss NAME");
  std::unique_ptr<ir::Graph> graph = frontend::load_onnx(options.model);
  // Backward nodes take today's ONNX forms (axes as inputs); a file has one
  // opset per domain, so the forward nodes must be of opset 13 or later too.
  auto onnx_opset = graph->opset_imports.find("");
  if (onnx_opset != graph->opset_imports.end() && onnx_opset->second < 13)
    fail(ErrorKind::unsupported, "grad: the model imports ai.onnx opset ", onnx_opset->second,
         "; the backward graph is written in opset 13 or later (export or convert the model at opset 13+)");
  set_input_shapes(*graph, options.shapes);
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
  autodiff::GradientOptions gradient_options;
  gradient_options.recompute_pointwise_activations = options.recompute;
  // GELU as one Gelu node (training::forward_for_gradient) where the file is
  // graft's alone anyway: Gelu is an opset-20 op, and a gradient graph of
  // standard ops in an older opset stays a model that other runtimes load.
  std::unique_ptr<ir::Graph> result =
      autodiff::gradient(*training::forward_for_gradient(*graph), options.loss, wrt, gradient_options);
  const bool gelu_in_opset = onnx_opset == graph->opset_imports.end() || onnx_opset->second >= 20;
  if (!gelu_in_opset && !holds_graft_ops(*result))
    result = autodiff::gradient(*graph, options.loss, wrt, gradient_options);
  std::vector<ir::Value> kept = autodiff::activations_kept_for_backward(*result);
  size_t backward = 0, graft_ops = 0;
  for (const auto& n : result->nodes()) {
    backward += n->is_backward && n->op() != ir::OpId::Constant;
    graft_ops += n->is_backward && !n->schema().domain.empty();
  }
  frontend::save_onnx(*result, options.output);
  std::cout << "differentiated " << options.loss << " with respect to " << wrt.size() << " value"
            << (wrt.size() == 1 ? "" : "s") << ": " << backward << " backward nodes (" << graft_ops
            << " of domain graft); " << kept.size() << " activations kept for the backward nodes ("
            << autodiff::bytes_of(*result, kept) << " bytes" << (options.recompute ? ", cheap ones recomputed" : "")
            << "); wrote " << options.output << "\n";
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
  sub->add_option("--shape", options->shapes,
                  "NAME=D0,D1,...: fix the shape of input NAME (repeatable; for models exported with dynamic axes)");
  sub->add_flag("--recompute", options->recompute,
                "recompute cheap pointwise activations (Relu, Gelu, Sigmoid, Add, Mul, ...) in the backward part "
                "instead of keeping them from the forward part: less memory, the same gradients");
  return [options] { return write_gradient(*options); };
}

}  // namespace

GRAFT_CLI_COMMAND(setup_grad);

}  // namespace graft::cli

#include <array>

#include "graft/ir/verify.h"
#include "graft/passes/pass.h"

namespace graft::passes {

namespace {
constexpr std::array kPasses = {
#define GRAFT_PASS(name, function, description) PassInfo{name, description, &function},
#include "graft/passes/passes.def"
#undef GRAFT_PASS
};
}  // namespace

std::span<const PassInfo> all_passes() { return kPasses; }

const PassInfo* find_pass(std::string_view name) {
  for (const PassInfo& p : kPasses)
    if (p.name == name) return &p;
  return nullptr;
}

bool may_add_ops_of_opset(const ir::Graph& graph, const PassContext& ctx, int64_t version) {
  if (!ctx.keep_opset) return true;
  auto it = graph.opset_imports.find("");
  return it != graph.opset_imports.end() && it->second >= version;
}

void run_pipeline(std::unique_ptr<ir::Graph>& graph, const std::vector<std::string>& names, PassContext& ctx) {
  std::vector<const PassInfo*> pipeline;
  for (const std::string& name : names) {
    const PassInfo* p = find_pass(name);
    if (!p) {
      std::string known;
      for (const PassInfo& q : kPasses) known += (known.empty() ? "" : ", ") + std::string(q.name);
      fail(ErrorKind::invalid_argument, "unknown pass '", name, "' (known passes: ", known, ")");
    }
    pipeline.push_back(p);
  }
  for (const PassInfo* p : pipeline) {
    p->run(graph, ctx);
    if (ctx.verify_after_each) ir::verify(*graph);
  }
}

std::vector<std::string> default_pipeline() {
  // fold-batch-norm is not in the default pipeline: it makes new constants, so a
  // weight changed through the Session would not reach them (the dnnl backend
  // folds BatchNormalization itself and follows weight versions).
  return {"verify",
          "infer",
          "eliminate-identity",
          "fold-constants",
          "simplify-control-flow",
          "lower-quantize-dequantize",
          "fuse-gelu",
          "fuse-layer-norm",
          "lower-einsum",
          "simplify-reshapes",
          "fold-pad",
          "compute-float16-in-float32",
          "eliminate-dead-code",
          "infer"};
}

}  // namespace graft::passes

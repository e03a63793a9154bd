#include "graft/ir/op_schema.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_map>

namespace graft::ir {

namespace {

using OpTable = std::array<OpSchema, kNumOps>;

OpTable& table() {
  static OpTable ops = {{
#define GRAFT_OP(name, domain, category, min_in, max_in, min_out, max_out) \
  OpSchema{OpId::name, #name, domain, OpCategory::category, min_in, max_in, min_out, max_out},
#include "graft/ir/ops.def"
#undef GRAFT_OP
  }};
  return ops;
}

std::string_view canonical_domain(std::string_view domain) { return domain == "ai.onnx" ? "" : domain; }

}  // namespace

std::string_view to_string(OpCategory category) {
  switch (category) {
    case OpCategory::source: return "source";
    case OpCategory::elementwise: return "elementwise";
    case OpCategory::broadcast: return "broadcast";
    case OpCategory::injective: return "injective";
    case OpCategory::reduce: return "reduce";
    case OpCategory::opaque: return "opaque";
    case OpCategory::control: return "control";
  }
  return "unknown";
}

std::string OpSchema::qualified_name() const {
  return domain.empty() ? std::string(name) : std::string(domain) + "." + std::string(name);
}

const OpSchema* find_op(std::string_view domain, std::string_view name) {
  // Built on first use, after static initialization has attached semantics.
  static const std::unordered_map<std::string, const OpSchema*> index = [] {
    std::unordered_map<std::string, const OpSchema*> m;
    for (const OpSchema& op : table()) m.emplace(std::string(op.domain) + "|" + std::string(op.name), &op);
    return m;
  }();
  std::string key;
  key.reserve(domain.size() + name.size() + 1);
  key.append(canonical_domain(domain)).append("|").append(name);
  auto it = index.find(key);
  return it == index.end() ? nullptr : it->second;
}

std::span<const OpSchema> all_ops() { return table(); }

const OpSchema& op_schema(OpId id) { return table()[op_index(id)]; }

std::string_view op_name(OpId id) { return table()[op_index(id)].name; }

namespace detail {
bool register_op_semantics(std::string_view domain, std::string_view name, InferFn infer, KernelFn kernel) {
  for (OpSchema& op : table()) {
    if (op.name == name && op.domain == canonical_domain(domain)) {
      if (op.infer || op.kernel) {
        std::fprintf(stderr, "graft: op %.*s registered twice\n", static_cast<int>(name.size()), name.data());
        std::abort();
      }
      op.infer = infer;
      op.kernel = kernel;
      return true;
    }
  }
  std::fprintf(stderr, "graft: op %.*s is registered but missing from ops.def\n", static_cast<int>(name.size()),
               name.data());
  std::abort();
}

bool register_op_pointwise(OpId id, const ops::PointwiseExpression* expression) {
  OpSchema& op = table()[op_index(id)];
  if (op.pointwise) {
    std::fprintf(stderr, "graft: op %.*s has two pointwise expressions\n", static_cast<int>(op.name.size()),
                 op.name.data());
    std::abort();
  }
  op.pointwise = expression;
  return true;
}

bool register_op_gradient(OpId id, GradientFn builder) {
  OpSchema& op = table()[op_index(id)];
  if (op.gradient) {
    std::fprintf(stderr, "graft: op %.*s has two gradient builders\n", static_cast<int>(op.name.size()),
                 op.name.data());
    std::abort();
  }
  op.gradient = builder;
  return true;
}
}  // namespace detail

}  // namespace graft::ir

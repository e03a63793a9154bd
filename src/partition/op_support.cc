#include "graft/partition/op_support.h"

#include <cstdio>
#include <cstdlib>

#include "graft/partition/contain_op_selector.h"

namespace graft::partition {
namespace {

constexpr const char* kNonTensorReason =
    "reads or produces a sequence or an optional value (only the reference kernels take them)";

std::map<std::string, OpSupportTable, std::less<>>& registry() {
  static std::map<std::string, OpSupportTable, std::less<>> tables;
  return tables;
}

}  // namespace

bool register_op_support(std::string backend, std::string op_type, SupportChecker checker) {
  if (!registry()[backend].emplace(op_type, std::move(checker)).second) {
    std::fprintf(stderr, "graft: op support for '%s' on backend '%s' registered twice\n", op_type.c_str(),
                 backend.c_str());
    std::abort();
  }
  return true;
}

const OpSupportTable* find_op_support(std::string_view backend) {
  auto it = registry().find(backend);
  return it == registry().end() ? nullptr : &it->second;
}

std::vector<std::string> op_support_backends() {
  std::vector<std::string> names;
  for (const auto& [name, table] : registry()) names.push_back(name);
  return names;
}

Support check_op_support(const OpSupportTable& table, const ir::Node& node) {
  auto it = table.find(node.op_type());
  if (it == table.end()) return Support::no("op " + node.op_type() + " is not supported");
  if (ir::touches_non_tensor(node)) return Support::no(kNonTensorReason);
  Support answer = it->second(node);
  if (!answer.supported && answer.reason.empty()) answer.reason = "the " + node.op_type() + " checker declined";
  return answer;
}

Support ContainOpSpec::supports(const ir::Node& n) const {
  // ONNX ops are looked up by their name as it is (no string is built).
  std::string qualified;
  std::string_view op = n.schema().name;
  if (!n.schema().domain.empty()) op = qualified = n.op_type();
  if (!op_types.contains(op)) return Support::no("op " + std::string(op) + " is not supported");
  if (ir::touches_non_tensor(n)) return Support::no(kNonTensorReason);
  auto checker = checkers.find(op);
  if (checker == checkers.end()) return Support::yes();
  Support answer = checker->second(n);
  if (!answer.supported && answer.reason.empty()) answer.reason = "the " + std::string(op) + " checker declined";
  return answer;
}

}  // namespace graft::partition

namespace graft::partition {

bool ContainOpSpec::accepts(const ir::Node& n) const {
  std::string qualified;
  std::string_view op = n.schema().name;
  if (!n.schema().domain.empty()) op = qualified = n.op_type();
  if (!op_types.contains(op) || ir::touches_non_tensor(n)) return false;
  auto checker = checkers.find(op);
  return checker == checkers.end() || checker->second(n).supported;
}

}  // namespace graft::partition

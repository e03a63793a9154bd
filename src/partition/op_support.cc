#include "graft/partition/op_support.h"

#include <cstdio>
#include <cstdlib>

#include "executor_backend.h"
#include "graft/partition/contain_op_selector.h"

namespace graft::partition {
namespace {

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
  return register_executor_backend(backend);
}

const OpSupportTable* find_op_support(std::string_view backend) {
  auto it = registry().find(backend);
  return it == registry().end() ? nullptr : &it->second;
}

Support check_op_support(const OpSupportTable& table, const ir::Node& node) {
  auto it = table.find(node.op_type());
  if (it == table.end()) return Support::no("op " + node.op_type() + " is not supported");
  Support answer = it->second(node);
  if (!answer.supported && answer.reason.empty()) answer.reason = "the " + node.op_type() + " checker declined";
  return answer;
}

Support ContainOpSpec::supports(const ir::Node& n) const {
  std::string op = n.op_type();
  if (!op_types.contains(op)) return Support::no("op " + op + " is not supported");
  if (checkers.find(op) == checkers.end()) return Support::yes();
  return check_op_support(checkers, n);
}

}  // namespace graft::partition

// The default backend order (no SessionOptions::backends, no GRAFT_BACKENDS)
// asks only backends in the default order whether they are available: a
// device backend's availability probes its driver (OpenCL's ICD loader maps
// PoCL and its libLLVM), which a CPU model's first inference should not pay.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "graft/backend/backend.h"

namespace graft {
namespace {

std::atomic<int> availability_probes{0};

/// A backend used only when named, whose availability check is counted.
class ProbedWhenNamedBackend final : public backend::Backend {
 public:
  std::string name() const override { return "test-probed-when-named"; }
  bool in_default_order() const override { return false; }
  std::string unavailable_reason() const override {
    ++availability_probes;
    return {};
  }
  std::unique_ptr<backend::CompiledModule> compile(const ir::Graph&, const backend::CompileOptions&) const override {
    fail(ErrorKind::unsupported, "test-probed-when-named compiles nothing");
  }
};
GRAFT_REGISTER_BACKEND(ProbedWhenNamedBackend);

TEST(DefaultBackendOrder, DoesNotProbeBackendsOutsideIt) {
  const char* saved = std::getenv("GRAFT_BACKENDS");
  std::string saved_value = saved ? saved : "";
  unsetenv("GRAFT_BACKENDS");
  availability_probes = 0;
  std::vector<std::string> order = backend::resolve_backend_order({});
  if (saved) setenv("GRAFT_BACKENDS", saved_value.c_str(), 1);
  EXPECT_EQ(availability_probes, 0);
  EXPECT_EQ(std::count(order.begin(), order.end(), "test-probed-when-named"), 0);
  EXPECT_EQ(std::count(order.begin(), order.end(), "ref"), 1);
  // Named, it is used (and may be asked).
  std::vector<std::string> named = backend::resolve_backend_order({"test-probed-when-named", "ref"});
  EXPECT_EQ(named, (std::vector<std::string>{"test-probed-when-named", "ref"}));
}

}  // namespace
}  // namespace graft

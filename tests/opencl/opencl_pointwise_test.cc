// The OpenCL backend's pointwise kernels against the reference kernels: every
// float32 case of the shared op case list (tests/codegen/op_cases.h), plain
// and broadcast, each as a single-node kernel.
#include <gtest/gtest.h>

#include "codegen/op_cases.h"
#include "opencl_test_util.h"

namespace graft::testing {

TEST(OpenClPointwise, EveryFloat32OpCaseMatchesTheReference) {
  GRAFT_REQUIRE_OPENCL();
  int ran = 0;
  for (const BuiltCase& c : build_op_cases()) {
    if (c.inputs.empty() || c.inputs[0].dtype() != DType::float32) continue;
    SCOPED_TRACE(c.label);
    expect_opencl_matches_reference(*c.graph, c.inputs, 1e-5, 1e-6);
    ++ran;
  }
  EXPECT_GT(ran, 60);
}

}  // namespace graft::testing

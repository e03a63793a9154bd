// The OpenCL backend's MatMul, Gemm and Conv kernels (opencl_matmul.cc,
// opencl_conv.cc, CLBlast underneath) against the reference kernels: MatMul
// of every rank (batched, broadcast batch, a 2-D weight, 1-D operands), Gemm
// with each transpose, alpha/beta and every C broadcast, Conv through im2col +
// GEMM (pads, strides, 1x1, dilations, auto_pad, groups, 1-D and 3-D, image
// chunks) and the direct depthwise kernel, and the reasons unsupported nodes
// are refused with. Tests that need CLBlast skip without it.
#include <gtest/gtest.h>

#include "graft/codegen/opencl_runtime.h"
#include "opencl/clblast_loader.h"
#include "opencl_test_util.h"

namespace graft::testing {

/// Skips the test when CLBlast (the GEMMs of MatMul, Gemm and non-depthwise
/// Conv) is not there.
#define GRAFT_REQUIRE_CLBLAST()                                               \
  do {                                                                        \
    std::string clblast_why = ::graft::opencl::clblast::unavailable_reason(); \
    if (!clblast_why.empty()) GTEST_SKIP() << clblast_why;                    \
  } while (0)

namespace {

using Attrs = std::initializer_list<std::pair<const char*, ir::AttributeValue>>;

/// A one-node graph of `op` over float32 graph inputs of `shapes` (weights
/// are graph inputs too), with random inputs.
struct OneNode {
  std::unique_ptr<ir::Graph> graph = std::make_unique<ir::Graph>();
  std::vector<Tensor> inputs;
  ir::Node* node = nullptr;
};

OneNode one_node(const std::string& op, const std::vector<Shape>& shapes, Attrs attrs, uint64_t seed,
                 DType dtype = DType::float32) {
  OneNode c;
  ir::Graph& g = *c.graph;
  g.opset_imports[""] = 20;
  std::vector<ir::Value> values;
  for (size_t i = 0; i < shapes.size(); ++i) {
    values.push_back(g.add_input("x" + std::to_string(i), ir::ValueType::of(dtype, shapes[i]))->output(0));
    c.inputs.push_back(random_tensor(shapes[i], seed * 31 + i));
  }
  c.node = g.add_node(op, values, 1, "op");
  for (const auto& [name, value] : attrs) c.node->attributes.set(name, value);
  c.node->opset_version = 20;
  g.add_output(c.node->output(0), "y");
  ops::infer_types(g);
  return c;
}

void expect_matches(const std::string& op, const std::vector<Shape>& shapes, Attrs attrs = {}, uint64_t seed = 1) {
  std::string label = op;
  for (const Shape& s : shapes) label += " " + shape_to_string(s);
  SCOPED_TRACE(label);
  OneNode c = one_node(op, shapes, attrs, seed);
  EXPECT_EQ(opencl::kernel_support(*c.node), "");
  expect_opencl_matches_reference(*c.graph, c.inputs, 1e-4, 1e-4);
}

using Ints = std::vector<int64_t>;

}  // namespace

// ---- MatMul -----------------------------------------------------------------

TEST(OpenClMatMul, TwoD) {
  GRAFT_REQUIRE_OPENCL();
  GRAFT_REQUIRE_CLBLAST();
  expect_matches("MatMul", {{33, 47}, {47, 29}});
  expect_matches("MatMul", {{1, 64}, {64, 1}});
}

TEST(OpenClMatMul, Batched) {
  GRAFT_REQUIRE_OPENCL();
  GRAFT_REQUIRE_CLBLAST();
  expect_matches("MatMul", {{3, 17, 19}, {3, 19, 23}});
  expect_matches("MatMul", {{2, 4, 16, 8}, {2, 4, 8, 16}});  // attention scores
}

TEST(OpenClMatMul, BroadcastBatch) {
  GRAFT_REQUIRE_OPENCL();
  GRAFT_REQUIRE_CLBLAST();
  expect_matches("MatMul", {{4, 5, 6}, {6, 7}});  // 2-D weight: rows folded
  expect_matches("MatMul", {{2, 3, 5, 6}, {6, 7}});
  expect_matches("MatMul", {{5, 6}, {3, 6, 7}});           // A shared by the batch
  expect_matches("MatMul", {{2, 1, 5, 7}, {1, 3, 7, 6}});  // outer loop on the host
  expect_matches("MatMul", {{3, 1, 4, 5}, {3, 2, 5, 4}});  // A broadcast inside
  expect_matches("MatMul", {{1, 2, 4, 5}, {2, 5, 3}});
  expect_matches("MatMul", {{2, 3, 4, 5}, {2, 1, 5, 6}});  // rows folded inside the host loop
}

TEST(OpenClMatMul, OneDOperands) {
  GRAFT_REQUIRE_OPENCL();
  GRAFT_REQUIRE_CLBLAST();
  expect_matches("MatMul", {{7}, {7, 5}});
  expect_matches("MatMul", {{4, 7}, {7}});
  expect_matches("MatMul", {{7}, {7}});
  expect_matches("MatMul", {{2, 3, 7}, {7}});
  expect_matches("MatMul", {{7}, {2, 7, 5}});
}

TEST(OpenClMatMul, EmptyDimensions) {
  GRAFT_REQUIRE_OPENCL();
  GRAFT_REQUIRE_CLBLAST();
  expect_matches("MatMul", {{3, 0}, {0, 4}});                       // K = 0: zeros
  expect_matches("MatMul", {{0, 5}, {5, 3}});                       // an empty output
  expect_matches("Gemm", {{3, 0}, {0, 4}, {4}}, {{"beta", 2.0f}});  // K = 0: beta * C
  expect_matches("Gemm", {{3, 0}, {0, 4}});
}

// Sizes past CLBlast's direct-kernel threshold: the padded (indirect) GEMM path.
TEST(OpenClMatMul, Large) {
  GRAFT_REQUIRE_OPENCL();
  GRAFT_REQUIRE_CLBLAST();
  expect_matches("MatMul", {{520, 400}, {400, 450}});
  expect_matches("MatMul", {{2, 450, 400}, {2, 400, 390}});
  expect_matches("Gemm", {{400, 520}, {450, 400}, {450}}, {{"transA", int64_t{1}}, {"transB", int64_t{1}}});
}

TEST(OpenClMatMul, Float64IsRefusedWithAReason) {
  GRAFT_REQUIRE_OPENCL();
  OneNode c = one_node("MatMul", {{3, 4}, {4, 5}}, {}, 1, DType::float64);
  std::string why = opencl::kernel_support(*c.node);
  EXPECT_NE(why.find("float64"), std::string::npos) << why;
}

// ---- Gemm -------------------------------------------------------------------

TEST(OpenClGemm, Transposes) {
  GRAFT_REQUIRE_OPENCL();
  GRAFT_REQUIRE_CLBLAST();
  const int64_t M = 13, K = 21, N = 17;
  for (int64_t ta : {0, 1}) {
    for (int64_t tb : {0, 1}) {
      SCOPED_TRACE("transA " + std::to_string(ta) + " transB " + std::to_string(tb));
      Shape a = ta ? Shape{K, M} : Shape{M, K};
      Shape b = tb ? Shape{N, K} : Shape{K, N};
      expect_matches("Gemm", {a, b, {M, N}}, {{"transA", ta}, {"transB", tb}});
    }
  }
}

TEST(OpenClGemm, AlphaBetaAndCBroadcast) {
  GRAFT_REQUIRE_OPENCL();
  GRAFT_REQUIRE_CLBLAST();
  const int64_t M = 13, K = 21, N = 17;
  const Attrs scaled = {{"alpha", 0.5f}, {"beta", 2.0f}};
  expect_matches("Gemm", {{M, K}, {K, N}, {N}}, scaled);
  expect_matches("Gemm", {{M, K}, {K, N}, {1, N}}, scaled);
  expect_matches("Gemm", {{M, K}, {K, N}, {M, 1}}, scaled);
  expect_matches("Gemm", {{M, K}, {K, N}, {M, N}}, scaled);
  expect_matches("Gemm", {{M, K}, {K, N}, {}}, scaled);
  expect_matches("Gemm", {{M, K}, {N, K}, {N}}, {{"transB", int64_t{1}}, {"beta", 0.0f}});
}

TEST(OpenClGemm, NoC) {
  GRAFT_REQUIRE_OPENCL();
  GRAFT_REQUIRE_CLBLAST();
  expect_matches("Gemm", {{13, 21}, {21, 17}});
  expect_matches("Gemm", {{21, 13}, {17, 21}}, {{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 1.5f}});
  expect_matches("Gemm", {{1, 64}, {10, 64}}, {{"transB", int64_t{1}}});  // a classifier head
}

// ---- Conv -------------------------------------------------------------------

TEST(OpenClConv, Padded3x3) {
  GRAFT_REQUIRE_OPENCL();
  GRAFT_REQUIRE_CLBLAST();
  expect_matches("Conv", {{2, 8, 12, 12}, {16, 8, 3, 3}, {16}}, {{"pads", Ints{1, 1, 1, 1}}});
  expect_matches("Conv", {{2, 8, 12, 12}, {16, 8, 3, 3}}, {{"pads", Ints{1, 1, 1, 1}}});
}

TEST(OpenClConv, ResNetLayer) {
  GRAFT_REQUIRE_OPENCL();
  GRAFT_REQUIRE_CLBLAST();
  expect_matches("Conv", {{1, 64, 56, 56}, {64, 64, 3, 3}, {64}}, {{"pads", Ints{1, 1, 1, 1}}});
}

// A column matrix of 2 x 9 x 1024^2 floats per image, past the 2^25-float
// budget for two: the images go through im2col + GEMM one chunk at a time.
TEST(OpenClConv, ColumnChunks) {
  GRAFT_REQUIRE_OPENCL();
  GRAFT_REQUIRE_CLBLAST();
  expect_matches("Conv", {{2, 2, 1024, 1024}, {1, 2, 3, 3}, {1}}, {{"pads", Ints{1, 1, 1, 1}}});
}

TEST(OpenClConv, Strided) {
  GRAFT_REQUIRE_OPENCL();
  GRAFT_REQUIRE_CLBLAST();
  expect_matches("Conv", {{2, 8, 13, 13}, {6, 8, 3, 3}}, {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}});
  expect_matches("Conv", {{1, 3, 17, 15}, {4, 3, 5, 5}, {4}},
                 {{"pads", Ints{2, 1, 2, 0}}, {"strides", Ints{2, 3}}});  // uneven pads and strides
}

TEST(OpenClConv, Pointwise1x1) {
  GRAFT_REQUIRE_OPENCL();
  GRAFT_REQUIRE_CLBLAST();
  expect_matches("Conv", {{2, 16, 7, 7}, {8, 16, 1, 1}, {8}});
  expect_matches("Conv", {{2, 16, 7, 7}, {8, 16, 1, 1}}, {{"strides", Ints{2, 2}}});  // 1x1 strided: im2col
}

TEST(OpenClConv, Dilated) {
  GRAFT_REQUIRE_OPENCL();
  GRAFT_REQUIRE_CLBLAST();
  expect_matches("Conv", {{1, 4, 11, 11}, {5, 4, 3, 3}, {5}}, {{"pads", Ints{2, 2, 2, 2}}, {"dilations", Ints{2, 2}}});
}

TEST(OpenClConv, AutoPad) {
  GRAFT_REQUIRE_OPENCL();
  GRAFT_REQUIRE_CLBLAST();
  expect_matches("Conv", {{1, 3, 10, 10}, {4, 3, 3, 3}},
                 {{"auto_pad", std::string("SAME_UPPER")}, {"strides", Ints{2, 2}}});
  expect_matches("Conv", {{1, 3, 10, 10}, {4, 3, 4, 4}}, {{"auto_pad", std::string("SAME_LOWER")}});
  expect_matches("Conv", {{1, 3, 10, 10}, {4, 3, 3, 3}}, {{"auto_pad", std::string("VALID")}});
  expect_matches("Conv", {{1, 3, 10, 10}, {4, 3, 3, 3}},
                 {{"auto_pad", std::string("SAME_UPPER")}, {"dilations", Ints{2, 2}}});
}

TEST(OpenClConv, Depthwise) {
  GRAFT_REQUIRE_OPENCL();
  const Attrs stride1 = {{"group", int64_t{32}}, {"pads", Ints{1, 1, 1, 1}}};
  const Attrs stride2 = {{"group", int64_t{32}}, {"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}};
  expect_matches("Conv", {{2, 32, 14, 14}, {32, 1, 3, 3}, {32}}, stride1);
  expect_matches("Conv", {{2, 32, 14, 14}, {32, 1, 3, 3}}, stride2);
  expect_matches("Conv", {{1, 4, 9, 9}, {8, 1, 3, 3}, {8}}, {{"group", int64_t{4}}});  // channel multiplier 2
  expect_matches("Conv", {{2, 1, 9, 9}, {3, 1, 3, 3}, {3}});  // one input channel: the direct kernel too
}

TEST(OpenClConv, Grouped) {
  GRAFT_REQUIRE_OPENCL();
  GRAFT_REQUIRE_CLBLAST();
  expect_matches("Conv", {{2, 8, 9, 9}, {12, 4, 3, 3}, {12}}, {{"group", int64_t{2}}, {"pads", Ints{1, 1, 1, 1}}});
  expect_matches("Conv", {{2, 8, 9, 9}, {12, 2, 1, 1}}, {{"group", int64_t{4}}});
}

TEST(OpenClConv, OneAndThreeD) {
  GRAFT_REQUIRE_OPENCL();
  GRAFT_REQUIRE_CLBLAST();
  expect_matches("Conv", {{2, 4, 20}, {6, 4, 5}, {6}}, {{"pads", Ints{2, 2}}, {"strides", Ints{2}}});
  expect_matches("Conv", {{1, 2, 5, 6, 7}, {3, 2, 3, 3, 3}, {3}}, {{"pads", Ints{1, 1, 1, 1, 1, 1}}});
}

TEST(OpenClConv, ConstantWeight) {
  GRAFT_REQUIRE_OPENCL();
  GRAFT_REQUIRE_CLBLAST();
  ir::Graph g;
  g.opset_imports[""] = 20;
  ir::Value x = g.add_input("x", ir::ValueType::of(DType::float32, {2, 3, 8, 8}))->output(0);
  ir::Value w = g.add_constant("w", random_tensor({4, 3, 3, 3}, 7))->output(0);
  ir::Value b = g.add_constant("b", random_tensor({4}, 8))->output(0);
  ir::Node* conv = g.add_node("Conv", {x, w, b}, 1, "conv");
  conv->attributes.set("pads", Ints{1, 1, 1, 1});
  conv->opset_version = 20;
  g.add_output(conv->output(0), "y");
  ops::infer_types(g);
  expect_opencl_matches_reference(g, {random_tensor({2, 3, 8, 8}, 9)}, 1e-4, 1e-4);
}

TEST(OpenClConv, UnsupportedIsRefusedWithAReason) {
  GRAFT_REQUIRE_OPENCL();
  OneNode f64 = one_node("Conv", {{1, 3, 8, 8}, {4, 3, 3, 3}}, {}, 1, DType::float64);
  std::string why = opencl::kernel_support(*f64.node);
  EXPECT_NE(why.find("float64"), std::string::npos) << why;
  OneNode f16 = one_node("Gemm", {{3, 4}, {4, 5}}, {}, 1, DType::float16);
  why = opencl::kernel_support(*f16.node);
  EXPECT_NE(why.find("float16"), std::string::npos) << why;
  OneNode conv4d = one_node("Conv", {{1, 1, 3, 3, 3, 3}, {1, 1, 2, 2, 2, 2}}, {}, 1);
  why = opencl::kernel_support(*conv4d.node);
  EXPECT_NE(why.find("rank 6"), std::string::npos) << why;
}

}  // namespace graft::testing

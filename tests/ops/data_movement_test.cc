// Transpose (against a naive loop over random permutations and dtypes),
// Concat, Split (every opset form), Slice (negative steps, clamping, opset 9
// attributes), Expand, Tile, Pad (all modes, negative pads, opset forms),
// DepthToSpace and SpaceToDepth, and their shape inference.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "ops/data_op_helpers.h"

using namespace graft;
using namespace graft::testing;

namespace {

Tensor naive_transpose(const Tensor& x, const std::vector<int64_t>& perm) {
  Shape out_shape;
  for (int64_t p : perm) out_shape.push_back(x.dim(p));
  Tensor y(x.dtype(), out_shape);
  const auto in_strides = shape_strides(x.shape());
  const size_t element = dtype_size(x.dtype());
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t rem = i, src = 0;
    for (size_t d = out_shape.size(); d-- > 0;) {
      src += (rem % out_shape[d]) * in_strides[static_cast<size_t>(perm[d])];
      rem /= out_shape[d];
    }
    std::memcpy(static_cast<char*>(y.raw_data()) + i * element, static_cast<const char*>(x.raw_data()) + src * element,
                element);
  }
  return y;
}

TEST(Transpose, MatchesNaiveOnRandomPermutations) {
  std::mt19937 rng(7);
  const std::vector<Shape> shapes = {{5}, {3, 70}, {2, 3, 4}, {2, 1, 33, 40}, {2, 3, 1, 4, 5}, {1, 37, 1, 65}};
  for (const Shape& shape : shapes)
    for (DType dtype : {DType::float32, DType::int64, DType::uint8, DType::float16}) {
      Tensor x(dtype, shape);
      auto* bytes = static_cast<uint8_t*>(x.raw_data());
      for (size_t b = 0; b < x.nbytes(); ++b) bytes[b] = static_cast<uint8_t>(rng());
      std::vector<int64_t> perm(shape.size());
      std::iota(perm.begin(), perm.end(), 0);
      for (int trial = 0; trial < 3; ++trial) {
        std::shuffle(perm.begin(), perm.end(), rng);
        Tensor got = run_op("Transpose", {x}, attrs({{"perm", perm}}))[0];
        Tensor want = naive_transpose(x, perm);
        ASSERT_EQ(got.shape(), want.shape());
        ASSERT_EQ(std::memcmp(got.raw_data(), want.raw_data(), got.nbytes()), 0)
            << shape_to_string(shape) << " " << dtype_name(dtype);
      }
    }
}

TEST(Transpose, DefaultReversesAndInfers) {
  Tensor x = iota_floats({2, 3});
  EXPECT_EQ(values_of<float>(run_op("Transpose", {x})[0]), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  auto t = infer_op("Transpose", {ir::ValueType{DType::float32, true, {sym("b"), dim(3), sym("s")}}},
                    attrs({{"perm", std::vector<int64_t>{2, 0, 1}}}));
  EXPECT_EQ(t[0].dims, (std::vector<ir::Dim>{sym("s"), sym("b"), dim(3)}));
  expect_error(ErrorKind::invalid_model, [&] {
    run_op("Transpose", {x}, attrs({{"perm", std::vector<int64_t>{0, 0}}}));
  });
}

TEST(Concat, NegativeAxisAndEmptyInputs) {
  Tensor a = iota_floats({2, 2}), b = floats({9, 8}, {2, 1}), empty(DType::float32, {2, 0});
  auto out = run_op("Concat", {a, empty, b}, attrs({{"axis", int64_t{-1}}}));
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{0, 1, 9, 2, 3, 8}));
  expect_error(ErrorKind::invalid_model, [&] { run_op("Concat", {a, b}, attrs({{"axis", int64_t{0}}})); });
  expect_error(ErrorKind::invalid_model, [&] { run_op("Concat", {a, b}); });  // axis is required from opset 4
  EXPECT_EQ(run_op("Concat", {a, b}, {}, 1)[0].shape(), (Shape{2, 3}));       // opset 1: axis 1 by default
  auto t = infer_op("Concat",
                    {ir::ValueType{DType::float32, true, {sym("n"), dim(2)}},
                     ir::ValueType{DType::float32, true, {sym("n"), dim(3)}}},
                    attrs({{"axis", int64_t{1}}}));
  EXPECT_EQ(t[0].dims, (std::vector<ir::Dim>{sym("n"), dim(5)}));
}

TEST(Split, AttributeInputAndNumOutputs) {
  Tensor x = iota_floats({2, 5});
  auto v11 = run_op("Split", {x}, attrs({{"axis", int64_t{1}}, {"split", std::vector<int64_t>{2, 3}}}), 11, 2);
  EXPECT_EQ(values_of<float>(v11[0]), (std::vector<float>{0, 1, 5, 6}));
  EXPECT_EQ(values_of<float>(v11[1]), (std::vector<float>{2, 3, 4, 7, 8, 9}));
  auto v13 = run_op("Split", {x, ints({4, 0, 1})}, attrs({{"axis", int64_t{-1}}}), 13, 3);
  EXPECT_EQ(v13[1].shape(), (Shape{2, 0}));
  EXPECT_EQ(values_of<float>(v13[2]), (std::vector<float>{4, 9}));
  auto v18 = run_op("Split", {x}, attrs({{"axis", int64_t{1}}, {"num_outputs", int64_t{2}}}), 18, 2);
  EXPECT_EQ(v18[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(v18[1].shape(), (Shape{2, 2}));
  auto v1 = run_op("Split", {x, ints({1, 4})}, attrs({{"axis", int64_t{1}}}), 1, 2);  // opset 1: split as input
  EXPECT_EQ(v1[1].shape(), (Shape{2, 4}));
  auto even = run_op("Split", {x}, {}, 13, 2);
  EXPECT_EQ(even[0].shape(), (Shape{1, 5}));
  expect_error(ErrorKind::invalid_model, [&] { run_op("Split", {x}, attrs({{"axis", int64_t{1}}}), 13, 2); });
  expect_error(ErrorKind::invalid_model, [&] {
    run_op("Split", {x, ints({1, 1})}, attrs({{"axis", int64_t{1}}}), 13, 2);
  });
  auto t = infer_op("Split", {ir::ValueType{DType::float32, true, {sym("b"), dim(6)}}}, attrs({{"axis", int64_t{1}}}),
                    13, 3);
  EXPECT_EQ(t[2].dims, (std::vector<ir::Dim>{sym("b"), dim(2)}));
}

TEST(Slice, NegativeStepsAndClamping) {
  Tensor x = iota_floats({3, 4});
  // Rows reversed, every second column from the end.
  auto out = run_op("Slice", {x, ints({-1, 100}), ints({-100, -100}), ints({0, 1}), ints({-1, -2})});
  EXPECT_EQ(out[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{11, 9, 7, 5, 3, 1}));
  auto clamped = run_op("Slice", {x, ints({1}), ints({1000}), ints({-1})});
  EXPECT_EQ(values_of<float>(clamped[0]), (std::vector<float>{1, 2, 3, 5, 6, 7, 9, 10, 11}));
  auto empty = run_op("Slice", {x, ints({3}), ints({1}), ints({1})});
  EXPECT_EQ(empty[0].shape(), (Shape{3, 0}));
  expect_error(ErrorKind::invalid_model, [&] { run_op("Slice", {x, ints({0}), ints({1}), ints({0}), ints({0})}); });
}

TEST(Slice, Opset9AttributesAndInference) {
  Tensor x = iota_floats({3, 4});
  auto out = run_op(
      "Slice", {x},
      attrs(
          {{"starts", std::vector<int64_t>{1}}, {"ends", std::vector<int64_t>{-1}}, {"axes", std::vector<int64_t>{1}}}),
      9);
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{1, 2, 5, 6, 9, 10}));
  auto t = infer_op("Slice", {ir::ValueType{DType::float32, true, {sym("b"), dim(10)}}, {}, {}, {}, {}}, {}, 13, 1,
                    {{1, ints({8})}, {2, ints({1})}, {3, ints({1})}, {4, ints({-3})}});
  EXPECT_EQ(t[0].dims, (std::vector<ir::Dim>{sym("b"), dim(3)}));
}

TEST(Expand, BroadcastsBothWays) {
  Tensor x = floats({1, 2, 3}, {3, 1});
  auto out = run_op("Expand", {x, ints({2, 1, 2})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  expect_error(ErrorKind::invalid_model, [&] { run_op("Expand", {x, ints({2, 2})}); });
  auto t =
      infer_op("Expand", {ir::ValueType{DType::float32, true, {sym("n"), dim(1)}}, {}}, {}, 13, 1, {{1, ints({1, 4})}});
  EXPECT_EQ(t[0].dims, (std::vector<ir::Dim>{sym("n"), dim(4)}));
}

// Every pattern of broadcast and kept dimensions up to rank 5 (the kernel
// merges adjacent dimensions of the same kind), against indexing by hand.
TEST(Expand, EveryBroadcastPatternMatchesIndexing) {
  const Shape full = {2, 3, 1, 4, 5};
  for (int mask = 0; mask < 32; ++mask) {
    Shape in_shape;
    for (size_t d = 0; d < full.size(); ++d) in_shape.push_back(mask & (1 << d) ? 1 : full[d]);
    for (size_t drop = 0; drop <= 2; ++drop) {  // the input may also have a lower rank
      Shape x_shape(in_shape.begin() + static_cast<std::ptrdiff_t>(drop), in_shape.end());
      Tensor x = iota_floats(x_shape);
      auto out = run_op("Expand", {x, ints(std::vector<int64_t>(full.begin(), full.end()))});
      ASSERT_EQ(out[0].shape(), full);
      const std::vector<float> got = values_of<float>(out[0]);
      const std::vector<int64_t> in_strides = shape_strides(x_shape);
      size_t i = 0;
      for (int64_t a = 0; a < 2; ++a)
        for (int64_t b = 0; b < 3; ++b)
          for (int64_t c = 0; c < 1; ++c)
            for (int64_t d = 0; d < 4; ++d)
              for (int64_t e = 0; e < 5; ++e, ++i) {
                const int64_t coordinate[5] = {a, b, c, d, e};
                int64_t offset = 0;
                for (size_t k = 0; k < x_shape.size(); ++k) {
                  const size_t dim = k + drop;
                  if (x_shape[k] != 1) offset += coordinate[dim] * in_strides[k];
                }
                ASSERT_EQ(got[i], static_cast<float>(offset)) << "mask " << mask << ", drop " << drop << ", at " << i;
              }
    }
  }
}

TEST(Tile, RepeatsEveryDimension) {
  Tensor x = floats({1, 2, 3, 4}, {2, 2});
  auto out = run_op("Tile", {x, ints({2, 3})});
  EXPECT_EQ(out[0].shape(), (Shape{4, 6}));
  const std::vector<float> got = values_of<float>(out[0]);
  EXPECT_EQ(std::vector<float>(got.begin(), got.begin() + 6), (std::vector<float>{1, 2, 1, 2, 1, 2}));
  EXPECT_EQ(std::vector<float>(got.begin() + 18, got.end()), (std::vector<float>{3, 4, 3, 4, 3, 4}));
  auto t =
      infer_op("Tile", {ir::ValueType{DType::float32, true, {sym("n"), dim(2)}}, {}}, {}, 13, 1, {{1, ints({1, 3})}});
  EXPECT_EQ(t[0].dims, (std::vector<ir::Dim>{sym("n"), dim(6)}));
}

TEST(Pad, ModesAndNegativePads) {
  Tensor x = floats({1, 2, 3}, {1, 3});
  auto constant =
      run_op("Pad", {x, ints({0, 2, 0, 1}), Tensor::scalar(9.0f)}, attrs({{"mode", std::string("constant")}}), 13);
  EXPECT_EQ(values_of<float>(constant[0]), (std::vector<float>{9, 9, 1, 2, 3, 9}));
  auto reflect = run_op("Pad", {x, ints({0, 2, 0, 2})}, attrs({{"mode", std::string("reflect")}}), 13);
  EXPECT_EQ(values_of<float>(reflect[0]), (std::vector<float>{3, 2, 1, 2, 3, 2, 1}));
  auto edge = run_op("Pad", {x, ints({1, 1, 0, 1})}, attrs({{"mode", std::string("edge")}}), 13);
  EXPECT_EQ(values_of<float>(edge[0]), (std::vector<float>{1, 1, 2, 3, 3, 1, 1, 2, 3, 3}));
  auto crop = run_op("Pad", {x, ints({0, -1, 0, 1})}, {}, 13);
  EXPECT_EQ(values_of<float>(crop[0]), (std::vector<float>{2, 3, 0}));
  // Opset 2-10: pads and value are attributes.
  auto v2 = run_op("Pad", {x}, attrs({{"pads", std::vector<int64_t>{0, 1, 0, 0}}, {"value", 5.0f}}), 7);
  EXPECT_EQ(values_of<float>(v2[0]), (std::vector<float>{5, 1, 2, 3}));
  // Opset 18: axes name the padded dimensions.
  auto v18 = run_op("Pad", {x, ints({1, 1}), Tensor(), ints({-1})}, {}, 18);
  EXPECT_EQ(values_of<float>(v18[0]), (std::vector<float>{0, 1, 2, 3, 0}));
  expect_error(ErrorKind::invalid_model, [&] { run_op("Pad", {x, ints({0, 1})}, {}, 13); });
  auto t = infer_op("Pad", {ir::ValueType{DType::float32, true, {sym("n"), dim(3)}}, {}}, {}, 13, 1,
                    {{1, ints({0, 2, 0, 1})}});
  EXPECT_EQ(t[0].dims, (std::vector<ir::Dim>{sym("n"), dim(6)}));
}

TEST(DepthToSpace, DcrAndCrdAreInverseOfSpaceToDepth) {
  Tensor x = iota_floats({1, 8, 2, 3});
  auto dcr = run_op("DepthToSpace", {x}, attrs({{"blocksize", int64_t{2}}}));
  EXPECT_EQ(dcr[0].shape(), (Shape{1, 2, 4, 6}));
  // DCR: output[0, c, 2h + i, 2w + j] = input[0, (i * 2 + j) * 2 + c, h, w]; here c=1, i=0, j=1.
  EXPECT_EQ(dcr[0].data<float>()[1 * 24 + 0 * 6 + 1], x.data<float>()[((0 * 2 + 1) * 2 + 1) * 6 + 0]);
  auto back = run_op("SpaceToDepth", {dcr[0]}, attrs({{"blocksize", int64_t{2}}}));
  EXPECT_EQ(values_of<float>(back[0]), values_of<float>(x));
  auto crd = run_op("DepthToSpace", {x}, attrs({{"blocksize", int64_t{2}}, {"mode", std::string("CRD")}}), 11);
  // CRD: output[0, c, 2h + i, 2w + j] = input[0, c * 4 + i * 2 + j, h, w].
  EXPECT_EQ(crd[0].data<float>()[1 * 24 + 0 * 6 + 1], x.data<float>()[(1 * 4 + 0 * 2 + 1) * 6 + 0]);
  expect_error(ErrorKind::invalid_model, [&] { run_op("DepthToSpace", {x}, attrs({{"blocksize", int64_t{3}}})); });
}

}  // namespace

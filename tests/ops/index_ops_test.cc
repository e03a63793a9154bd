// Gather, GatherElements, GatherND, Scatter/ScatterElements/ScatterND (with
// reductions), OneHot, Compress, NonZero, Unique, ReverseSequence, Trilu:
// negative indices, out-of-range indices as errors (never a crash), and
// inference.
#include <gtest/gtest.h>

#include "ops/data_op_helpers.h"

using namespace graft;
using namespace graft::testing;

namespace {

TEST(Gather, NegativeIndicesAndAxis) {
  Tensor data = iota_floats({3, 4});
  auto rows = run_op("Gather", {data, ints({-1, 0}, {2})});
  EXPECT_EQ(values_of<float>(rows[0]), (std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3}));
  auto cols = run_op("Gather", {data, Tensor::from_vector<int32_t>({1, -4}, {1, 2})}, attrs({{"axis", int64_t{-1}}}));
  EXPECT_EQ(cols[0].shape(), (Shape{3, 1, 2}));
  EXPECT_EQ(values_of<float>(cols[0]), (std::vector<float>{1, 0, 5, 4, 9, 8}));
  auto scalar = run_op("Gather", {data, Tensor::scalar<int64_t>(2)});
  EXPECT_EQ(scalar[0].shape(), (Shape{4}));
}

TEST(Gather, OutOfRangeIndexIsAnError) {
  Tensor data = iota_floats({3, 4});
  expect_error(ErrorKind::invalid_model, [&] { run_op("Gather", {data, ints({3})}); });
  expect_error(ErrorKind::invalid_model, [&] { run_op("Gather", {data, ints({-4})}); });
  expect_error(ErrorKind::invalid_model, [&] { run_op("GatherElements", {data, ints({0, 5}, {1, 2})}); });
  expect_error(ErrorKind::invalid_model, [&] { run_op("GatherND", {data, ints({1, 4}, {1, 2})}); });
  expect_error(ErrorKind::invalid_model, [&] {
    run_op("ScatterElements", {data, ints({7}, {1, 1}), floats({1}, {1, 1})});
  });
  expect_error(ErrorKind::invalid_model, [&] {
    run_op("ScatterND", {data, ints({3}, {1, 1}), floats({1, 2, 3, 4}, {1, 4})});
  });
}

TEST(Gather, Inference) {
  auto t = infer_op("Gather", {ir::ValueType{DType::float32, true, {sym("v"), dim(8)}},
                               ir::ValueType{DType::int64, true, {sym("b"), sym("s")}}});
  EXPECT_EQ(t[0].dims, (std::vector<ir::Dim>{sym("b"), sym("s"), dim(8)}));
}

TEST(GatherElements, AlongEachAxis) {
  Tensor data = floats({1, 2, 3, 4}, {2, 2});
  auto a0 = run_op("GatherElements", {data, ints({1, 0, -2, 1}, {2, 2})});
  EXPECT_EQ(values_of<float>(a0[0]), (std::vector<float>{3, 2, 1, 4}));
  auto a1 = run_op("GatherElements", {data, ints({0, 0, 1, 0}, {2, 2})}, attrs({{"axis", int64_t{1}}}));
  EXPECT_EQ(values_of<float>(a1[0]), (std::vector<float>{1, 1, 4, 3}));
}

TEST(GatherND, BatchDims) {
  Tensor data = iota_floats({2, 2, 2});
  auto out = run_op("GatherND", {data, ints({1, 0}, {2, 1})}, attrs({{"batch_dims", int64_t{1}}}));
  EXPECT_EQ(out[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{2, 3, 4, 5}));
  auto full = run_op("GatherND", {data, ints({1, 1, -1}, {1, 3})});
  EXPECT_EQ(values_of<float>(full[0]), (std::vector<float>{7}));
}

TEST(Scatter, ElementsNdAndReductions) {
  Tensor data = Tensor::from_vector<float>({1, 2, 3, 4, 5}, {1, 5});
  auto none = run_op("ScatterElements", {data, ints({1, -2, 1}, {1, 3}), floats({10, 20, 30}, {1, 3})},
                     attrs({{"axis", int64_t{1}}}));
  EXPECT_EQ(values_of<float>(none[0]), (std::vector<float>{1, 30, 3, 20, 5})) << "the last duplicate wins";
  auto add = run_op("ScatterElements", {data, ints({1, 1}, {1, 2}), floats({10, 20}, {1, 2})},
                    attrs({{"axis", int64_t{1}}, {"reduction", std::string("add")}}), 16);
  EXPECT_EQ(values_of<float>(add[0]), (std::vector<float>{1, 32, 3, 4, 5}));
  auto old = run_op("Scatter", {data, ints({0}, {1, 1}), floats({7}, {1, 1})}, attrs({{"axis", int64_t{1}}}), 9);
  EXPECT_EQ(values_of<float>(old[0]), (std::vector<float>{7, 2, 3, 4, 5}));
  Tensor grid = iota_floats({2, 2});
  auto nd = run_op("ScatterND", {grid, ints({1, 0}, {2, 1}), floats({5, 6, 7, 8}, {2, 2})}, {}, 13);
  EXPECT_EQ(values_of<float>(nd[0]), (std::vector<float>{7, 8, 5, 6}));
  auto mul = run_op("ScatterND", {grid, ints({1, 1}, {1, 2}), floats({10}, {1})},
                    attrs({{"reduction", std::string("mul")}}), 16);
  EXPECT_EQ(values_of<float>(mul[0]), (std::vector<float>{0, 1, 2, 30}));
  auto max = run_op("ScatterND", {grid, ints({0, 0, 1, 1}, {2, 2}), floats({-1, 9}, {2})},
                    attrs({{"reduction", std::string("max")}}), 18);
  EXPECT_EQ(values_of<float>(max[0]), (std::vector<float>{0, 1, 2, 9}));
  expect_error(ErrorKind::invalid_model, [&] {
    run_op("ScatterND", {grid, ints({1, 1}, {1, 2}), floats({10}, {1})}, attrs({{"reduction", std::string("max")}}),
           16);
  });
}

TEST(OneHot, AxisAndNegativeIndices) {
  auto out = run_op("OneHot", {ints({0, -1, 5}), Tensor::scalar<int64_t>(3), floats({0, 1})});
  EXPECT_EQ(out[0].shape(), (Shape{3, 3}));
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0}));
  auto axis0 = run_op("OneHot", {ints({1, 2}), floats({3}), floats({-1, 4})}, attrs({{"axis", int64_t{0}}}));
  EXPECT_EQ(axis0[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(values_of<float>(axis0[0]), (std::vector<float>{-1, -1, 4, -1, -1, 4}));
}

TEST(CompressNonZero, DataDependentShapes) {
  Tensor x = iota_floats({3, 2});
  Tensor cond = Tensor::from_vector<bool>({false, true, true}, {3});
  auto axis0 = run_op("Compress", {x, cond}, attrs({{"axis", int64_t{0}}}));
  EXPECT_EQ(values_of<float>(axis0[0]), (std::vector<float>{2, 3, 4, 5}));
  auto flat = run_op("Compress", {x, cond});
  EXPECT_EQ(values_of<float>(flat[0]), (std::vector<float>{1, 2}));
  auto nz = run_op("NonZero", {floats({0, 3, 0, 4}, {2, 2})});
  EXPECT_EQ(nz[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values_of<int64_t>(nz[0]), (std::vector<int64_t>{0, 1, 1, 1}));
  auto t = infer_op("NonZero", {ir::ValueType::of(DType::float32, {2, 2})});
  EXPECT_EQ(t[0].dims, (std::vector<ir::Dim>{dim(2), ir::Dim{}}));
}

TEST(Unique, SortedUnsortedAndAxis) {
  Tensor x = floats({2, 1, 1, 3, 4, 3});
  auto sorted = run_op("Unique", {x}, {}, 13, 4);
  EXPECT_EQ(values_of<float>(sorted[0]), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(values_of<int64_t>(sorted[1]), (std::vector<int64_t>{1, 0, 3, 4}));
  EXPECT_EQ(values_of<int64_t>(sorted[2]), (std::vector<int64_t>{1, 0, 0, 2, 3, 2}));
  EXPECT_EQ(values_of<int64_t>(sorted[3]), (std::vector<int64_t>{2, 1, 2, 1}));
  auto unsorted = run_op("Unique", {x}, attrs({{"sorted", int64_t{0}}}), 13, 4);
  EXPECT_EQ(values_of<float>(unsorted[0]), (std::vector<float>{2, 1, 3, 4}));
  EXPECT_EQ(values_of<int64_t>(unsorted[2]), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  Tensor rows = floats({1, 0, 0, 1, 1, 0}, {3, 2});
  auto by_row = run_op("Unique", {rows}, attrs({{"axis", int64_t{0}}}), 13, 1);
  EXPECT_EQ(by_row[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values_of<float>(by_row[0]), (std::vector<float>{0, 1, 1, 0}));
}

TEST(ReverseSequence, TimeMajorAndBatchMajor) {
  Tensor x = iota_floats({3, 2});  // [time, batch]
  auto out = run_op("ReverseSequence", {x, ints({3, 1})});
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{4, 1, 2, 3, 0, 5}));
  Tensor b = iota_floats({2, 3});  // [batch, time]
  auto batch_major =
      run_op("ReverseSequence", {b, ints({2, 3})}, attrs({{"batch_axis", int64_t{0}}, {"time_axis", int64_t{1}}}));
  EXPECT_EQ(values_of<float>(batch_major[0]), (std::vector<float>{1, 0, 2, 5, 4, 3}));
  expect_error(ErrorKind::invalid_model, [&] { run_op("ReverseSequence", {x, ints({4, 1})}); });
}

TEST(Trilu, UpperLowerWithK) {
  Tensor x = floats({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  EXPECT_EQ(values_of<float>(run_op("Trilu", {x})[0]), (std::vector<float>{1, 2, 3, 0, 5, 6, 0, 0, 9}));
  EXPECT_EQ(values_of<float>(run_op("Trilu", {x, Tensor::scalar<int64_t>(-1)}, attrs({{"upper", int64_t{0}}}))[0]),
            (std::vector<float>{0, 0, 0, 4, 0, 0, 7, 8, 0}));
  EXPECT_EQ(values_of<float>(run_op("Trilu", {x, Tensor::scalar<int64_t>(2)})[0]),
            (std::vector<float>{0, 0, 3, 0, 0, 0, 0, 0, 0}));
}

}  // namespace

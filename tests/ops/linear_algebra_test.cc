// Einsum (against a brute-force sum over every label assignment) and Det.
#include <gtest/gtest.h>

#include <map>

#include "ops/math_op_runner.h"

using namespace graft;
using namespace graft::testing;

namespace {

/// Brute-force einsum for equations made of letters only (explicit output).
Tensor reference_einsum(const std::string& equation, const std::vector<Tensor>& inputs) {
  const size_t arrow = equation.find("->");
  std::vector<std::string> terms;
  std::string lhs = equation.substr(0, arrow), out_term = equation.substr(arrow + 2);
  size_t start = 0;
  for (size_t comma; (comma = lhs.find(',', start)) != std::string::npos; start = comma + 1)
    terms.push_back(lhs.substr(start, comma - start));
  terms.push_back(lhs.substr(start));
  std::map<char, int64_t> sizes;
  for (size_t i = 0; i < terms.size(); ++i)
    for (size_t d = 0; d < terms[i].size(); ++d) sizes[terms[i][d]] = std::max(sizes[terms[i][d]], inputs[i].dim(d));
  std::vector<char> labels;
  for (auto& [c, s] : sizes) labels.push_back(c);
  Shape out_shape;
  for (char c : out_term) out_shape.push_back(sizes[c]);
  Tensor y(DType::float64, out_shape);
  std::map<char, int64_t> index;
  std::function<void(size_t)> visit = [&](size_t k) {
    if (k == labels.size()) {
      double product = 1;
      for (size_t i = 0; i < terms.size(); ++i) {
        int64_t offset = 0;
        for (size_t d = 0; d < terms[i].size(); ++d)
          offset = offset * inputs[i].dim(d) + (inputs[i].dim(d) == 1 ? 0 : index[terms[i][d]]);
        product *= inputs[i].value_as_double(offset);
      }
      int64_t out = 0;
      for (size_t d = 0; d < out_term.size(); ++d) out = out * out_shape[d] + index[out_term[d]];
      y.data<double>()[out] += product;
      return;
    }
    for (int64_t v = 0; v < sizes[labels[k]]; ++v) {
      index[labels[k]] = v;
      visit(k + 1);
    }
  };
  visit(0);
  return y;
}

Tensor as_double(const Tensor& t) {
  Tensor out(DType::float64, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) out.data<double>()[i] = t.value_as_double(i);
  return out;
}

void check_einsum(const std::string& equation, const std::vector<Shape>& shapes,
                  const std::string& reference_equation = "") {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < shapes.size(); ++i) inputs.push_back(random_tensor(shapes[i], 100 + i));
  Tensor y = run_op("Einsum", inputs, attrs({{"equation", equation}}), 12)[0];
  Tensor want = reference_einsum(reference_equation.empty() ? equation : reference_equation, inputs);
  SCOPED_TRACE(equation);
  expect_close(as_double(y), want, 1e-4, 1e-5);
}

}  // namespace

TEST(Einsum, CommonPatterns) {
  check_einsum("ij,jk->ik", {{3, 4}, {4, 5}});
  check_einsum("ij,kj->ik", {{3, 4}, {5, 4}});
  check_einsum("ji,jk->ik", {{4, 3}, {4, 5}});
  check_einsum("bhqd,bhkd->bhqk", {{2, 3, 5, 4}, {2, 3, 6, 4}});
  check_einsum("bhqk,bhkd->bhqd", {{2, 3, 5, 6}, {2, 3, 6, 4}});
  check_einsum("bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}});
  check_einsum("ij->ji", {{3, 4}});
  check_einsum("ij->", {{3, 4}});
  check_einsum("ij->i", {{3, 4}});
  check_einsum("i,i->", {{7}, {7}});
  check_einsum("i,j->ij", {{3}, {4}});
  check_einsum("ii->i", {{4, 4}});
  check_einsum("ii->", {{4, 4}});
  check_einsum("bii->bi", {{2, 3, 3}});
  check_einsum("ijk,jil->kl", {{3, 4, 5}, {4, 3, 2}});
  check_einsum("ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}});
  check_einsum("abc,cd,bd->ad", {{2, 3, 4}, {4, 5}, {3, 5}});
  check_einsum("ij,ij->ij", {{3, 4}, {3, 4}});
  check_einsum("ij,j->i", {{3, 4}, {4}});
  check_einsum("ijk->kji", {{2, 3, 4}});
  check_einsum("bn,anm,bm->ba", {{2, 3}, {4, 3, 5}, {2, 5}});
}

TEST(Einsum, EllipsisImplicitOutputAndBroadcast) {
  // "...ii->...i" on [2, 3, 3]: the batch diagonal.
  check_einsum("...ii->...i", {{2, 3, 3}}, "bii->bi");
  check_einsum("...ij,...jk->...ik", {{2, 3, 4}, {2, 4, 5}}, "bij,bjk->bik");
  // Implicit output: letters used once, sorted; "ij,jk" -> "ik".
  check_einsum("ij,jk", {{3, 4}, {4, 5}}, "ij,jk->ik");
  check_einsum("ba", {{3, 4}}, "ba->ab");
  check_einsum("i,i", {{5}, {5}}, "i,i->");
  // Ellipsis with broadcasting of a size-1 batch dimension.
  check_einsum("...ij,...jk->...ik", {{2, 3, 4}, {1, 4, 5}}, "bij,bjk->bik");
  check_einsum("...ij,jk", {{2, 3, 4}, {4, 5}}, "bij,jk->bik");
}

TEST(Einsum, DtypesInferenceAndErrors) {
  Tensor a = Tensor::from_vector<int64_t>({1, 2, 3, 4}, {2, 2}), b = Tensor::from_vector<int64_t>({5, 6, 7, 8}, {2, 2});
  Tensor y = run_op("Einsum", {a, b}, attrs({{"equation", std::string("ij,jk->ik")}}), 12)[0];
  EXPECT_EQ(y.to_int64_vector(), (std::vector<int64_t>{19, 22, 43, 50}));
  Tensor ad = Tensor::from_vector<double>({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(run_op("Einsum", {ad}, attrs({{"equation", std::string("ii")}}), 12)[0].value_as_double(0), 5.0);
  auto t = infer_op("Einsum",
                    {ir::ValueType{DType::float32, true, {sym("B"), dim(12), sym("S"), dim(64)}},
                     ir::ValueType{DType::float32, true, {sym("B"), dim(12), sym("S"), dim(64)}}},
                    attrs({{"equation", std::string("bhqd,bhkd->bhqk")}}), 12);
  EXPECT_EQ(t[0], (ir::ValueType{DType::float32, true, {sym("B"), dim(12), sym("S"), sym("S")}}));
  EXPECT_THROW(run_op("Einsum", {a, b}, attrs({{"equation", std::string("ij,jk->iz")}}), 12), Error);
  EXPECT_THROW(run_op("Einsum", {a, b}, attrs({{"equation", std::string("ijk,jk->i")}}), 12), Error);
  EXPECT_THROW(run_op("Einsum", {a}, attrs({{"equation", std::string("ij,jk->ik")}}), 12), Error);
  EXPECT_THROW(run_op("Einsum", {random_tensor({2, 3}, 1), random_tensor({4, 2}, 2)},
                      attrs({{"equation", std::string("ij,jk->ik")}}), 12),
               Error);
}

TEST(Det, MatchesClosedFormsAndBatches) {
  Tensor m2 = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  EXPECT_NEAR(run_op("Det", {m2}, {}, 11)[0].data<float>()[0], -2.0f, 1e-6);
  // A batch: a permutation (det -1), a diagonal (24) and a singular matrix (0).
  Tensor batch = Tensor::from_vector<double>(
      {0, 1, 0, 1, 0, 0, 0, 0, 1, 2, 0, 0, 0, 3, 0, 0, 0, 4, 1, 2, 3, 2, 4, 6, 0, 1, 1}, {3, 3, 3});
  Tensor d = run_op("Det", {batch}, {}, 11)[0];
  ASSERT_EQ(d.shape(), Shape{3});
  EXPECT_NEAR(d.data<double>()[0], -1.0, 1e-12);
  EXPECT_NEAR(d.data<double>()[1], 24.0, 1e-12);
  EXPECT_NEAR(d.data<double>()[2], 0.0, 1e-12);
  EXPECT_THROW(run_op("Det", {random_tensor({2, 3}, 1)}, {}, 11), Error);
  auto t = infer_op("Det", {ir::ValueType{DType::float32, true, {sym("N"), dim(3), dim(3)}}}, {}, 11);
  EXPECT_EQ(t[0], (ir::ValueType{DType::float32, true, {sym("N")}}));
}

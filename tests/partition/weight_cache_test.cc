// A backend whose module keeps a converted copy of a weight must convert again
// when the weight changes through the public API (Session::set_weight bumps
// the storage version).
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>

#include "graft/partition/contain_op_selector.h"
#include "graft/backend/backend.h"
#include "graft/runtime/session.h"
#include "support/graph_runner.h"

using namespace graft;
using graft::testing::expect_close;

namespace {

std::atomic<int> conversions{0};

// Runs Mul(x, W) where W is a constant in the body; keeps W negated ("converted"
// to its own layout) and computes x * -(-W).
class CachingModule final : public backend::CompiledModule {
 public:
  explicit CachingModule(const ir::Graph& body) {
    for (const auto& node : body.nodes())
      if (node->op_type() == "Constant") weight_ = node->constant_value;
    GRAFT_CHECK(weight_.is_defined(), "the weightcache body has no constant");
  }
  std::string type_key() const override { return "weightcache"; }
  std::vector<Tensor> run(std::span<const Tensor> inputs, backend::ModuleRunContext&) const override {
    Tensor converted;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!converted_.is_defined() || converted_version_ != weight_.version()) {
        converted_version_ = weight_.version();
        converted_ = Tensor(DType::float32, weight_.shape());
        for (int64_t i = 0; i < weight_.numel(); ++i) converted_.data<float>()[i] = -weight_.data<float>()[i];
        ++conversions;
      }
      converted = converted_;
    }
    Tensor out(DType::float32, inputs[0].shape());
    for (int64_t i = 0; i < out.numel(); ++i)
      out.data<float>()[i] = inputs[0].data<float>()[i] * -converted.data<float>()[i];
    return {out};
  }

 private:
  Tensor weight_;
  mutable std::mutex mutex_;
  mutable Tensor converted_;
  mutable uint64_t converted_version_ = 0;
};

class WeightCacheProperty final : public partition::SubgraphProperty {
 public:
  std::unique_ptr<partition::SubgraphSelector> CreateSubgraphSelector() const override {
    return std::make_unique<partition::ContainOpSelector>(std::set<std::string, std::less<>>{"Mul"});
  }
};

// One registration: the backend says what it takes (its property) and how it compiles.
class WeightCacheBackend final : public backend::Backend {
 public:
  std::string name() const override { return "weightcache"; }
  int default_rank() const override { return 900; }
  std::shared_ptr<const partition::SubgraphProperty> property() const override {
    auto property = std::make_shared<WeightCacheProperty>();
    property->set_backend_name(name());
    return property;
  }
  std::unique_ptr<backend::CompiledModule> compile(const ir::Graph& body, const backend::CompileOptions&) const override {
    return std::make_unique<CachingModule>(body);
  }
};
GRAFT_REGISTER_BACKEND(WeightCacheBackend);


std::unique_ptr<ir::Graph> scale_graph() {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  ir::Node* x = g->add_input("x", ir::ValueType::of(DType::float32, {4}));
  ir::Node* w = g->add_constant("w", Tensor::from_vector<float>({1, 2, 3, 4}, {4}));
  ir::Node* mul = g->add_node("Mul", {x->output(0), w->output(0)}, 1, "scale");
  g->add_output(mul->output(0), "y");
  return g;
}

}  // namespace

TEST(WeightCache, ChangedWeightIsConvertedAgainAndUsed) {
  runtime::SessionOptions options;
  options.backends = {"weightcache"};
  runtime::Session session(scale_graph(), options);
  ASSERT_EQ(session.partition_report().subgraphs.size(), 1u);
  conversions = 0;
  Tensor x = Tensor::from_vector<float>({1, 1, 2, 2}, {4});
  expect_close(session.run({x})[0], Tensor::from_vector<float>({1, 2, 6, 8}, {4}));
  expect_close(session.run({x})[0], Tensor::from_vector<float>({1, 2, 6, 8}, {4}));
  EXPECT_EQ(conversions.load(), 1);

  session.set_weight("w", Tensor::from_vector<float>({10, 20, 30, 40}, {4}));
  expect_close(session.run({x})[0], Tensor::from_vector<float>({10, 20, 60, 80}, {4}));
  expect_close(session.run({x})[0], Tensor::from_vector<float>({10, 20, 60, 80}, {4}));
  EXPECT_EQ(conversions.load(), 2);

  session.set_weight("w", Tensor::from_vector<float>({1, 1, 1, 1}, {4}));
  expect_close(session.run({x})[0], x);
  EXPECT_EQ(conversions.load(), 3);
}

TEST(WeightCache, SetWeightRejectsUnknownNamesAndOtherShapes) {
  runtime::SessionOptions options;
  options.backends = {"weightcache"};
  runtime::Session session(scale_graph(), options);
  try {
    session.set_weight("nope", Tensor::from_vector<float>({1}, {1}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("'nope'"), std::string::npos);
  }
  try {
    session.set_weight("w", Tensor::from_vector<float>({1, 2}, {2}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("float32[4]"), std::string::npos);
  }
}

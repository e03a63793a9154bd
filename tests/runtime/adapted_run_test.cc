// Sessions that adapt their thread count to the load (SessionOptions::
// adapt_threads): on a machine whose counters say a co-tenant takes a core,
// runs after the first use one thread and compute what the full-thread runs
// compute; on a quiet machine they keep every thread.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graft/frontend/onnx_import.h"
#include "graft/runtime/core_availability.h"
#include "graft/runtime/session.h"
#include "graft/runtime/simulated_load.h"
#include "graft/zoo/zoo.h"
#include "support/graph_runner.h"

namespace graft::testing {
namespace {

std::vector<Tensor> inputs_for(const runtime::Session& session) {
  std::vector<Tensor> inputs;
  uint64_t seed = 11;
  for (const runtime::ValueInfo& info : session.inputs()) {
    Shape shape;
    for (const ir::Dim& dim : info.type.dims) shape.push_back(dim.is_known() ? dim.value : 1);  // batch 1
    inputs.push_back(random_tensor(shape, seed++));
  }
  return inputs;
}

class AdaptedRun : public ::testing::TestWithParam<std::string> {};

TEST_P(AdaptedRun, OnOneThreadComputesWhatTheFullThreadRunComputes) {
  const std::string model = zoo::build_zoo_model(GetParam(), 3);
  runtime::SessionOptions full;
  full.num_threads = 2;
  full.adapt_threads = false;
  runtime::SessionOptions adapted = full;
  adapted.adapt_threads = true;
  adapted.core_availability = runtime::simulated_load(2, 1.0);
  runtime::Session full_session(frontend::load_onnx_from_memory(model), full);
  runtime::Session adapted_session(frontend::load_onnx_from_memory(model), adapted);
  std::vector<Tensor> inputs = inputs_for(full_session);
  // Each run's end decides; the second contended decision in a row reduces.
  for (int run = 0; run < 4; ++run) {
    backend::RunStats full_stats, adapted_stats;
    std::vector<Tensor> want = full_session.run(inputs, &full_stats);
    std::vector<Tensor> got = adapted_session.run(inputs, &adapted_stats);
    EXPECT_EQ(full_stats.num_threads, 2);
    EXPECT_EQ(adapted_stats.num_threads, run < 2 ? 2 : 1) << "run " << run;
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 1e-4, 1e-5);
  }
}

TEST_P(AdaptedRun, OnAQuietMachineKeepsEveryThread) {
  runtime::SessionOptions options;
  options.num_threads = 2;
  options.adapt_threads = true;
  options.core_availability = runtime::simulated_load(2, 0.2);
  runtime::Session session(frontend::load_onnx_from_memory(zoo::build_zoo_model(GetParam(), 3)), options);
  std::vector<Tensor> inputs = inputs_for(session);
  for (int run = 0; run < 4; ++run) {
    backend::RunStats stats;
    session.run(inputs, &stats);
    EXPECT_EQ(stats.num_threads, 2) << "run " << run;
  }
}

// Matmuls with fused pointwise gates (gru_cell), and convolutions, pools
// and concats (squeezenet): what the dnnl backend re-creates for fewer
// threads and what it runs as it was built.
INSTANTIATE_TEST_SUITE_P(Models, AdaptedRun, ::testing::Values("gru_cell", "squeezenet"));

}  // namespace
}  // namespace graft::testing

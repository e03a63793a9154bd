// The compile cache on the CUDA target: PTX from NVRTC is kept in memory and
// in GRAFT_CACHE_DIR, keyed without shapes; damaged disk entries are misses
// and are rewritten. NVRTC needs no GPU, so these run wherever the CUDA
// toolkit is installed (and skip, with the reason, where it is not).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "graft/codegen/compile_cache.h"
#include "graft/codegen/cuda_emitter.h"
#include "graft/codegen/op_expressions.h"
#include "graft/ops/type_inference.h"

namespace graft::codegen {
namespace {

/// The body tanh(x) * c + x on an input of `shape`, lowered to kernel IR.
ir::KernelIR kernel_of(double c, const Shape& shape) {
  ir::Graph g;
  g.opset_imports[""] = 17;
  ir::Value x = g.add_input("x", ir::ValueType::of(DType::float32, shape))->output(0);
  ir::Value k = g.add_constant("c", Tensor::scalar<float>(static_cast<float>(c)))->output(0);
  ir::Value t = g.add_node("Mul", {g.add_node("Tanh", {x})->output(0), k})->output(0);
  g.add_output(g.add_node("Add", {t, x})->output(0), "y");
  ops::infer_types(g);
  return lower_body(g).ir;
}

class CudaCompileCache : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = nvrtc_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
    char pattern[] = "/tmp/graft_cuda_cache_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    unsetenv("GRAFT_CACHE_DIR");
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::filesystem::path entry_of(const ir::KernelIR& ir, const std::string& architecture) {
    return std::filesystem::path(dir_) / (CompileCache::global().cuda_key(ir, architecture) + ".ptx");
  }
  std::string dir_;
};

TEST_F(CudaCompileCache, ASecondShapeOrRequestCompilesNothing) {
  CompileCache& cache = CompileCache::global();
  cache.clear_memory();
  CompileCounters& n = cache.counters();
  uint64_t compiles = n.cuda_compiles, hits = n.cuda_memory_hits;
  ir::KernelIR small = kernel_of(0.375, {4}), large = kernel_of(0.375, {64, 1000});
  EXPECT_EQ(cache.cuda_key(small, "compute_75"), cache.cuda_key(large, "compute_75"));
  std::shared_ptr<const std::string> ptx = cache.cuda_ptx(small, "compute_75");
  EXPECT_NE(ptx->find(".entry graft_kernel("), std::string::npos);
  EXPECT_EQ(n.cuda_compiles, compiles + 1);
  EXPECT_EQ(cache.cuda_ptx(large, "compute_75"), ptx);  // the same entry
  EXPECT_EQ(n.cuda_compiles, compiles + 1);
  EXPECT_EQ(n.cuda_memory_hits, hits + 1);
  // Another architecture, another constant: other kernels.
  EXPECT_NE(cache.cuda_key(small, "compute_90"), cache.cuda_key(small, "compute_75"));
  EXPECT_NE(cache.cuda_key(kernel_of(0.5, {4}), "compute_75"), cache.cuda_key(small, "compute_75"));
  cache.cuda_ptx(small, "compute_90");
  EXPECT_EQ(n.cuda_compiles, compiles + 2);
}

TEST_F(CudaCompileCache, DiskEntriesAreReusedAndDamagedOnesRewritten) {
  setenv("GRAFT_CACHE_DIR", dir_.c_str(), 1);
  CompileCache& cache = CompileCache::global();
  CompileCounters& n = cache.counters();
  ir::KernelIR ir = kernel_of(0.625, {8});
  cache.clear_memory();
  uint64_t compiles = n.cuda_compiles, disk_hits = n.cuda_disk_hits;
  std::string first = *cache.cuda_ptx(ir, "compute_75");
  ASSERT_TRUE(std::filesystem::exists(entry_of(ir, "compute_75")));
  uintmax_t size = std::filesystem::file_size(entry_of(ir, "compute_75"));
  cache.clear_memory();
  EXPECT_EQ(*cache.cuda_ptx(ir, "compute_75"), first);
  EXPECT_EQ(n.cuda_compiles, compiles + 1);
  EXPECT_EQ(n.cuda_disk_hits, disk_hits + 1);

  // Truncated, one flipped byte, garbage: each a miss, compiled and rewritten.
  for (int damage = 0; damage < 3; ++damage) {
    std::string bytes;
    {
      std::ifstream in(entry_of(ir, "compute_75"), std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    if (damage == 0) bytes.resize(bytes.size() / 2);
    if (damage == 1) bytes[bytes.size() - 10] ^= 0x20;
    if (damage == 2) bytes = "not a cache entry";
    {
      std::ofstream out(entry_of(ir, "compute_75"), std::ios::binary | std::ios::trunc);
      out << bytes;
    }
    cache.clear_memory();
    uint64_t rejects = n.disk_rejects, before = n.cuda_compiles;
    EXPECT_EQ(*cache.cuda_ptx(ir, "compute_75"), first) << damage;
    EXPECT_EQ(n.disk_rejects, rejects + 1) << damage;
    EXPECT_EQ(n.cuda_compiles, before + 1) << damage;
    EXPECT_EQ(std::filesystem::file_size(entry_of(ir, "compute_75")), size) << "entry not rewritten, damage " << damage;
  }
}

TEST_F(CudaCompileCache, ABadCacheDirectoryIsAnErrorNamingIt) {
  std::string file = dir_ + "/plain_file";
  std::ofstream(file) << "x";
  setenv("GRAFT_CACHE_DIR", file.c_str(), 1);
  try {
    CompileCache::global().cuda_ptx(kernel_of(0.75, {2}), "compute_75");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("GRAFT_CACHE_DIR"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace graft::codegen

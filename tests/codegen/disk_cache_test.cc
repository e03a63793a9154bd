// GRAFT_CACHE_DIR: disk hits, corrupt and truncated entries, and two
// processes compiling the same kernel at once.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "graft/codegen/compile_cache.h"
#include "graft/core/parallel.h"
#include "graft/backend/buffer_pool.h"

namespace graft::codegen {
namespace {

/// y = tanh(x) * c + x, with a constant that makes the key unique per test.
ir::KernelIR kernel_with_constant(double c) {
  ir::KernelIR ir;
  ir.input_dtypes = {DType::float32};
  int32_t x = ir.add_input(0, DType::float32);
  int32_t t = ir.add_op(ir::ExprOp::tanh, DType::float32, x);
  int32_t m = ir.add_op(ir::ExprOp::mul, DType::float32, t, ir.add_constant(DType::float32, c));
  ir.outputs = {ir.add_op(ir::ExprOp::add, DType::float32, m, x)};
  return canonicalize(ir);
}

/// True when the runner computes the kernel correctly on a few values.
bool runs_correctly(const KernelRunner& runner, const ir::KernelIR& ir, double c) {
  Tensor x = Tensor::from_vector<float>({-2.0f, -0.5f, 0.0f, 0.25f, 3.0f}, {5});
  backend::BufferPool pool;
  Tensor y = run_kernel(ir, runner, {&x, 1}, pool)[0];
  for (int64_t i = 0; i < 5; ++i) {
    double v = x.data<float>()[i];
    if (std::abs(y.data<float>()[i] - (std::tanh(v) * c + v)) > 1e-5) return false;
  }
  return true;
}

class DiskCache : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CompileCache::global().cpu_key(kernel_with_constant(1)).empty()) GTEST_SKIP() << "built without LLVM";
    if (const char* jit = std::getenv("GRAFT_JIT"); jit && std::string(jit) == "0") GTEST_SKIP() << "GRAFT_JIT=0";
    char pattern[] = "/tmp/graft_cache_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    setenv("GRAFT_CACHE_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("GRAFT_CACHE_DIR");
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::filesystem::path entry_of(const ir::KernelIR& ir) {
    return std::filesystem::path(dir_) / (CompileCache::global().cpu_key(ir) + ".gko");
  }
  std::string dir_;
};

TEST_F(DiskCache, SecondLoadIsADiskHitAndDamagedEntriesAreRewritten) {
  CompileCache& cache = CompileCache::global();
  ir::KernelIR ir = kernel_with_constant(0.125);
  cache.clear_memory();
  uint64_t compiles = cache.counters().compiles, hits = cache.counters().disk_hits;
  auto first = cache.cpu_runner(ir);
  EXPECT_STREQ(first->kind(), "llvm");
  EXPECT_EQ(cache.counters().compiles, compiles + 1);
  ASSERT_TRUE(std::filesystem::exists(entry_of(ir)));
  uintmax_t size = std::filesystem::file_size(entry_of(ir));

  cache.clear_memory();
  auto second = cache.cpu_runner(ir);
  EXPECT_EQ(cache.counters().compiles, compiles + 1);
  EXPECT_EQ(cache.counters().disk_hits, hits + 1);
  EXPECT_TRUE(runs_correctly(*second, ir, 0.125));

  // A truncated entry, then one with a flipped payload byte, then garbage.
  for (int damage = 0; damage < 3; ++damage) {
    std::string bytes;
    {
      std::ifstream in(entry_of(ir), std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    if (damage == 0) bytes.resize(bytes.size() / 2);
    if (damage == 1) bytes[bytes.size() - 100] ^= 0x5a;
    if (damage == 2) bytes = "not a cache entry";
    {
      std::ofstream out(entry_of(ir), std::ios::binary | std::ios::trunc);
      out << bytes;
    }
    cache.clear_memory();
    uint64_t rejects = cache.counters().disk_rejects, before = cache.counters().compiles;
    auto runner = cache.cpu_runner(ir);
    EXPECT_STREQ(runner->kind(), "llvm");
    EXPECT_TRUE(runs_correctly(*runner, ir, 0.125));
    EXPECT_EQ(cache.counters().disk_rejects, rejects + 1) << damage;
    EXPECT_EQ(cache.counters().compiles, before + 1) << damage;
    EXPECT_EQ(std::filesystem::file_size(entry_of(ir)), size) << "entry not rewritten, damage " << damage;
  }
}

TEST_F(DiskCache, EntriesAreLinkedByGraftAndTheHostsTargetIsRecorded) {
  CompileCache& cache = CompileCache::global();
  ir::KernelIR ir = kernel_with_constant(0.375);
  cache.clear_memory();
  auto compiled = cache.cpu_runner(ir);
  ASSERT_STREQ(compiled->kind(), "llvm");
  // The record of this host's target: what a process without LLVM computes keys with.
  std::vector<std::filesystem::path> records;
  for (const auto& entry : std::filesystem::directory_iterator(dir_))
    if (entry.path().extension() == ".gkt") records.push_back(entry.path());
  ASSERT_EQ(records.size(), 1u);
  std::string record;
  {
    std::ifstream in(records[0], std::ios::binary);
    record.assign(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_NE(record.find(cpu_jit_target()), std::string::npos);

  cache.clear_memory();
  uint64_t links = cache.counters().native_links, hits = cache.counters().disk_hits,
           compiles = cache.counters().compiles;
  auto loaded = cache.cpu_runner(ir);
  EXPECT_EQ(cache.counters().disk_hits, hits + 1);
  EXPECT_EQ(cache.counters().native_links, links + 1);
  EXPECT_EQ(cache.counters().compiles, compiles);
  EXPECT_TRUE(runs_correctly(*loaded, ir, 0.125 * 3));

  // A damaged record is rewritten when a kernel next compiles.
  std::ofstream(records[0], std::ios::binary | std::ios::trunc) << "damaged";
  cache.clear_memory();
  auto other = cache.cpu_runner(kernel_with_constant(0.625));
  EXPECT_TRUE(runs_correctly(*other, kernel_with_constant(0.625), 0.625));
  std::string rewritten;
  {
    std::ifstream in(records[0], std::ios::binary);
    rewritten.assign(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_EQ(rewritten, record);
}

TEST_F(DiskCache, TwoProcessesCompilingTheSameKernelBothSucceed) {
  ir::KernelIR ir = kernel_with_constant(0.75);
  CompileCache::global().clear_memory();
  pid_t children[2];
  for (pid_t& child : children) {
    child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      // No OpenMP in a forked child: one thread, inline.
      ScopedNumThreads one(1);
      bool ok = false;
      try {
        auto runner = CompileCache::global().cpu_runner(ir);
        ok = std::string(runner->kind()) == "llvm" && runs_correctly(*runner, ir, 0.75) &&
             CompileCache::global().counters().compiles + CompileCache::global().counters().disk_hits >= 1;
      } catch (...) {
      }
      _exit(ok ? 0 : 1);
    }
  }
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child failed";
  }
  // Exactly one valid entry and this host's target record (no temporary
  // files left), and the entry is what this process loads.
  int entries = 0, records = 0, others = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    std::string extension = entry.path().extension().string();
    (extension == ".gko" ? entries : extension == ".gkt" ? records : others)++;
  }
  EXPECT_EQ(entries, 1);
  EXPECT_LE(records, 1);
  EXPECT_EQ(others, 0);
  uint64_t hits = CompileCache::global().counters().disk_hits;
  auto runner = CompileCache::global().cpu_runner(ir);
  EXPECT_EQ(CompileCache::global().counters().disk_hits, hits + 1);
  EXPECT_TRUE(runs_correctly(*runner, ir, 0.75));
}

}  // namespace
}  // namespace graft::codegen

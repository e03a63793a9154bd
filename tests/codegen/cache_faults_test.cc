// The disk kernel cache (GRAFT_CACHE_DIR) under faults: a process killed
// (SIGKILL) while it writes entries, two processes compiling the same kernels
// at once, a read-only cache directory, a full disk (RLIMIT_FSIZE in a child,
// which works without privileges) and corrupt entries. Each time every kernel
// computes the right values and graft prints at most one warning.
//
// The faults happen in forked children (no OpenMP there: one thread); each
// child writes its stderr to a file the parent reads.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>
#include <thread>

#include "graft/backend/buffer_pool.h"
#include "graft/codegen/compile_cache.h"
#include "graft/core/parallel.h"

namespace graft::codegen {
namespace {

namespace fs = std::filesystem;

/// y = tanh(x) * c + x; each c is its own kernel (and cache key).
ir::KernelIR kernel_with_constant(double c) {
  ir::KernelIR ir;
  ir.input_dtypes = {DType::float32};
  int32_t x = ir.add_input(0, DType::float32);
  int32_t t = ir.add_op(ir::ExprOp::tanh, DType::float32, x);
  int32_t m = ir.add_op(ir::ExprOp::mul, DType::float32, t, ir.add_constant(DType::float32, c));
  ir.outputs = {ir.add_op(ir::ExprOp::add, DType::float32, m, x)};
  return canonicalize(ir);
}

/// The constant of kernel `i` of a test (`base` keeps tests' keys apart).
double constant_of(int base, int i) { return base + 0.5 * i; }

/// True when the runner computes the kernel correctly on a few values.
bool runs_correctly(const KernelRunner& runner, const ir::KernelIR& ir, double c) {
  Tensor x = Tensor::from_vector<float>({-2.0f, -0.5f, 0.0f, 0.25f, 3.0f}, {5});
  backend::BufferPool pool;
  Tensor y = run_kernel(ir, runner, {&x, 1}, pool)[0];
  for (int64_t i = 0; i < 5; ++i) {
    double v = x.data<float>()[i];
    double expected = std::tanh(v) * c + v;
    if (std::abs(y.data<float>()[i] - expected) > 1e-5 * std::max(1.0, std::abs(expected))) return false;
  }
  return true;
}

/// Compiles (or loads) kernels 0..count-1 and checks each one's values;
/// false at the first wrong one. The JIT must serve them, not the interpreter.
bool compile_and_check(int base, int count) {
  CompileCache& cache = CompileCache::global();
  for (int i = 0; i < count; ++i) {
    double c = constant_of(base, i);
    ir::KernelIR ir = kernel_with_constant(c);
    auto runner = cache.cpu_runner(ir);
    if (std::string(runner->kind()) != "llvm" || !runs_correctly(*runner, ir, c)) return false;
  }
  return true;
}

/// What a child reports back.
struct ChildResult {
  int exit_code = -1;  ///< -1: killed by a signal
  std::string stderr_text;
};

class CacheFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CompileCache::global().cpu_key(kernel_with_constant(1)).empty()) GTEST_SKIP() << "built without LLVM";
    if (const char* jit = std::getenv("GRAFT_JIT"); jit && std::string(jit) == "0") GTEST_SKIP() << "GRAFT_JIT=0";
    char pattern[] = "/tmp/graft_cache_faults_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root_ = pattern;
    fs::permissions(root_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);  // readable by the read-only test's user
    dir_ = root_ / "cache";
    fs::create_directory(dir_);
    setenv("GRAFT_CACHE_DIR", dir_.c_str(), 1);
    CompileCache::global().clear_memory();
  }
  void TearDown() override {
    unsetenv("GRAFT_CACHE_DIR");
    if (!root_.empty()) {
      std::error_code ignored;
      fs::permissions(dir_, fs::perms::owner_all, ignored);
      fs::remove_all(root_, ignored);
    }
  }

  /// Forks a child that runs `body` (exit 0 when it returns true) with its
  /// stderr in a file. `prepare` runs in the child first (limits, users).
  pid_t start_child(const std::function<bool()>& body, const std::function<void()>& prepare = {}) {
    fs::path log = root_ / ("child" + std::to_string(children_++) + ".stderr");
    pid_t child = fork();
    if (child != 0) {
      logs_[child] = log;
      return child;
    }
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) ::dup2(fd, 2);
    bool ok = false;
    try {
      if (prepare) prepare();
      ScopedNumThreads one(1);  // no OpenMP in a forked child
      CompileCache::global().clear_memory();
      ok = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child failed: %s\n", e.what());
    }
    std::fflush(stderr);
    _exit(ok ? 0 : 1);
  }

  ChildResult wait_child(pid_t child) {
    int status = 0;
    ChildResult result;
    if (waitpid(child, &status, 0) != child) return result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream in(logs_[child]);
    result.stderr_text.assign(std::istreambuf_iterator<char>(in), {});
    return result;
  }

  ChildResult run_child(const std::function<bool()>& body, const std::function<void()>& prepare = {}) {
    return wait_child(start_child(body, prepare));
  }

  int count_files(const std::string& suffix) const {
    int n = 0;
    for (const auto& entry : fs::directory_iterator(dir_))
      n += entry.path().filename().string().ends_with(suffix);
    return n;
  }

  static int count_warnings(const std::string& text) {
    int n = 0;
    for (size_t at = text.find("graft: warning:"); at != std::string::npos; at = text.find("graft: warning:", at + 1)) ++n;
    return n;
  }

  fs::path root_, dir_;
  int children_ = 0;
  std::map<pid_t, fs::path> logs_;
};

TEST_F(CacheFaults, ProcessKilledWhileWritingEntriesLeavesAUsableCache) {
  constexpr int kBase = 1000, kKernels = 60;
  pid_t writer = start_child([] { return compile_and_check(kBase, kKernels); });
  // Kill it once a few entries are in: it is then compiling and writing the next.
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (count_files(".gko") < 4 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ::kill(writer, SIGKILL);
  ChildResult killed = wait_child(writer);
  ASSERT_EQ(killed.exit_code, -1) << "the writer finished before it was killed: " << killed.stderr_text;
  const int complete = count_files(".gko");
  ASSERT_GE(complete, 4);
  ASSERT_LT(complete, kKernels);

  // What a torn write on a filesystem without atomic rename would leave too:
  // half an entry, and a temporary file cut short.
  fs::path torn = fs::directory_iterator(dir_)->path();
  for (const auto& entry : fs::directory_iterator(dir_))
    if (entry.path().extension() == ".gko") torn = entry.path();
  fs::resize_file(torn, fs::file_size(torn) / 2);
  std::ofstream(dir_ / ".partial.gko.1.1.0.tmp") << "GRAFTKO1 cut short";

  // A fresh process: every kernel right, the complete entries loaded, the torn one rewritten, no warning.
  ChildResult fresh = run_child([] {
    CompileCounters& counters = CompileCache::global().counters();
    uint64_t hits = counters.disk_hits, rejects = counters.disk_rejects;
    bool ok = compile_and_check(kBase, kKernels);
    std::fprintf(stderr, "disk hits %llu rejects %llu\n", static_cast<unsigned long long>(counters.disk_hits - hits),
                 static_cast<unsigned long long>(counters.disk_rejects - rejects));
    return ok;
  });
  EXPECT_EQ(fresh.exit_code, 0) << fresh.stderr_text;
  EXPECT_EQ(count_warnings(fresh.stderr_text), 0) << fresh.stderr_text;
  EXPECT_NE(fresh.stderr_text.find("disk hits " + std::to_string(complete - 1) + " rejects 1"), std::string::npos)
      << fresh.stderr_text;
  EXPECT_EQ(count_files(".gko"), kKernels);
  // And this process now loads every one from disk.
  CompileCache::global().clear_memory();
  uint64_t hits = CompileCache::global().counters().disk_hits;
  EXPECT_TRUE(compile_and_check(kBase, kKernels));
  EXPECT_EQ(CompileCache::global().counters().disk_hits, hits + kKernels);
}

TEST_F(CacheFaults, TwoProcessesCompilingTheSameKernelsBothSucceed) {
  constexpr int kBase = 2000, kKernels = 30;
  pid_t first = start_child([] { return compile_and_check(kBase, kKernels); });
  pid_t second = start_child([] { return compile_and_check(kBase, kKernels); });
  ChildResult a = wait_child(first), b = wait_child(second);
  EXPECT_EQ(a.exit_code, 0) << a.stderr_text;
  EXPECT_EQ(b.exit_code, 0) << b.stderr_text;
  EXPECT_EQ(count_warnings(a.stderr_text + b.stderr_text), 0) << a.stderr_text << b.stderr_text;
  // One valid entry per kernel, no temporary file left, every one a disk hit here.
  EXPECT_EQ(count_files(".gko"), kKernels);
  EXPECT_EQ(count_files(".tmp"), 0);
  uint64_t hits = CompileCache::global().counters().disk_hits;
  EXPECT_TRUE(compile_and_check(kBase, kKernels));
  EXPECT_EQ(CompileCache::global().counters().disk_hits, hits + kKernels);
}

TEST_F(CacheFaults, ReadOnlyCacheDirectoryCompilesAndWarnsOnce) {
  constexpr int kBase = 3000, kKernels = 12;
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                            fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  ChildResult child = run_child([] { return compile_and_check(kBase, kKernels); },
                                [] {
                                  // root writes anywhere: become nobody, for whom the folder is read-only.
                                  if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0))
                                    throw std::runtime_error("cannot drop root");
                                });
  EXPECT_EQ(child.exit_code, 0) << child.stderr_text;
  EXPECT_EQ(count_warnings(child.stderr_text), 1) << child.stderr_text;
  EXPECT_NE(child.stderr_text.find("compile cache"), std::string::npos) << child.stderr_text;
  EXPECT_EQ(count_files(".gko") + count_files(".tmp"), 0);
}

TEST_F(CacheFaults, FullDiskCompilesAndWarnsOnce) {
  constexpr int kBase = 4000, kKernels = 12;
  // Files may not grow past 1 KiB (an entry is several): every write is cut
  // short, as on a full disk. SIGXFSZ ignored, so write() fails with EFBIG.
  ChildResult child = run_child([] { return compile_and_check(kBase, kKernels); },
                                [] {
                                  ::signal(SIGXFSZ, SIG_IGN);
                                  struct rlimit limit = {1024, 1024};
                                  if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) throw std::runtime_error("setrlimit");
                                });
  EXPECT_EQ(child.exit_code, 0) << child.stderr_text;
  EXPECT_EQ(count_warnings(child.stderr_text), 1) << child.stderr_text;
  // Nothing cut short is left behind, and the next process compiles and caches normally.
  EXPECT_EQ(count_files(".gko") + count_files(".tmp"), 0);
  ChildResult next = run_child([] { return compile_and_check(kBase, kKernels); });
  EXPECT_EQ(next.exit_code, 0) << next.stderr_text;
  EXPECT_EQ(count_warnings(next.stderr_text), 0) << next.stderr_text;
  EXPECT_EQ(count_files(".gko"), kKernels);
}

TEST_F(CacheFaults, CorruptEntriesAreMissesWithoutWarnings) {
  constexpr int kBase = 5000, kKernels = 8;
  ASSERT_TRUE(compile_and_check(kBase, kKernels));
  ASSERT_EQ(count_files(".gko"), kKernels);
  // Every way an entry can be damaged: empty, truncated header, wrong magic,
  // a flipped payload byte, a size that lies, trailing bytes, another key's entry.
  std::vector<fs::path> entries;
  for (const auto& entry : fs::directory_iterator(dir_)) entries.push_back(entry.path());
  std::sort(entries.begin(), entries.end());
  std::string other;
  {
    std::ifstream in(entries[0], std::ios::binary);
    other.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (size_t i = 0; i < entries.size() && i < 7; ++i) {
    std::string bytes;
    {
      std::ifstream in(entries[i], std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    switch (i) {
      case 0: bytes.clear(); break;
      case 1: bytes.resize(12); break;
      case 2: bytes[0] = 'X'; break;
      case 3: bytes[bytes.size() - 7] ^= 0x41; break;
      case 4: bytes[8] ^= 0x10; break;
      case 5: bytes += "trailing"; break;
      case 6: bytes = other; break;
    }
    std::ofstream(entries[i], std::ios::binary | std::ios::trunc) << bytes;
  }
  ChildResult child = run_child([] { return compile_and_check(kBase, kKernels); });
  EXPECT_EQ(child.exit_code, 0) << child.stderr_text;
  EXPECT_EQ(count_warnings(child.stderr_text), 0) << child.stderr_text;
  CompileCache::global().clear_memory();
  uint64_t hits = CompileCache::global().counters().disk_hits;
  EXPECT_TRUE(compile_and_check(kBase, kKernels));
  EXPECT_EQ(CompileCache::global().counters().disk_hits, hits + kKernels) << "damaged entries were not rewritten";
}

}  // namespace
}  // namespace graft::codegen

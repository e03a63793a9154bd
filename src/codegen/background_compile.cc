// Compiling fused kernels off the critical path (CompileCache::
// cpu_runner_in_background). One worker thread per process takes compile
// jobs in order, once start_background_compiles() was called (a first run
// is interpreted with every core to itself: a compile competing with it
// stalls its OpenMP barriers, which cost more than the compile saves); each job calls CompileCache::cpu_runner (memory, disk or
// LLVM, the interpreter on failure) and hands the result to the runner that
// queued it, which interprets until then. The switch is one way, so a run
// sees the interpreter, then the compiled kernel, never back: within one run
// chunks may take either (their results agree within the stated error of
// the approximations, docs/codegen.md).
//
// Lifetimes: a runner owns its job's state; destroying the runner cancels a
// job that has not started and waits for one that has, so a Session that is
// destroyed leaves no compile behind. The worker is joined at exit.
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "graft/codegen/compile_cache.h"
#include "graft/codegen/interpreter.h"

namespace graft::codegen {

namespace {

/// One queued compile: its state, shared by the runner and the worker.
struct CompileJob {
  enum class State { queued, running, done, cancelled };
  std::mutex mutex;
  std::condition_variable finished;
  State state = State::queued;
  KernelIR ir;
  std::atomic<const KernelRunner*> ready{nullptr};  // published once `compiled` is set
  std::shared_ptr<const KernelRunner> compiled;
};

class BackgroundCompiler {
 public:
  static BackgroundCompiler& instance() {
    static BackgroundCompiler compiler;
    return compiler;
  }

  void enqueue(std::shared_ptr<CompileJob> job) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!worker_.joinable()) worker_ = std::thread([this] { work(); });
    queue_.push_back(std::move(job));
    wake_.notify_one();
  }

  void start() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (started_) return;
    started_ = true;
    wake_.notify_all();
  }

  void wait_idle() {
    start();
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [&] { return queue_.empty() && !busy_; });
  }

  ~BackgroundCompiler() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (worker_.joinable()) worker_.join();
  }

 private:
  void work() {
    for (;;) {
      std::shared_ptr<CompileJob> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || (started_ && !queue_.empty()); });
        if (stopping_) return;  // at exit: queued jobs are dropped, their runners keep interpreting
        job = std::move(queue_.front());
        queue_.pop_front();
        busy_ = true;
      }
      run(*job);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        busy_ = false;
        if (queue_.empty()) idle_.notify_all();
      }
    }
  }

  static void run(CompileJob& job) {
    {
      std::lock_guard<std::mutex> lock(job.mutex);
      if (job.state == CompileJob::State::cancelled) return;
      job.state = CompileJob::State::running;
    }
    std::shared_ptr<const KernelRunner> runner;
    try {
      runner = CompileCache::global().cpu_runner(job.ir);
    } catch (...) {  // the environment was checked when the job was queued; keep interpreting
    }
    std::lock_guard<std::mutex> lock(job.mutex);
    if (runner) {
      job.compiled = std::move(runner);
      job.ready.store(job.compiled.get(), std::memory_order_release);
    }
    job.state = CompileJob::State::done;
    job.finished.notify_all();
  }

  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<std::shared_ptr<CompileJob>> queue_;
  bool busy_ = false;
  bool started_ = false;  // a run has finished: compiles no longer take cores from a first run
  bool stopping_ = false;
  std::thread worker_;
};

/// Interprets until its job has a kernel, then runs that.
class BackgroundCompiledRunner final : public KernelRunner {
 public:
  BackgroundCompiledRunner(const KernelIR& ir, std::shared_ptr<CompileJob> job)
      : interpreter_(ir), job_(std::move(job)) {}

  ~BackgroundCompiledRunner() override {
    std::unique_lock<std::mutex> lock(job_->mutex);
    if (job_->state == CompileJob::State::queued) job_->state = CompileJob::State::cancelled;
    job_->finished.wait(lock, [&] {
      return job_->state == CompileJob::State::done || job_->state == CompileJob::State::cancelled;
    });
  }

  void run_contiguous(int64_t n, void* const* ptrs) const override { current().run_contiguous(n, ptrs); }
  void run_strided(int64_t n, void* const* ptrs, const int64_t* strides) const override {
    current().run_strided(n, ptrs, strides);
  }
  // The interpreter has no streaming variant (0 lanes): a caller that saw
  // lanes > 0 saw the compiled kernel, which stays.
  int64_t streaming_lanes() const override { return current().streaming_lanes(); }
  void run_streaming(int64_t n, void* const* ptrs) const override { current().run_streaming(n, ptrs); }
  const char* kind() const override { return current().kind(); }

 private:
  const KernelRunner& current() const {
    const KernelRunner* compiled = job_->ready.load(std::memory_order_acquire);
    return compiled ? *compiled : interpreter_;
  }

  Interpreter interpreter_;
  std::shared_ptr<CompileJob> job_;
};

}  // namespace

std::shared_ptr<const KernelRunner> CompileCache::cpu_runner_in_background(const KernelIR& ir) {
  // Checked now, so that a bad value is an error of this call. The testing
  // knob GRAFT_JIT_LANES is checked where the JIT sets up its target: with it
  // set, kernels compile here, in the foreground.
  if (!jit_enabled_by_environment() || std::getenv("GRAFT_JIT_LANES")) return cpu_runner(ir);
  (void)cache_directory_from_environment();
  auto job = std::make_shared<CompileJob>();
  job->ir = ir;
  auto runner = std::make_shared<BackgroundCompiledRunner>(ir, job);
  BackgroundCompiler::instance().enqueue(std::move(job));
  return runner;
}

void CompileCache::start_background_compiles() { BackgroundCompiler::instance().start(); }

void CompileCache::wait_for_background_compiles() { BackgroundCompiler::instance().wait_idle(); }

}  // namespace graft::codegen

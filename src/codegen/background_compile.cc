// Compiling fused kernels off the critical path (CompileCache::
// cpu_runner_in_background). One worker thread per process takes compile
// jobs in order. The first start_background_compiles() (the end of a first
// run) lets it load the JIT, a later one lets it compile: a first run is
// interpreted with every core to itself (loading LLVM or compiling beside it
// stalls its OpenMP barriers, which costs more than it saves); each job calls CompileCache::cpu_runner (memory, disk or
// LLVM, the interpreter on failure) and hands the result to the runner that
// queued it, which interprets until then. The switch is one way, so a run
// sees the interpreter, then the compiled kernel, never back: within one run
// chunks may take either (their results agree within the stated error of
// the approximations, docs/codegen.md).
//
// Lifetimes: a runner owns its job's state; destroying the runner cancels a
// job that has not started and waits for one that has, so a Session that is
// destroyed leaves no compile behind. For one that is not (leaked, or global)
// the worker is stopped and joined at exit before LLVM's static objects are
// destroyed: it loads the LLVM plugin before its first job and only then
// registers that exit handler, which therefore runs first (exit handlers run
// in reverse order of registration, static destructors included); and no
// compile starts before a start call that came after that registration, so
// a process that exits while the plugin is still loading never compiles.
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "graft/codegen/compile_cache.h"
#include "graft/codegen/interpreter.h"
#include "llvm_jit.h"

namespace graft::codegen {

namespace {

/// One queued compile: its state, shared by the runner and the worker.
struct CompileJob {
  enum class State { queued, running, done, cancelled };
  std::mutex mutex;
  std::condition_variable finished;
  State state = State::queued;
  ir::KernelIR ir;
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
    if (stopping_) return;  // exiting: the job's runner keeps interpreting
    if (!worker_.joinable()) worker_ = std::thread([this] { work(); });
    queue_.push_back(std::move(job));
    wake_.notify_one();
  }

  /// The first call lets the worker load the JIT; a call after it has loaded
  /// lets compiles run. (A run's end calls this: the JIT loads beside the
  /// second run, compiles run beside the third and later ones.)
  void start() {
    std::lock_guard<std::mutex> lock(mutex_);
    // Before anything was queued, a run's end says nothing about the first
    // run of the session that will queue compiles.
    if (!worker_.joinable()) return;
    if (!load_requested_) {
      load_requested_ = true;
    } else if (jit_loaded_ && !started_) {
      started_ = true;
    } else {
      return;
    }
    wake_.notify_all();
  }

  void wait_idle() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!worker_.joinable()) return;  // nothing was ever queued
    load_requested_ = true;
    wake_.notify_all();
    loaded_.wait(lock, [&] { return jit_loaded_ || stopping_; });
    started_ = true;
    wake_.notify_all();
    idle_.wait(lock, [&] { return (queue_.empty() && !busy_) || stopping_; });
  }

  ~BackgroundCompiler() { stop(); }

 private:
  /// Stops the worker after its current job and joins it (idempotent).
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    std::lock_guard<std::mutex> join_lock(join_mutex_);
    if (worker_.joinable() && worker_.get_id() != std::this_thread::get_id()) worker_.join();
  }

  void work() {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || load_requested_; });
      if (stopping_) return;
    }
    try {
      llvm_jit_available();  // loads the plugin now, so that the exit handler below is registered after it
    } catch (...) {
    }
    std::atexit([] { instance().stop(); });
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jit_loaded_ = true;
      loaded_.notify_all();
    }
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
  std::mutex join_mutex_;
  std::condition_variable wake_, idle_, loaded_;
  std::deque<std::shared_ptr<CompileJob>> queue_;
  bool busy_ = false;
  bool load_requested_ = false;  // a run has finished: the worker may load the JIT
  bool jit_loaded_ = false;      // the worker loaded the JIT and registered its exit handler
  bool started_ = false;     // a run finished after that: compiles no longer take cores from a first run
  bool stopping_ = false;
  std::thread worker_;
};

/// Interprets until its job has a kernel, then runs that.
class BackgroundCompiledRunner final : public KernelRunner {
 public:
  BackgroundCompiledRunner(const ir::KernelIR& ir, std::shared_ptr<CompileJob> job)
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

std::shared_ptr<const KernelRunner> CompileCache::cpu_runner_in_background(const ir::KernelIR& ir) {
  // Checked now, so that a bad value is an error of this call. The testing
  // knob GRAFT_JIT_LANES is checked where the JIT sets up its target: with it
  // set, kernels compile here, in the foreground.
  if (!jit_enabled_by_environment() || std::getenv("GRAFT_JIT_LANES")) return cpu_runner(ir);
  // A kernel compiled before (another plan, another session, another
  // process through GRAFT_CACHE_DIR) is served at once: interpreting it until
  // a queued job finds it would cost time, and make runs of a new plan differ
  // in the last bits from those of the old. This loads no LLVM: a process
  // whose kernels are all in the disk cache never queues a job.
  if (auto cached = cached_cpu_runner(ir)) return cached;
  auto job = std::make_shared<CompileJob>();
  job->ir = ir;
  auto runner = std::make_shared<BackgroundCompiledRunner>(ir, job);
  BackgroundCompiler::instance().enqueue(std::move(job));
  return runner;
}

void CompileCache::start_background_compiles() { BackgroundCompiler::instance().start(); }

void CompileCache::wait_for_background_compiles() { BackgroundCompiler::instance().wait_idle(); }

}  // namespace graft::codegen

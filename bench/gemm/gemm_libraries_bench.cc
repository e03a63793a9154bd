// gemm_libraries_bench: single-precision GEMM of the models' shapes through
// oneDNN's matmul, graft's own gemm_f32, OpenBLAS, BLIS and libxsmm, at 1 and
// 2 threads, as a markdown table of GFLOP/s and ratios to oneDNN
// (docs/performance.md, "GEMM libraries at the models' shapes").
//
// Method. Every shape is a row-major product C = A * B or C = A * B^T (the
// latter where the model stores the weight as N x K: ONNX Gemm with transB,
// GRU weights, attention's Q * K^T), repeated over a batch for attention's 12
// heads. Constant weights are what oneDNN sees in graft's dnnl backend: its
// matmul is created with weights in the layout it asks for ("any") and B is
// reordered to it once, outside the timing; batched attention products keep
// both operands plain, as activations. BLAS libraries get the row-major
// product through cblas (OpenBLAS, BLIS) or through the column-major
// identity C^T = B^T * A^T (libxsmm, whose OpenMP entry point tiles the
// product into JIT kernels). Every library's first result is compared with
// graft's gemm_f32; a mismatch is printed, its figure marked and the exit
// code is 1 (the CTest smoke test gemm_libraries_smoke checks this).
//
// Timing. For each shape and thread count every library is calibrated to a
// repetition count that runs about --ms milliseconds, then the libraries run
// in rounds, each round in a rotated order, so that load from other
// processes falls on all of them alike; the figure is the fastest single
// product over all rounds (--median: the median round's mean time per
// product), the fastest being the one least disturbed by other processes on
// a shared machine. --cpu-time times by the process's CPU time instead of
// the clock, which leaves out the time other processes hold the core: on a
// loaded machine the one-thread figures it gives are the steadiest (at two
// threads a thread spin-waiting for a preempted peer still counts). The load
// average is printed before and after.
//
// Libraries are opened at run time (dlopen: libopenblas.so.0, libblis.so.4),
// so the benchmark builds without their headers and reports a library it
// cannot open as missing; libxsmm, which Debian ships only as a static
// archive (libxsmm-dev), is linked when CMake finds it.
//
// --avx2 re-executes the benchmark with every library restricted to AVX2 as
// far as it allows: ONEDNN_MAX_CPU_ISA=AVX2, OPENBLAS_CORETYPE=Haswell,
// BLIS_ARCH_TYPE=<haswell's number>, LIBXSMM_TARGET=hsw, and graft's AVX2
// kernel set.
#include <dlfcn.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../../src/ops/gemm_internal.h"
#include "graft/core/parallel.h"
#include "graft/ops/gemm.h"

#ifdef GRAFT_BENCH_HAVE_LIBXSMM
#include <libxsmm.h>
#endif

namespace {

/// One product of a model: batch x (M x K) * (K x N), B stored N x K when
/// trans_b.
struct Shape {
  const char* model;
  const char* what;
  int64_t batch, M, K, N;
  bool trans_b;
};

const std::vector<Shape>& model_shapes() {
  static const std::vector<Shape> shapes = {
      {"BERT-base s128", "Q/K/V/out projection", 1, 128, 768, 768, false},
      {"BERT-base s128", "fused QKV projection", 1, 128, 768, 2304, false},
      {"BERT-base s128", "FFN up", 1, 128, 768, 3072, false},
      {"BERT-base s128", "FFN down", 1, 128, 3072, 768, false},
      {"BERT-base s128", "attention Q*K^T, 12 heads", 12, 128, 64, 128, true},
      {"BERT-base s128", "attention P*V, 12 heads", 12, 128, 128, 64, false},
      {"residual GRU b100", "gates x*W^T / h*R^T", 1, 100, 500, 1500, true},
      {"resnet50", "1x1 conv 56x56 64->256", 1, 3136, 64, 256, false},
      {"resnet50", "1x1 conv 28x28 128->512", 1, 784, 128, 512, false},
      {"resnet50", "1x1 conv 14x14 256->1024", 1, 196, 256, 1024, false},
      {"resnet50", "1x1 conv 7x7 2048->512", 1, 49, 2048, 512, false},
      {"mobilenet_v2", "1x1 conv 56x56 24->144", 1, 3136, 24, 144, false},
      {"efficientnet-b0", "1x1 conv 14x14 480->80", 1, 196, 480, 80, false},
  };
  return shapes;
}

/// Operands of one shape, filled with small random values; c is the output
/// every library writes.
struct Problem {
  Shape shape;
  std::vector<float> a, b, c;
  int64_t a_stride() const { return shape.M * shape.K; }
  int64_t b_stride() const { return shape.K * shape.N; }
  int64_t c_stride() const { return shape.M * shape.N; }
  int64_t ldb() const { return shape.trans_b ? shape.K : shape.N; }
  double flops() const { return 2.0 * shape.batch * shape.M * shape.K * shape.N; }
};

Problem make_problem(const Shape& shape) {
  Problem p{shape, {}, {}, {}};
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  p.a.resize(shape.batch * p.a_stride());
  p.b.resize(shape.batch * p.b_stride());
  p.c.assign(shape.batch * p.c_stride(), 0.0f);
  for (float& x : p.a) x = dist(rng);
  for (float& x : p.b) x = dist(rng);
  return p;
}

/// A GEMM implementation under test. prepare() is called once per shape and
/// thread count (outside the timing), run() computes p.c.
class GemmLibrary {
 public:
  virtual ~GemmLibrary() = default;
  virtual std::string name() const = 0;
  /// What the library runs on this CPU (instruction set, kernel family).
  virtual std::string configuration() const = 0;
  /// Why the library cannot run, empty when it can.
  virtual std::string missing() const { return {}; }
  virtual void prepare(Problem& p, int threads) = 0;
  virtual void run(Problem& p) = 0;
  /// The implementation chosen for the prepared shape, when the library says.
  virtual std::string implementation() const { return {}; }
};

class GraftGemm : public GemmLibrary {
 public:
  explicit GraftGemm(std::string instruction_set) : instruction_set_(std::move(instruction_set)) {}
  std::string name() const override { return "graft gemm_f32"; }
  std::string configuration() const override { return "kernel set " + instruction_set_; }
  void prepare(Problem&, int threads) override { threads_ = threads; }
  void run(Problem& p) override {
    graft::ScopedNumThreads scope(threads_);
    const Shape& s = p.shape;
    for (int64_t i = 0; i < s.batch; ++i)
      graft::ops::detail::gemm_f32_with(instruction_set_, false, s.trans_b, s.M, s.N, s.K, 1.0f,
                                        p.a.data() + i * p.a_stride(), s.K, p.b.data() + i * p.b_stride(), p.ldb(),
                                        0.0f, p.c.data() + i * p.c_stride(), s.N);
  }

 private:
  std::string instruction_set_;
  int threads_ = 1;
};

std::string dnnl_isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "isa " + std::to_string(static_cast<int>(isa));
  }
}

/// oneDNN's matmul as graft's dnnl backend creates it: constant weights in
/// the layout the primitive asks for, batched activations plain.
class OneDnnMatmul : public GemmLibrary {
 public:
  std::string name() const override { return "oneDNN matmul"; }
  std::string configuration() const override {
    const dnnl_version_t* v = dnnl_version();
    return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) +
           ", ISA " + dnnl_isa_name(dnnl::get_effective_cpu_isa());
  }
  void prepare(Problem& p, int threads) override {
    using dnnl::memory;
    threads_ = threads;
    omp_set_num_threads(threads);
    const Shape& s = p.shape;
    const bool batched = s.batch > 1;
    memory::dims a_dims = batched ? memory::dims{s.batch, s.M, s.K} : memory::dims{s.M, s.K};
    memory::dims b_dims = batched ? memory::dims{s.batch, s.K, s.N} : memory::dims{s.K, s.N};
    memory::dims c_dims = batched ? memory::dims{s.batch, s.M, s.N} : memory::dims{s.M, s.N};
    memory::dims b_strides = s.trans_b ? memory::dims{1, s.K} : memory::dims{s.N, 1};
    if (batched) b_strides.insert(b_strides.begin(), s.K * s.N);
    memory::desc a_md(a_dims, memory::data_type::f32, batched ? memory::format_tag::abc : memory::format_tag::ab);
    memory::desc b_plain(b_dims, memory::data_type::f32, b_strides);
    memory::desc c_md(c_dims, memory::data_type::f32, batched ? memory::format_tag::abc : memory::format_tag::ab);
    memory::desc b_query = batched ? b_plain : memory::desc(b_dims, memory::data_type::f32, memory::format_tag::any);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_query, c_md), engine_);
    implementation_ = pd.impl_info_str();
    matmul_ = dnnl::matmul(pd);
    a_ = memory(a_md, engine_, p.a.data());
    c_ = memory(c_md, engine_, p.c.data());
    memory b_user(b_plain, engine_, p.b.data());
    if (pd.weights_desc() == b_plain) {
      b_ = b_user;
    } else {
      b_ = memory(pd.weights_desc(), engine_);
      dnnl::reorder(b_user, b_).execute(stream_, b_user, b_);
      stream_.wait();
    }
  }
  void run(Problem&) override {
    omp_set_num_threads(threads_);
    matmul_.execute(stream_, {{DNNL_ARG_SRC, a_}, {DNNL_ARG_WEIGHTS, b_}, {DNNL_ARG_DST, c_}});
    stream_.wait();
  }
  std::string implementation() const override { return implementation_; }

 private:
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
  dnnl::matmul matmul_;
  dnnl::memory a_, b_, c_;
  std::string implementation_;
  int threads_ = 1;
};

constexpr int kCblasRowMajor = 101, kCblasNoTrans = 111, kCblasTrans = 112;
using CblasSgemm = void (*)(int order, int trans_a, int trans_b, int M, int N, int K, float alpha, const float* A,
                            int lda, const float* B, int ldb, float beta, float* C, int ldc);

/// A BLAS opened at run time, called through its cblas_sgemm (row-major).
class CblasLibrary : public GemmLibrary {
 public:
  CblasLibrary(std::string name, const char* soname) : name_(std::move(name)), soname_(soname) {
    handle_ = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      missing_ = std::string("cannot open ") + soname + ": " + dlerror();
      return;
    }
    sgemm_ = reinterpret_cast<CblasSgemm>(dlsym(handle_, "cblas_sgemm"));
    if (!sgemm_) missing_ = std::string(soname) + " has no cblas_sgemm";
  }
  std::string name() const override { return name_; }
  std::string missing() const override { return missing_; }
  void prepare(Problem&, int threads) override { threads_ = threads; }
  void run(Problem& p) override {
    set_threads(threads_);
    const Shape& s = p.shape;
    for (int64_t i = 0; i < s.batch; ++i)
      sgemm_(kCblasRowMajor, kCblasNoTrans, s.trans_b ? kCblasTrans : kCblasNoTrans, int(s.M), int(s.N), int(s.K), 1.0f,
             p.a.data() + i * p.a_stride(), int(s.K), p.b.data() + i * p.b_stride(), int(p.ldb()), 0.0f,
             p.c.data() + i * p.c_stride(), int(s.N));
  }

 protected:
  virtual void set_threads(int threads) = 0;
  template <typename F>
  F symbol(const char* name) const {
    return handle_ ? reinterpret_cast<F>(dlsym(handle_, name)) : nullptr;
  }

  std::string name_;
  const char* soname_;
  void* handle_ = nullptr;
  CblasSgemm sgemm_ = nullptr;
  std::string missing_;
  int threads_ = 1;
};

class OpenBlas : public CblasLibrary {
 public:
  OpenBlas() : CblasLibrary("OpenBLAS", "libopenblas.so.0") {}
  std::string configuration() const override {
    auto corename = symbol<char* (*)()>("openblas_get_corename");
    auto config = symbol<char* (*)()>("openblas_get_config");
    return std::string(config ? config() : "?") + ", core " + (corename ? corename() : "?");
  }

 protected:
  void set_threads(int threads) override {
    static auto set = symbol<void (*)(int)>("openblas_set_num_threads");
    omp_set_num_threads(threads);
    if (set) set(threads);
  }
};

class Blis : public CblasLibrary {
 public:
  Blis() : CblasLibrary("BLIS", "libblis.so.4") {
    // bli_arch_query_id reads the context table, which bli_init fills when BLIS_ARCH_TYPE is set.
    if (auto init = symbol<void (*)()>("bli_init")) init();
  }
  std::string configuration() const override {
    auto version = symbol<const char* (*)()>("bli_info_get_version_str");
    auto query = symbol<int (*)()>("bli_arch_query_id");
    auto arch = symbol<const char* (*)(int)>("bli_arch_string");
    return std::string("BLIS ") + (version ? version() : "?") + ", arch " + (query && arch ? arch(query()) : "?");
  }

 protected:
  void set_threads(int threads) override {
    static auto set = symbol<void (*)(int64_t)>("bli_thread_set_num_threads");
    omp_set_num_threads(threads);
    if (set) set(threads);
  }
};

#ifdef GRAFT_BENCH_HAVE_LIBXSMM
/// libxsmm's OpenMP GEMM (libxsmmext): tiles the product into JIT kernels.
/// Column-major, so the row-major C = A * op(B) is computed as
/// C^T = op(B)^T * A^T.
class Libxsmm : public GemmLibrary {
 public:
  Libxsmm() { libxsmm_init(); }
  std::string name() const override { return "libxsmm"; }
  std::string configuration() const override {
    return "libxsmm " LIBXSMM_VERSION ", target " + std::string(libxsmm_get_target_arch());
  }
  void prepare(Problem&, int threads) override { threads_ = threads; }
  void run(Problem& p) override {
    omp_set_num_threads(threads_);
    const Shape& s = p.shape;
    const char trans_b = s.trans_b ? 'T' : 'N', no_trans = 'N';
    const libxsmm_blasint m = s.N, n = s.M, k = s.K, lda = p.ldb(), ldb = s.K, ldc = s.N;
    const float alpha = 1.0f, beta = 0.0f;
    for (int64_t i = 0; i < s.batch; ++i)
      libxsmm_sgemm_omp(&trans_b, &no_trans, &m, &n, &k, &alpha, p.b.data() + i * p.b_stride(), &lda,
                        p.a.data() + i * p.a_stride(), &ldb, &beta, p.c.data() + i * p.c_stride(), &ldc);
  }

 private:
  int threads_ = 1;
};
#endif

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  double one = 0, five = 0, fifteen = 0;
  in >> one >> five >> fifteen;
  char text[64];
  std::snprintf(text, sizeof text, "%.2f %.2f %.2f", one, five, fifteen);
  return text;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// CPU time of all the process's threads: time a thread spends preempted by
/// other processes is not in it (time it spends spin-waiting is).
double process_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return double(now.tv_sec) + 1e-9 * double(now.tv_nsec);
}

/// The time a callable takes, by the clock or by CPU time.
template <typename F>
double time_of(bool cpu_time, F&& f) {
  if (cpu_time) {
    const double start = process_cpu_seconds();
    f();
    return process_cpu_seconds() - start;
  }
  const auto start = std::chrono::steady_clock::now();
  f();
  return seconds_since(start);
}

/// Largest |x - reference| relative to the reference's largest magnitude.
double relative_error(const std::vector<float>& x, const std::vector<float>& reference) {
  double worst = 0, scale = 1e-30;
  for (size_t i = 0; i < x.size(); ++i) {
    worst = std::max(worst, double(std::fabs(x[i] - reference[i])));
    scale = std::max(scale, double(std::fabs(reference[i])));
  }
  return worst / scale;
}

struct Options {
  std::vector<int> threads = {1, 2};
  int rounds = 20;
  double milliseconds = 10;
  bool median = false;    // else the minimum
  bool cpu_time = false;  // the process's CPU time, else the steady clock
  std::string only;       // a substring of the shapes to measure
  bool avx2 = false;
};

/// Prints the options (after `problem`, when there is one) and exits with `code`.
[[noreturn]] void usage(const char* argv0, const std::string& problem, int code = 2) {
  if (!problem.empty()) std::fprintf(stderr, "%s: %s\n", argv0, problem.c_str());
  std::fprintf(code == 0 ? stdout : stderr,
               "usage: %s [--avx2] [--threads 1,2] [--rounds 20] [--ms 10] [--median] [--cpu-time] [--only TEXT]\n"
               "  --avx2     restrict every library to AVX2 (re-executes with ONEDNN_MAX_CPU_ISA=AVX2,\n"
               "             OPENBLAS_CORETYPE=Haswell, BLIS_ARCH_TYPE=<haswell's number>, LIBXSMM_TARGET=hsw)\n"
               "  --threads  thread counts to measure, comma-separated\n"
               "  --rounds   rounds of alternating libraries; the fastest product is reported\n"
               "  --median   report the median round's mean time instead\n"
               "  --only     measure only the shapes whose model or product contains TEXT\n"
               "  --cpu-time time by the process's CPU time instead of the clock (a loaded machine, 1 thread)\n"
               "  --ms       milliseconds each library runs per round\n",
               argv0);
  std::exit(code);
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(argv[0], arg + " needs a value");
      return argv[++i];
    };
    try {
      if (arg == "--help" || arg == "-h") {
        usage(argv[0], "", 0);
      } else if (arg == "--avx2") {
        o.avx2 = true;
      } else if (arg == "--threads") {
        o.threads.clear();
        std::stringstream list(value());
        for (std::string item; std::getline(list, item, ',');) o.threads.push_back(std::stoi(item));
      } else if (arg == "--only") {
        o.only = value();
      } else if (arg == "--cpu-time") {
        o.cpu_time = true;
      } else if (arg == "--median") {
        o.median = true;
      } else if (arg == "--rounds") {
        o.rounds = std::stoi(value());
      } else if (arg == "--ms") {
        o.milliseconds = std::stod(value());
      } else {
        usage(argv[0], "unknown option " + arg);
      }
    } catch (const std::logic_error&) {
      usage(argv[0], "bad value for " + arg);
    }
  }
  if (o.rounds < 1 || o.milliseconds <= 0 || o.threads.empty())
    usage(argv[0], "rounds, ms and threads must be positive");
  for (int t : o.threads)
    if (t < 1 || t > 256) usage(argv[0], "thread counts must be in 1..256");
  return o;
}

/// BLIS's number for a configuration name ("haswell"), looked up with
/// bli_arch_string over BLIS 0.9's 26 architecture ids; empty when not found.
std::string blis_architecture_id(const std::string& name) {
  void* blis = dlopen("libblis.so.4", RTLD_NOW | RTLD_LOCAL);
  if (!blis) return {};
  auto arch_string = reinterpret_cast<const char* (*)(int)>(dlsym(blis, "bli_arch_string"));
  std::string id;
  for (int i = 0; arch_string && i < 26 && id.empty(); ++i)
    if (const char* s = arch_string(i); s && name == s) id = std::to_string(i);
  dlclose(blis);
  return id;
}

/// --avx2: the libraries read their ISA limits when loaded or initialized,
/// so the limits are set in the environment and the program started again.
void reexecute_restricted_to_avx2(char** argv) {
  if (const char* done = std::getenv("GRAFT_GEMM_BENCH_AVX2"); done && std::string(done) == "1") return;
  setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1);
  setenv("OPENBLAS_CORETYPE", "Haswell", 1);
  // BLIS 0.9 reads BLIS_ARCH_TYPE as a number (its arch_t); later versions
  // also take the name.
  const std::string blis_haswell = blis_architecture_id("haswell");
  setenv("BLIS_ARCH_TYPE", blis_haswell.empty() ? "haswell" : blis_haswell.c_str(), 1);
  setenv("LIBXSMM_TARGET", "hsw", 1);
  setenv("GRAFT_GEMM_BENCH_AVX2", "1", 1);
  execv("/proc/self/exe", argv);
  std::perror("gemm_libraries_bench: execv /proc/self/exe");
  std::exit(1);
}

struct Measurement {
  double gflops = 0;
  std::string note;  // implementation name, or why the figure is not valid
  bool valid = false;
};

/// Checks every library's product of `p` against gemm_f32, then times them
/// in rounds of rotated order; one Measurement per library, in order.
std::vector<Measurement> measure(const std::vector<GemmLibrary*>& libraries, Problem& p, int threads,
                                 const Options& options) {
  const Shape& shape = p.shape;
  std::vector<float> reference(p.c.size());
  for (int64_t i = 0; i < shape.batch; ++i)
    graft::ops::gemm_f32(false, shape.trans_b, shape.M, shape.N, shape.K, 1.0f, p.a.data() + i * p.a_stride(), shape.K,
                         p.b.data() + i * p.b_stride(), p.ldb(), 0.0f, reference.data() + i * p.c_stride(), shape.N);

  std::vector<Measurement> results(libraries.size());
  std::vector<int> repetitions(libraries.size(), 1);
  for (size_t l = 0; l < libraries.size(); ++l) {
    libraries[l]->prepare(p, threads);
    std::fill(p.c.begin(), p.c.end(), 0.0f);
    libraries[l]->run(p);
    const double error = relative_error(p.c, reference);
    results[l].valid = error < 1e-4;
    results[l].note = results[l].valid ? libraries[l]->implementation() : "MISMATCH " + std::to_string(error);
    const auto start = std::chrono::steady_clock::now();
    libraries[l]->run(p);
    const double once = std::max(1e-7, seconds_since(start));
    // At least 3 products a round: the large shapes take several ms each, and
    // the fastest of few is rarely one that other processes left alone.
    repetitions[l] = std::max(3, int(options.milliseconds * 1e-3 / once));
  }

  std::vector<std::vector<double>> per_round(libraries.size());  // mean time per product
  std::vector<double> fastest_call(libraries.size(), 1e30);
  for (int round = 0; round < options.rounds; ++round) {
    for (size_t j = 0; j < libraries.size(); ++j) {
      const size_t l = (j + round) % libraries.size();
      libraries[l]->run(p);  // warm after the previous library
      double round_time = 0;
      for (int r = 0; r < repetitions[l]; ++r) {
        const double call = time_of(options.cpu_time, [&] { libraries[l]->run(p); });
        fastest_call[l] = std::min(fastest_call[l], call);
        round_time += call;
      }
      per_round[l].push_back(round_time / repetitions[l]);
    }
  }
  for (size_t l = 0; l < libraries.size(); ++l) {
    std::vector<double>& t = per_round[l];
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    results[l].gflops = p.flops() / (options.median ? t[t.size() / 2] : fastest_call[l]) * 1e-9;
  }
  return results;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  if (options.avx2) reexecute_restricted_to_avx2(argv);

  const std::vector<std::string> graft_sets = graft::ops::detail::gemm_f32_instruction_sets();
  const std::string graft_set =
      options.avx2 ? (std::find(graft_sets.begin(), graft_sets.end(), "avx2") != graft_sets.end() ? "avx2" : "baseline")
                   : graft_sets.front();

  std::vector<std::unique_ptr<GemmLibrary>> all;
  all.push_back(std::make_unique<OneDnnMatmul>());
  all.push_back(std::make_unique<GraftGemm>(graft_set));
  all.push_back(std::make_unique<OpenBlas>());
  all.push_back(std::make_unique<Blis>());
#ifdef GRAFT_BENCH_HAVE_LIBXSMM
  all.push_back(std::make_unique<Libxsmm>());
#endif

  std::printf("# GEMM libraries at the models' shapes\n\n");
  std::printf("CPU: %s, %d logical cores; restricted to AVX2: %s\n", cpu_model().c_str(),
              int(sysconf(_SC_NPROCESSORS_ONLN)), options.avx2 ? "yes" : "no");
  std::printf("load average at start: %s\n", load_average().c_str());
  std::printf("rounds: %d, %.0f ms per library per round; reported: %s, by %s\n\n", options.rounds,
              options.milliseconds,
              options.median ? "the median round's mean time per product" : "the fastest single product",
              options.cpu_time ? "the process's CPU time" : "the clock");
  std::vector<GemmLibrary*> libraries;
  for (auto& library : all) {
    if (std::string why = library->missing(); !why.empty()) {
      std::printf("- %s: missing (%s)\n", library->name().c_str(), why.c_str());
      continue;
    }
    std::printf("- %s: %s\n", library->name().c_str(), library->configuration().c_str());
    libraries.push_back(library.get());
  }
#ifndef GRAFT_BENCH_HAVE_LIBXSMM
  std::printf("- libxsmm: missing (built without libxsmm-dev)\n");
#endif
  std::fflush(stdout);

  bool mismatches = false;
  for (int threads : options.threads) {
    std::printf("\n## %d thread%s\n\n| model | product | batch x M x K x N |", threads, threads > 1 ? "s" : "");
    for (GemmLibrary* library : libraries) std::printf(" %s GFLOP/s |", library->name().c_str());
    std::printf("\n|---|---|---|");
    for (size_t i = 0; i < libraries.size(); ++i) std::printf("---:|");
    std::printf("\n");
    std::vector<double> log_ratio_sum(libraries.size(), 0.0);
    std::vector<int> ratio_count(libraries.size(), 0);
    std::vector<std::string> implementations;
    for (const Shape& shape : model_shapes()) {
      if ((std::string(shape.model) + " " + shape.what).find(options.only) == std::string::npos) continue;
      Problem p = make_problem(shape);
      const std::vector<Measurement> results = measure(libraries, p, threads, options);
      for (const Measurement& m : results)
        if (!m.valid) mismatches = true;
      std::printf("| %s | %s%s | %lldx%lldx%lldx%lld |", shape.model, shape.what, shape.trans_b ? " (B^T)" : "",
                  (long long)shape.batch, (long long)shape.M, (long long)shape.K, (long long)shape.N);
      for (size_t l = 0; l < libraries.size(); ++l) {
        const double ratio = results[l].gflops / results[0].gflops;
        if (!results[l].valid) {
          std::printf(" %.1f (%s) |", results[l].gflops, results[l].note.c_str());
          continue;
        }
        if (l == 0)
          std::printf(" %.1f |", results[l].gflops);
        else
          std::printf(" %.1f (%.2fx) |", results[l].gflops, ratio);
        if (results[0].valid) {
          log_ratio_sum[l] += std::log(ratio);
          ++ratio_count[l];
        }
      }
      std::printf("\n");
      std::fflush(stdout);
      implementations.push_back(std::string(shape.what) + ": " + results[0].note);
    }
    std::printf("| geometric mean of ratios to oneDNN | | |");
    for (size_t l = 0; l < libraries.size(); ++l)
      std::printf(ratio_count[l] ? " %.2fx |" : " - |",
                  ratio_count[l] ? std::exp(log_ratio_sum[l] / ratio_count[l]) : 0.0);
    std::printf("\n\noneDNN implementations:");
    for (const std::string& line : implementations) std::printf(" %s;", line.c_str());
    std::printf("\n");
  }
  std::printf("\nload average at end: %s\n", load_average().c_str());
  if (mismatches) std::printf("\nsome library computed a wrong product (MISMATCH above)\n");
  return mismatches ? 1 : 0;
}

// The layout of a constant matmul weight under oneDNN's jit gemm (the
// matmul implementation below AVX-512, which has no brgemm): plain [K, N],
// what `format_tag::any` gives, against transposed ([N, K] in memory), which
// the dnnl backend picks where the plain rows lie a multiple of 1 KiB apart
// (backends/dnnl/dnnl_matmul.cc, transposed_weights_product). Each shape's
// two products take turns over the rounds, in one process; the figure is
// the fastest single product of each, and the ratio is transposed / plain
// time. The two results are compared (exit code 1 on a mismatch).
//
//   ONEDNN_MAX_CPU_ISA=AVX2 build/bench/jit_gemm_weight_layout_bench [--threads 2] [--rounds 200]
//
// docs/performance.md, "AVX2: BERT's products at full speed".
#include <dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Shape {
  const char* what;
  int64_t m, k, n;
};

const Shape kShapes[] = {
    {"BERT FFN up", 128, 768, 3072},  {"BERT FFN down", 128, 3072, 768}, {"BERT fused QKV", 128, 768, 2304},
    {"BERT projection", 128, 768, 768}, {"", 128, 1024, 4096},           {"", 128, 4096, 1024},
    {"", 64, 512, 2048},                {"", 128, 768, 1536},            {"", 8, 768, 3072},
    {"", 128, 768, 1000},               {"GRU gates", 100, 500, 1500},   {"", 1024, 768, 3072},
    {"matrix-vector", 1, 2048, 1000},
};

struct Product {
  dnnl::matmul primitive;
  dnnl::memory src, weights, dst;
  std::string implementation;
};

Product make_product(const dnnl::engine& engine, const Shape& s, bool transposed, const std::vector<float>& a,
                     const std::vector<float>& w) {
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  const dnnl::memory::desc src({s.m, s.k}, dt::f32, tag::ab), dst({s.m, s.n}, dt::f32, tag::ab);
  const dnnl::memory::desc weights({s.k, s.n}, dt::f32, transposed ? tag::ba : tag::any);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, weights, dst), engine);
  Product p{dnnl::matmul(pd), dnnl::memory(src, engine), dnnl::memory(pd.weights_desc(), engine),
            dnnl::memory(dst, engine), pd.impl_info_str()};
  std::memcpy(p.src.get_data_handle(), a.data(), a.size() * sizeof(float));
  // w is [K, N] row-major; written in the layout the primitive reads.
  dnnl::memory plain({{s.k, s.n}, dt::f32, tag::ab}, engine, const_cast<float*>(w.data()));
  dnnl::stream stream(engine);
  dnnl::reorder(plain, p.weights).execute(stream, plain, p.weights);
  stream.wait();
  return p;
}

double run_ms(Product& p, dnnl::stream& stream) {
  const auto start = std::chrono::steady_clock::now();
  p.primitive.execute(stream, {{DNNL_ARG_SRC, p.src}, {DNNL_ARG_WEIGHTS, p.weights}, {DNNL_ARG_DST, p.dst}});
  stream.wait();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, rounds = 200;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--threads" || arg == "--rounds") && i + 1 < argc) {
      const int value = std::atoi(argv[++i]);
      if (value < 1) {
        std::fprintf(stderr, "error: %s must be at least 1\n", arg.c_str());
        return 2;
      }
      (arg == "--threads" ? threads : rounds) = value;
    } else {
      std::fprintf(stderr, "usage: %s [--threads N] [--rounds N]\n", argv[0]);
      return 2;
    }
  }
  omp_set_num_threads(threads);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  std::printf("# oneDNN matmul, constant weight plain [K, N] against transposed, %d threads, fastest of %d rounds\n\n",
              threads, rounds);
  std::printf("| M x K x N | what | plain row bytes | implementation | plain GFLOP/s | transposed GFLOP/s | transposed / plain time |\n");
  std::printf("|---|---|---:|---|---:|---:|---:|\n");
  int status = 0;
  for (const Shape& s : kShapes) {
    std::vector<float> a(static_cast<size_t>(s.m * s.k)), w(static_cast<size_t>(s.k * s.n));
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(static_cast<int>(i % 13) - 6) / 16.0f;
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(static_cast<int>(i % 7) - 3) / 8.0f;
    Product plain = make_product(engine, s, false, a, w), transposed = make_product(engine, s, true, a, w);
    double best_plain = 1e30, best_transposed = 1e30;
    for (int r = 0; r < rounds; ++r) {
      best_plain = std::min(best_plain, run_ms(plain, stream));
      best_transposed = std::min(best_transposed, run_ms(transposed, stream));
    }
    const float* x = static_cast<const float*>(plain.dst.get_data_handle());
    const float* y = static_cast<const float*>(transposed.dst.get_data_handle());
    for (int64_t i = 0; i < s.m * s.n; ++i)
      if (std::abs(x[i] - y[i]) > 1e-3f * (1.0f + std::abs(x[i]))) {
        std::fprintf(stderr, "error: %ldx%ldx%ld: the two layouts' results differ at %ld: %g and %g\n", (long)s.m,
                     (long)s.k, (long)s.n, (long)i, x[i], y[i]);
        status = 1;
        break;
      }
    const double flop = 2.0 * static_cast<double>(s.m * s.k * s.n);
    std::printf("| %ldx%ldx%ld | %s | %ld | %s / %s | %.1f | %.1f | %.2f |\n", (long)s.m, (long)s.k, (long)s.n, s.what,
                (long)(s.n * 4), plain.implementation.c_str(), transposed.implementation.c_str(),
                flop / best_plain / 1e6, flop / best_transposed / 1e6, best_transposed / best_plain);
  }
  return status;
}

// The signal ops of opset 17: DFT, STFT and MelWeightMatrix (the spectrogram
// front ends of exported audio models). A complex value is a trailing axis
// of 2 (real, imaginary); a real signal has a trailing axis of 1.
//
// The transforms evaluate the DFT's definition directly, in double precision,
// with a table of the n roots of unity (O(n) memory, O(n * bins) time per
// transformed row), the rows split over the intra-op threads.
#include <cmath>
#include <numbers>

#include "data_movement.h"
#include "graft/core/parallel.h"
#include "graft/ops/infer_util.h"
#include "graft/ops/op_context.h"

namespace graft::ops {
namespace {

/// Sizes computed from input values are bounded: a nonsense length must be an
/// error, not an attempt to allocate terabytes or a transform that never ends.
constexpr int64_t kMaxSignalElements = int64_t{1} << 28;
/// Transform lengths (the tables of roots hold 2 doubles per point).
constexpr int64_t kMaxTransformLength = int64_t{1} << 22;
/// Complex multiply-adds of one node (about a minute on one core).
constexpr double kMaxTransformWork = 68719476736.0;  // 2^36

/// Fails when `rows` transforms of length n into `bins` bins would take too long.
void check_work(const KernelContext& ctx, int64_t rows, int64_t n, int64_t bins) {
  const double work = static_cast<double>(rows) * static_cast<double>(n) * static_cast<double>(bins);
  if (work > kMaxTransformWork)
    ctx.unsupported(rows, " transforms of length ", n, " into ", bins, " bins: ", work,
                    " multiply-adds; graft evaluates the DFT's definition (no FFT) and stops at 2^36");
}

bool is_transform_dtype(DType t) { return t == DType::float32 || t == DType::float64; }

/// A scalar integer input (int32/int64) as int64; `what` names it in errors.
int64_t scalar_int(const KernelContext& ctx, size_t i, const char* what) {
  const Tensor& t = ctx.input(i);
  if (t.numel() != 1 || (t.dtype() != DType::int64 && t.dtype() != DType::int32))
    ctx.fail(what, " must be a scalar int32 or int64, got ", t.type_string());
  return t.value_as_int64(0);
}

/// The value of a constant scalar integer input during inference, if any.
std::optional<int64_t> constant_int(const InferContext& ctx, size_t i) {
  std::optional<std::vector<int64_t>> values = constant_input_ints(ctx, i);
  if (!values || values->size() != 1) return std::nullopt;
  return values->front();
}

/// Reads element i of a float32/float64 tensor as double.
double read(const Tensor& t, int64_t i) {
  return t.dtype() == DType::float32 ? static_cast<double>(t.data<float>()[i]) : t.data<double>()[i];
}
void write(Tensor& t, int64_t i, double v) {
  if (t.dtype() == DType::float32) t.data<float>()[i] = static_cast<float>(v);
  else t.data<double>()[i] = v;
}

/// One-dimensional DFTs of length n: `bins` outputs y[k] = sum_m x[m] w^(k m),
/// w = exp(-+2 pi i / n), scaled by 1/n for the inverse.
class Transform {
 public:
  Transform(int64_t n, int64_t bins, bool inverse) : n_(n), bins_(bins), scale_(inverse ? 1.0 / static_cast<double>(n) : 1.0) {
    const double sign = inverse ? 1.0 : -1.0;
    cos_.resize(static_cast<size_t>(n));
    sin_.resize(static_cast<size_t>(n));
    for (int64_t m = 0; m < n; ++m) {
      const double angle = 2.0 * std::numbers::pi * static_cast<double>(m) / static_cast<double>(n);
      cos_[static_cast<size_t>(m)] = std::cos(angle);
      sin_[static_cast<size_t>(m)] = sign * std::sin(angle);
    }
  }

  /// x: n complex values (re, im interleaved); y: bins complex values.
  void run(const double* x, double* y) const {
    for (int64_t k = 0; k < bins_; ++k) {
      double re = 0, im = 0;
      int64_t index = 0;  // k * m mod n
      for (int64_t m = 0; m < n_; ++m) {
        const double c = cos_[static_cast<size_t>(index)], s = sin_[static_cast<size_t>(index)];
        re += x[2 * m] * c - x[2 * m + 1] * s;
        im += x[2 * m] * s + x[2 * m + 1] * c;
        index += k;
        if (index >= n_) index %= n_;
      }
      y[2 * k] = re * scale_;
      y[2 * k + 1] = im * scale_;
    }
  }

 private:
  int64_t n_, bins_;
  double scale_;
  std::vector<double> cos_, sin_;
};

// ---- DFT (opset 17: axis an attribute, default 1; opset 20: axis an optional
// int64 scalar input, default -2) ----

/// The signal axis, normalized: counted from the back when negative, never
/// the trailing axis of real and imaginary parts. nullopt when opset 20's
/// axis input is not a constant (inference only).
template <typename Context>
std::optional<int64_t> dft_axis(const Context& ctx, int64_t rank) {
  int64_t given = 0;
  if (ctx.opset() >= 20) {
    given = -2;
    if (ctx.has_input(2)) {
      if constexpr (std::is_same_v<Context, InferContext>) {
        std::optional<int64_t> constant = constant_int(ctx, 2);
        if (!constant) return std::nullopt;
        given = *constant;
      } else {
        given = scalar_int(ctx, 2, "axis");
      }
    }
  } else {
    if (ctx.has_input(2)) ctx.fail("takes its axis as an input from opset 20 on (this model imports opset ", ctx.opset(), ")");
    given = ctx.attrs().get_int("axis", 1);
  }
  const int64_t axis = given < 0 ? given + rank : given;
  if (axis < 0 || axis >= rank - 1)
    ctx.fail("axis ", given, " is out of range for rank ", rank, " (the last axis holds the real and imaginary parts)");
  return axis;
}

void infer_dft(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  ir::ValueType out = ir::ValueType::of_dtype(x.dtype);
  if (x.has_rank) {
    const int64_t rank = static_cast<int64_t>(x.dims.size());
    if (rank < 2) ctx.fail("the input needs a trailing axis of 1 (real) or 2 (complex), got ", x.to_string());
    out.has_rank = true;
    out.dims = x.dims;
    out.dims.back() = ir::Dim::known(2);
    const std::optional<int64_t> known_axis = dft_axis(ctx, rank);
    if (!known_axis) {  // which axis changes length is known at run time only
      for (size_t d = 0; d + 1 < out.dims.size(); ++d) out.dims[d] = ir::Dim{};
      return ctx.set_output(0, out);
    }
    const int64_t axis = *known_axis;
    std::optional<int64_t> n = ctx.has_input(1) ? constant_int(ctx, 1) : std::nullopt;
    ir::Dim length = ctx.has_input(1) ? (n ? ir::Dim::known(*n) : ir::Dim{}) : x.dims[static_cast<size_t>(axis)];
    if (ctx.attrs().get_int("onesided", 0) != 0)
      length = length.is_known() ? ir::Dim::known(length.value / 2 + 1) : ir::Dim{};
    out.dims[static_cast<size_t>(axis)] = length;
  }
  ctx.set_output(0, out);
}

void dft_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!is_transform_dtype(x.dtype())) ctx.unsupported("DFT of ", dtype_name(x.dtype()), " (float32 and float64 are supported)");
  const int64_t rank = x.rank();
  const int64_t channels = rank >= 2 ? x.dim(rank - 1) : 0;
  if (channels != 1 && channels != 2)
    ctx.fail("the input needs a trailing axis of 1 (real) or 2 (complex), got ", x.type_string());
  const int64_t axis = *dft_axis(ctx, rank);
  const bool inverse = ctx.attrs().get_int("inverse", 0) != 0;
  const bool onesided = ctx.attrs().get_int("onesided", 0) != 0;
  if (onesided && channels == 2) ctx.fail("onesided output needs a real input");
  const int64_t given = x.dim(axis);
  const int64_t n = ctx.has_input(1) ? scalar_int(ctx, 1, "dft_length") : given;
  if (n <= 0 || n > kMaxTransformLength) ctx.fail("dft_length ", n, " is out of range (1 to 2^22)");
  const int64_t bins = onesided ? n / 2 + 1 : n;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < rank - 1; ++d) inner *= x.dim(d);
  if (outer * inner * bins > kMaxSignalElements) ctx.fail("the output would hold more than 2^28 values");
  check_work(ctx, outer * inner, n, bins);
  Shape shape = x.shape();
  shape[static_cast<size_t>(axis)] = bins;
  shape.back() = 2;
  Tensor& y = ctx.allocate_output(0, x.dtype(), shape);
  const Transform transform(n, bins, inverse);
  parallel_for(outer * inner, 1, [&](int64_t begin, int64_t end) {
    std::vector<double> in(static_cast<size_t>(2 * n)), out(static_cast<size_t>(2 * bins));
    for (int64_t row = begin; row < end; ++row) {
      const int64_t o = row / inner, i = row % inner;
      std::fill(in.begin(), in.end(), 0.0);
      for (int64_t m = 0; m < std::min(n, given); ++m)
        for (int64_t c = 0; c < channels; ++c)
          in[static_cast<size_t>(2 * m + c)] = read(x, ((o * given + m) * inner + i) * channels + c);
      transform.run(in.data(), out.data());
      for (int64_t k = 0; k < bins; ++k)
        for (int64_t c = 0; c < 2; ++c) write(y, ((o * bins + k) * inner + i) * 2 + c, out[static_cast<size_t>(2 * k + c)]);
    }
  });
}

// ---- STFT ----

void infer_stft(InferContext& ctx) {
  const ir::ValueType& signal = ctx.input_type(0);
  ir::ValueType out = ir::ValueType::of_dtype(signal.dtype);
  out.has_rank = true;
  out.dims.assign(4, ir::Dim{});
  out.dims[3] = ir::Dim::known(2);
  if (signal.has_rank && signal.dims.size() == 3) out.dims[0] = signal.dims[0];
  std::optional<int64_t> n = constant_int(ctx, 3);
  if (!n && ctx.has_input(2)) {
    const ir::ValueType& window = ctx.input_type(2);
    if (window.has_rank && window.dims.size() == 1 && window.dims[0].is_known()) n = window.dims[0].value;
  }
  std::optional<int64_t> step = constant_int(ctx, 1);
  const bool onesided = ctx.attrs().get_int("onesided", 1) != 0;
  if (n && *n > 0) out.dims[2] = ir::Dim::known(onesided ? *n / 2 + 1 : *n);
  if (n && step && *step > 0 && signal.has_rank && signal.dims.size() == 3 && signal.dims[1].is_known() &&
      signal.dims[1].value >= *n)
    out.dims[1] = ir::Dim::known((signal.dims[1].value - *n) / *step + 1);
  ctx.set_output(0, out);
}

void stft_kernel(KernelContext& ctx) {
  const Tensor& signal = ctx.input(0);
  if (!is_transform_dtype(signal.dtype()))
    ctx.unsupported("STFT of ", dtype_name(signal.dtype()), " (float32 and float64 are supported)");
  if (signal.rank() != 3 || (signal.dim(2) != 1 && signal.dim(2) != 2))
    ctx.fail("the signal must be [batch, length, 1 or 2], got ", signal.type_string());
  const int64_t batch = signal.dim(0), length = signal.dim(1), channels = signal.dim(2);
  const int64_t step = scalar_int(ctx, 1, "frame_step");
  if (step <= 0) ctx.fail("frame_step ", step, " must be positive");
  const Tensor* window = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (window && (window->rank() != 1 || window->dtype() != signal.dtype()))
    ctx.fail("the window must be 1-D of the signal's dtype, got ", window->type_string());
  int64_t n = window ? window->dim(0) : -1;
  if (ctx.has_input(3)) {
    const int64_t frame_length = scalar_int(ctx, 3, "frame_length");
    if (window && frame_length != n) ctx.fail("frame_length ", frame_length, " differs from the window's length ", n);
    n = frame_length;
  }
  if (n < 0) ctx.fail("needs a window or a frame_length");
  if (n == 0 || n > length || n > kMaxTransformLength)
    ctx.fail("frame length ", n, " is out of range for a signal of ", length, " samples");
  const bool onesided = ctx.attrs().get_int("onesided", 1) != 0;
  if (onesided && channels == 2) ctx.fail("onesided output needs a real signal");
  const int64_t frames = (length - n) / step + 1, bins = onesided ? n / 2 + 1 : n;
  if (batch * frames * bins > kMaxSignalElements) ctx.fail("the output would hold more than 2^28 values");
  check_work(ctx, batch * frames, n, bins);
  Tensor& y = ctx.allocate_output(0, signal.dtype(), {batch, frames, bins, 2});
  const Transform transform(n, bins, false);
  parallel_for(batch * frames, 1, [&](int64_t begin, int64_t end) {
    std::vector<double> in(static_cast<size_t>(2 * n)), out(static_cast<size_t>(2 * bins));
    for (int64_t row = begin; row < end; ++row) {
      const int64_t b = row / frames, f = row % frames;
      std::fill(in.begin(), in.end(), 0.0);
      for (int64_t m = 0; m < n; ++m) {
        const double w = window ? read(*window, m) : 1.0;
        for (int64_t c = 0; c < channels; ++c)
          in[static_cast<size_t>(2 * m + c)] = w * read(signal, ((b * length + f * step + m) * channels) + c);
      }
      transform.run(in.data(), out.data());
      for (int64_t k = 0; k < 2 * bins; ++k) write(y, row * 2 * bins + k, out[static_cast<size_t>(k)]);
    }
  });
}

// ---- MelWeightMatrix ----

void infer_mel_weight_matrix(InferContext& ctx) {
  DType dtype = dtype_from_onnx(static_cast<int32_t>(ctx.attrs().get_int("output_datatype", 1)));
  ir::ValueType out = ir::ValueType::of_dtype(dtype);
  out.has_rank = true;
  out.dims.assign(2, ir::Dim{});
  if (auto n = constant_int(ctx, 1); n && *n > 0) out.dims[0] = ir::Dim::known(*n / 2 + 1);
  if (auto bins = constant_int(ctx, 0); bins && *bins > 0) out.dims[1] = ir::Dim::known(*bins);
  ctx.set_output(0, out);
}

void mel_weight_matrix_kernel(KernelContext& ctx) {
  const int64_t mel_bins = scalar_int(ctx, 0, "num_mel_bins");
  const int64_t dft_length = scalar_int(ctx, 1, "dft_length");
  const int64_t sample_rate = scalar_int(ctx, 2, "sample_rate");
  auto scalar_float = [&](size_t i, const char* what) {
    const Tensor& t = ctx.input(i);
    if (t.numel() != 1 || !dtype_is_float(t.dtype())) ctx.fail(what, " must be a float scalar, got ", t.type_string());
    return t.value_as_double(0);
  };
  const double lower = scalar_float(3, "lower_edge_hertz"), upper = scalar_float(4, "upper_edge_hertz");
  if (mel_bins <= 0 || dft_length <= 0 || sample_rate <= 0)
    ctx.fail("num_mel_bins, dft_length and sample_rate must be positive, got ", mel_bins, ", ", dft_length, ", ",
             sample_rate);
  const int64_t spectrogram_bins = dft_length / 2 + 1;
  if (spectrogram_bins * mel_bins > kMaxSignalElements) ctx.fail("the matrix would hold more than 2^28 values");
  if (!(lower >= 0) || !(upper > lower)) ctx.fail("needs 0 <= lower_edge_hertz < upper_edge_hertz, got ", lower, ", ", upper);
  DType dtype = dtype_from_onnx(static_cast<int32_t>(ctx.attrs().get_int("output_datatype", 1)));
  if (!dtype_is_storable(dtype)) ctx.unsupported("output_datatype ", dtype_name(dtype));
  // The triangles' corners: num_mel_bins + 2 points spaced evenly in mel from
  // the lower edge (by (upper - lower) / (num_mel_bins + 2), as ONNX's
  // reference computes it), mapped back to hertz and to spectrogram bins.
  auto mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  const double low_mel = mel(lower), step = (mel(upper) - low_mel) / static_cast<double>(mel_bins + 2);
  std::vector<int64_t> corner(static_cast<size_t>(mel_bins + 2));
  for (int64_t i = 0; i < mel_bins + 2; ++i) {
    const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + low_mel) / 2595.0) - 1.0);
    corner[static_cast<size_t>(i)] = static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate)));
    if (corner[static_cast<size_t>(i)] < 0 || corner[static_cast<size_t>(i)] >= spectrogram_bins)
      ctx.fail("upper_edge_hertz ", upper, " lies above the spectrogram's bins (dft_length ", dft_length, ", sample_rate ",
               sample_rate, ")");
  }
  std::vector<double> weights(static_cast<size_t>(spectrogram_bins * mel_bins), 0.0);
  auto at = [&](int64_t bin, int64_t band) -> double& { return weights[static_cast<size_t>(bin * mel_bins + band)]; };
  for (int64_t band = 0; band < mel_bins; ++band) {
    const int64_t left = corner[static_cast<size_t>(band)], center = corner[static_cast<size_t>(band + 1)],
                  right = corner[static_cast<size_t>(band + 2)];
    if (center == left) at(center, band) = 1.0;
    else
      for (int64_t j = left; j <= center; ++j) at(j, band) = static_cast<double>(j - left) / static_cast<double>(center - left);
    for (int64_t j = center; j < right; ++j) at(j, band) = static_cast<double>(right - j) / static_cast<double>(right - center);
  }
  Tensor& out = ctx.allocate_output(0, dtype, {spectrogram_bins, mel_bins});
  visit_dtype(dtype, "MelWeightMatrix", [&]<typename T>() {
    for (size_t i = 0; i < weights.size(); ++i) out.data<T>()[i] = static_cast<T>(weights[i]);
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "DFT", infer_dft, dft_kernel);
GRAFT_REGISTER_OP("", "STFT", infer_stft, stft_kernel);
GRAFT_REGISTER_OP("", "MelWeightMatrix", infer_mel_weight_matrix, mel_weight_matrix_kernel);

}  // namespace graft::ops

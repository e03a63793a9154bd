// DFT, STFT and MelWeightMatrix against the definitions: a complex DFT
// computed here term by term, framing done by hand, the mel triangles'
// shape; and their errors.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>

#include "ops/data_op_helpers.h"

using namespace graft;
using graft::testing::attrs;
using graft::testing::expect_error;
using graft::testing::random_double_tensor;
using graft::testing::run_op;

namespace {

using Complex = std::complex<double>;

/// y[k] = sum_m x[m] exp(-+2 pi i k m / n), / n when inverse; x zero-padded or cut to n.
std::vector<Complex> reference_dft(const std::vector<Complex>& x, int64_t n, int64_t bins, bool inverse) {
  std::vector<Complex> y(static_cast<size_t>(bins));
  for (int64_t k = 0; k < bins; ++k) {
    Complex sum = 0;
    for (int64_t m = 0; m < n && m < static_cast<int64_t>(x.size()); ++m)
      sum += x[static_cast<size_t>(m)] *
             std::polar(1.0, (inverse ? 2.0 : -2.0) * std::numbers::pi * static_cast<double>(k * m) / static_cast<double>(n));
    y[static_cast<size_t>(k)] = inverse ? sum / static_cast<double>(n) : sum;
  }
  return y;
}

Tensor as_float(const Tensor& t) {
  Tensor out(DType::float32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) out.data<float>()[i] = static_cast<float>(t.value_as_double(i));
  return out;
}

}  // namespace

TEST(Dft, MatchesTheDefinitionOnEveryAxisWithPaddingAndOnesided) {
  const Shape shape = {2, 5, 3};  // signal axes 0..1, then channels
  for (int64_t channels : {1, 2}) {
    Shape full = shape;
    full.back() = channels;
    Tensor x = as_float(random_double_tensor(full, 7 + static_cast<uint64_t>(channels)));
    for (int64_t axis : {0, 1, -2}) {
      const int64_t a = axis < 0 ? axis + 3 : axis;
      for (int64_t length : {int64_t{-1}, int64_t{3}, int64_t{8}}) {  // -1: no dft_length
        for (bool onesided : {false, true}) {
          if (onesided && channels == 2) continue;
          for (bool inverse : {false, true}) {
            std::vector<Tensor> in = {x};
            if (length > 0) in.push_back(Tensor::scalar<int64_t>(length));
            Tensor y = run_op("DFT", in, attrs({{"axis", axis}, {"onesided", int64_t{onesided}}, {"inverse", int64_t{inverse}}}), 17)[0];
            const int64_t n = length > 0 ? length : full[static_cast<size_t>(a)];
            const int64_t bins = onesided ? n / 2 + 1 : n;
            Shape want_shape = full;
            want_shape[static_cast<size_t>(a)] = bins;
            want_shape.back() = 2;
            ASSERT_EQ(y.shape(), want_shape);
            const int64_t other = a == 0 ? full[1] : full[0];
            for (int64_t r = 0; r < other; ++r) {
              std::vector<Complex> signal;
              for (int64_t m = 0; m < full[static_cast<size_t>(a)]; ++m) {
                int64_t i0 = a == 0 ? m : r, i1 = a == 0 ? r : m;
                int64_t base = (i0 * full[1] + i1) * channels;
                signal.emplace_back(x.data<float>()[base], channels == 2 ? x.data<float>()[base + 1] : 0.0f);
              }
              std::vector<Complex> want = reference_dft(signal, n, bins, inverse);
              for (int64_t k = 0; k < bins; ++k) {
                int64_t i0 = a == 0 ? k : r, i1 = a == 0 ? r : k;
                int64_t base = (i0 * want_shape[1] + i1) * 2;
                EXPECT_NEAR(y.data<float>()[base], want[static_cast<size_t>(k)].real(), 1e-5)
                    << "axis " << axis << " n " << n << " onesided " << onesided << " inverse " << inverse;
                EXPECT_NEAR(y.data<float>()[base + 1], want[static_cast<size_t>(k)].imag(), 1e-5);
              }
            }
          }
        }
      }
    }
  }
}

TEST(Dft, Opset20TakesTheAxisAsAnInputDefaultingToTheLastSignalAxis) {
  Tensor x = as_float(random_double_tensor({2, 5, 3, 1}, 21));
  for (int64_t axis : {0, 1, 2, -2, -4}) {
    SCOPED_TRACE(axis);
    Tensor want = run_op("DFT", {x}, attrs({{"axis", axis}, {"onesided", int64_t{1}}}), 17)[0];
    Tensor got = run_op("DFT", {x, Tensor(), Tensor::scalar<int64_t>(axis)}, attrs({{"onesided", int64_t{1}}}), 20)[0];
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < got.numel(); ++i) EXPECT_EQ(got.data<float>()[i], want.data<float>()[i]) << i;
  }
  // No axis input: -2, the last axis before the real/imaginary one.
  Tensor want = run_op("DFT", {x, Tensor::scalar<int64_t>(4)}, attrs({{"axis", int64_t{2}}}), 17)[0];
  Tensor got = run_op("DFT", {x, Tensor::scalar<int64_t>(4)}, {}, 20)[0];
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_EQ(got.data<float>()[i], want.data<float>()[i]) << i;
  // The trailing axis is never a signal axis; before opset 20 there is no axis input.
  expect_error(ErrorKind::invalid_model, [&] { run_op("DFT", {x, Tensor(), Tensor::scalar<int64_t>(3)}, {}, 20); });
  expect_error(ErrorKind::invalid_model, [&] { run_op("DFT", {x, Tensor(), Tensor::scalar<int64_t>(1)}, {}, 17); });
}

TEST(Dft, InverseUndoesTheTransform) {
  Tensor x = random_double_tensor({3, 7, 2}, 11);  // float64, complex
  Tensor y = run_op("DFT", {x}, attrs({{"axis", int64_t{1}}}), 17)[0];
  Tensor back = run_op("DFT", {y}, attrs({{"axis", int64_t{1}}, {"inverse", int64_t{1}}}), 17)[0];
  ASSERT_EQ(back.shape(), x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_NEAR(back.data<double>()[i], x.data<double>()[i], 1e-12);
}

TEST(Stft, IsTheDftOfEachWindowedFrame) {
  const int64_t length = 37, n = 8, step = 5;
  Tensor signal = as_float(random_double_tensor({2, length, 1}, 3));
  Tensor window = as_float(random_double_tensor({n}, 4, 0.0, 1.0));
  for (bool with_window : {false, true}) {
    std::vector<Tensor> in = {signal, Tensor::scalar<int64_t>(step)};
    in.push_back(with_window ? window : Tensor());
    in.push_back(Tensor::scalar<int64_t>(n));
    Tensor y = run_op("STFT", in, {}, 17)[0];
    const int64_t frames = (length - n) / step + 1, bins = n / 2 + 1;
    ASSERT_EQ(y.shape(), (Shape{2, frames, bins, 2}));
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t f = 0; f < frames; ++f) {
        std::vector<Complex> frame;
        for (int64_t m = 0; m < n; ++m)
          frame.emplace_back(signal.data<float>()[b * length + f * step + m] * (with_window ? window.data<float>()[m] : 1.0f));
        std::vector<Complex> want = reference_dft(frame, n, bins, false);
        for (int64_t k = 0; k < bins; ++k) {
          int64_t base = ((b * frames + f) * bins + k) * 2;
          EXPECT_NEAR(y.data<float>()[base], want[static_cast<size_t>(k)].real(), 1e-5);
          EXPECT_NEAR(y.data<float>()[base + 1], want[static_cast<size_t>(k)].imag(), 1e-5);
        }
      }
  }
  // Two-sided output of a complex signal.
  Tensor complex_signal = as_float(random_double_tensor({1, 16, 2}, 5));
  Tensor y = run_op("STFT", {complex_signal, Tensor::scalar<int64_t>(4), Tensor(), Tensor::scalar<int64_t>(8)},
                    attrs({{"onesided", int64_t{0}}}), 17)[0];
  EXPECT_EQ(y.shape(), (Shape{1, 3, 8, 2}));
}

TEST(MelWeightMatrix, TrianglesPeakAtOneWithinTheSpectrogram) {
  const int64_t mel_bins = 10, dft_length = 64, rate = 16000;
  Tensor w = run_op("MelWeightMatrix", {Tensor::scalar<int64_t>(mel_bins), Tensor::scalar<int64_t>(dft_length),
                                        Tensor::scalar<int64_t>(rate), Tensor::scalar<float>(100.0f),
                                        Tensor::scalar<float>(7000.0f)}, {}, 17)[0];
  ASSERT_EQ(w.shape(), (Shape{dft_length / 2 + 1, mel_bins}));
  for (int64_t band = 0; band < mel_bins; ++band) {
    float peak = 0;
    int64_t first = -1, last = -1;
    for (int64_t bin = 0; bin <= dft_length / 2; ++bin) {
      float v = w.data<float>()[bin * mel_bins + band];
      EXPECT_GE(v, 0.0f);
      EXPECT_LE(v, 1.0f);
      peak = std::max(peak, v);
      if (v > 0 && first < 0) first = bin;
      if (v > 0) last = bin;
    }
    EXPECT_EQ(peak, 1.0f) << "band " << band;
    // The band covers one contiguous run of bins, and the bands move up.
    for (int64_t bin = first; bin <= last; ++bin) EXPECT_GT(w.data<float>()[bin * mel_bins + band], 0.0f);
  }
}

TEST(SignalOps, BadArgumentsAreErrors) {
  Tensor signal = as_float(random_double_tensor({1, 16, 1}, 1));
  auto stft = [&](int64_t step, int64_t n) {
    return run_op("STFT", {signal, Tensor::scalar<int64_t>(step), Tensor(), Tensor::scalar<int64_t>(n)}, {}, 17);
  };
  expect_error(ErrorKind::invalid_model, [&] { stft(0, 8); });    // no progress
  expect_error(ErrorKind::invalid_model, [&] { stft(4, 32); });   // frame longer than the signal
  expect_error(ErrorKind::invalid_model, [&] {                     // neither window nor frame_length
    run_op("STFT", {signal, Tensor::scalar<int64_t>(4)}, {}, 17);
  });
  expect_error(ErrorKind::invalid_model, [&] {  // a length of 2^40
    run_op("DFT", {signal, Tensor::scalar<int64_t>(int64_t{1} << 40)}, {}, 17);
  });
  expect_error(ErrorKind::invalid_model, [&] {  // the axis holding real and imaginary parts
    run_op("DFT", {signal}, attrs({{"axis", int64_t{2}}}), 17);
  });
  expect_error(ErrorKind::unsupported, [&] {  // 2^20 points into 2^20 bins: 2^40 multiply-adds
    run_op("DFT", {Tensor(DType::float32, {1, 1}), Tensor::scalar<int64_t>(int64_t{1} << 20)},
           attrs({{"axis", int64_t{0}}}), 17);
  });
  expect_error(ErrorKind::unsupported, [&] {
    run_op("DFT", {Tensor::from_vector<int32_t>({1, 2, 3, 4}, {4, 1})}, attrs({{"axis", int64_t{0}}}), 17);
  });
  expect_error(ErrorKind::invalid_model, [&] {  // the upper edge above the Nyquist frequency's bin
    run_op("MelWeightMatrix", {Tensor::scalar<int64_t>(8), Tensor::scalar<int64_t>(16), Tensor::scalar<int64_t>(8000),
                               Tensor::scalar<float>(0.0f), Tensor::scalar<float>(20000.0f)}, {}, 17);
  });
}

#include "sha256_x16.h"

#include <cstring>
#include <limits>

#include "graft/core/error.h"
#include "graft/runtime/cpu_features.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GRAFT_SHA256_X16 1
// GCC 12's AVX-512 headers start some intrinsics from _mm512_undefined_*(),
// which its flow analysis reports as uninitialized; the values are defined.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#else
#define GRAFT_SHA256_X16 0
#endif

namespace graft::runtime {

#if GRAFT_SHA256_X16
namespace {

constexpr uint32_t kRoundConstants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr uint32_t kInitialState[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

/// The sixteen lanes' chaining values, word-major: words[w][lane].
struct alignas(64) LaneStates {
  uint32_t words[8][16];
};

#define GRAFT_AVX512 __attribute__((target("avx512f,avx512bw")))

/// x ^ y ^ z in one instruction (truth table 0x96).
#define GRAFT_XOR3(x, y, z) _mm512_ternarylogic_epi32((x), (y), (z), 0x96)

/// Runs `blocks` 64-byte blocks of every lane through the compression
/// function; lane i's blocks start at `first + i * stride`.
GRAFT_AVX512 void compress(LaneStates& states, const uint8_t* first, int32_t stride, size_t blocks) {
  const __m512i offsets = _mm512_mullo_epi32(
      _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi32(stride));
  // Message words are big-endian.
  const __m512i byte_swap = _mm512_broadcast_i32x4(_mm_set_epi8(12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3));
  __m512i state[8];
  for (int w = 0; w < 8; ++w) state[w] = _mm512_load_si512(states.words[w]);
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* block = first + 64 * b;
    __m512i schedule[16];
    for (int t = 0; t < 16; ++t)
      schedule[t] = _mm512_shuffle_epi8(_mm512_i32gather_epi32(offsets, block + 4 * t, 1), byte_swap);
    __m512i a = state[0], b_ = state[1], c = state[2], d = state[3];
    __m512i e = state[4], f = state[5], g = state[6], h = state[7];
#pragma GCC unroll 64
    for (int t = 0; t < 64; ++t) {
      __m512i word;
      if (t < 16) {
        word = schedule[t];
      } else {
        __m512i w15 = schedule[(t - 15) & 15], w2 = schedule[(t - 2) & 15];
        __m512i sigma0 = GRAFT_XOR3(_mm512_ror_epi32(w15, 7), _mm512_ror_epi32(w15, 18), _mm512_srli_epi32(w15, 3));
        __m512i sigma1 = GRAFT_XOR3(_mm512_ror_epi32(w2, 17), _mm512_ror_epi32(w2, 19), _mm512_srli_epi32(w2, 10));
        word = _mm512_add_epi32(_mm512_add_epi32(schedule[t & 15], sigma0),
                                _mm512_add_epi32(schedule[(t - 7) & 15], sigma1));
        schedule[t & 15] = word;
      }
      __m512i big_sigma1 = GRAFT_XOR3(_mm512_ror_epi32(e, 6), _mm512_ror_epi32(e, 11), _mm512_ror_epi32(e, 25));
      __m512i choose = _mm512_ternarylogic_epi32(e, f, g, 0xCA);   // e ? f : g
      __m512i t1 = _mm512_add_epi32(_mm512_add_epi32(h, big_sigma1),
                                    _mm512_add_epi32(choose, _mm512_add_epi32(word, _mm512_set1_epi32(kRoundConstants[t]))));
      __m512i big_sigma0 = GRAFT_XOR3(_mm512_ror_epi32(a, 2), _mm512_ror_epi32(a, 13), _mm512_ror_epi32(a, 22));
      __m512i majority = _mm512_ternarylogic_epi32(a, b_, c, 0xE8);
      __m512i t2 = _mm512_add_epi32(big_sigma0, majority);
      h = g;
      g = f;
      f = e;
      e = _mm512_add_epi32(d, t1);
      d = c;
      c = b_;
      b_ = a;
      a = _mm512_add_epi32(t1, t2);
    }
    state[0] = _mm512_add_epi32(state[0], a);
    state[1] = _mm512_add_epi32(state[1], b_);
    state[2] = _mm512_add_epi32(state[2], c);
    state[3] = _mm512_add_epi32(state[3], d);
    state[4] = _mm512_add_epi32(state[4], e);
    state[5] = _mm512_add_epi32(state[5], f);
    state[6] = _mm512_add_epi32(state[6], g);
    state[7] = _mm512_add_epi32(state[7], h);
  }
  for (int w = 0; w < 8; ++w) _mm512_store_si512(states.words[w], state[w]);
}

#undef GRAFT_XOR3

}  // namespace

bool sha256_x16_supported() {
  const uint64_t needed = static_cast<uint64_t>(CpuFeature::avx512f) | static_cast<uint64_t>(CpuFeature::avx512bw);
  static const bool supported = (host_cpu_features() & needed) == needed;
  return supported;
}

void sha256_x16(const uint8_t* first, size_t stride, size_t length, unsigned char (*digests)[32]) {
  if (!sha256_x16_supported()) fail(ErrorKind::internal, "sha256_x16 called on a CPU without AVX-512F/BW");
  if (stride > (static_cast<size_t>(std::numeric_limits<int32_t>::max()) - 63) / 15)
    fail(ErrorKind::internal, "sha256_x16: stride ", stride, " too large for 32-bit gather offsets");
  LaneStates states;
  for (int w = 0; w < 8; ++w)
    for (int lane = 0; lane < 16; ++lane) states.words[w][lane] = kInitialState[w];
  const size_t full_blocks = length / 64;
  if (full_blocks) compress(states, first, static_cast<int32_t>(stride), full_blocks);
  // The padding: the tail bytes, 0x80, zeros, the length in bits (big-endian)
  // closing a 64-byte block; two blocks when the tail leaves under 9 bytes.
  const size_t tail = length % 64;
  const size_t padded = tail + 9 <= 64 ? 64 : 128;
  alignas(64) uint8_t last[16][128] = {};
  const uint64_t bits = static_cast<uint64_t>(length) * 8;
  for (size_t lane = 0; lane < 16; ++lane) {
    if (tail) std::memcpy(last[lane], first + lane * stride + full_blocks * 64, tail);
    last[lane][tail] = 0x80;
    for (int i = 0; i < 8; ++i) last[lane][padded - 1 - i] = static_cast<uint8_t>(bits >> (8 * i));
  }
  compress(states, &last[0][0], 128, padded / 64);
  for (int lane = 0; lane < 16; ++lane)
    for (int w = 0; w < 8; ++w)
      for (int byte = 0; byte < 4; ++byte)
        digests[lane][4 * w + byte] = static_cast<unsigned char>(states.words[w][lane] >> (24 - 8 * byte));
}

#else

bool sha256_x16_supported() { return false; }

void sha256_x16(const uint8_t*, size_t, size_t, unsigned char (*)[32]) {
  fail(ErrorKind::internal, "sha256_x16 is not built for this architecture");
}

#endif

}  // namespace graft::runtime

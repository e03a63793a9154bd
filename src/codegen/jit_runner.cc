// Calling an emitted kernel (see jit_runner.h; the kernel's contract is in
// llvm_jit.cc's opening comment).
#include "jit_runner.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "graft/core/error.h"

namespace graft::codegen {

namespace {

/// Calls `fn` with a value of the unsigned type of `size` bytes (1, 2, 4 or
/// 8: the element sizes of the kernel dtypes), which only moves bits.
template <typename F>
void with_element_type(size_t size, F&& fn) {
  switch (size) {
    case 1:
      fn(uint8_t{});
      break;
    case 2:
      fn(uint16_t{});
      break;
    case 4:
      fn(uint32_t{});
      break;
    case 8:
      fn(uint64_t{});
      break;
    default:
      GRAFT_CHECK(false, "fused kernel: element size ", size);
  }
}

/// Copies `count` elements of `size` bytes between strided runs (strides in elements).
void copy_elements(const char* from, int64_t from_stride, char* to, int64_t to_stride, int64_t count, size_t size) {
  with_element_type(size, [&]<typename T>(T) {
    for (int64_t j = 0; j < count; ++j) {
      T value;
      std::memcpy(&value, from + j * from_stride * static_cast<int64_t>(sizeof(T)), sizeof(T));
      std::memcpy(to + j * to_stride * static_cast<int64_t>(sizeof(T)), &value, sizeof(T));
    }
  });
}

/// Fills `count` elements of `size` bytes at `to` with the element at `from`.
void fill_elements(const char* from, char* to, int64_t count, size_t size) {
  with_element_type(size, [&]<typename T>(T) {
    T value;
    std::memcpy(&value, from, sizeof(T));
    std::fill_n(reinterpret_cast<T*>(to), count, value);
  });
}

/// Calls a compiled kernel function. The function itself only processes
/// dense runs whose length is a multiple of the vector width (so its IR has
/// one loop without masks or gathers, which keeps compile time low); this
/// class handles the rest in C++: the last partial vector of a dense run is
/// copied into zero-padded scratch buffers of one vector, and strided runs go
/// in blocks of kBlock elements, with every operand whose stride is not 1
/// copied into (inputs) or out of (outputs) a dense scratch buffer. An input
/// broadcast along the whole run (stride 0: a LayerNorm's mean and variance
/// along a row) holds one value: its scratch block is filled once per run.
class JitRunner final : public KernelRunner {
 public:
  JitRunner(CompiledKernelFunction kernel, int64_t lanes, int64_t streaming_lanes, const ir::KernelIR& ir,
            std::shared_ptr<const void> code)
      : kernel_(kernel),
        lanes_(lanes),
        streaming_lanes_(streaming_lanes),
        inputs_(ir.input_dtypes.size()),
        code_(std::move(code)) {
    for (DType t : ir.input_dtypes) sizes_.push_back(dtype_size(t));
    for (DType t : ir.output_dtypes()) sizes_.push_back(dtype_size(t));
  }
  void run_contiguous(int64_t n, void* const* ptrs) const override {
    int64_t full = n - n % lanes_;
    if (full > 0) kernel_(full, ptrs, 0);
    if (n > full) run_packed(n - full, ptrs, nullptr, full);
  }
  int64_t streaming_lanes() const override { return streaming_lanes_; }
  void run_streaming(int64_t n, void* const* ptrs) const override {
    if (streaming_lanes_ == 0 || n % streaming_lanes_ != 0) return run_contiguous(n, ptrs);
    kernel_(n, ptrs, 1);
  }
  void run_strided(int64_t n, void* const* ptrs, const int64_t* strides) const override {
    size_t n_ops = sizes_.size();
    std::vector<void*> block(n_ops);
    char* scratch = scratch_buffer();
    if (n >= lanes_)
      for (size_t k = 0; k < inputs_; ++k)
        if (ptrs[k] && strides[k] == 0)
          fill_elements(static_cast<const char*>(ptrs[k]), scratch + k * kBlock * 8, std::min(kBlock, n), sizes_[k]);
    for (int64_t begin = 0; begin < n; begin += kBlock) {
      int64_t full = std::min(kBlock, n - begin) / lanes_ * lanes_;
      for (size_t k = 0; k < n_ops && full > 0; ++k) {
        if (!ptrs[k]) {
          block[k] = nullptr;
          continue;
        }
        char* at = static_cast<char*>(ptrs[k]) + begin * strides[k] * static_cast<int64_t>(sizes_[k]);
        block[k] = strides[k] == 1 ? at : scratch + k * kBlock * 8;
        if (strides[k] != 1 && strides[k] != 0 && k < inputs_)
          copy_elements(at, strides[k], static_cast<char*>(block[k]), 1, full, sizes_[k]);
      }
      if (full > 0) {
        kernel_(full, block.data(), 0);
        for (size_t k = inputs_; k < n_ops; ++k)
          if (strides[k] != 1)
            copy_elements(static_cast<char*>(block[k]), 1,
                          static_cast<char*>(ptrs[k]) + begin * strides[k] * static_cast<int64_t>(sizes_[k]),
                          strides[k], full, sizes_[k]);
      }
      int64_t count = std::min(kBlock, n - begin);
      if (count > full) run_packed(count - full, ptrs, strides, begin + full);
    }
  }
  const char* kind() const override { return "llvm"; }

 private:
  /// Elements per block of a strided run (a multiple of every vector width).
  static constexpr int64_t kBlock = 256;

  /// kBlock elements of 8 bytes per operand, per thread.
  char* scratch_buffer() const {
    thread_local std::vector<uint64_t> scratch;
    if (scratch.size() < sizes_.size() * kBlock) scratch.resize(sizes_.size() * kBlock);
    return reinterpret_cast<char*>(scratch.data());
  }

  /// Elements [offset, offset + count) of a run (count < kBlock) through
  /// scratch buffers padded with zeros to a multiple of the vector width.
  void run_packed(int64_t count, void* const* ptrs, const int64_t* strides, int64_t offset) const {
    size_t n_ops = sizes_.size();
    int64_t padded = (count + lanes_ - 1) / lanes_ * lanes_;
    std::vector<void*> packed(n_ops, nullptr);
    char* scratch = scratch_buffer();
    for (size_t k = 0; k < n_ops; ++k) {
      if (!ptrs[k]) continue;
      packed[k] = scratch + k * kBlock * 8;
      if (k >= inputs_) continue;
      int64_t stride = strides ? strides[k] : 1;
      copy_elements(static_cast<char*>(ptrs[k]) + offset * stride * static_cast<int64_t>(sizes_[k]), stride,
                    static_cast<char*>(packed[k]), 1, count, sizes_[k]);
      std::memset(static_cast<char*>(packed[k]) + count * static_cast<int64_t>(sizes_[k]), 0,
                  static_cast<size_t>(padded - count) * sizes_[k]);
    }
    kernel_(padded, packed.data(), 0);
    for (size_t k = inputs_; k < n_ops; ++k) {
      int64_t stride = strides ? strides[k] : 1;
      copy_elements(static_cast<char*>(packed[k]), 1,
                    static_cast<char*>(ptrs[k]) + offset * stride * static_cast<int64_t>(sizes_[k]), stride, count,
                    sizes_[k]);
    }
  }

  CompiledKernelFunction kernel_;
  int64_t lanes_;
  int64_t streaming_lanes_;
  size_t inputs_;
  std::vector<size_t> sizes_;  // element bytes per operand: inputs, then outputs
  std::shared_ptr<const void> code_;
};

}  // namespace

std::shared_ptr<const KernelRunner> make_jit_runner(CompiledKernelFunction kernel, int64_t lanes,
                                                    int64_t streaming_lanes, const ir::KernelIR& ir,
                                                    std::shared_ptr<const void> code) {
  return std::make_shared<JitRunner>(kernel, lanes, streaming_lanes, ir, std::move(code));
}

}  // namespace graft::codegen

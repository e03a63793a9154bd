/// \file
/// Tensor: a dtype, a shape, a device and shared, versioned storage.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "graft/core/device.h"
#include "graft/core/dtype.h"
#include "graft/core/shape.h"

namespace graft {

/// The next value of the process's storage version counter (Storage::version).
uint64_t next_storage_version();

/// A block of bytes, 64-byte aligned when graft allocates it, or borrowed from
/// elsewhere (a memory-mapped file, an arena) with a release callback.
/// Storage carries a version counter bumped by every write through the public
/// API, so that kernels caching converted weights can detect changes.
class Storage {
 public:
  /// Allocates `nbytes` zeroed, 64-byte-aligned bytes.
  explicit Storage(size_t nbytes);
  /// Allocates `nbytes` 64-byte-aligned bytes, zeroed only when `zero` is
  /// true: without, every byte must be written before it is read.
  Storage(size_t nbytes, bool zero);
  /// Wraps external memory; `release` (may be empty) is called on destruction.
  Storage(void* data, size_t nbytes, std::function<void()> release);
  /// `nbytes` of zeros standing in for data that was not kept (a weight an
  /// artifact stores only in the layout a backend converted it to, or one a
  /// session released after converting it). The pages are mapped lazily, so
  /// an untouched placeholder costs no memory. Tensor::copy_from refuses a
  /// placeholder unless it rewrites every byte, which makes it real again.
  static std::shared_ptr<Storage> placeholder(size_t nbytes);
  /// True for a placeholder() (or a storage released to one).
  bool is_placeholder() const { return placeholder_.load(std::memory_order_acquire); }
  /// Marks bytes that their only reader keeps in converted form (a Session
  /// sets it on weights only dnnl reads, for models of one fixed input shape):
  /// that reader may release them once it has converted them.
  void set_releasable(bool releasable) { releasable_ = releasable; }
  bool releasable() const { return releasable_; }
  /// Frees bytes graft allocated and maps a placeholder of the same size in
  /// their place (the pointer changes; every Tensor viewing this storage sees
  /// it). Returns false, changing nothing, for borrowed memory (a mapping).
  bool release_to_placeholder();

 private:
  friend class Tensor;  // copy_from makes a wholly rewritten placeholder real
  void clear_placeholder() { placeholder_.store(false, std::memory_order_release); }

 public:
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  /// Changes on every public-API write. Versions are unique in the process:
  /// each new storage and each write takes the next value of one counter, so
  /// a storage made where a freed one was (the same address) never shows a
  /// version that one had, and (storage, version) names the bytes (caches of
  /// converted weights are keyed on it).
  uint64_t version() const { return version_.load(std::memory_order_acquire); }
  void bump_version() { version_.store(next_storage_version(), std::memory_order_release); }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  std::function<void()> release_;
  bool owned_ = false;
  bool releasable_ = false;
  std::atomic<bool> placeholder_{false};
  std::atomic<uint64_t> version_{next_storage_version()};
};

/// A dense, row-major tensor. Copies share storage (like a shared_ptr); use
/// clone() for a deep copy.
///
/// A tensor on a device (device().type is not cpu) views a Storage whose
/// data() is the device's handle (an OpenCL cl_mem), made by the device's
/// backend (backend::make_device_tensor). Its bytes are not host memory:
/// raw_data(), data<T>(), the value accessors, clone() and copy_from() throw
/// invalid_argument; host access is an explicit copy (backend::copy_to_host).
class Tensor {
 public:
  /// An empty tensor with undefined dtype (is_defined() is false).
  Tensor() = default;
  /// Allocates a zero-filled host tensor. Throws invalid_argument on a
  /// negative or overflowing shape or a device other than the CPU (device
  /// memory comes from the device's backend), unsupported on a non-storable dtype.
  Tensor(DType dtype, Shape shape, Device device = {});
  /// A tensor viewing `storage` at `byte_offset`; checks the view fits. With
  /// a device other than the CPU, `storage` holds that device's handle.
  Tensor(DType dtype, Shape shape, std::shared_ptr<Storage> storage, size_t byte_offset = 0,
         Device device = {});

  /// Allocates a tensor whose bytes are not zero-filled, for a caller that
  /// writes every byte before anything reads it (loaders).
  static Tensor uninitialized(DType dtype, Shape shape);

  /// Makes a tensor holding a copy of `values` with the given shape.
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, Shape shape);
  /// Makes a 0-d tensor holding `value`.
  template <typename T>
  static Tensor scalar(T value) { return from_vector<T>({value}, {}); }

  /// A sequence value (ONNX `seq(tensor(dtype))`): an ordered list of tensors
  /// of dtype `element_dtype`, each with a shape of its own (throws
  /// invalid_argument when an item is undefined or of another dtype). A
  /// sequence is_defined(); its dtype() is the element dtype, it holds no
  /// elements itself (shape [0], no storage) and only the sequence ops and
  /// control flow read its items.
  static Tensor sequence(DType element_dtype, std::vector<Tensor> items);
  /// True for a value made by sequence().
  bool is_sequence() const { return items_ != nullptr; }
  /// An empty optional (ONNX `optional(...)` holding nothing) whose value
  /// would have dtype `dtype`: is_defined(), no elements, no storage. An
  /// optional that holds a value is that value itself.
  static Tensor none(DType dtype);
  /// True for a value made by none().
  bool is_none() const { return none_; }
  /// The items of a sequence; GRAFT_CHECKs is_sequence().
  const std::vector<Tensor>& sequence_items() const;

  bool is_defined() const { return dtype_ != DType::undefined; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_.at(static_cast<size_t>(i)); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  const Device& device() const { return device_; }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  size_t byte_offset() const { return byte_offset_; }

  /// True when the bytes are on a device, not in host memory.
  bool on_device() const { return device_.type != DeviceType::cpu; }
  /// Raw data pointers (nullptr for an empty tensor). Throw invalid_argument
  /// for a tensor on a device.
  void* raw_data();
  const void* raw_data() const;
  /// Typed pointers; GRAFT_CHECKs that T matches the dtype.
  template <typename T> T* data() {
    check_type(dtype_v<T>);
    return static_cast<T*>(raw_data());
  }
  template <typename T> const T* data() const {
    check_type(dtype_v<T>);
    return static_cast<const T*>(raw_data());
  }
  template <typename T> std::span<const T> values() const { return {data<T>(), static_cast<size_t>(numel_)}; }

  /// Deep copy with fresh storage.
  Tensor clone() const;
  /// Same storage, another shape with the same element count.
  Tensor reshaped(Shape shape) const;
  /// Copies `src` (same dtype and element count) into this tensor's storage and
  /// bumps the storage version: the public way to change a weight in place.
  void copy_from(const Tensor& src);
  /// Records a write made through raw pointers (bumps the version).
  void mark_modified() { if (storage_) storage_->bump_version(); }
  /// Storage version (0 for an empty tensor).
  uint64_t version() const { return storage_ ? storage_->version() : 0; }

  /// Reads element i (row-major) converted to double / int64, any dtype.
  double value_as_double(int64_t i) const;
  int64_t value_as_int64(int64_t i) const;
  /// Every element converted to int64 (for shape-like inputs).
  std::vector<int64_t> to_int64_vector() const;
  /// "float32[1,3]"; "sequence<float32>(2 items)" for a sequence; "none" for an empty optional.
  std::string type_string() const;

 private:
  void check_type(DType t) const;

  DType dtype_ = DType::undefined;
  Shape shape_;
  int64_t numel_ = 0;
  Device device_;
  std::shared_ptr<Storage> storage_;
  size_t byte_offset_ = 0;
  std::shared_ptr<const std::vector<Tensor>> items_;  // set for a sequence only
  bool none_ = false;                                 // an empty optional
};

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, Shape shape) {
  Tensor t(dtype_v<T>, std::move(shape));
  GRAFT_CHECK(static_cast<size_t>(t.numel()) == values.size(), "from_vector: ", values.size(),
              " values for shape ", shape_to_string(t.shape()));
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

}  // namespace graft

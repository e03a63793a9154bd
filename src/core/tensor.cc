#include "graft/core/tensor.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace graft {

std::string to_string(const Device& device) {
  const char* name = device.type == DeviceType::cpu ? "cpu" : device.type == DeviceType::cuda ? "cuda" : "opencl";
  return std::string(name) + ":" + std::to_string(device.id);
}

uint64_t next_storage_version() {
  static std::atomic<uint64_t> counter{1};
  return counter.fetch_add(1, std::memory_order_relaxed);
}

Storage::Storage(size_t nbytes) : Storage(nbytes, true) {}

namespace {

uint64_t host_memory_bytes() {
  static const uint64_t bytes = [] {
    long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
    return pages > 0 && page_size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size)
                                      : std::numeric_limits<uint64_t>::max();
  }();
  return bytes;
}

// A request larger than the machine's memory is refused before it is made:
// under Linux's overcommit it could succeed and then bring in the OOM killer
// when its pages are written. The executor adds the node to the message.
void check_host_allocation(size_t nbytes, DType dtype, const Shape* shape) {
  if (nbytes <= host_memory_bytes()) return;
  fail(ErrorKind::resource_exhausted, "allocating ", nbytes, " bytes",
       shape ? " for " + std::string(dtype_name(dtype)) + shape_to_string(*shape) : std::string(),
       " would pass the host's memory of ", host_memory_bytes(), " bytes");
}

}  // namespace

Storage::Storage(size_t nbytes, bool zero) : nbytes_(nbytes), owned_(true) {
  check_host_allocation(nbytes, DType::undefined, nullptr);
  size_t rounded = (nbytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  data_ = std::aligned_alloc(64, rounded);
  if (!data_) fail(ErrorKind::resource_exhausted, "the host is out of memory allocating ", nbytes, " bytes");
  if (zero) std::memset(data_, 0, rounded);
}

Storage::Storage(void* data, size_t nbytes, std::function<void()> release)
    : data_(data), nbytes_(nbytes), release_(std::move(release)) {}

namespace {

// Anonymous private pages read as zeros and take memory only once touched.
void* map_zero_pages(size_t nbytes) {
  void* data = ::mmap(nullptr, nbytes == 0 ? 1 : nbytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (data == MAP_FAILED)
    fail(ErrorKind::invalid_argument, "cannot reserve ", nbytes, " bytes for a placeholder weight: ", std::strerror(errno));
  return data;
}

}  // namespace

std::shared_ptr<Storage> Storage::placeholder(size_t nbytes) {
  void* data = map_zero_pages(nbytes);
  size_t mapped = nbytes == 0 ? 1 : nbytes;
  auto storage = std::make_shared<Storage>(data, nbytes, [data, mapped] { ::munmap(data, mapped); });
  storage->placeholder_ = true;
  return storage;
}

bool Storage::release_to_placeholder() {
  if (!owned_) return false;
  void* data = map_zero_pages(nbytes_);
  size_t mapped = nbytes_ == 0 ? 1 : nbytes_;
  std::free(data_);
  data_ = data;
  owned_ = false;
  release_ = [data, mapped] { ::munmap(data, mapped); };
  placeholder_ = true;
  return true;
}

Storage::~Storage() {
  if (owned_) std::free(data_);
  else if (release_) release_();
}

Tensor::Tensor(DType dtype, Shape shape, Device device)
    : dtype_(dtype), shape_(std::move(shape)), device_(device) {
  if (device_.type != DeviceType::cpu)
    fail(ErrorKind::invalid_argument, "cannot allocate a ", to_string(device_),
         " tensor on the host: device memory comes from the device's backend");
  if (!dtype_is_storable(dtype_))
    fail(ErrorKind::unsupported, "tensors of dtype ", dtype_name(dtype_), " are not supported");
  numel_ = shape_numel(shape_);
  const size_t nbytes = shape_nbytes(shape_, dtype_size(dtype_));
  check_host_allocation(nbytes, dtype_, &shape_);
  storage_ = std::make_shared<Storage>(nbytes);
}

Tensor Tensor::uninitialized(DType dtype, Shape shape) {
  if (!dtype_is_storable(dtype))
    fail(ErrorKind::unsupported, "tensors of dtype ", dtype_name(dtype), " are not supported");
  size_t nbytes = shape_nbytes(shape, dtype_size(dtype));
  check_host_allocation(nbytes, dtype, &shape);
  return Tensor(dtype, std::move(shape), std::make_shared<Storage>(nbytes, false));
}

Tensor::Tensor(DType dtype, Shape shape, std::shared_ptr<Storage> storage, size_t byte_offset, Device device)
    : dtype_(dtype), shape_(std::move(shape)), device_(device), storage_(std::move(storage)),
      byte_offset_(byte_offset) {
  if (!dtype_is_storable(dtype_))
    fail(ErrorKind::unsupported, "tensors of dtype ", dtype_name(dtype_), " are not supported");
  numel_ = shape_numel(shape_);
  size_t need = shape_nbytes(shape_, dtype_size(dtype_));
  GRAFT_CHECK(storage_ && byte_offset_ <= storage_->nbytes() && need <= storage_->nbytes() - byte_offset_,
              "tensor view ", type_string(), " does not fit its storage");
}

namespace {
[[noreturn]] void refuse_host_access(const Tensor& t) {
  fail(ErrorKind::invalid_argument, "tensor ", t.type_string(), " is on ", to_string(t.device()),
       ": its bytes are device memory; copy it to the host first (backend::copy_to_host)");
}
}  // namespace

void* Tensor::raw_data() {
  if (on_device()) refuse_host_access(*this);
  return storage_ ? static_cast<char*>(storage_->data()) + byte_offset_ : nullptr;
}
const void* Tensor::raw_data() const {
  if (on_device()) refuse_host_access(*this);
  return storage_ ? static_cast<const char*>(storage_->data()) + byte_offset_ : nullptr;
}

void Tensor::check_type(DType t) const {
  GRAFT_CHECK(t == dtype_, "tensor of dtype ", dtype_name(dtype_), " accessed as ", dtype_name(t));
}

Tensor Tensor::sequence(DType element_dtype, std::vector<Tensor> items) {
  if (!dtype_is_storable(element_dtype))
    fail(ErrorKind::unsupported, "sequences of dtype ", dtype_name(element_dtype), " are not supported");
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_defined() || items[i].is_sequence() || items[i].is_none())
      fail(ErrorKind::invalid_argument, "sequence item ", i, " is not a tensor");
    if (items[i].dtype() != element_dtype)
      fail(ErrorKind::invalid_argument, "sequence of ", dtype_name(element_dtype), ": item ", i, " is ",
           items[i].type_string());
  }
  Tensor t;
  t.dtype_ = element_dtype;
  t.shape_ = {0};
  t.items_ = std::make_shared<const std::vector<Tensor>>(std::move(items));
  return t;
}

Tensor Tensor::none(DType dtype) {
  if (dtype == DType::undefined) dtype = DType::float32;
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = {0};
  t.none_ = true;
  return t;
}

const std::vector<Tensor>& Tensor::sequence_items() const {
  GRAFT_CHECK(items_, "tensor ", type_string(), " is not a sequence");
  return *items_;
}

Tensor Tensor::clone() const {
  if (!is_defined() || is_none()) return *this;
  if (is_sequence()) {
    std::vector<Tensor> items;
    for (const Tensor& item : *items_) items.push_back(item.clone());
    return sequence(dtype_, std::move(items));
  }
  Tensor t(dtype_, shape_, device_);
  if (nbytes()) std::memcpy(t.raw_data(), raw_data(), nbytes());
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  GRAFT_CHECK(shape_numel(shape) == numel_, "reshape of ", type_string(), " to ", shape_to_string(shape));
  return Tensor(dtype_, std::move(shape), storage_, byte_offset_, device_);
}

void Tensor::copy_from(const Tensor& src) {
  if (src.dtype() != dtype_ || src.numel() != numel_ || src.is_sequence() || is_sequence() || src.is_none() ||
      is_none())
    fail(ErrorKind::invalid_argument, "copy_from: cannot copy ", src.type_string(), " into ", type_string());
  if (storage_ && storage_->is_placeholder()) {
    // Rewriting every byte makes a placeholder real again; part of it cannot.
    if (byte_offset_ != 0 || nbytes() != storage_->nbytes())
      fail(ErrorKind::invalid_argument, "copy_from: the destination ", type_string(),
           " views part of a weight that is kept only in converted form; only the whole weight can be replaced");
    storage_->clear_placeholder();
  }
  if (nbytes()) std::memmove(raw_data(), src.raw_data(), nbytes());
  mark_modified();
}

double Tensor::value_as_double(int64_t i) const {
  GRAFT_CHECK(i >= 0 && i < numel_, "element ", i, " out of range");
  return visit_dtype(dtype_, "value_as_double", [&]<typename T>() {
    return static_cast<double>(static_cast<compute_t<T>>(data<T>()[i]));
  });
}

int64_t Tensor::value_as_int64(int64_t i) const {
  GRAFT_CHECK(i >= 0 && i < numel_, "element ", i, " out of range");
  return visit_dtype(dtype_, "value_as_int64", [&]<typename T>() -> int64_t {
    if constexpr (std::is_floating_point_v<compute_t<T>>)
      return static_cast<int64_t>(static_cast<compute_t<T>>(data<T>()[i]));
    else
      return static_cast<int64_t>(data<T>()[i]);
  });
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  std::vector<int64_t> out(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) out[static_cast<size_t>(i)] = value_as_int64(i);
  return out;
}

std::string Tensor::type_string() const {
  if (is_none()) return "none";
  if (is_sequence())
    return "sequence<" + std::string(dtype_name(dtype_)) + ">(" + std::to_string(items_->size()) + " items)";
  return std::string(dtype_name(dtype_)) + shape_to_string(shape_);
}

}  // namespace graft

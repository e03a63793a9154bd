/// \file
/// SmallVector: a vector that keeps its first N elements inside the object
/// and moves to the heap only beyond them. The IR holds many tiny lists (one
/// output type, one output name per node); keeping them inline spares a heap
/// allocation and a pointer chase per list. The interface is the subset of
/// std::vector's that the code base uses, and converts to and from
/// std::vector where an API takes one.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/core/error.h"

namespace graft {

template <typename T, size_t N>
class SmallVector {
  static_assert(N > 0, "SmallVector needs room for at least one inline element");

 public:
  using value_type = T;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  SmallVector() noexcept : data_(inline_data()), size_(0), capacity_(N) {}
  explicit SmallVector(size_t count) : SmallVector() { resize(count); }
  SmallVector(size_t count, const T& value) : SmallVector() { resize(count, value); }
  SmallVector(std::initializer_list<T> values) : SmallVector() { assign(values.begin(), values.end()); }
  template <typename It, typename = typename std::iterator_traits<It>::iterator_category>
  SmallVector(It first, It last) : SmallVector() {
    assign(first, last);
  }
  SmallVector(const std::vector<T>& values) : SmallVector() { assign(values.begin(), values.end()); }  // NOLINT
  SmallVector(const SmallVector& other) : SmallVector() { assign(other.begin(), other.end()); }
  SmallVector(SmallVector&& other) noexcept(std::is_nothrow_move_constructible_v<T>) : SmallVector() {
    take(std::move(other));
  }
  ~SmallVector() {
    destroy_all();
    release_heap();
  }

  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept(std::is_nothrow_move_constructible_v<T>) {
    if (this != &other) {
      clear();
      take(std::move(other));
    }
    return *this;
  }
  SmallVector& operator=(const std::vector<T>& values) {
    assign(values.begin(), values.end());
    return *this;
  }
  SmallVector& operator=(std::vector<T>&& values) {
    clear();
    reserve(values.size());
    for (T& v : values) push_back(std::move(v));
    return *this;
  }
  SmallVector& operator=(std::initializer_list<T> values) {
    assign(values.begin(), values.end());
    return *this;
  }

  /// A std::vector copy, for APIs that take one.
  operator std::vector<T>() const { return std::vector<T>(begin(), end()); }  // NOLINT

  template <typename It>
  void assign(It first, It last) {
    clear();
    if constexpr (std::is_base_of_v<std::forward_iterator_tag, typename std::iterator_traits<It>::iterator_category>)
      reserve(static_cast<size_t>(std::distance(first, last)));
    for (; first != last; ++first) emplace_back(*first);
  }
  void assign(size_t count, const T& value) {
    clear();
    resize(count, value);
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& at(size_t i) {
    GRAFT_CHECK(i < size_, "SmallVector index ", i, " out of range (size ", size_, ")");
    return data_[i];
  }
  const T& at(size_t i) const { return const_cast<SmallVector*>(this)->at(i); }
  T& front() { return data_[0]; }
  const T& front() const { return data_[0]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }

  iterator begin() { return data_; }
  iterator end() { return data_ + size_; }
  const_iterator begin() const { return data_; }
  const_iterator end() const { return data_ + size_; }
  const_iterator cbegin() const { return data_; }
  const_iterator cend() const { return data_ + size_; }
  reverse_iterator rbegin() { return reverse_iterator(end()); }
  reverse_iterator rend() { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const { return const_reverse_iterator(begin()); }

  void reserve(size_t wanted) {
    if (wanted <= capacity_) return;
    GRAFT_CHECK(wanted <= UINT32_MAX, "SmallVector of ", wanted, " elements");
    T* fresh = static_cast<T*>(::operator new(wanted * sizeof(T), std::align_val_t{alignof(T)}));
    std::uninitialized_move(data_, data_ + size_, fresh);
    std::destroy(data_, data_ + size_);
    release_heap();
    data_ = fresh;
    capacity_ = static_cast<uint32_t>(wanted);
  }
  void shrink_to_fit() {}

  template <typename... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == capacity_) {
      // The arguments may refer to an element: build the new one first.
      T value(std::forward<Args>(args)...);
      reserve(grown());
      ::new (static_cast<void*>(data_ + size_)) T(std::move(value));
    } else {
      ::new (static_cast<void*>(data_ + size_)) T(std::forward<Args>(args)...);
    }
    return data_[size_++];
  }
  void push_back(const T& value) { emplace_back(value); }
  void push_back(T&& value) { emplace_back(std::move(value)); }
  void pop_back() { std::destroy_at(data_ + --size_); }

  void resize(size_t count) {
    if (count < size_) {
      std::destroy(data_ + count, data_ + size_);
    } else if (count > size_) {
      reserve(count);
      std::uninitialized_value_construct(data_ + size_, data_ + count);
    }
    size_ = static_cast<uint32_t>(count);
  }
  void resize(size_t count, const T& value) {
    if (count < size_) {
      std::destroy(data_ + count, data_ + size_);
    } else if (count > size_) {
      T copy = value;  // `value` may be an element
      reserve(count);
      std::uninitialized_fill(data_ + size_, data_ + count, copy);
    }
    size_ = static_cast<uint32_t>(count);
  }
  void clear() {
    std::destroy(data_, data_ + size_);
    size_ = 0;
  }

  iterator insert(const_iterator position, T value) {
    const size_t index = static_cast<size_t>(position - data_);
    emplace_back(std::move(value));
    std::rotate(data_ + index, data_ + size_ - 1, data_ + size_);
    return data_ + index;
  }
  template <typename It, typename = typename std::iterator_traits<It>::iterator_category>
  iterator insert(const_iterator position, It first, It last) {
    const size_t index = static_cast<size_t>(position - data_);
    const size_t old_size = size_;
    for (; first != last; ++first) emplace_back(*first);
    std::rotate(data_ + index, data_ + old_size, data_ + size_);
    return data_ + index;
  }
  iterator erase(const_iterator position) { return erase(position, position + 1); }
  iterator erase(const_iterator first, const_iterator last) {
    T* from = data_ + (first - data_);
    T* to = data_ + (last - data_);
    T* new_end = std::move(to, end(), from);
    std::destroy(new_end, end());
    size_ = static_cast<uint32_t>(new_end - data_);
    return from;
  }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const SmallVector& a, const std::vector<T>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  T* inline_data() { return std::launder(reinterpret_cast<T*>(inline_)); }
  bool on_heap() const { return data_ != reinterpret_cast<const T*>(inline_); }
  size_t grown() const { return std::max<size_t>(2 * capacity_, 4); }
  void destroy_all() { std::destroy(data_, data_ + size_); }
  void release_heap() {
    if (on_heap()) ::operator delete(data_, std::align_val_t{alignof(T)});
    data_ = inline_data();
    capacity_ = N;
  }
  /// Moves `other`'s elements here (this is empty): steals its heap buffer,
  /// or moves the elements one by one out of its inline storage.
  void take(SmallVector&& other) {
    if (other.on_heap()) {
      release_heap();
      data_ = other.data_;
      size_ = other.size_;
      capacity_ = other.capacity_;
      other.data_ = other.inline_data();
      other.size_ = 0;
      other.capacity_ = N;
      return;
    }
    reserve(other.size_);
    std::uninitialized_move(other.data_, other.data_ + other.size_, data_);
    size_ = other.size_;
    other.clear();
  }

  T* data_;
  uint32_t size_;
  uint32_t capacity_;
  alignas(T) unsigned char inline_[N * sizeof(T)];
};

}  // namespace graft

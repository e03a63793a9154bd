#include "dnnl_shared_weights.h"

#include <cstring>

namespace graft::dnnl_backend {

namespace {

template <typename T>
void append_bytes(std::string& key, const T& value) {
  key.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

}  // namespace

SharedConversions& SharedConversions::global() {
  static SharedConversions* conversions = new SharedConversions();  // never destroyed: modules may outlive statics
  return *conversions;
}

std::string SharedConversions::key_of(const Weight& weight, const std::vector<Tensor>& sources) {
  std::string key;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (weight.sources[i].input >= 0) return {};
    append_bytes(key, static_cast<const void*>(sources[i].storage().get()));
    append_bytes(key, sources[i].byte_offset());
    append_bytes(key, sources[i].version());
  }
  append_bytes(key, weight.plain.data);
  append_bytes(key, weight.desc.data);
  key += weight.label;
  return key;
}

std::shared_ptr<void> SharedConversions::find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = buffers_.find(key);
  return it == buffers_.end() ? nullptr : it->second.lock();
}

void SharedConversions::insert(const std::string& key, const std::shared_ptr<void>& buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  buffers_[key] = buffer;
  if (buffers_.size() >= prune_at_) {
    std::erase_if(buffers_, [](const auto& entry) { return entry.second.expired(); });
    prune_at_ = std::max<size_t>(64, 2 * buffers_.size());
  }
}

}  // namespace graft::dnnl_backend

/// \file
/// SharedConversions: the converted weights of every DnnlModule in the
/// process, found by what they were converted from. A session keeps several
/// plans of one model (docs/dynamic-shapes.md), and a ShapeSpecializedModule
/// compiles one subgraph for several shapes; each module converted its
/// weights on its own and kept its own copy (resnet18 at 4 batch sizes: 4
/// copies of 47 MB). A module that needs a conversion another module already
/// made takes that buffer instead. Internal to backends/dnnl.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "dnnl_program.h"

namespace graft::dnnl_backend {

class SharedConversions {
 public:
  static SharedConversions& global();

  /// The key of `weight` converted from `sources`, or "" when it must not be
  /// shared (a source is a module input: its storage comes from a run's pool
  /// and is reused). Two weights with one key hold the same bytes: the same
  /// source storages at the same offsets and versions, the same label (the
  /// node it belongs to, which decides any folding done while filling it), and
  /// the same plain and converted layouts. A source storage stays alive as
  /// long as a module that reads it does, and such a module holds the buffer
  /// while the key can match, so an address is never reused under a live key.
  static std::string key_of(const Weight& weight, const std::vector<Tensor>& sources);

  /// A live buffer converted under `key`, or null.
  std::shared_ptr<void> find(const std::string& key);
  /// Records `buffer` under `key` (not owned: it lives while a module holds it).
  void insert(const std::string& key, const std::shared_ptr<void>& buffer);

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::weak_ptr<void>> buffers_;
  size_t prune_at_ = 64;  // entries; expired ones are dropped when reached
};

}  // namespace graft::dnnl_backend

// Reads an artifact. The order of checks is the point of this file:
//
//   1. size, magic, format version, header size, recorded file size;
//   2. the SHA-256 over everything before the last 32 bytes;
//   3. architecture and CPU features;
//   4. the section table (every section inside the file, in order);
//   5. the weight table (every entry's dtype, shape, alignment and bounds;
//      entries stored only converted become zero placeholders);
//   6. the graph (every count checked against the bytes left before
//      anything is allocated, every node reference in range, then
//      ir::verify on each graph);
//   7. the module table (node indices, sizes, tensor ids) -- and only after all of that
//      succeeded, each module blob goes to its loader, which may dlopen
//      native code.
//
// Nothing is parsed before the checksum is known to be right, so a damaged
// file never reaches the parsers; they are bounds-checked anyway, because a
// file with a correct checksum may still be hostile or built by a buggy writer.
#include <fcntl.h>
#include <openssl/crypto.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "artifact_checksum.h"
#include "artifact_format.h"
#include "graft/backend/backend.h"
#include "graft/ir/verify.h"
#include "graft/runtime/artifact.h"
#include "graft/runtime/cpu_features.h"

namespace graft::runtime {

namespace af = artifact_format;

namespace {

template <typename T> T read_at(const uint8_t* data, size_t offset) {
  T value;
  std::memcpy(&value, data + offset, sizeof(T));
  return value;
}

std::string text_at(const uint8_t* data, size_t offset, size_t size) {
  std::string s;
  for (size_t i = 0; i < size && data[offset + i]; ++i) {
    char c = static_cast<char>(data[offset + i]);
    s += (c >= 32 && c < 127) ? c : '?';
  }
  return s;
}

/// A read-only view of an artifact's bytes and whatever keeps them alive.
struct ArtifactBytes {
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::shared_ptr<Storage> storage;  // the weights are views of this
};

/// A private, copy-on-write mapping of a whole file.
ArtifactBytes map_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(ErrorKind::io, "cannot open '", path, "': ", std::strerror(errno));
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(ErrorKind::io, "'", path, "' is not a regular file");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size < kArtifactHeaderSize + kArtifactChecksumSize) {
    // Too small to map usefully; read it so the checks below produce the message.
    ::close(fd);
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto storage = std::make_shared<Storage>(std::max<size_t>(bytes.size(), 1));
    std::memcpy(storage->data(), bytes.data(), bytes.size());
    return {static_cast<const uint8_t*>(storage->data()), bytes.size(), storage};
  }
  // Populated read-only, then made writable: populating a writable private
  // mapping would break copy-on-write on every page (copying the whole file
  // into anonymous memory); this way the pages stay the page cache's until a
  // weight is written to.
  void* base = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) fail(ErrorKind::io, "cannot map '", path, "': ", std::strerror(errno));
  if (::mprotect(base, size, PROT_READ | PROT_WRITE) != 0) {
    int error = errno;
    ::munmap(base, size);
    fail(ErrorKind::io, "cannot map '", path, "' writable: ", std::strerror(error));
  }
  auto storage = std::make_shared<Storage>(base, size, [base, size] { ::munmap(base, size); });
  return {static_cast<const uint8_t*>(base), size, storage};
}

struct ModuleEntry {
  uint32_t node_index;
  std::string type_key;
  const uint8_t* bytes;
  uint64_t size;
  std::vector<Tensor> tensors;  // its saved_tensors(), from the weight table (format 3)
};

class ArtifactReader {
 public:
  ArtifactReader(ArtifactBytes bytes, std::string what) : bytes_(std::move(bytes)), what_(std::move(what)) {}

  /// Steps 1-3: nothing else is read before these pass.
  void verify() {
    const uint8_t* d = bytes_.data;
    const size_t size = bytes_.size;
    if (size < sizeof(kArtifactMagic) || std::memcmp(d, kArtifactMagic, sizeof(kArtifactMagic)) != 0)
      fail(ErrorKind::invalid_model, what_, ": not a graft artifact (it does not start with \"GRAFTART\")");
    if (size < kArtifactHeaderSize + kArtifactChecksumSize)
      fail(ErrorKind::invalid_model, what_, ": truncated artifact (", size, " bytes; the header and checksum alone take ",
           kArtifactHeaderSize + kArtifactChecksumSize, ")");
    info_.format_version = read_at<uint32_t>(d, af::kVersionOffset);
    if (info_.format_version > kArtifactFormatVersion)
      fail(ErrorKind::unsupported, what_, ": built by a newer graft (format ", info_.format_version,
           ", this graft reads up to ", kArtifactFormatVersion, ")");
    if (info_.format_version == 0)
      fail(ErrorKind::invalid_model, what_, ": damaged artifact header (format version 0)");
    uint32_t header_size = read_at<uint32_t>(d, af::kHeaderSizeOffset);
    uint64_t recorded_size = read_at<uint64_t>(d, af::kFileSizeOffset);
    if (recorded_size != size)
      fail(ErrorKind::invalid_model, what_, ": truncated or damaged artifact (the header says ", recorded_size,
           " bytes, the file has ", size, ")");
    if (header_size != kArtifactHeaderSize)
      fail(ErrorKind::invalid_model, what_, ": damaged artifact header (header size ", header_size, ", expected ",
           kArtifactHeaderSize, ")");
    auto digest = af::artifact_checksum(d, size - kArtifactChecksumSize, info_.format_version);
    if (CRYPTO_memcmp(digest.data(), d + size - kArtifactChecksumSize, kArtifactChecksumSize) != 0)
      fail(ErrorKind::invalid_model, what_, ": checksum mismatch: the artifact is damaged (its SHA-256 does not match)");
    info_.architecture = text_at(d, af::kArchitectureOffset, 16);
    info_.graft_version = text_at(d, af::kGraftVersionOffset, 16);
    info_.cpu_features = read_at<uint64_t>(d, af::kCpuFeaturesOffset);
    info_.file_bytes = size;
    if (info_.architecture != host_architecture())
      fail(ErrorKind::unsupported, what_, ": compiled for ", info_.architecture, ", this machine is ",
           host_architecture());
    uint64_t missing = info_.cpu_features & ~host_cpu_features();
    if (missing)
      fail(ErrorKind::unsupported, what_, ": compiled for CPU features this machine lacks: ", cpu_feature_names(missing));
    verified_ = true;
  }

  /// Bytes borrowed from the caller are copied (into 64-byte-aligned
  /// storage the weights can view) only once they are verified.
  void own_bytes() {
    if (bytes_.storage) return;
    auto storage = std::make_shared<Storage>(std::max<size_t>(bytes_.size, 1));
    std::memcpy(storage->data(), bytes_.data, bytes_.size);
    bytes_ = {static_cast<const uint8_t*>(storage->data()), bytes_.size, storage};
  }

  /// Steps 4-7 except loading modules.
  void parse() {
    GRAFT_CHECK(verified_, "artifact parsed before it was verified");
    own_bytes();
    const uint8_t* d = bytes_.data;
    const uint64_t body_end = bytes_.size - kArtifactChecksumSize;
    const char* names[3] = {"graph", "weights", "modules"};
    uint64_t previous_end = kArtifactHeaderSize;
    for (int s = 0; s < 3; ++s) {
      uint64_t offset = read_at<uint64_t>(d, af::kSectionTableOffset + 16 * s);
      uint64_t size = read_at<uint64_t>(d, af::kSectionTableOffset + 16 * s + 8);
      if (offset < previous_end || offset > body_end || size > body_end - offset)
        fail(ErrorKind::invalid_model, what_, ": the ", names[s], " section (offset ", offset, ", ", size,
             " bytes) lies outside the file or overlaps another");
      sections_[s] = {offset, size};
      previous_end = offset + size;
    }
    info_.graph_bytes = sections_[0].second;
    info_.weights_bytes = sections_[1].second;
    info_.modules_bytes = sections_[2].second;
    parse_weights();
    {
      af::ByteReader r(d + sections_[0].first, d + sections_[0].first + sections_[0].second, what_ + " (graph)");
      graph_ = parse_graph(r, 0);
      if (r.remaining() != 0) fail(ErrorKind::invalid_model, what_, ": ", r.remaining(), " stray bytes after the graph");
    }
    parse_modules();
    describe();
  }

  /// Step 7: hands every module blob to its loader.
  backend::ModuleTable load_modules() {
    backend::ModuleTable table(graph_->num_nodes());
    for (const ModuleEntry& m : modules_) {
      const ir::Node& node = *graph_->nodes()[m.node_index];
      std::istringstream blob(std::string(reinterpret_cast<const char*>(m.bytes), m.size));
      try {
        table[m.node_index] = backend::load_module(m.type_key, blob, *node.subgraph, m.tensors);
      } catch (const Error& e) {
        fail(e.kind(), what_, ": module of ", node.describe(), ": ", e.what());
      }
    }
    return table;
  }

  ArtifactInfo& info() { return info_; }
  std::unique_ptr<ir::Graph> take_graph() { return std::move(graph_); }

 private:
  void parse_weights() {
    const uint64_t section_offset = sections_[1].first, section_size = sections_[1].second;
    const uint8_t* begin = bytes_.data + section_offset;
    af::ByteReader r(begin, begin + section_size, what_ + " (weights)");
    uint64_t count = r.get<uint64_t>("weight count");
    if (count > r.remaining() / 24)
      fail(ErrorKind::invalid_model, what_, ": weight count ", count, " does not fit in the weights section");
    std::set<std::pair<uint64_t, uint64_t>> distinct;
    uint64_t placeholder_bytes = 0;
    for (uint64_t i = 0; i < count; ++i) {
      uint32_t dtype_code = r.get<uint32_t>("weight dtype");
      DType dtype = static_cast<DType>(dtype_code);
      if (dtype_code > static_cast<uint32_t>(DType::bfloat16) || !dtype_is_storable(dtype) || dtype_size(dtype) == 0)
        fail(ErrorKind::invalid_model, what_, ": weight ", i, " has bad dtype code ", dtype_code);
      uint32_t rank = r.get<uint32_t>("weight rank");
      if (rank > af::kMaxRank) fail(ErrorKind::invalid_model, what_, ": weight ", i, " has rank ", rank);
      Shape shape(rank);
      uint64_t nbytes = dtype_size(dtype);
      for (uint32_t k = 0; k < rank; ++k) {
        int64_t dim = r.get<int64_t>("weight dimension");
        if (dim < 0) fail(ErrorKind::invalid_model, what_, ": weight ", i, " has a negative dimension");
        if (dim != 0 && nbytes > bytes_.size / static_cast<uint64_t>(dim))
          fail(ErrorKind::invalid_model, what_, ": weight ", i, " is larger than the file");
        nbytes *= static_cast<uint64_t>(dim);
        shape[k] = dim;
      }
      uint64_t offset = r.get<uint64_t>("weight offset");
      uint64_t size = r.get<uint64_t>("weight size");
      if (size != nbytes)
        fail(ErrorKind::invalid_model, what_, ": weight ", i, " records ", size, " bytes, its shape needs ", nbytes);
      if (offset == af::kNoWeightData && info_.format_version >= 3) {
        // Stored only in the form a module converted it to: its module never
        // reads it, so a zero placeholder of its size stands in (mapped
        // lazily). The converted forms, stored in this file, are about as
        // large as what they replace (reordered, padded, folded or expanded),
        // but can be a little smaller (oneDNN's AVX2 layouts pad less than
        // the originals' shapes: resnet18's were 15 KB under), so the bound on
        // what a damaged file may claim is twice the file's size.
        placeholder_bytes += size;
        if (placeholder_bytes > 2 * static_cast<uint64_t>(bytes_.size) + (uint64_t{1} << 20))
          fail(ErrorKind::invalid_model, what_, ": weights stored only converted claim ", placeholder_bytes,
               " bytes, more than the file holds");
        weights_.emplace_back(dtype, shape, Storage::placeholder(static_cast<size_t>(size)));
        ++info_.num_converted_only_weights;
        continue;
      }
      if (offset > section_size || size > section_size - offset)
        fail(ErrorKind::invalid_model, what_, ": weight ", i, " lies outside the weights section");
      if ((section_offset + offset) % af::kWeightAlignment != 0)
        fail(ErrorKind::invalid_model, what_, ": weight ", i, " is not ", af::kWeightAlignment, "-byte aligned");
      weights_.emplace_back(dtype, shape, bytes_.storage, static_cast<size_t>(section_offset + offset));
      if (distinct.emplace(offset, size).second) info_.weight_data_bytes += size;
    }
    info_.num_weights = count;
  }

  Tensor weight(uint32_t id, const af::ByteReader& r) const {
    if (id == af::kNoWeight) return Tensor();
    if (id >= weights_.size())
      fail(ErrorKind::invalid_model, r.what(), ": weight id ", id, " out of range (", weights_.size(), " weights)");
    return weights_[id];
  }

  ir::ValueType value_type(af::ByteReader& r) {
    ir::ValueType t;
    uint32_t dtype_code = r.get<uint32_t>("value dtype");
    if (dtype_code > static_cast<uint32_t>(DType::bfloat16))
      fail(ErrorKind::invalid_model, r.what(), ": bad dtype code ", dtype_code);
    t.dtype = static_cast<DType>(dtype_code);
    uint8_t flags = r.get<uint8_t>("value type flags");
    if (flags > 7) fail(ErrorKind::invalid_model, r.what(), ": bad value type flags ", static_cast<int>(flags));
    t.has_rank = (flags & 1) != 0;
    t.sequence = (flags & 2) != 0;
    t.optional = (flags & 4) != 0;
    uint32_t rank = r.count("value rank", 12);
    if (rank > af::kMaxRank) fail(ErrorKind::invalid_model, r.what(), ": rank ", rank);
    int64_t known_elements = 1;  // every consumer of the type multiplies its dimensions in int64
    for (uint32_t k = 0; k < rank; ++k) {
      ir::Dim dim;
      dim.value = r.get<int64_t>("dimension");
      dim.symbol = r.str("dimension symbol", 4096);
      if (dim.value < -1) fail(ErrorKind::invalid_model, r.what(), ": dimension ", dim.value);
      if (dim.value > 0 && __builtin_mul_overflow(known_elements, dim.value, &known_elements))
        fail(ErrorKind::invalid_model, r.what(), ": a value's dimensions multiply past 2^63 elements");
      t.dims.push_back(std::move(dim));
    }
    return t;
  }

  ir::AttributeValue attribute(af::ByteReader& r, uint8_t tag, int depth) {
    switch (static_cast<af::AttributeTag>(tag)) {
      case af::AttributeTag::int64: return r.get<int64_t>("int attribute");
      case af::AttributeTag::float32: return r.get<float>("float attribute");
      case af::AttributeTag::string: return r.str("string attribute");
      case af::AttributeTag::tensor: return weight(r.get<uint32_t>("tensor attribute"), r);
      case af::AttributeTag::graph: {
        if (!r.get<uint8_t>("graph attribute flag")) return std::shared_ptr<ir::Graph>();
        return std::shared_ptr<ir::Graph>(parse_graph(r, depth + 1));
      }
      case af::AttributeTag::ints: {
        uint32_t n = r.count("ints attribute", 8);
        std::vector<int64_t> v(n);
        for (auto& x : v) x = r.get<int64_t>("ints attribute");
        return v;
      }
      case af::AttributeTag::floats: {
        uint32_t n = r.count("floats attribute", 4);
        std::vector<float> v(n);
        for (auto& x : v) x = r.get<float>("floats attribute");
        return v;
      }
      case af::AttributeTag::strings: {
        uint32_t n = r.count("strings attribute", 4);
        std::vector<std::string> v;
        for (uint32_t i = 0; i < n; ++i) v.push_back(r.str("strings attribute"));
        return v;
      }
      case af::AttributeTag::tensors: {
        uint32_t n = r.count("tensors attribute", 4);
        std::vector<Tensor> v;
        for (uint32_t i = 0; i < n; ++i) v.push_back(weight(r.get<uint32_t>("tensors attribute"), r));
        return v;
      }
    }
    fail(ErrorKind::invalid_model, r.what(), ": unknown attribute tag ", static_cast<int>(tag));
  }

  std::unique_ptr<ir::Graph> parse_graph(af::ByteReader& r, int depth) {
    if (depth > af::kMaxGraphDepth)
      fail(ErrorKind::invalid_model, r.what(), ": graph bodies nested deeper than ", af::kMaxGraphDepth);
    auto g = std::make_unique<ir::Graph>();
    g->name = r.str("graph name");
    uint32_t opsets = r.count("opset count", 12);
    for (uint32_t i = 0; i < opsets; ++i) {
      std::string domain = r.str("opset domain");
      g->opset_imports[domain] = r.get<int64_t>("opset version");
    }
    // The smallest node record is about 60 bytes; the check keeps a bogus
    // count from reserving memory the file cannot back.
    uint32_t num_nodes = r.count("node count", 48);
    std::vector<std::vector<std::pair<uint32_t, uint32_t>>> inputs(num_nodes);
    for (uint32_t i = 0; i < num_nodes; ++i) {
      std::string domain = r.str("op domain", 256);
      std::string op = r.str("op name", 256);
      std::string name = r.str("node name");
      int32_t opset_version = r.get<int32_t>("node opset");
      std::string backend = r.str("node backend", 256);
      int32_t device_type = r.get<int32_t>("device type");
      int32_t device_id = r.get<int32_t>("device id");
      uint8_t is_backward = r.get<uint8_t>("backward flag");
      int32_t num_captured = r.get<int32_t>("captured input count");
      int32_t input_position = r.get<int32_t>("input position");
      uint32_t num_inputs = r.count("input count", 8);
      for (uint32_t k = 0; k < num_inputs; ++k) {
        uint32_t producer = r.get<uint32_t>("input node");
        uint32_t index = r.get<uint32_t>("input index");
        inputs[i].emplace_back(producer, index);
      }
      uint32_t num_outputs = r.count("output count", 13);
      std::vector<ir::ValueType> types;
      std::vector<std::string> output_names;
      for (uint32_t k = 0; k < num_outputs; ++k) {
        types.push_back(value_type(r));
        output_names.push_back(r.str("output name"));
      }
      Tensor constant = weight(r.get<uint32_t>("constant weight"), r);

      const ir::OpSchema* schema = ir::find_op(domain, op);
      ir::Node* node;
      if (input_position >= 0) {
        if (static_cast<size_t>(input_position) != g->inputs().size() || !schema || schema->id != ir::OpId::Input ||
            num_outputs != 1)
          fail(ErrorKind::invalid_model, r.what(), ": node ", i, " is not a valid graph input");
        node = g->add_input(output_names[0], types[0]);
      } else {
        node = g->add_node(op, {}, static_cast<int>(num_outputs), name, domain);
      }
      node->name = name;
      node->opset_version = opset_version;
      node->backend = backend;
      if (device_type < 0 || device_type > 2) fail(ErrorKind::invalid_model, r.what(), ": bad device type ", device_type);
      node->device = Device{static_cast<DeviceType>(device_type), device_id};
      node->is_backward = is_backward != 0;
      if (num_captured < 0 || static_cast<uint32_t>(num_captured) > num_inputs)
        fail(ErrorKind::invalid_model, r.what(), ": bad captured input count ", num_captured);
      node->num_captured_inputs = num_captured;
      node->output_types = std::move(types);
      node->output_names = std::move(output_names);
      if (constant.is_defined() != (node->op() == ir::OpId::Constant))
        fail(ErrorKind::invalid_model, r.what(), ": ", node->describe(),
             constant.is_defined() ? " holds a constant value" : " has no value");
      node->constant_value = constant;
      uint32_t num_attributes = r.count("attribute count", 5);
      for (uint32_t k = 0; k < num_attributes; ++k) {
        std::string attribute_name = r.str("attribute name", 4096);
        uint8_t tag = r.get<uint8_t>("attribute tag");
        node->attributes.set(attribute_name, attribute(r, tag, depth));
      }
      node->attributes.set_owner(node->describe());
      if (r.get<uint8_t>("subgraph flag")) node->subgraph = std::shared_ptr<ir::Graph>(parse_graph(r, depth + 1));
    }
    for (uint32_t i = 0; i < num_nodes; ++i) {
      ir::Node& node = *g->nodes()[i];
      for (const auto& [producer, index] : inputs[i]) {
        if (producer == af::kAbsentInput) {
          node.inputs.push_back(ir::Value{});
          continue;
        }
        if (producer >= num_nodes || index >= static_cast<uint32_t>(g->nodes()[producer]->num_outputs()))
          fail(ErrorKind::invalid_model, r.what(), ": ", node.describe(), " reads a value that does not exist");
        node.inputs.push_back(ir::Value{g->nodes()[producer].get(), static_cast<int>(index)});
      }
    }
    uint32_t num_graph_outputs = r.count("graph output count", 12);
    for (uint32_t i = 0; i < num_graph_outputs; ++i) {
      uint32_t producer = r.get<uint32_t>("graph output node");
      uint32_t index = r.get<uint32_t>("graph output index");
      std::string name = r.str("graph output name");
      if (producer >= num_nodes || index >= static_cast<uint32_t>(g->nodes()[producer]->num_outputs()))
        fail(ErrorKind::invalid_model, r.what(), ": graph output ", i, " does not exist");
      g->add_output(ir::Value{g->nodes()[producer].get(), static_cast<int>(index)}, name);
    }
    try {
      ir::verify(*g);
    } catch (const Error& e) {
      fail(ErrorKind::invalid_model, what_, ": inconsistent graph: ", e.what());
    }
    return g;
  }

  void parse_modules() {
    const uint8_t* begin = bytes_.data + sections_[2].first;
    af::ByteReader r(begin, begin + sections_[2].second, what_ + " (modules)");
    uint32_t count = r.count("module count", 16);
    std::set<uint32_t> seen;
    for (uint32_t i = 0; i < count; ++i) {
      ModuleEntry m;
      m.node_index = r.get<uint32_t>("module node");
      m.type_key = r.str("module type", 256);
      m.size = r.get<uint64_t>("module size");
      if (m.size > r.remaining())
        fail(ErrorKind::invalid_model, what_, ": module ", i, " claims ", m.size, " bytes, ", r.remaining(), " are left");
      m.bytes = r.position();
      r.skip(static_cast<size_t>(m.size), "module bytes");
      if (info_.format_version >= 3) {
        uint32_t tensors = r.count("module tensor count", 4);
        for (uint32_t k = 0; k < tensors; ++k) m.tensors.push_back(weight(r.get<uint32_t>("module tensor"), r));
      }
      if (m.node_index >= graph_->num_nodes() || !compiler::is_compiled_node(*graph_->nodes()[m.node_index]))
        fail(ErrorKind::invalid_model, what_, ": module ", i, " belongs to node ", m.node_index,
             ", which is not a compiled subgraph node");
      if (!seen.insert(m.node_index).second)
        fail(ErrorKind::invalid_model, what_, ": two modules for node ", m.node_index);
      modules_.push_back(std::move(m));
    }
    if (r.remaining() != 0) fail(ErrorKind::invalid_model, what_, ": stray bytes after the modules");
    for (const auto& node : graph_->nodes())
      if (compiler::is_compiled_node(*node) && !seen.count(node->index()))
        fail(ErrorKind::invalid_model, what_, ": ", node->describe(), " (backend ", node->backend,
             ") has no compiled module");
  }

  void describe() {
    for (const ir::Node* in : graph_->inputs()) info_.inputs.push_back({in->output_names[0], in->output_types[0]});
    for (size_t i = 0; i < graph_->outputs().size(); ++i)
      info_.outputs.push_back({graph_->output_names()[i], graph_->type_of(graph_->outputs()[i])});
    info_.num_nodes = graph_->num_nodes();
    for (const auto& node : graph_->nodes()) {
      if (node->schema().category == ir::OpCategory::source) continue;
      ++info_.nodes_per_backend[node->backend.empty() ? backend::fallback_backend().name() : node->backend];
    }
    for (const ModuleEntry& m : modules_) {
      const ir::Node& node = *graph_->nodes()[m.node_index];
      info_.modules.push_back({m.node_index, node.name, node.backend, m.type_key, m.size});
    }
  }

  ArtifactBytes bytes_;
  std::string what_;
  bool verified_ = false;
  ArtifactInfo info_;
  std::pair<uint64_t, uint64_t> sections_[3];
  std::vector<Tensor> weights_;
  std::unique_ptr<ir::Graph> graph_;
  std::vector<ModuleEntry> modules_;
};

RestoredPlan restore(ArtifactBytes bytes, const std::string& what) {
  ArtifactReader reader(std::move(bytes), what);
  reader.verify();
  reader.parse();
  RestoredPlan plan;
  plan.modules = reader.load_modules();
  plan.info = std::move(reader.info());
  plan.graph = reader.take_graph();
  return plan;
}


}  // namespace

bool has_artifact_magic(std::string_view bytes) {
  return bytes.size() >= sizeof(kArtifactMagic) && std::memcmp(bytes.data(), kArtifactMagic, sizeof(kArtifactMagic)) == 0;
}

bool is_artifact_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof(kArtifactMagic)] = {};
  return in.read(magic, sizeof(magic)) && has_artifact_magic(std::string_view(magic, sizeof(magic)));
}

RestoredPlan load_artifact(const std::string& path) { return restore(map_file(path), "artifact '" + path + "'"); }

RestoredPlan load_artifact_from_memory(std::string_view bytes, const std::string& what) {
  return restore(ArtifactBytes{reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), nullptr}, what);
}

ArtifactInfo inspect_artifact(const std::string& path) {
  ArtifactReader reader(map_file(path), "artifact '" + path + "'");
  reader.verify();
  reader.parse();
  return reader.info();
}

}  // namespace graft::runtime

// Writes a planned graph and its compiled modules as an artifact.
//
// The graph is encoded first, node by node (docs/artifact-format.md); every
// tensor it holds (Constant values, tensor attributes, in bodies too) becomes
// a weight table entry referenced by id. Weight data is deduplicated by
// (storage, byte offset, size): the clones a plan and its subgraph bodies
// make share storage, so a weight several subgraphs read is stored once.
// Then come the weight table and its 64-byte-aligned data, one blob per
// compiled module (its save() bytes and the ids of its saved_tensors(), which
// join the weight table) and the SHA-256 of everything before. A constant
// that the module of every body it appears in supersedes (dnnl's weights,
// stored converted) keeps its table entry but no data.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "artifact_checksum.h"
#include "artifact_format.h"
#include "graft/core/tensor_bytes_key.h"
#include "graft/runtime/artifact.h"
#include "graft/runtime/cpu_features.h"

namespace graft::runtime {

namespace af = artifact_format;

namespace {

using DataKey = TensorBytesKey;

class WeightTable {
 public:
  /// The id of a tensor's entry, adding it (and its data, once) if new.
  /// `superseded`: this occurrence is a constant its module no longer reads
  /// once restored; the data is left out when every occurrence is.
  uint32_t id_of(const Tensor& t, bool superseded = false) {
    if (!t.is_defined()) return af::kNoWeight;
    if (!dtype_is_storable(t.dtype()) || dtype_size(t.dtype()) == 0)
      fail(ErrorKind::unsupported, "artifacts cannot store tensors of dtype ", dtype_name(t.dtype()));
    DataKey data_key = tensor_bytes_key(t);
    auto data = data_index_.find(data_key);
    size_t data_id;
    if (data != data_index_.end()) {
      data_id = data->second;
      if (!superseded) superseded_[data_id] = false;
    } else {
      data_id = data_.size();
      data_.push_back(t);
      superseded_.push_back(superseded);
      data_index_.emplace(data_key, data_id);
    }
    EntryKey entry_key{data_id, t.dtype(), t.shape()};
    auto entry = entry_index_.find(entry_key);
    if (entry != entry_index_.end()) return entry->second;
    uint32_t id = static_cast<uint32_t>(entries_.size());
    entries_.push_back(entry_key);
    entry_index_.emplace(entry_key, id);
    return id;
  }

  /// The weights section: table, padding, data. `section_offset` is where
  /// the section starts in the file (data offsets are relative to it but
  /// aligned in the file).
  std::string section(size_t section_offset, uint64_t* data_bytes) const {
    std::string out;
    af::ByteWriter w(out);
    w.put<uint64_t>(entries_.size());
    size_t table_bytes = 8;
    for (const auto& [data_id, dtype, shape] : entries_) table_bytes += 4 + 4 + 8 * shape.size() + 8 + 8;
    // Lay the data out first so that the table can name offsets.
    std::vector<uint64_t> offsets(data_.size());
    uint64_t cursor = table_bytes;
    for (size_t i = 0; i < data_.size(); ++i) {
      if (superseded_[i]) {
        offsets[i] = af::kNoWeightData;
        continue;
      }
      cursor = (section_offset + cursor + af::kWeightAlignment - 1) / af::kWeightAlignment * af::kWeightAlignment - section_offset;
      offsets[i] = cursor;
      cursor += data_[i].nbytes();
    }
    for (const auto& [data_id, dtype, shape] : entries_) {
      w.put<uint32_t>(static_cast<uint32_t>(dtype));
      w.put<uint32_t>(static_cast<uint32_t>(shape.size()));
      for (int64_t d : shape) w.put<int64_t>(d);
      w.put<uint64_t>(offsets[data_id]);
      w.put<uint64_t>(data_[data_id].nbytes());
    }
    *data_bytes = 0;
    for (size_t i = 0; i < data_.size(); ++i) {
      if (superseded_[i]) continue;
      out.resize(offsets[i], '\0');
      out.append(static_cast<const char*>(data_[i].raw_data()), data_[i].nbytes());
      *data_bytes += data_[i].nbytes();
    }
    return out;
  }

 private:
  using EntryKey = std::tuple<size_t, DType, Shape>;
  std::vector<Tensor> data_;
  std::vector<bool> superseded_;  // per datum: every occurrence so far was superseded
  std::map<DataKey, size_t> data_index_;
  std::vector<EntryKey> entries_;
  std::map<EntryKey, uint32_t> entry_index_;
};

/// Per compiled node of the top-level graph: the constants of its body that
/// its module supersedes.
using SupersededByNode = std::map<const ir::Node*, std::set<DataKey>>;

class GraphEncoder {
 public:
  GraphEncoder(std::string& out, WeightTable& weights, const SupersededByNode& superseded)
      : w_(out), weights_(weights), superseded_(superseded) {}

  void graph(const ir::Graph& g, int depth) {
    if (depth > af::kMaxGraphDepth) fail(ErrorKind::unsupported, "graph bodies nested deeper than ", af::kMaxGraphDepth);
    std::map<const ir::Node*, uint32_t> position;
    for (const auto& n : g.nodes()) position.emplace(n.get(), static_cast<uint32_t>(position.size()));
    std::map<const ir::Node*, int32_t> input_position;
    for (size_t i = 0; i < g.inputs().size(); ++i) input_position[g.inputs()[i]] = static_cast<int32_t>(i);
    // The reader re-registers inputs in node order; they must be in that order here too.
    int32_t expected = 0;
    for (const auto& n : g.nodes()) {
      auto it = input_position.find(n.get());
      if (it == input_position.end()) continue;
      if (it->second != expected++)
        fail(ErrorKind::unsupported, "artifact writer: graph inputs are not in node order (", n->describe(), ")");
    }

    w_.str(g.name);
    w_.put<uint32_t>(static_cast<uint32_t>(g.opset_imports.size()));
    for (const auto& [domain, version] : g.opset_imports) {
      w_.str(domain);
      w_.put<int64_t>(version);
    }
    w_.put<uint32_t>(static_cast<uint32_t>(g.num_nodes()));
    for (const auto& n : g.nodes()) {
      auto it = input_position.find(n.get());
      node(*n, position, it == input_position.end() ? -1 : it->second, depth);
    }
    w_.put<uint32_t>(static_cast<uint32_t>(g.outputs().size()));
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      w_.put<uint32_t>(position.at(g.outputs()[i].node));
      w_.put<uint32_t>(static_cast<uint32_t>(g.outputs()[i].index));
      w_.str(g.output_names()[i]);
    }
  }

 private:
  void value_type(const ir::ValueType& t) {
    w_.put<uint32_t>(static_cast<uint32_t>(t.dtype));
    // Bit 0: the rank is known; bit 1: a sequence of such tensors; bit 2: optional.
    w_.put<uint8_t>(static_cast<uint8_t>((t.has_rank ? 1 : 0) | (t.sequence ? 2 : 0) | (t.optional ? 4 : 0)));
    w_.put<uint32_t>(static_cast<uint32_t>(t.dims.size()));
    for (const ir::Dim& d : t.dims) {
      w_.put<int64_t>(d.value);
      w_.str(d.symbol.str());
    }
  }

  void node(const ir::Node& n, const std::map<const ir::Node*, uint32_t>& position, int32_t input_position, int depth) {
    w_.str(n.schema().domain);
    w_.str(n.schema().name);
    w_.str(n.name);
    w_.put<int32_t>(n.opset_version);
    w_.str(n.backend);
    w_.put<int32_t>(static_cast<int32_t>(n.device.type));
    w_.put<int32_t>(n.device.id);
    w_.put<uint8_t>(n.is_backward ? 1 : 0);
    w_.put<int32_t>(n.num_captured_inputs);
    w_.put<int32_t>(input_position);
    w_.put<uint32_t>(static_cast<uint32_t>(n.inputs.size()));
    for (const ir::Value& v : n.inputs) {
      w_.put<uint32_t>(v.node ? position.at(v.node) : af::kAbsentInput);
      w_.put<uint32_t>(static_cast<uint32_t>(v.index));
    }
    w_.put<uint32_t>(static_cast<uint32_t>(n.output_types.size()));
    for (size_t i = 0; i < n.output_types.size(); ++i) {
      value_type(n.output_types[i]);
      w_.str(n.output_names[i]);
    }
    w_.put<uint32_t>(weights_.id_of(n.constant_value, superseded_here_ && n.constant_value.is_defined() &&
                                                          superseded_here_->count(tensor_bytes_key(n.constant_value))));
    w_.put<uint32_t>(static_cast<uint32_t>(n.attributes.all().size()));
    for (const auto& [name, value] : n.attributes.all()) {
      w_.str(name);
      w_.put<uint8_t>(static_cast<uint8_t>(value.index()));
      attribute(value, depth);
    }
    w_.put<uint8_t>(n.subgraph ? 1 : 0);
    if (n.subgraph) {
      // Only the body's own constants may be superseded, not those of bodies nested in it.
      const std::set<DataKey>* outer = superseded_here_;
      auto it = depth == 0 ? superseded_.find(&n) : superseded_.end();
      superseded_here_ = it == superseded_.end() ? nullptr : &it->second;
      graph(*n.subgraph, depth + 1);
      superseded_here_ = outer;
    }
  }

  void attribute(const ir::AttributeValue& value, int depth) {
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, int64_t>) w_.put<int64_t>(v);
          else if constexpr (std::is_same_v<T, float>) w_.put<float>(v);
          else if constexpr (std::is_same_v<T, std::string>) w_.str(v);
          else if constexpr (std::is_same_v<T, Tensor>) w_.put<uint32_t>(weights_.id_of(v));
          else if constexpr (std::is_same_v<T, std::shared_ptr<ir::Graph>>) {
            w_.put<uint8_t>(v ? 1 : 0);
            if (v) graph(*v, depth + 1);
          } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            w_.put<uint32_t>(static_cast<uint32_t>(v.size()));
            for (int64_t x : v) w_.put<int64_t>(x);
          } else if constexpr (std::is_same_v<T, std::vector<float>>) {
            w_.put<uint32_t>(static_cast<uint32_t>(v.size()));
            for (float x : v) w_.put<float>(x);
          } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            w_.put<uint32_t>(static_cast<uint32_t>(v.size()));
            for (const std::string& x : v) w_.str(x);
          } else {
            static_assert(std::is_same_v<T, std::vector<Tensor>>);
            w_.put<uint32_t>(static_cast<uint32_t>(v.size()));
            for (const Tensor& x : v) w_.put<uint32_t>(weights_.id_of(x));
          }
        },
        value);
  }

  af::ByteWriter w_;
  WeightTable& weights_;
  const SupersededByNode& superseded_;
  const std::set<DataKey>* superseded_here_ = nullptr;
};

void put_at(std::string& out, size_t offset, const void* data, size_t size) { std::memcpy(out.data() + offset, data, size); }

void put_text(std::string& out, size_t offset, std::string_view text, size_t field_size) {
  std::string padded(text.substr(0, field_size - 1));
  padded.resize(field_size, '\0');
  put_at(out, offset, padded.data(), field_size);
}

}  // namespace

std::string serialize_artifact(const ir::Graph& planned, const ModuleTable& modules, uint32_t format_version) {
  if (format_version < 1 || format_version > kArtifactFormatVersion)
    fail(ErrorKind::invalid_argument, "artifact writer: no format version ", format_version, " (this graft writes 1 to ",
         kArtifactFormatVersion, ")");
  const bool module_tensors = format_version >= 3;
  auto module_of = [&](const ir::Node& node) {
    const CompiledModule* module = node.index() < modules.size() ? modules[node.index()].get() : nullptr;
    if (!module) fail(ErrorKind::internal, "artifact writer: ", node.describe(), " has no compiled module");
    return module;
  };
  SupersededByNode superseded;
  for (const auto& node : planned.nodes()) {
    if (!is_compiled_node(*node) || !module_tensors) continue;
    std::set<DataKey> keys;
    for (const Tensor& t : module_of(*node)->superseded_constants()) keys.insert(tensor_bytes_key(t));
    if (!keys.empty()) superseded.emplace(node.get(), std::move(keys));
  }
  WeightTable weights;
  std::string graph_bytes;
  GraphEncoder(graph_bytes, weights, superseded).graph(planned, 0);

  // Modules: every compiled node's module, saved.
  std::string module_bytes;
  af::ByteWriter mw(module_bytes);
  uint32_t count = 0;
  bool native_code = false;
  std::string entries;
  af::ByteWriter ew(entries);
  for (const auto& node : planned.nodes()) {
    if (!is_compiled_node(*node)) continue;
    const CompiledModule* module = module_of(*node);
    std::ostringstream saved;
    module->save(saved);
    ew.put<uint32_t>(node->index());
    ew.str(module->type_key());
    std::string blob = saved.str();
    ew.put<uint64_t>(blob.size());
    entries += blob;
    std::vector<Tensor> tensors = module->saved_tensors();
    if (module_tensors) {
      ew.put<uint32_t>(static_cast<uint32_t>(tensors.size()));
      for (const Tensor& t : tensors) ew.put<uint32_t>(weights.id_of(t));
    } else if (!tensors.empty()) {
      fail(ErrorKind::unsupported, "artifact format ", format_version, " cannot store the tensors of ",
           node->describe(), "'s ", module->type_key(), " module (format 3 and later can)");
    }
    // A shape_specialized module compiles on the machine that runs it.
    native_code = native_code || (module->type_key() != "ref" && module->type_key() != "shape_specialized");
    ++count;
  }
  mw.put<uint32_t>(count);
  module_bytes += entries;

  std::string out(kArtifactHeaderSize, '\0');
  const uint64_t graph_offset = kArtifactHeaderSize;
  out += graph_bytes;
  af::ByteWriter(out).pad_to(af::kWeightAlignment);
  const uint64_t weights_offset = out.size();
  uint64_t weight_data_bytes = 0;
  std::string weight_section = weights.section(weights_offset, &weight_data_bytes);
  out += weight_section;
  const uint64_t modules_offset = out.size();
  out += module_bytes;
  const uint64_t file_size = out.size() + kArtifactChecksumSize;

  put_at(out, af::kMagicOffset, kArtifactMagic, sizeof(kArtifactMagic));
  uint32_t version = format_version, header_size = kArtifactHeaderSize;
  put_at(out, af::kVersionOffset, &version, 4);
  put_at(out, af::kHeaderSizeOffset, &header_size, 4);
  put_at(out, af::kFileSizeOffset, &file_size, 8);
  // Native code (anything but `ref`) was compiled for this machine's features.
  uint64_t features = native_code ? host_cpu_features() : 0;
  put_at(out, af::kCpuFeaturesOffset, &features, 8);
  put_text(out, af::kArchitectureOffset, host_architecture(), 16);
  put_text(out, af::kGraftVersionOffset, GRAFT_VERSION, 16);
  const uint64_t sections[6] = {graph_offset, graph_bytes.size(), weights_offset, weight_section.size(),
                                modules_offset, module_bytes.size()};
  put_at(out, af::kSectionTableOffset, sections, sizeof(sections));

  auto digest =
      af::artifact_checksum(reinterpret_cast<const uint8_t*>(out.data()), out.size(), format_version);
  out.append(reinterpret_cast<const char*>(digest.data()), kArtifactChecksumSize);
  return out;
}

void write_artifact(const ir::Graph& planned, const ModuleTable& modules, const std::string& path) {
  std::string bytes = serialize_artifact(planned, modules);
  std::string temporary = path + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::remove(temporary.c_str());
      fail(ErrorKind::io, "cannot write artifact '", path, "'");
    }
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::remove(temporary.c_str());
    fail(ErrorKind::io, "cannot write artifact '", path, "': ", ec.message());
  }
}

}  // namespace graft::runtime

/// \file
/// Compiled artifacts (.graft files): a model partitioned, fused and compiled
/// once for given input shapes, stored in one file that loads and runs without
/// partitioning or compiling again. The byte layout is in
/// docs/artifact-format.md: a header (magic, format version, graft version,
/// architecture and CPU features), the planned graph, its weights (64-byte
/// aligned, each stored once, mapped into memory on load), one blob per
/// compiled module and a SHA-256 over everything before it.
///
/// Loading checks size, magic, format version, checksum, architecture and CPU
/// features before it parses anything else, bounds-checks every offset and
/// size, and only then hands module blobs (which may hold native code) to
/// their loaders.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graft/core/shape.h"
#include "graft/compiler/module_table.h"
#include "graft/runtime/session.h"

namespace graft::runtime {

/// The 8 bytes every artifact starts with.
inline constexpr char kArtifactMagic[8] = {'G', 'R', 'A', 'F', 'T', 'A', 'R', 'T'};
/// The format version this graft writes, and the newest it reads.
inline constexpr uint32_t kArtifactFormatVersion = 4;
/// Size of the fixed header, and of the SHA-256 at the end of the file.
inline constexpr size_t kArtifactHeaderSize = 128;
inline constexpr size_t kArtifactChecksumSize = 32;

/// One compiled module of an artifact.
struct ArtifactModuleInfo {
  uint32_t node_index = 0;  ///< the graft.Subgraph / FusedPointwise node it belongs to
  std::string node_name;
  std::string backend;
  std::string type_key;
  uint64_t bytes = 0;       ///< size of the saved module
};

/// What an artifact's header and tables say (graft info).
struct ArtifactInfo {
  uint32_t format_version = 0;
  std::string graft_version;
  std::string architecture;
  uint64_t cpu_features = 0;  ///< CpuFeature bits the native code was compiled for
  uint64_t file_bytes = 0, graph_bytes = 0, weights_bytes = 0, modules_bytes = 0;
  uint64_t num_weights = 0;       ///< weight table entries
  uint64_t weight_data_bytes = 0; ///< bytes of weight data (each stored once)
  uint64_t num_converted_only_weights = 0;  ///< entries without data: their modules store them converted
  std::vector<ValueInfo> inputs, outputs;
  size_t num_nodes = 0;
  std::map<std::string, size_t> nodes_per_backend;  ///< top-level nodes by assigned backend (the fallback, `ref`, when none)
  std::vector<ArtifactModuleInfo> modules;
};

/// A planned graph (concrete input types, compiled nodes assigned to
/// backends) and the compiled module of each compiled node.
struct RestoredPlan {
  std::unique_ptr<ir::Graph> graph;
  backend::ModuleTable modules;  ///< by Node::index() of `graph`
  ArtifactInfo info;
};

/// True when `bytes` start with kArtifactMagic.
bool has_artifact_magic(std::string_view bytes);
/// True when the file exists and starts with kArtifactMagic.
bool is_artifact_file(const std::string& path);

/// Serializes a planned graph and its modules (every compiled node must have
/// one whose save() works) into artifact bytes. `format_version` 1 or 2
/// writes the layout older grafts read (for tests and tools that must): it
/// refuses modules that store tensors (dnnl's converted weights).
std::string serialize_artifact(const ir::Graph& planned, const backend::ModuleTable& modules,
                               uint32_t format_version = kArtifactFormatVersion);
/// serialize_artifact() written to `path` (through a temporary file renamed into place).
void write_artifact(const ir::Graph& planned, const backend::ModuleTable& modules, const std::string& path);

/// Maps an artifact file into memory, verifies it and restores its plan; the
/// weights are views of the mapping, which lives as long as any of them.
/// Throws Error(io) when the file cannot be read and Error(invalid_model) or
/// Error(unsupported) naming what is wrong with it otherwise.
RestoredPlan load_artifact(const std::string& path);
/// The same from bytes in memory, verified in place and copied (into an
/// aligned buffer the weights view) only once verified; `what` names them in errors.
RestoredPlan load_artifact_from_memory(std::string_view bytes, const std::string& what = "<memory>");

/// Verifies an artifact and reads its header and tables without loading any module.
ArtifactInfo inspect_artifact(const std::string& path);

/// How graft compile builds an artifact.
struct ArtifactCompileOptions {
  /// Backends, fusion, threads, passes, device. Empty backends, no
  /// GRAFT_BACKENDS and the host as the device: every available host
  /// backend, including those a Session leaves out by default (ccodegen).
  SessionOptions session;
  std::map<std::string, Shape> input_shapes; ///< by input name; needed for symbolic dimensions
  std::string shape_flag;  ///< how the caller takes input_shapes ("--shape"), named in messages
};

/// Throws invalid_argument when `shape`, given for `input`, does not fit the
/// rank and known dimensions the model declares. `shape_flag` ("--shape")
/// names how the shape was given, in messages; empty: "the shape given".
void check_shape_fits(const ValueInfo& input, const Shape& shape, std::string_view shape_flag = {});
/// The concrete input types of a plan made ahead of time: `shapes` where
/// given (check_shape_fits), else the model's own; throws invalid_argument
/// naming an input left symbolic or a shape given for an input the model does
/// not have (`shape_flag` as for check_shape_fits).
std::vector<ir::ValueType> concrete_input_types(const std::vector<ValueInfo>& inputs,
                                                const std::map<std::string, Shape>& shapes,
                                                std::string_view shape_flag = {});

}  // namespace graft::runtime

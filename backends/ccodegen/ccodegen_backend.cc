// The `ccodegen` backend and its CompiledModule. compile() emits C for the
// subgraph (c_emitter.cc), runs the system C compiler (c_compiler.cc) and
// loads the shared object; the module keeps the object's bytes so that save()
// can store them in an artifact. The loader writes those bytes to a private
// temporary file, dlopen()s it and removes the file; the artifact reader
// calls it only after the file's checksum and CPU features were verified.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <istream>
#include <ostream>

#include "c_op_table.h"
#include "graft/backends/ccodegen.h"
#include "graft/ir/graph.h"
#include "graft/ir/indexed_graph.h"
#include "graft/backend/backend.h"
#include "graft/backend/module_stream.h"
#include "temp_dir.h"

namespace graft::backends {

namespace {

using EntryFn = void (*)(const float* const*, float* const*, const float* const*, float*, int);

/// Format of ccodegen's saved module; bumped on any change.
constexpr uint32_t kSavedModuleVersion = 2;  // 2: the entry takes the thread count
/// Sanity limits for a saved module's fields.
constexpr uint64_t kMaxSharedObjectBytes = uint64_t{1} << 30;
constexpr uint64_t kMaxListLength = uint64_t{1} << 20;

/// A dlopen()ed shared object, closed when the last module using it goes away.
class SharedObject {
 public:
  /// Loads `bytes` (an ELF shared object) through a private temporary file.
  explicit SharedObject(const std::string& bytes, const std::string& what) {
    TempDir dir("graft-module");
    std::string path = dir.path() + "/module.so";
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
    if (fd < 0) fail(ErrorKind::io, "ccodegen: cannot write ", path, ": ", std::strerror(errno));
    size_t written = 0;
    while (written < bytes.size()) {
      ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
      if (n <= 0) {
        ::close(fd);
        fail(ErrorKind::io, "ccodegen: cannot write ", path);
      }
      written += static_cast<size_t>(n);
    }
    ::close(fd);
    handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      const char* error = ::dlerror();
      fail(ErrorKind::invalid_model, "ccodegen: cannot load the shared object of ", what, ": ",
           error ? error : "dlopen failed");
    }
  }
  ~SharedObject() {
    if (handle_) ::dlclose(handle_);
  }
  SharedObject(const SharedObject&) = delete;
  SharedObject& operator=(const SharedObject&) = delete;

  void* symbol(const std::string& name, const std::string& what) const {
    ::dlerror();
    void* address = ::dlsym(handle_, name.c_str());
    if (!address) fail(ErrorKind::invalid_model, "ccodegen: ", what, " has no entry function '", name, "'");
    return address;
  }

 private:
  void* handle_ = nullptr;
};

/// What a compiled subgraph needs besides its shared object.
struct ModuleLayout {
  std::string entry;
  std::vector<Shape> input_shapes, output_shapes;
  std::vector<uint32_t> constant_ids;
  uint64_t scratch_floats = 0;
};

class CcodegenModule final : public backend::CompiledModule {
 public:
  CcodegenModule(const ir::Graph& subgraph, ModuleLayout layout, std::string shared_object, const std::string& what)
      : layout_(std::move(layout)), shared_object_bytes_(std::move(shared_object)) {
    library_ = std::make_shared<SharedObject>(shared_object_bytes_, what);
    entry_ = reinterpret_cast<EntryFn>(library_->symbol(layout_.entry, what));
    ir::IndexedGraph indexed(subgraph);
    for (uint32_t id : layout_.constant_ids) {
      if (id >= indexed.num_nodes() || indexed.node(id).op() != ir::OpId::Constant ||
          indexed.node(id).constant_value.dtype() != DType::float32)
        fail(ErrorKind::invalid_model, "ccodegen: ", what, " refers to node ", id,
             " of its subgraph as a float32 constant, which it is not");
      constants_.push_back(indexed.node(id).constant_value);
    }
    if (layout_.input_shapes.size() != subgraph.inputs().size() ||
        layout_.output_shapes.size() != subgraph.outputs().size())
      fail(ErrorKind::invalid_model, "ccodegen: ", what, " does not match its subgraph's inputs and outputs");
  }

  std::string type_key() const override { return "ccodegen"; }

  std::vector<Tensor> run(std::span<const Tensor> inputs, backend::ModuleRunContext& context) const override {
    if (inputs.size() != layout_.input_shapes.size())
      fail(ErrorKind::internal, "ccodegen module got ", inputs.size(), " inputs, expected ", layout_.input_shapes.size());
    std::vector<const float*> input_pointers;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].dtype() != DType::float32 || inputs[i].shape() != layout_.input_shapes[i])
        fail(ErrorKind::internal, "ccodegen module input ", i, " is ", inputs[i].type_string(), ", compiled for float32",
             shape_to_string(layout_.input_shapes[i]));
      input_pointers.push_back(inputs[i].data<float>());
    }
    std::vector<Tensor> outputs;
    std::vector<float*> output_pointers;
    for (const Shape& shape : layout_.output_shapes) {
      outputs.push_back(context.pool.allocate(DType::float32, shape));
      output_pointers.push_back(outputs.back().data<float>());
    }
    std::vector<const float*> constant_pointers;
    for (const Tensor& c : constants_) constant_pointers.push_back(c.data<float>());
    Tensor scratch;
    if (layout_.scratch_floats > 0)
      scratch = context.pool.allocate(DType::float32, {static_cast<int64_t>(layout_.scratch_floats)});
    entry_(input_pointers.data(), output_pointers.data(), constant_pointers.data(),
           layout_.scratch_floats ? scratch.data<float>() : nullptr, std::max(1, context.num_threads));
    return outputs;
  }

  void save(std::ostream& out) const override {
    backend::ModuleWriter w(out);
    w.u32(kSavedModuleVersion);
    w.bytes(layout_.entry);
    auto write_shapes = [&](const std::vector<Shape>& shapes) {
      w.u64(shapes.size());
      for (const Shape& s : shapes) w.i64s(s);
    };
    write_shapes(layout_.input_shapes);
    write_shapes(layout_.output_shapes);
    w.i64s(std::vector<int64_t>(layout_.constant_ids.begin(), layout_.constant_ids.end()));
    w.u64(layout_.scratch_floats);
    w.bytes(shared_object_bytes_);
  }

 private:
  ModuleLayout layout_;
  std::string shared_object_bytes_;
  std::shared_ptr<SharedObject> library_;
  EntryFn entry_ = nullptr;
  std::vector<Tensor> constants_;
};

std::string describe_subgraph(const ir::Graph& subgraph) {
  return "subgraph '" + (subgraph.name.empty() ? std::string("<unnamed>") : subgraph.name) + "'";
}

/// Writes the generated C as DIR/<subgraph name>.c (the name made file-safe;
/// the entry name when the subgraph has none).
void write_source(const std::string& dir, const ir::Graph& subgraph, const GeneratedC& c) {
  std::string stem;
  for (char ch : subgraph.name) stem += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_') ? ch : '_';
  if (stem.empty()) stem = c.entry;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string path = dir + "/" + stem + ".c";
  std::ofstream out(path, std::ios::binary);
  out << c.source;
  if (!out) fail(ErrorKind::io, "ccodegen: cannot write ", path);
}

class CcodegenBackend final : public backend::Backend {
 public:
  std::string name() const override { return "ccodegen"; }
  int default_rank() const override { return 30; }
  // A C compiler run per subgraph (0.1-0.7 s): only when asked for, or in graft compile.
  bool in_default_order() const override { return false; }
  std::string unavailable_reason() const override {
    if (!find_c_compiler().empty()) return {};
    const char* cc = std::getenv("CC");
    if (cc && *cc) return "CC='" + std::string(cc) + "' is not an executable program";
    return "no C compiler found (set CC, or put cc, gcc or clang on PATH)";
  }
  std::unique_ptr<backend::CompiledModule> compile(const ir::Graph& subgraph,
                                                   const backend::CompileOptions& options) const override {
    GeneratedC c = generate_c(subgraph);
    std::string what = describe_subgraph(subgraph);
    if (!options.emit_source_dir.empty()) write_source(options.emit_source_dir, subgraph, c);
    std::string shared_object = compile_c_to_shared_object(c.source, what);
    ModuleLayout layout{c.entry, c.input_shapes, c.output_shapes, c.constant_ids, c.scratch_floats};
    return std::make_unique<CcodegenModule>(subgraph, std::move(layout), std::move(shared_object), what);
  }
};

std::unique_ptr<backend::CompiledModule> load_ccodegen_module(std::istream& in, const ir::Graph& subgraph,
                                                               std::span<const Tensor> tensors) {
  if (!tensors.empty()) fail(ErrorKind::invalid_model, "ccodegen module: stores no tensors, got ", tensors.size());
  std::string what = "ccodegen module of " + describe_subgraph(subgraph);
  backend::ModuleReader r(in, what);
  uint32_t version = r.u32("version");
  if (version != kSavedModuleVersion)
    fail(ErrorKind::invalid_model, what, ": saved by ccodegen version ", version, ", this graft reads version ",
         kSavedModuleVersion);
  ModuleLayout layout;
  layout.entry = r.bytes("entry", 256);
  auto read_shapes = [&](std::string_view field) {
    uint64_t count = r.u64(field);
    if (count > kMaxListLength) fail(ErrorKind::invalid_model, what, ": ", field, " count ", count);
    std::vector<Shape> shapes;
    for (uint64_t i = 0; i < count; ++i) {
      shapes.push_back(r.i64s(field, 64));
      for (int64_t d : shapes.back())
        if (d < 0) fail(ErrorKind::invalid_model, what, ": negative dimension in ", field);
    }
    return shapes;
  };
  layout.input_shapes = read_shapes("input shapes");
  layout.output_shapes = read_shapes("output shapes");
  for (int64_t id : r.i64s("constant ids", kMaxListLength)) {
    if (id < 0 || id > UINT32_MAX) fail(ErrorKind::invalid_model, what, ": bad constant id ", id);
    layout.constant_ids.push_back(static_cast<uint32_t>(id));
  }
  layout.scratch_floats = r.u64("scratch size");
  if (layout.scratch_floats > (uint64_t{1} << 40)) fail(ErrorKind::invalid_model, what, ": scratch size too large");
  std::string shared_object = r.bytes("shared object", kMaxSharedObjectBytes);
  return std::make_unique<CcodegenModule>(subgraph, std::move(layout), std::move(shared_object), what);
}

}  // namespace

CcodegenSupport ccodegen_supports(const ir::Node& node) {
  // Looked up each time (a few stat calls): CC may change while the process runs.
  const std::string unavailable = CcodegenBackend().unavailable_reason();
  if (!unavailable.empty()) return {false, unavailable};
  std::string refusal = c_op_refusal(node);
  return {refusal.empty(), refusal};
}

GRAFT_REGISTER_BACKEND(CcodegenBackend);
GRAFT_REGISTER_MODULE_LOADER("ccodegen", load_ccodegen_module);

}  // namespace graft::backends

// The compile cache (see graft/codegen/compile_cache.h for the contract).
//
// Disk entry layout (<GRAFT_CACHE_DIR>/<key>.gko for CPU object code,
// <key>.ptx for CUDA PTX):
//   8 bytes  magic "GRAFTKO1"
//   8 bytes  payload size (little endian)
//   8 bytes  FNV-1a of the payload
//   4 bytes  key length, then the key
//   payload  the object file, or the PTX
// Anything else (short file, wrong magic, size or checksum, another key) is
// a miss: the kernel is compiled again and the entry rewritten.
//
// The target record <fingerprint hash>.gkt has the same layout: key = this
// host's fingerprint (host_fingerprint.h), payload = llvm_target_id(). It is
// what lets a process compute CPU keys without loading LLVM; a record that
// is missing, corrupt or of another fingerprint means "load LLVM" (and is
// written then). Entries found that way are linked by object_linker.cc, only
// after their checksum matched.
#include "graft/codegen/compile_cache.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "graft/codegen/cuda_emitter.h"
#include "graft/codegen/interpreter.h"
#include "graft/core/error.h"
#include "graft/core/printable.h"
#include "host_fingerprint.h"
#include "jit_runner.h"
#include "llvm_jit.h"
#include "object_linker.h"

namespace graft::codegen {

namespace {

constexpr char kEntryMagic[8] = {'G', 'R', 'A', 'F', 'T', 'K', 'O', '1'};
constexpr uint64_t kMaxEntryBytes = uint64_t(1) << 30;

std::string hex(uint64_t v) {
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(v));
  return buffer;
}

template <typename T>
void append(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

std::string encode_entry(const std::string& key, const std::string& object) {
  std::string bytes(kEntryMagic, 8);
  append<uint64_t>(bytes, object.size());
  append<uint64_t>(bytes, ir::fnv1a(object));
  append<uint32_t>(bytes, static_cast<uint32_t>(key.size()));
  bytes += key;
  bytes += object;
  return bytes;
}

/// The object code of a valid entry, or nullopt.
std::optional<std::string> decode_entry(const std::string& bytes, const std::string& key) {
  size_t header = 8 + 8 + 8 + 4;
  if (bytes.size() < header || std::memcmp(bytes.data(), kEntryMagic, 8) != 0) return std::nullopt;
  uint64_t size, checksum;
  uint32_t key_size;
  std::memcpy(&size, bytes.data() + 8, 8);
  std::memcpy(&checksum, bytes.data() + 16, 8);
  std::memcpy(&key_size, bytes.data() + 24, 4);
  if (key_size != key.size() || bytes.size() != header + key_size + size) return std::nullopt;
  if (bytes.compare(header, key_size, key) != 0) return std::nullopt;
  std::string object = bytes.substr(header + key_size);
  if (ir::fnv1a(object) != checksum) return std::nullopt;
  return object;
}

std::optional<std::string> read_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  auto size = std::filesystem::file_size(path, ec);
  if (ec || size > kMaxEntryBytes) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string bytes(size, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (static_cast<uint64_t>(in.gcount()) != size) return std::nullopt;
  return bytes;
}

/// Writes to a unique temporary file in the same directory, then renames it
/// over `path` (atomic on POSIX). Returns an error message or "".
std::string write_atomically(const std::filesystem::path& path, const std::string& bytes) {
  static std::atomic<uint64_t> counter{0};
  std::ostringstream name;
  name << "." << path.filename().string() << "." << ::getpid() << "." << std::this_thread::get_id() << "."
       << counter.fetch_add(1) << ".tmp";
  std::filesystem::path temporary = path.parent_path() / name.str();
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) return "cannot create " + temporary.string() + " (" + std::strerror(errno) + ")";
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      return "cannot write " + temporary.string() + " (" + std::strerror(errno) + ")";
    }
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::filesystem::remove(temporary, ec);
    return "cannot rename into " + path.string();
  }
  return {};
}

/// A cache folder that cannot take an entry (read-only, full disk) costs
/// compiles, never correctness: said once per process, not once per kernel.
void warn_cache_write_failure_once(const std::string& problem) {
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return;
  std::cerr << "graft: warning: compile cache: " << problem
            << "; kernels are compiled but not cached (further failures to write are not reported)\n";
}

std::string key_of(const std::string& material) {
  return hex(ir::fnv1a(material)) + hex(ir::fnv1a(material, 0x84222325cbf29ce4ull));
}

std::string cpu_key_of(const ir::KernelIR& ir, const std::string& target) {
  return key_of(serialize(ir) + "|cpu|" + target);
}

std::filesystem::path target_record_path(const std::string& dir, const std::string& fingerprint) {
  return std::filesystem::path(dir) / (key_of(fingerprint) + ".gkt");
}

/// The vector width a target id names ("...|lanes-16"), or 0.
int64_t lanes_of_target(const std::string& target) {
  size_t at = target.rfind("|lanes-");
  if (at == std::string::npos) return 0;
  std::string lanes = target.substr(at + 7);
  return lanes == "4" ? 4 : lanes == "8" ? 8 : lanes == "16" ? 16 : 0;
}

/// The target id recorded in `dir` for this host, or nullopt.
std::optional<std::string> recorded_cpu_target(const std::string& dir) {
  std::optional<std::string> fingerprint = cpu_host_fingerprint();
  if (!fingerprint) return std::nullopt;
  std::optional<std::string> bytes = read_file(target_record_path(dir, *fingerprint));
  if (!bytes) return std::nullopt;
  std::optional<std::string> target = decode_entry(*bytes, *fingerprint);
  if (!target || lanes_of_target(*target) == 0) return std::nullopt;
  return target;
}

}  // namespace

bool jit_enabled_by_environment() {
  const char* value = std::getenv("GRAFT_JIT");
  if (!value || std::strcmp(value, "1") == 0) return true;
  if (std::strcmp(value, "0") == 0) return false;
  fail(ErrorKind::invalid_argument, "GRAFT_JIT must be 0 or 1, got \"", printable_excerpt(value), "\"");
}

std::optional<std::string> cache_directory_from_environment() {
  const char* value = std::getenv("GRAFT_CACHE_DIR");
  if (!value || !*value) return std::nullopt;
  std::filesystem::path dir(value);
  std::error_code ec;
  if (std::filesystem::exists(dir, ec)) {
    if (!std::filesystem::is_directory(dir, ec))
      fail(ErrorKind::invalid_argument, "GRAFT_CACHE_DIR=\"", printable_excerpt(value, 256), "\" is not a directory");
  } else {
    std::filesystem::create_directories(dir, ec);
    if (ec || !std::filesystem::is_directory(dir))
      fail(ErrorKind::invalid_argument, "GRAFT_CACHE_DIR=\"", printable_excerpt(value, 256), "\" cannot be created: ", ec.message());
  }
  // A folder this process cannot write (read-only, another user's, a full
  // disk) is still used: its entries are read, and the first entry that
  // cannot be written is one warning (warn_cache_write_failure_once).
  return dir.string();
}

std::string cpu_jit_unavailable_reason() {
  return llvm_jit_available() ? std::string() : llvm_jit_unavailable_reason();
}

bool cpu_jit_loaded() { return llvm_jit_loaded(); }

std::string cpu_jit_target() {
  if (!llvm_jit_available())
    fail(ErrorKind::unsupported, "the LLVM JIT is unavailable: ", llvm_jit_unavailable_reason());
  return llvm_target_id();
}

CompileCache& CompileCache::global() {
  static CompileCache* cache = new CompileCache;  // never destroyed: JIT code may run at exit
  return *cache;
}

std::string CompileCache::cpu_key(const ir::KernelIR& ir) const {
  if (!llvm_jit_available()) return {};
  return cpu_key_of(ir, llvm_target_id());
}

void CompileCache::warn_once(const std::string& message) {
  if (warned_.exchange(true)) return;
  std::cerr << "graft: warning: " << message << "; fused kernels run in the interpreter (results stay correct)\n";
}

std::shared_ptr<const KernelRunner> CompileCache::cpu_runner(const ir::KernelIR& ir) {
  if (!jit_enabled_by_environment()) {
    counters_.interpreted++;
    return std::make_shared<Interpreter>(ir);
  }
  if (auto cached = cached_cpu_runner(ir)) return cached;
  if (!llvm_jit_available()) {  // never silently: say once why kernels are interpreted
    warn_once("the LLVM JIT is unavailable (" + llvm_jit_unavailable_reason() + ")");
    counters_.interpreted++;
    return std::make_shared<Interpreter>(ir);
  }
  std::optional<std::string> dir = cache_directory_from_environment();  // invalid values throw here
  if (dir) record_cpu_target(*dir);
  std::string key = cpu_key(ir);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = memory_.find(key);
  if (it != memory_.end()) {
    counters_.memory_hits++;
    return it->second;
  }
  std::shared_ptr<const KernelRunner> runner;
  try {
    runner = compile_or_load(ir, key);
  } catch (const std::exception& e) {
    warn_once(std::string("JIT compilation of a fused kernel failed: ") + e.what());
    counters_.interpreted++;
    runner = std::make_shared<Interpreter>(ir);
  }
  memory_.emplace(key, runner);
  return runner;
}

std::shared_ptr<const KernelRunner> CompileCache::compile_or_load(const ir::KernelIR& ir, const std::string& key) {
  std::string prefix = "graft_k" + key.substr(0, 16);
  std::optional<std::string> dir = cache_directory_from_environment();
  std::filesystem::path path;
  if (dir) {
    path = std::filesystem::path(*dir) / (key + ".gko");
    if (std::optional<std::string> bytes = read_file(path)) {
      if (std::optional<std::string> object = decode_entry(*bytes, key)) {
        try {
          auto runner = link(ir, *object, key, llvm_target_id(), true);
          counters_.disk_hits++;
          return runner;
        } catch (const Error&) {
          // unusable object code: compile again below and replace the entry
        }
      }
      counters_.disk_rejects++;
    }
  }
  if (fail_compiles_) fail(ErrorKind::internal, "compile failure injected for testing");
  std::string object = compile_to_object(ir, prefix);
  counters_.compiles++;
  auto runner = link(ir, object, key, llvm_target_id(), true);
  if (dir) {
    std::string problem = write_atomically(path, encode_entry(key, object));
    if (!problem.empty()) warn_cache_write_failure_once(problem);
  }
  return runner;
}

std::shared_ptr<const KernelRunner> CompileCache::link(const ir::KernelIR& ir, const std::string& object,
                                                       const std::string& key, const std::string& target,
                                                       bool llvm_fallback) {
  std::string prefix = "graft_k" + key.substr(0, 16);
  int64_t lanes = lanes_of_target(target);
  if (object_linker_available() && lanes > 0) {
    try {
      std::shared_ptr<const LinkedObject> linked = LinkedObject::link(object);
      const void* kernel = linked->symbol(prefix + "_kernel");
      const void* streaming = linked->symbol(prefix + "_streaming_lanes", sizeof(int64_t));
      if (!kernel || !streaming) fail(ErrorKind::invalid_model, "kernel object without ", prefix, "'s symbols");
      int64_t streaming_lanes;
      std::memcpy(&streaming_lanes, streaming, sizeof streaming_lanes);
      if (streaming_lanes != 0 && streaming_lanes != kStreamLanes)
        fail(ErrorKind::invalid_model, "kernel object with ", streaming_lanes, " streaming lanes");
      auto runner = make_jit_runner(reinterpret_cast<CompiledKernelFunction>(const_cast<void*>(kernel)), lanes,
                                    streaming_lanes, ir, linked);
      counters_.native_links++;
      return runner;
    } catch (const Error&) {
      if (!llvm_fallback) throw;
    }
  }
  if (!llvm_fallback) fail(ErrorKind::unsupported, "graft cannot link this kernel object itself");
  return load_object(ir, object, prefix);
}

std::shared_ptr<const KernelRunner> CompileCache::cached_cpu_runner(const ir::KernelIR& ir) {
  std::optional<std::string> dir = cache_directory_from_environment();  // invalid values throw here
  std::string target;
  if (llvm_jit_loaded()) {
    if (!llvm_jit_available()) return nullptr;
    target = llvm_target_id();
    if (dir) record_cpu_target(*dir);  // a process that had to load LLVM spares the next one that
  } else {
    std::optional<std::string> recorded = dir ? recorded_cpu_target(*dir) : std::nullopt;
    if (!recorded) return nullptr;
    target = std::move(*recorded);
  }
  std::string key = cpu_key_of(ir, target);
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = memory_.find(key); it != memory_.end()) {
    counters_.memory_hits++;
    return it->second;
  }
  if (!dir) return nullptr;
  // A missing or damaged entry is left to compile_or_load, which counts the
  // reject, compiles and rewrites it.
  std::optional<std::string> bytes = read_file(std::filesystem::path(*dir) / (key + ".gko"));
  std::optional<std::string> object = bytes ? decode_entry(*bytes, key) : std::nullopt;
  if (!object) return nullptr;
  std::shared_ptr<const KernelRunner> runner;
  try {
    runner = link(ir, *object, key, target, false);
  } catch (const Error&) {
    return nullptr;  // compile_or_load links it through LLJIT, or compiles it again
  }
  counters_.disk_hits++;
  memory_.emplace(key, runner);
  return runner;
}

void CompileCache::record_cpu_target(const std::string& dir) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!recorded_folders_.insert(dir).second) return;
  }
  std::optional<std::string> fingerprint = cpu_host_fingerprint();
  if (!fingerprint) return;
  std::string target = llvm_target_id();
  if (recorded_cpu_target(dir) == target) return;
  std::string problem = write_atomically(target_record_path(dir, *fingerprint), encode_entry(*fingerprint, target));
  if (!problem.empty()) warn_cache_write_failure_once(problem);
}

namespace {

/// The CUDA cache key of `ir`, given its generated source.
std::string cuda_key_of(const ir::KernelIR& ir, const std::string& architecture, const std::string& source) {
  return key_of(serialize(ir) + "|cuda|" + architecture + "|nvrtc " + nvrtc_version() + "|" + source);
}

}  // namespace

std::string CompileCache::cuda_key(const ir::KernelIR& ir, const std::string& architecture) const {
  return cuda_key_of(ir, architecture, emit_cuda_source(ir, "graft_kernel"));
}

std::shared_ptr<const std::string> CompileCache::cuda_ptx(const ir::KernelIR& ir, const std::string& architecture) {
  std::optional<std::string> dir = cache_directory_from_environment();  // invalid values throw here
  const std::string source = emit_cuda_source(ir, "graft_kernel");  // part of the key, and what a miss compiles
  std::string key = cuda_key_of(ir, architecture, source);
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = ptx_memory_.find(key); it != ptx_memory_.end()) {
    counters_.cuda_memory_hits++;
    return it->second;
  }
  std::filesystem::path path;
  if (dir) {
    path = std::filesystem::path(*dir) / (key + ".ptx");
    if (std::optional<std::string> bytes = read_file(path)) {
      if (std::optional<std::string> ptx = decode_entry(*bytes, key)) {
        counters_.cuda_disk_hits++;
        return ptx_memory_.emplace(key, std::make_shared<const std::string>(std::move(*ptx))).first->second;
      }
      counters_.disk_rejects++;
    }
  }
  auto ptx = std::make_shared<const std::string>(compile_cuda_to_ptx(source, "graft_kernel.cu", architecture));
  counters_.cuda_compiles++;
  if (dir) {
    std::string problem = write_atomically(path, encode_entry(key, *ptx));
    if (!problem.empty()) warn_cache_write_failure_once(problem);
  }
  ptx_memory_.emplace(key, ptx);
  return ptx;
}

void CompileCache::clear_memory() {
  std::lock_guard<std::mutex> lock(mutex_);
  memory_.clear();
  ptx_memory_.clear();
  recorded_folders_.clear();
}

}  // namespace graft::codegen

// libgraft's side of the LLVM emitter plugin (llvm_jit.h): the functions of
// llvm_jit.h forward to libgraft_llvm_jit.so, which is loaded from the folder
// of libgraft.so the first time one of them is called. A model whose kernels
// all run on other backends never maps libLLVM (about 40 MiB resident once
// relocated). A plugin that cannot be loaded makes llvm_jit_available()
// false, so fused kernels run in the interpreter (CompileCache warns once).
#include <dlfcn.h>

#include <atomic>
#include <filesystem>
#include <mutex>

#include "graft/core/error.h"
#include "llvm_jit.h"

#ifndef GRAFT_LLVM_JIT_PLUGIN
#error "GRAFT_LLVM_JIT_PLUGIN names the plugin's file (set by CMake)"
#endif

namespace graft::codegen {
namespace {

struct Plugin {
  const LlvmJitTable* table = nullptr;
  std::string error;
};

std::atomic<bool> plugin_mapped{false};

const Plugin& plugin() {
  static const Plugin loaded = [] {
    Plugin p;
    std::filesystem::path path = llvm_jit_plugin_path();
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* why = dlerror();
      p.error = "cannot load the LLVM JIT plugin " + path.string() + ": " + (why ? why : "unknown error");
      return p;
    }
    plugin_mapped = true;
    auto entry = reinterpret_cast<const LlvmJitTable* (*)()>(dlsym(handle, "graft_llvm_jit_table"));
    const LlvmJitTable* table = entry ? entry() : nullptr;
    if (!table || table->abi_version != LlvmJitTable::kAbiVersion) {
      p.error = "the LLVM JIT plugin " + path.string() + " does not match this libgraft";
      return p;
    }
    p.table = table;
    return p;
  }();
  return loaded;
}

const LlvmJitTable& table_or_fail() {
  const Plugin& p = plugin();
  if (!p.table) fail(ErrorKind::unsupported, p.error);
  return *p.table;
}

}  // namespace

std::string llvm_jit_plugin_path() {
  static const std::string path = [] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&llvm_jit_plugin_path), &info) && info.dli_fname)
      return (std::filesystem::path(info.dli_fname).parent_path() / GRAFT_LLVM_JIT_PLUGIN).string();
    return std::string(GRAFT_LLVM_JIT_PLUGIN);
  }();
  return path;
}

bool llvm_jit_loaded() { return plugin_mapped; }

bool llvm_jit_available() {
  const Plugin& p = plugin();
  return p.table && p.table->available();
}
std::string llvm_jit_unavailable_reason() {
  const Plugin& p = plugin();
  if (!p.table) return p.error;
  try {
    p.table->target_id();  // throws the host's setup error when the target did not initialize
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}
std::string llvm_target_id() { return table_or_fail().target_id(); }
std::string emit_llvm_ir(const ir::KernelIR& ir, const std::string& symbol_prefix) {
  return table_or_fail().emit_ir(ir, symbol_prefix);
}
std::string compile_to_object(const ir::KernelIR& ir, const std::string& symbol_prefix) {
  return table_or_fail().compile(ir, symbol_prefix);
}
std::shared_ptr<const KernelRunner> load_object(const ir::KernelIR& ir, const std::string& object,
                                                const std::string& symbol_prefix) {
  return table_or_fail().load(ir, object, symbol_prefix);
}

}  // namespace graft::codegen

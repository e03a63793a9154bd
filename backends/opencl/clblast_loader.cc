// CLBlast opened at run time (clblast_loader.h): dlopen of libclblast.so.1,
// its SGEMM entry points looked up by name, status codes turned into errors.
#include "clblast_loader.h"

#ifdef GRAFT_HAVE_OPENCL_HEADERS

#include <dlfcn.h>

#include <mutex>
#include <set>

#include "graft/backend/device_api.h"
#include "graft/core/error.h"

#if __has_include(<clblast_c.h>)
#include <clblast_c.h>
#define GRAFT_HAVE_CLBLAST_HEADERS 1
#endif

namespace graft::opencl::clblast {

#ifdef GRAFT_HAVE_CLBLAST_HEADERS

namespace {

struct Library {
  std::string error;  // empty when loaded
  decltype(&CLBlastSgemm) sgemm = nullptr;
  decltype(&CLBlastSgemmStridedBatched) sgemm_strided_batched = nullptr;
};

template <typename F>
void resolve(void* handle, F& function, const char* name, bool& missing) {
  function = reinterpret_cast<F>(dlsym(handle, name));
  if (!function) missing = true;
}

const Library& library() {
  static const Library* loaded = [] {
    auto* lib = new Library;  // kept for the process, like the library itself
    void* handle = dlopen("libclblast.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) handle = dlopen("libclblast.so", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      lib->error = "CLBlast (libclblast.so.1) not found";
      return lib;
    }
    bool missing = false;
    resolve(handle, lib->sgemm, "CLBlastSgemm", missing);
    resolve(handle, lib->sgemm_strided_batched, "CLBlastSgemmStridedBatched", missing);
    if (missing) lib->error = "CLBlast (libclblast.so.1) lacks CLBlastSgemm or CLBlastSgemmStridedBatched";
    return lib;
  }();
  return *loaded;
}

const Library& loaded_library() {
  const Library& lib = library();
  if (!lib.error.empty()) fail(ErrorKind::unsupported, lib.error);
  return lib;
}

void check(CLBlastStatusCode status, const char* routine) {
  if (status != CLBlastSuccess)
    fail(ErrorKind::internal, routine, " failed with CLBlast status ", static_cast<int>(status));
}

CLBlastTranspose transpose(bool trans) { return trans ? CLBlastTransposeYes : CLBlastTransposeNo; }

}  // namespace

std::string unavailable_reason() { return library().error; }

void sgemm(cl_command_queue queue, const SgemmArgs& g) {
  const Library& lib = loaded_library();
  check(lib.sgemm(CLBlastLayoutRowMajor, transpose(g.trans_a), transpose(g.trans_b), g.m, g.n, g.k, g.alpha, g.a,
                  g.a_offset, g.a_ld, g.b, g.b_offset, g.b_ld, g.beta, g.c, g.c_offset, g.c_ld, &queue, nullptr),
        "CLBlastSgemm");
}

void sgemm_strided_batched(cl_command_queue queue, const SgemmArgs& g, size_t a_stride, size_t b_stride,
                           size_t c_stride, size_t batch) {
  const Library& lib = loaded_library();
  check(lib.sgemm_strided_batched(CLBlastLayoutRowMajor, transpose(g.trans_a), transpose(g.trans_b), g.m, g.n, g.k,
                                  g.alpha, g.a, g.a_offset, g.a_ld, a_stride, g.b, g.b_offset, g.b_ld, b_stride, g.beta,
                                  g.c, g.c_offset, g.c_ld, c_stride, batch, &queue, nullptr),
        "CLBlastSgemmStridedBatched");
}

void prepare(int device_index) {
  static std::mutex mutex;
  static std::set<int> prepared;
  std::lock_guard lock(mutex);
  if (prepared.count(device_index)) return;
  loaded_library();
  backend::DeviceAPI& api = backend::device_api(DeviceType::opencl);
  std::unique_ptr<backend::DeviceQueue> queue = api.create_queue(device_index);
  backend::DeviceBuffer buffer = api.allocate(Device{DeviceType::opencl, device_index}, 3 * sizeof(float));
  cl_mem mem = static_cast<cl_mem>(buffer.handle());
  auto* native = static_cast<cl_command_queue>(queue->native_handle());
  SgemmArgs g;  // 1x1x1 on elements 0, 1 -> 2 of one buffer; the value is never read
  g.m = g.n = g.k = 1;
  g.a = g.b = g.c = mem;
  g.a_ld = g.b_ld = g.c_ld = 1;
  g.b_offset = 1;
  g.c_offset = 2;
  sgemm(native, g);
  sgemm_strided_batched(native, g, 1, 1, 1, 1);  // (a zero C stride is refused, -1017)
  api.synchronize(*queue);
  prepared.insert(device_index);
}

#else  // no <clblast_c.h> at build time

void prepare(int) { fail(ErrorKind::unsupported, unavailable_reason()); }

std::string unavailable_reason() { return "CLBlast (libclblast.so.1) not found: built without clblast_c.h"; }

void sgemm(cl_command_queue, const SgemmArgs&) { fail(ErrorKind::unsupported, unavailable_reason()); }

void sgemm_strided_batched(cl_command_queue, const SgemmArgs&, size_t, size_t, size_t, size_t) {
  fail(ErrorKind::unsupported, unavailable_reason());
}

#endif  // GRAFT_HAVE_CLBLAST_HEADERS

}  // namespace graft::opencl::clblast

#endif  // GRAFT_HAVE_OPENCL_HEADERS

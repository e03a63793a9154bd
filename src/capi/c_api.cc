// graft's C API (graft/capi/c_api.h) over the C++ one: sessions from
// frontend::load_model and the in-memory loaders, tensors as graft::Tensor.
// Every entry point runs its body inside guarded(), which turns any exception
// into a graft_status, so none crosses the C boundary.
#include "graft/capi/c_api.h"

#include <exception>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "graft/backend/backend.h"
#include "graft/core/error.h"
#include "graft/core/tensor.h"
#include "graft/frontend/load_model.h"
#include "graft/frontend/onnx_import.h"
#include "graft/runtime/artifact.h"
#include "graft/runtime/session.h"

struct graft_status {
  graft_error_kind kind;
  std::string message;
};

struct graft_session_options {
  graft::runtime::SessionOptions options;
};

struct graft_tensor {
  graft::Tensor tensor;
};

struct graft_session {
  /// What the C getters return, made once: names, dtypes and shapes of one input or output.
  struct Io {
    std::string name;
    graft_dtype dtype = GRAFT_DTYPE_UNDEFINED;
    bool is_tensor = true;
    int64_t rank = -1;
    std::vector<int64_t> dims;
    std::vector<std::string> dim_names;  ///< "" for a known or unnamed dimension
  };
  std::unique_ptr<graft::runtime::Session> session;
  std::vector<Io> inputs, outputs;
};

namespace {

using graft::ErrorKind;
using graft::fail;

// Returned when even a status cannot be allocated; graft_status_release ignores it.
graft_status out_of_memory_status{GRAFT_ERROR_RESOURCE_EXHAUSTED, std::string()};

graft_error_kind to_c(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::invalid_model: return GRAFT_ERROR_INVALID_MODEL;
    case ErrorKind::unsupported: return GRAFT_ERROR_UNSUPPORTED;
    case ErrorKind::invalid_argument: return GRAFT_ERROR_INVALID_ARGUMENT;
    case ErrorKind::io: return GRAFT_ERROR_IO;
    case ErrorKind::internal: return GRAFT_ERROR_INTERNAL;
    case ErrorKind::resource_exhausted: return GRAFT_ERROR_RESOURCE_EXHAUSTED;
    case ErrorKind::cancelled: return GRAFT_ERROR_CANCELLED;
  }
  return GRAFT_ERROR_INTERNAL;
}

graft_status* make_status(graft_error_kind kind, const char* message) noexcept {
  try {
    return new graft_status{kind, message};
  } catch (...) {
    return &out_of_memory_status;
  }
}

/// Runs `body`; returns NULL when it returns, a status describing any exception it throws.
template <typename F>
graft_status* guarded(F&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const graft::Error& e) {
    return make_status(to_c(e.kind()), e.what());
  } catch (const std::bad_alloc&) {
    return make_status(GRAFT_ERROR_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception& e) {
    return make_status(GRAFT_ERROR_INTERNAL, e.what());
  } catch (...) {
    return make_status(GRAFT_ERROR_INTERNAL, "unknown exception");
  }
}

/// invalid_argument "FUNCTION: NAME is NULL" unless `pointer` is set.
void require(const void* pointer, const char* function, const char* name) {
  if (!pointer) fail(ErrorKind::invalid_argument, function, ": ", name, " is NULL");
}

graft_dtype to_c(graft::DType dtype) { return static_cast<graft_dtype>(static_cast<int32_t>(dtype)); }

/// A dtype a tensor can hold, else invalid_argument naming the value.
graft::DType storable_dtype(graft_dtype dtype, const char* function) {
  const int32_t value = static_cast<int32_t>(dtype);
  if (value < 1 || value > 16 || !graft::dtype_is_storable(static_cast<graft::DType>(value)))
    fail(ErrorKind::invalid_argument, function, ": dtype ", value, " (", graft_dtype_name(dtype),
         ") is not one a tensor holds");
  return static_cast<graft::DType>(value);
}

graft::Shape shape_of(const int64_t* dims, size_t rank, const char* function) {
  if (rank > 0) require(dims, function, "dims (with rank > 0)");
  if (rank > 64) fail(ErrorKind::invalid_argument, function, ": rank ", rank, " is more than 64");
  graft::Shape shape(dims, dims + rank);
  for (size_t i = 0; i < rank; ++i)
    if (shape[i] < 0) fail(ErrorKind::invalid_argument, function, ": dimension ", i, " is ", shape[i], " (< 0)");
  return shape;
}

graft_session::Io describe(const graft::runtime::ValueInfo& info) {
  graft_session::Io io;
  io.name = info.name;
  io.dtype = to_c(info.type.dtype);
  io.is_tensor = info.type.is_tensor();
  if (info.type.has_rank) {
    io.rank = static_cast<int64_t>(info.type.dims.size());
    for (const graft::ir::Dim& dim : info.type.dims) {
      io.dims.push_back(dim.is_known() ? dim.value : -1);
      io.dim_names.push_back(dim.is_known() || dim.symbol.empty() ? std::string() : dim.symbol.str());
    }
  }
  return io;
}

graft_session* wrap(std::unique_ptr<graft::runtime::Session> session) {
  auto wrapped = std::make_unique<graft_session>();
  for (const auto& info : session->inputs()) wrapped->inputs.push_back(describe(info));
  for (const auto& info : session->outputs()) wrapped->outputs.push_back(describe(info));
  wrapped->session = std::move(session);
  return wrapped.release();
}

const graft_session::Io& io_at(const graft_session* session, size_t index, bool input, const char* function) {
  require(session, function, "session");
  const auto& list = input ? session->inputs : session->outputs;
  if (index >= list.size())
    fail(ErrorKind::invalid_argument, function, ": ", input ? "input" : "output", " index ", index,
         " is out of range (the model has ", list.size(), ")");
  return list[index];
}

/// The session's inputs as Tensors, after checking the count and the handles.
std::vector<graft::Tensor> gather_inputs(const graft_session* session, const graft_tensor* const* inputs,
                                         size_t num_inputs, const char* function) {
  require(session, function, "session");
  if (num_inputs != session->inputs.size())
    fail(ErrorKind::invalid_argument, function, ": ", num_inputs, " inputs given, the model has ",
         session->inputs.size());
  if (num_inputs > 0) require(inputs, function, "inputs");
  std::vector<graft::Tensor> tensors;
  tensors.reserve(num_inputs);
  for (size_t i = 0; i < num_inputs; ++i) {
    if (!inputs[i])
      fail(ErrorKind::invalid_argument, function, ": inputs[", i, "] ('", session->inputs[i].name, "') is NULL");
    tensors.push_back(inputs[i]->tensor);
  }
  return tensors;
}

void check_output_count(const graft_session* session, size_t num_outputs, const void* outputs, const char* function) {
  if (num_outputs != session->outputs.size())
    fail(ErrorKind::invalid_argument, function, ": room for ", num_outputs, " outputs given, the model has ",
         session->outputs.size());
  if (num_outputs > 0) require(outputs, function, "outputs");
}

/// A run's results as plain tensors (sequences and empty optionals have no C form).
void check_results(const graft_session* session, const std::vector<graft::Tensor>& results, const char* function) {
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i].is_sequence() || results[i].is_none() || !results[i].is_defined())
      fail(ErrorKind::unsupported, function, ": output '", session->outputs[i].name, "' is ",
           results[i].type_string(), ", which the C API cannot return (tensors only)");
}

}  // namespace

extern "C" {

const char* graft_version(void) { return GRAFT_VERSION; }

int graft_c_api_version(void) { return GRAFT_C_API_VERSION; }

int graft_artifact_format_version(void) { return static_cast<int>(graft::runtime::kArtifactFormatVersion); }

const char* graft_error_kind_name(graft_error_kind kind) {
  switch (kind) {
    case GRAFT_ERROR_INVALID_MODEL: return "invalid_model";
    case GRAFT_ERROR_UNSUPPORTED: return "unsupported";
    case GRAFT_ERROR_INVALID_ARGUMENT: return "invalid_argument";
    case GRAFT_ERROR_IO: return "io";
    case GRAFT_ERROR_INTERNAL: return "internal";
    case GRAFT_ERROR_RESOURCE_EXHAUSTED: return "resource_exhausted";
    case GRAFT_ERROR_CANCELLED: return "cancelled";
    default: break;
  }
  return "unknown";
}

const char* graft_dtype_name(graft_dtype dtype) {
  const int32_t value = static_cast<int32_t>(dtype);
  if (value < 0 || value > 16) return "unknown";
  // dtype_name returns literals, so the pointer outlives the call.
  return graft::dtype_name(static_cast<graft::DType>(value)).data();
}

size_t graft_dtype_size(graft_dtype dtype) {
  const int32_t value = static_cast<int32_t>(dtype);
  if (value < 0 || value > 16) return 0;
  return graft::dtype_size(static_cast<graft::DType>(value));
}

graft_error_kind graft_status_kind(const graft_status* status) { return status ? status->kind : GRAFT_ERROR_INTERNAL; }

const char* graft_status_message(const graft_status* status) {
  if (!status) return "";
  if (status == &out_of_memory_status) return "out of memory";
  return status->message.c_str();
}

void graft_status_release(graft_status* status) {
  if (status != &out_of_memory_status) delete status;
}

graft_status* graft_session_options_create(graft_session_options** out) {
  return guarded([&] {
    require(out, "graft_session_options_create", "out");
    *out = new graft_session_options();
  });
}

graft_status* graft_session_options_set_threads(graft_session_options* options, int threads) {
  return guarded([&] {
    require(options, "graft_session_options_set_threads", "options");
    if (threads < 0 || threads > 1024)
      fail(ErrorKind::invalid_argument, "graft_session_options_set_threads: ", threads,
           " threads is out of range (1..1024, or 0 for the default)");
    options->options.num_threads = threads;
  });
}

graft_status* graft_session_options_set_backends(graft_session_options* options, const char* backends) {
  return guarded([&] {
    const char* function = "graft_session_options_set_backends";
    require(options, function, "options");
    std::vector<std::string> names;
    const std::string_view list = backends ? backends : "";
    if (!list.empty()) {
      size_t start = 0;
      while (true) {
        const size_t comma = list.find(',', start);
        const std::string_view name = list.substr(start, comma == std::string_view::npos ? list.npos : comma - start);
        if (name.empty())
          fail(ErrorKind::invalid_argument, function, ": an empty backend name in '", list,
               "' (a comma-separated list such as \"dnnl,fuse\")");
        graft::backend::get_backend(name);  // invalid_argument naming it and the available ones
        names.emplace_back(name);
        if (comma == std::string_view::npos) break;
        start = comma + 1;
      }
    }
    options->options.backends = std::move(names);
  });
}

graft_status* graft_session_options_set_fusion(graft_session_options* options, int enabled) {
  return guarded([&] {
    require(options, "graft_session_options_set_fusion", "options");
    options->options.fusion = enabled != 0;
  });
}

graft_status* graft_session_options_set_device(graft_session_options* options, const char* device) {
  return guarded([&] {
    require(options, "graft_session_options_set_device", "options");
    options->options.device = device && *device ? graft::runtime::parse_device(device) : graft::Device{};
  });
}

graft_status* graft_session_options_set_max_memory(graft_session_options* options, uint64_t bytes) {
  return guarded([&] {
    require(options, "graft_session_options_set_max_memory", "options");
    options->options.max_memory = bytes;
  });
}

void graft_session_options_release(graft_session_options* options) { delete options; }

graft_status* graft_session_create_from_path(const char* path, const graft_session_options* options,
                                             graft_session** out) {
  return guarded([&] {
    require(path, "graft_session_create_from_path", "path");
    require(out, "graft_session_create_from_path", "out");
    if (!*path) fail(ErrorKind::invalid_argument, "graft_session_create_from_path: path is empty");
    graft::runtime::SessionOptions session_options = options ? options->options : graft::runtime::SessionOptions{};
    *out = wrap(graft::frontend::load_model(path, std::move(session_options)));
  });
}

graft_status* graft_session_create_from_bytes(const void* data, size_t size, const graft_session_options* options,
                                              graft_session** out) {
  return guarded([&] {
    const char* function = "graft_session_create_from_bytes";
    require(out, function, "out");
    if (size > 0) require(data, function, "data (with size > 0)");
    if (size == 0) fail(ErrorKind::invalid_model, function, ": no bytes (size 0) is not a model");
    graft::runtime::SessionOptions session_options = options ? options->options : graft::runtime::SessionOptions{};
    const std::string_view bytes(static_cast<const char*>(data), size);
    *out = wrap(graft::frontend::load_model_from_memory(bytes, std::move(session_options)));
  });
}

void graft_session_release(graft_session* session) { delete session; }

graft_status* graft_session_input_count(const graft_session* session, size_t* out) {
  return guarded([&] {
    require(session, "graft_session_input_count", "session");
    require(out, "graft_session_input_count", "out");
    *out = session->inputs.size();
  });
}

graft_status* graft_session_output_count(const graft_session* session, size_t* out) {
  return guarded([&] {
    require(session, "graft_session_output_count", "session");
    require(out, "graft_session_output_count", "out");
    *out = session->outputs.size();
  });
}

graft_status* graft_session_input_name(const graft_session* session, size_t index, const char** out) {
  return guarded([&] {
    const auto& io = io_at(session, index, true, "graft_session_input_name");
    require(out, "graft_session_input_name", "out");
    *out = io.name.c_str();
  });
}

graft_status* graft_session_output_name(const graft_session* session, size_t index, const char** out) {
  return guarded([&] {
    const auto& io = io_at(session, index, false, "graft_session_output_name");
    require(out, "graft_session_output_name", "out");
    *out = io.name.c_str();
  });
}

graft_status* graft_session_input_dtype(const graft_session* session, size_t index, graft_dtype* out) {
  return guarded([&] {
    const auto& io = io_at(session, index, true, "graft_session_input_dtype");
    require(out, "graft_session_input_dtype", "out");
    *out = io.dtype;
  });
}

graft_status* graft_session_output_dtype(const graft_session* session, size_t index, graft_dtype* out) {
  return guarded([&] {
    const auto& io = io_at(session, index, false, "graft_session_output_dtype");
    require(out, "graft_session_output_dtype", "out");
    *out = io.dtype;
  });
}

namespace {
void write_shape(const graft_session::Io& io, const int64_t** dims, int64_t* rank, const char* function) {
  require(dims, function, "dims");
  require(rank, function, "rank");
  if (!io.is_tensor)
    fail(ErrorKind::unsupported, function, ": '", io.name, "' is a sequence or an optional, which the C API cannot pass");
  *dims = io.rank > 0 ? io.dims.data() : nullptr;
  *rank = io.rank;
}
}  // namespace

graft_status* graft_session_input_shape(const graft_session* session, size_t index, const int64_t** dims,
                                        int64_t* rank) {
  return guarded([&] {
    write_shape(io_at(session, index, true, "graft_session_input_shape"), dims, rank, "graft_session_input_shape");
  });
}

graft_status* graft_session_output_shape(const graft_session* session, size_t index, const int64_t** dims,
                                         int64_t* rank) {
  return guarded([&] {
    write_shape(io_at(session, index, false, "graft_session_output_shape"), dims, rank, "graft_session_output_shape");
  });
}

namespace {
void write_dim_name(const graft_session::Io& io, size_t dim, const char** out, const char* function) {
  require(out, function, "out");
  if (!io.is_tensor)
    fail(ErrorKind::unsupported, function, ": '", io.name, "' is a sequence or an optional, which the C API cannot pass");
  if (io.rank < 0) fail(ErrorKind::invalid_argument, function, ": the rank of '", io.name, "' is unknown");
  if (dim >= io.dim_names.size())
    fail(ErrorKind::invalid_argument, function, ": dimension ", dim, " of '", io.name, "' is out of range (rank ",
         io.rank, ")");
  *out = io.dim_names[dim].c_str();
}
}  // namespace

graft_status* graft_session_input_dim_name(const graft_session* session, size_t index, size_t dim, const char** out) {
  return guarded([&] {
    const char* function = "graft_session_input_dim_name";
    write_dim_name(io_at(session, index, true, function), dim, out, function);
  });
}

graft_status* graft_session_output_dim_name(const graft_session* session, size_t index, size_t dim,
                                            const char** out) {
  return guarded([&] {
    const char* function = "graft_session_output_dim_name";
    write_dim_name(io_at(session, index, false, function), dim, out, function);
  });
}

graft_status* graft_session_run(const graft_session* session, const graft_tensor* const* inputs, size_t num_inputs,
                                graft_tensor** outputs, size_t num_outputs) {
  return guarded([&] {
    const char* function = "graft_session_run";
    std::vector<graft::Tensor> tensors = gather_inputs(session, inputs, num_inputs, function);
    check_output_count(session, num_outputs, outputs, function);
    std::vector<graft::Tensor> results = session->session->run(tensors);
    tensors.clear();
    check_results(session, results, function);
    std::vector<std::unique_ptr<graft_tensor>> wrapped;
    for (size_t i = 0; i < results.size(); ++i) {
      // An output that shares memory with anything else (an input or a weight
      // passed through, another output) is copied, so that the caller may write it.
      bool shared = results[i].storage() && results[i].storage().use_count() > 1;
      for (size_t j = 0; j < results.size() && !shared; ++j)
        shared = j != i && results[j].storage() == results[i].storage();
      wrapped.push_back(std::make_unique<graft_tensor>(graft_tensor{shared ? results[i].clone() : results[i]}));
    }
    for (size_t i = 0; i < wrapped.size(); ++i) outputs[i] = wrapped[i].release();
  });
}

graft_status* graft_session_run_into(const graft_session* session, const graft_tensor* const* inputs,
                                     size_t num_inputs, graft_tensor* const* outputs, size_t num_outputs) {
  return guarded([&] {
    const char* function = "graft_session_run_into";
    std::vector<graft::Tensor> tensors = gather_inputs(session, inputs, num_inputs, function);
    check_output_count(session, num_outputs, outputs, function);
    for (size_t i = 0; i < num_outputs; ++i)
      if (!outputs[i])
        fail(ErrorKind::invalid_argument, function, ": outputs[", i, "] ('", session->outputs[i].name, "') is NULL");
    std::vector<graft::Tensor> results = session->session->run(tensors);
    check_results(session, results, function);
    for (size_t i = 0; i < num_outputs; ++i) {
      const graft::Tensor& given = outputs[i]->tensor;
      if (given.dtype() != results[i].dtype() || given.shape() != results[i].shape())
        fail(ErrorKind::invalid_argument, function, ": outputs[", i, "] ('", session->outputs[i].name, "') is ",
             given.type_string(), ", the run produced ", results[i].type_string());
    }
    for (size_t i = 0; i < num_outputs; ++i) outputs[i]->tensor.copy_from(results[i]);
  });
}

graft_status* graft_tensor_create(graft_dtype dtype, const int64_t* dims, size_t rank, graft_tensor** out) {
  return guarded([&] {
    const char* function = "graft_tensor_create";
    require(out, function, "out");
    const graft::DType type = storable_dtype(dtype, function);
    *out = new graft_tensor{graft::Tensor(type, shape_of(dims, rank, function))};
  });
}

graft_status* graft_tensor_create_over(graft_dtype dtype, const int64_t* dims, size_t rank, void* data,
                                       size_t byte_size, graft_tensor** out) {
  return guarded([&] {
    const char* function = "graft_tensor_create_over";
    require(out, function, "out");
    const graft::DType type = storable_dtype(dtype, function);
    graft::Shape shape = shape_of(dims, rank, function);
    const size_t expected = graft::shape_nbytes(shape, graft::dtype_size(type), "graft_tensor_create_over's tensor");
    if (byte_size != expected)
      fail(ErrorKind::invalid_argument, function, ": byte_size ", byte_size, " for ", graft::dtype_name(type),
           graft::shape_to_string(shape), ", which takes ", expected, " bytes");
    if (byte_size > 0) require(data, function, "data (with byte_size > 0)");
    if (reinterpret_cast<uintptr_t>(data) % graft::dtype_size(type) != 0)
      fail(ErrorKind::invalid_argument, function, ": data ", data, " is not aligned to the ",
           graft::dtype_size(type), "-byte elements of ", graft::dtype_name(type));
    // The caller's memory, viewed: no release callback, graft never frees it.
    auto storage = std::make_shared<graft::Storage>(data, byte_size, std::function<void()>());
    *out = new graft_tensor{graft::Tensor(type, std::move(shape), std::move(storage))};
  });
}

void graft_tensor_release(graft_tensor* tensor) { delete tensor; }

graft_status* graft_tensor_dtype(const graft_tensor* tensor, graft_dtype* out) {
  return guarded([&] {
    require(tensor, "graft_tensor_dtype", "tensor");
    require(out, "graft_tensor_dtype", "out");
    *out = to_c(tensor->tensor.dtype());
  });
}

graft_status* graft_tensor_rank(const graft_tensor* tensor, size_t* out) {
  return guarded([&] {
    require(tensor, "graft_tensor_rank", "tensor");
    require(out, "graft_tensor_rank", "out");
    *out = tensor->tensor.shape().size();
  });
}

graft_status* graft_tensor_dims(const graft_tensor* tensor, const int64_t** out) {
  return guarded([&] {
    require(tensor, "graft_tensor_dims", "tensor");
    require(out, "graft_tensor_dims", "out");
    *out = tensor->tensor.shape().empty() ? nullptr : tensor->tensor.shape().data();
  });
}

graft_status* graft_tensor_data(graft_tensor* tensor, void** out) {
  return guarded([&] {
    require(tensor, "graft_tensor_data", "tensor");
    require(out, "graft_tensor_data", "out");
    // The caller may write through the pointer: weights' converted copies key on the version.
    tensor->tensor.mark_modified();
    *out = tensor->tensor.raw_data();
  });
}

graft_status* graft_tensor_byte_size(const graft_tensor* tensor, size_t* out) {
  return guarded([&] {
    require(tensor, "graft_tensor_byte_size", "tensor");
    require(out, "graft_tensor_byte_size", "out");
    *out = tensor->tensor.nbytes();
  });
}

}  // extern "C"

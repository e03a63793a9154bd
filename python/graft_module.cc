// graft._graft: the Python extension under the `graft` package
// (python/graft/__init__.py holds the ONNX Runtime-shaped API on top of it).
//
// What is done here rather than in Python is what sits on the path of every
// run: turning numpy arrays into graft Tensors without a copy (a Storage
// viewing the array's buffer, which holds a reference to the array), running
// with the GIL released, and handing each output back as a numpy array that
// views graft's buffer (its base is a capsule owning the Tensor).
//
// Only public headers (include/graft/...): the `python` component sits beside
// the frontend and tools (scripts/check_layers.py).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graft/backend/backend.h"
#include "graft/backend/device_api.h"
#include "graft/codegen/compile_cache.h"
#include "graft/codegen/cuda_emitter.h"
#include "graft/codegen/opencl_emitter.h"
#include "graft/compiler/compiler.h"
#include "graft/core/error.h"
#include "graft/core/parallel.h"
#include "graft/core/tensor.h"
#include "graft/frontend/load_model.h"
#include "graft/frontend/onnx_import.h"
#include "graft/runtime/artifact.h"
#include "graft/runtime/cpu_features.h"
#include "graft/runtime/profile_report.h"
#include "graft/runtime/session.h"

namespace py = pybind11;

namespace graft::python {

namespace {

// ---- Errors -----------------------------------------------------------------

// graft.Error and one subclass per ErrorKind, made here so that the
// translator below can raise them; __init__.py re-exports them.
PyObject* error_base = nullptr;
PyObject* error_classes[7] = {};

PyObject* error_class(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::invalid_model: return error_classes[0];
    case ErrorKind::unsupported: return error_classes[1];
    case ErrorKind::invalid_argument: return error_classes[2];
    case ErrorKind::io: return error_classes[3];
    case ErrorKind::internal: return error_classes[4];
    case ErrorKind::resource_exhausted: return error_classes[5];
    case ErrorKind::cancelled: return error_classes[6];
  }
  return error_base;
}

[[noreturn]] void invalid(const std::string& message) { throw Error(ErrorKind::invalid_argument, message); }

// ---- dtypes -----------------------------------------------------------------

/// The numpy dtype of a graft dtype: bfloat16 is a uint16 dtype carrying
/// metadata {"graft_dtype": "bfloat16"} (numpy has no bfloat16).
py::dtype numpy_dtype(DType dtype) {
  switch (dtype) {
    case DType::float32: return py::dtype("float32");
    case DType::float64: return py::dtype("float64");
    case DType::float16: return py::dtype("float16");
    case DType::int8: return py::dtype("int8");
    case DType::int16: return py::dtype("int16");
    case DType::int32: return py::dtype("int32");
    case DType::int64: return py::dtype("int64");
    case DType::uint8: return py::dtype("uint8");
    case DType::uint16: return py::dtype("uint16");
    case DType::uint32: return py::dtype("uint32");
    case DType::uint64: return py::dtype("uint64");
    case DType::boolean: return py::dtype("bool");
    case DType::bfloat16: {
      // Made once and never released (a static py::object would be released
      // after the interpreter is gone).
      static PyObject* bf16 = py::module_::import("numpy")
                                  .attr("dtype")("uint16", py::arg("metadata") = py::dict(py::arg("graft_dtype") = "bfloat16"))
                                  .release()
                                  .ptr();
      return py::reinterpret_borrow<py::dtype>(bf16);
    }
    default: break;
  }
  throw Error(ErrorKind::unsupported, "dtype " + std::string(dtype_name(dtype)) + " has no numpy form");
}

/// The graft dtype of a numpy dtype, or undefined when graft has none.
DType graft_dtype(const py::dtype& dtype) {
  const char kind = dtype.kind();
  const size_t size = static_cast<size_t>(dtype.itemsize());
  if (kind == 'f') return size == 4 ? DType::float32 : size == 8 ? DType::float64 : size == 2 ? DType::float16 : DType::undefined;
  if (kind == 'b') return size == 1 ? DType::boolean : DType::undefined;
  if (kind == 'i')
    return size == 1 ? DType::int8 : size == 2 ? DType::int16 : size == 4 ? DType::int32 : size == 8 ? DType::int64 : DType::undefined;
  if (kind == 'u')
    return size == 1 ? DType::uint8 : size == 2 ? DType::uint16 : size == 4 ? DType::uint32 : size == 8 ? DType::uint64 : DType::undefined;
  return DType::undefined;
}

std::string numpy_dtype_name(const py::dtype& dtype) { return py::str(static_cast<const py::handle&>(dtype)); }

// ---- numpy <-> Tensor ---------------------------------------------------------

/// A Tensor viewing `array`'s buffer (no copy) when it is C-contiguous, aligned
/// and of the dtype `expected` (undefined: whatever the array's dtype is);
/// else a contiguous copy in that dtype is made first (numpy's casting rules:
/// a dtype that does not convert safely is an error naming the input). A
/// uint16 array feeds a bfloat16 input as its bits. The Storage holds a
/// reference to the array and drops it (taking the GIL) when graft lets go.
Tensor tensor_from_array(py::handle object, DType expected, const std::string& name) {
  py::module_ numpy = py::module_::import("numpy");
  py::object value = py::reinterpret_borrow<py::object>(object);
  if (!py::isinstance<py::array>(value)) {
    if (py::hasattr(value, "__dlpack__")) {
      try {
        value = numpy.attr("from_dlpack")(value);  // zero-copy for host memory
      } catch (py::error_already_set& e) {
        invalid("input '" + name + "': its __dlpack__ gives no host array numpy can view: " +
                std::string(py::str(e.value())));
      }
    } else if (value.is_none()) {
      invalid("input '" + name + "' is None (expected a numpy array)");
    } else {
      // Lists and scalars: numpy makes an array of the input's dtype.
      py::object converted;
      try {
        converted = expected == DType::undefined || expected == DType::bfloat16
                        ? numpy.attr("asarray")(value)
                        : numpy.attr("asarray")(value, numpy_dtype(expected));
      } catch (py::error_already_set& e) {
        invalid("input '" + name + "' is a " + std::string(py::str(value.get_type().attr("__name__"))) +
                " that numpy cannot make an array of: " + std::string(py::str(e.value())));
      }
      if (py::str(converted.attr("dtype").attr("kind")).cast<std::string>() == "O")
        invalid("input '" + name + "' is a " + std::string(py::str(value.get_type().attr("__name__"))) +
                ", not an array of numbers");
      value = converted;
    }
  }
  py::array array = py::reinterpret_borrow<py::array>(value);
  DType dtype = graft_dtype(array.dtype());
  if (dtype == DType::uint16 && expected == DType::bfloat16) dtype = DType::bfloat16;
  if (dtype == DType::undefined)
    throw Error(ErrorKind::invalid_argument, "input '" + name + "' has numpy dtype " + numpy_dtype_name(array.dtype()) +
                                                 ", which graft does not hold");
  if (expected != DType::undefined && dtype != expected)
    invalid("input '" + name + "' is " + std::string(dtype_name(dtype)) + " (numpy " +
            numpy_dtype_name(array.dtype()) + "), the model expects " + std::string(dtype_name(expected)));
  const int flags = py::detail::array_proxy(array.ptr())->flags;
  const bool contiguous = (flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) != 0;
  const bool aligned = (flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_) != 0;
  if (!contiguous || !aligned || !array.dtype().attr("isnative").cast<bool>())
    array = numpy.attr("array")(array, array.dtype().attr("newbyteorder")("="), py::arg("order") = "C");
  if (!array) throw py::error_already_set();
  Shape shape(array.shape(), array.shape() + array.ndim());
  size_t nbytes = static_cast<size_t>(array.nbytes());
  PyObject* owner = array.ptr();
  Py_INCREF(owner);
  auto release = [owner] {
    if (!Py_IsInitialized()) return;
    PyGILState_STATE state = PyGILState_Ensure();
    Py_DECREF(owner);
    PyGILState_Release(state);
  };
  std::shared_ptr<Storage> storage;
  try {
    storage = std::make_shared<Storage>(const_cast<void*>(array.data()), nbytes, std::move(release));
  } catch (...) {
    Py_DECREF(owner);
    throw;
  }
  return Tensor(dtype, std::move(shape), std::move(storage));
}

/// The value of an input of type `type`: a list for a sequence (each item as
/// tensor_from_array), None for an empty optional, else tensor_from_array.
Tensor input_value(py::handle object, const ir::ValueType& type, const std::string& name) {
  if (type.optional && object.is_none()) return Tensor::none(type.dtype);
  if (type.sequence) {
    if (!py::isinstance<py::list>(object) && !py::isinstance<py::tuple>(object))
      invalid("input '" + name + "' is a sequence: give a list of arrays, not a " +
              std::string(py::str(object.get_type().attr("__name__"))));
    std::vector<Tensor> items;
    size_t k = 0;
    for (py::handle item : object)
      items.push_back(tensor_from_array(item, type.dtype, name + "[" + std::to_string(k++) + "]"));
    DType dtype = type.dtype != DType::undefined ? type.dtype : items.empty() ? DType::float32 : items[0].dtype();
    return Tensor::sequence(dtype, std::move(items));
  }
  return tensor_from_array(object, type.dtype, name);
}

/// Owns a Tensor for the numpy array that views its bytes (the array's base).
constexpr const char* kTensorCapsule = "graft.Tensor";

py::object array_from_tensor(Tensor tensor) {
  if (tensor.is_none()) return py::none();
  if (tensor.is_sequence()) {
    py::list items;
    for (const Tensor& item : tensor.sequence_items()) items.append(array_from_tensor(item));
    return items;
  }
  if (tensor.on_device())
    throw Error(ErrorKind::unsupported, "an output on " + to_string(tensor.device()) + " cannot be read as numpy");
  py::dtype dtype = numpy_dtype(tensor.dtype());
  std::vector<py::ssize_t> shape(tensor.shape().begin(), tensor.shape().end());
  void* data = tensor.numel() ? tensor.raw_data() : nullptr;
  auto* owned = new Tensor(std::move(tensor));
  py::capsule base(owned, kTensorCapsule, [](PyObject* capsule) {
    delete static_cast<Tensor*>(PyCapsule_GetPointer(capsule, kTensorCapsule));
  });
  if (!data) return py::array(dtype, shape, std::vector<py::ssize_t>{});  // empty: numpy owns no bytes
  return py::array(dtype, shape, std::vector<py::ssize_t>{}, data, base);
}

/// The outputs as numpy arrays, viewing graft's buffers. A buffer that
/// anything but this run's outputs still holds (a weight the model returns,
/// an input passed through, a buffer a pool keeps) is copied, and so is the
/// second of two outputs sharing one, so that every array is the caller's own.
py::list arrays_from_outputs(std::vector<Tensor>& outputs, const std::vector<size_t>& selected) {
  std::map<const Storage*, long> in_outputs;
  for (const Tensor& t : outputs)
    if (t.storage()) ++in_outputs[t.storage().get()];
  std::set<const Storage*> handed_out;
  py::list result;
  for (size_t index : selected) {
    Tensor t = outputs[index];
    if (t.storage() && !t.is_sequence() && !t.is_none()) {
      const Storage* s = t.storage().get();
      // +1: `t` itself.
      bool shared = t.storage().use_count() > in_outputs[s] + 1 || !handed_out.insert(s).second ||
                    t.storage()->is_placeholder();
      if (shared) t = t.clone();
    }
    result.append(array_from_tensor(std::move(t)));
  }
  return result;
}

// ---- Session ----------------------------------------------------------------

py::dict value_info_dict(const runtime::ValueInfo& info) {
  py::dict d;
  d["name"] = info.name;
  py::object shape = py::none();
  if (info.type.has_rank) {
    py::list dims;
    for (const ir::Dim& dim : info.type.dims) {
      if (dim.is_known())
        dims.append(dim.value);
      else if (!dim.symbol.empty())
        dims.append(dim.symbol.str());
      else
        dims.append(py::none());
    }
    shape = std::move(dims);
  }
  d["shape"] = shape;
  d["dtype"] = std::string(dtype_name(info.type.dtype));
  d["sequence"] = info.type.sequence;
  d["optional"] = info.type.optional;
  return d;
}

struct Options {
  int num_threads = 0;
  std::vector<std::string> backends;
  std::optional<bool> fusion;
  std::string device;
  bool profile = false;
  std::optional<int> max_specialized_plans;
};

runtime::SessionOptions session_options(const Options& o) {
  runtime::SessionOptions s;
  if (o.num_threads < 0 || o.num_threads > 1024)
    invalid("intra_op_num_threads " + std::to_string(o.num_threads) + " must be in 0..1024 (0: the default)");
  s.num_threads = o.num_threads;
  s.backends = o.backends;
  s.fusion = o.fusion;
  if (!o.device.empty()) s.device = runtime::parse_device(o.device);
  s.profile = o.profile;
  s.max_specialized_plans = o.max_specialized_plans;
  return s;
}

class PySession {
 public:
  PySession(py::object model, const Options& options) : profiling_(options.profile) {
    runtime::SessionOptions so = session_options(options);
    if (py::isinstance<py::bytes>(model) || py::isinstance<py::bytearray>(model) ||
        py::isinstance<py::memoryview>(model)) {
      py::bytes data = py::reinterpret_steal<py::bytes>(PyBytes_FromObject(model.ptr()));
      if (!data) throw py::error_already_set();
      std::string bytes = data;
      py::gil_scoped_release unlocked;
      session_ = frontend::load_model_from_memory(bytes, so);
    } else {
      std::string path = py::str(py::module_::import("os").attr("fspath")(model));
      py::gil_scoped_release unlocked;
      session_ = frontend::load_model(path, so);
    }
    for (size_t i = 0; i < session_->inputs().size(); ++i) input_index_[session_->inputs()[i].name] = i;
    for (size_t i = 0; i < session_->outputs().size(); ++i) output_index_[session_->outputs()[i].name] = i;
  }

  std::shared_ptr<runtime::Session> get() const {
    if (!session_) invalid("the session is closed");
    return session_;
  }

  void close() { session_.reset(); }
  bool closed() const { return !session_; }

  py::list inputs() const {
    py::list l;
    for (const auto& info : get()->inputs()) l.append(value_info_dict(info));
    return l;
  }
  py::list outputs() const {
    py::list l;
    for (const auto& info : get()->outputs()) l.append(value_info_dict(info));
    return l;
  }

  /// run(output_names or None, {name: array}) -> [array]: ONNX Runtime's shape.
  py::list run(py::object output_names, py::object feed) {
    std::shared_ptr<runtime::Session> session = get();
    if (!py::isinstance<py::dict>(feed))
      throw Error(ErrorKind::invalid_argument, "input_feed must be a dict of input name to array, not " +
                                                   std::string(py::str(feed.get_type().attr("__name__"))));
    const auto& infos = session->inputs();
    std::vector<Tensor> inputs(infos.size());
    std::vector<bool> given(infos.size(), false);
    for (auto item : py::reinterpret_borrow<py::dict>(feed)) {
      if (!py::isinstance<py::str>(item.first))
        invalid("input_feed keys must be input names (str), not " +
                std::string(py::str(item.first.get_type().attr("__name__"))));
      std::string name = item.first.cast<std::string>();
      auto found = input_index_.find(name);
      if (found == input_index_.end()) invalid("'" + name + "' is not an input of the model (inputs: " + names(infos) + ")");
      inputs[found->second] = input_value(item.second, infos[found->second].type, name);
      given[found->second] = true;
    }
    for (size_t i = 0; i < infos.size(); ++i)
      if (!given[i]) invalid("input '" + infos[i].name + "' is missing (inputs: " + names(infos) + ")");

    std::vector<size_t> selected;
    if (output_names.is_none() || (py::isinstance<py::sequence>(output_names) && !py::isinstance<py::str>(output_names) &&
                                   py::len(output_names) == 0)) {  // ONNX Runtime: None or [] is every output
      for (size_t i = 0; i < session->outputs().size(); ++i) selected.push_back(i);
    } else {
      if (py::isinstance<py::str>(output_names)) invalid("output_names must be a list of names or None, not a str");
      for (py::handle h : output_names) {
        std::string name = py::str(h);
        auto found = output_index_.find(name);
        if (found == output_index_.end())
          invalid("'" + name + "' is not an output of the model (outputs: " + names(session->outputs()) + ")");
        selected.push_back(found->second);
      }
    }

    std::vector<Tensor> outputs;
    {
      py::gil_scoped_release unlocked;
      if (profiling_) {
        backend::RunStats stats;
        auto start = std::chrono::steady_clock::now();
        outputs = session->run(inputs, &stats);
        double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
        std::lock_guard<std::mutex> lock(profile_mutex_);
        profiled_.push_back({start, us, std::move(stats.timings)});
      } else {
        outputs = session->run(inputs);
      }
    }
    py::list result = arrays_from_outputs(outputs, selected);
    {
      // The inputs' release callbacks take the GIL, which this thread holds.
      std::vector<Tensor> drop = std::move(inputs);
    }
    return result;
  }

  /// The profiled runs so far summarized (and cleared when `clear`).
  py::dict profile(bool clear) {
    std::vector<runtime::ProfiledRun> runs;
    {
      std::lock_guard<std::mutex> lock(profile_mutex_);
      runs = profiled_;
      if (clear) profiled_.clear();
    }
    if (!profiling_) invalid("profiling is off: create the session with enable_profiling (or profile=True)");
    py::dict d;
    d["runs"] = runs.size();
    if (runs.empty()) return d;
    runtime::ProfileSummary s = runtime::summarize_profile(runs);
    auto rows = [](const std::vector<runtime::ProfileRow>& list) {
      py::list l;
      for (const runtime::ProfileRow& r : list) {
        py::dict row;
        row["name"] = r.name;
        if (!r.op_type.empty()) row["op_type"] = r.op_type;
        if (!r.backend.empty()) row["backend"] = r.backend;
        row["count"] = r.count;
        row["model_nodes"] = r.model_nodes;
        row["microseconds"] = r.microseconds;
        l.append(row);
      }
      return l;
    };
    d["nodes_per_run"] = s.nodes_per_run;
    d["wall_microseconds"] = s.wall_microseconds;
    d["node_microseconds"] = s.node_microseconds;
    d["by_node"] = rows(s.by_node);
    d["by_op_type"] = rows(s.by_op_type);
    d["by_backend"] = rows(s.by_backend);
    d["text"] = runtime::format_profile(s, 0);
    d["chrome_trace"] = runtime::chrome_trace_json(runs);
    return d;
  }

  std::string partition_json() const { return get()->partition_report().to_json(); }
  std::vector<std::string> backends() const { return get()->partition_report().backends; }
  int num_threads() const { return get()->num_threads(); }

 private:
  static std::string names(const std::vector<runtime::ValueInfo>& infos) {
    std::string s;
    for (const auto& i : infos) s += (s.empty() ? "'" : ", '") + i.name + "'";
    return s.empty() ? "none" : s;
  }

  std::shared_ptr<runtime::Session> session_;
  std::map<std::string, size_t> input_index_, output_index_;
  bool profiling_ = false;
  std::mutex profile_mutex_;
  std::vector<runtime::ProfiledRun> profiled_;
};

Options make_options(int threads, std::optional<std::vector<std::string>> backends, std::optional<bool> fusion,
                     std::string device, bool profile, std::optional<int> max_plans) {
  Options o;
  o.num_threads = threads;
  if (backends) o.backends = *backends;
  o.fusion = fusion;
  o.device = std::move(device);
  o.profile = profile;
  o.max_specialized_plans = max_plans;
  return o;
}

// ---- Module functions -------------------------------------------------------------

std::string partition_json(const std::string& model, std::optional<std::vector<std::string>> backends,
                           std::string device, std::optional<bool> fusion,
                           std::map<std::string, std::vector<int64_t>> shapes) {
  runtime::SessionOptions so;
  if (backends) so.backends = *backends;
  if (!device.empty()) so.device = runtime::parse_device(device);
  py::gil_scoped_release unlocked;
  // As `graft partition` does (tools/graft/partition_command.cc).
  compiler::CompileOptions co = runtime::compile_options_of(so, 1);
  co.backends = backend::resolve_backend_order(co.backends);
  co.fusion = fusion;
  if (!shapes.empty()) {
    so.backends = co.backends;
    so.fusion = fusion;
    std::unique_ptr<runtime::Session> session = frontend::load_model(model, so);
    std::map<std::string, Shape> given(shapes.begin(), shapes.end());
    return session->partition_report_for(runtime::concrete_input_types(session->inputs(), given, "shapes"))
        .to_json();
  }
  return compiler::prepare(frontend::load_onnx(model), co).report.to_json();
}

py::dict compile_model(const std::string& model, const std::string& path,
                       std::map<std::string, std::vector<int64_t>> shapes,
                       std::optional<std::vector<std::string>> backends, std::string device,
                       std::optional<bool> fusion, int threads) {
  runtime::ArtifactCompileOptions options;
  if (backends) options.session.backends = *backends;
  if (!device.empty()) options.session.device = runtime::parse_device(device);
  options.session.fusion = fusion;
  options.session.num_threads = threads;
  options.input_shapes = std::map<std::string, Shape>(shapes.begin(), shapes.end());
  options.shape_flag = "shapes";
  runtime::ArtifactInfo info;
  {
    py::gil_scoped_release unlocked;
    info = frontend::compile_artifact(model, path, options);
  }
  py::dict d;
  d["path"] = path;
  d["format_version"] = info.format_version;
  d["graft_version"] = info.graft_version;
  d["architecture"] = info.architecture;
  d["file_bytes"] = info.file_bytes;
  d["graph_bytes"] = info.graph_bytes;
  d["weights_bytes"] = info.weights_bytes;
  d["modules_bytes"] = info.modules_bytes;
  d["num_weights"] = info.num_weights;
  return d;
}

py::dict devices() {
  py::dict d;
  py::dict cpu;
  cpu["architecture"] = std::string(runtime::host_architecture());
  cpu["threads"] = default_num_threads();
  cpu["features"] = runtime::cpu_feature_names(runtime::host_cpu_features());
  d["cpu"] = cpu;
  py::list backends;
  for (const backend::Backend* b : backend::all_backends()) {
    py::dict e;
    std::string why = b->unavailable_reason();
    e["name"] = b->name();
    e["available"] = why.empty();
    e["unavailable_reason"] = why;
    e["in_default_order"] = b->in_default_order();
    backends.append(e);
  }
  d["backends"] = backends;
  std::string jit = codegen::cpu_jit_unavailable_reason();
  d["fused_kernels"] = !codegen::jit_enabled_by_environment() ? std::string("interpreter (GRAFT_JIT=0)")
                       : jit.empty() ? "LLVM JIT: " + codegen::cpu_jit_target()
                                     : "interpreter (LLVM JIT unavailable: " + jit + ")";
  std::optional<std::string> cache = codegen::cache_directory_from_environment();
  d["compile_cache"] = cache ? py::object(py::str(*cache)) : py::object(py::none());
  // As `graft devices` (tools/graft/devices_command.cc): an empty reason is "available".
  py::dict cuda;
  std::string nvrtc = codegen::nvrtc_unavailable_reason();
  std::string gpu = codegen::cuda_device_unavailable_reason();
  cuda["nvrtc"] = nvrtc.empty() ? py::object(py::str(codegen::nvrtc_version())) : py::object(py::none());
  cuda["nvrtc_unavailable_reason"] = nvrtc;
  cuda["device_architecture"] = gpu.empty() ? py::object(py::str(codegen::cuda_device_architecture())) : py::object(py::none());
  cuda["device_unavailable_reason"] = gpu;
  d["cuda"] = cuda;
  std::string opencl_kernels = codegen::opencl_unavailable_reason();
  d["opencl_kernels"] = opencl_kernels.empty() ? "kernels on " + codegen::opencl_device_description()
                                               : "no device (" + opencl_kernels + ")";
  py::list opencl;
  backend::DeviceAPI& api = backend::device_api(DeviceType::opencl);
  for (int id = 0; id < api.device_count(); ++id) {
    backend::DeviceProperties p = api.properties(id);
    py::dict e;
    e["device"] = to_string(Device{DeviceType::opencl, id});
    e["name"] = p.name;
    e["platform"] = p.platform;
    e["version"] = p.version;
    e["kind"] = p.kind;
    e["global_memory_bytes"] = p.global_memory_bytes;
    e["max_allocation_bytes"] = p.max_allocation_bytes;
    e["compute_units"] = p.compute_units;
    opencl.append(e);
  }
  d["opencl"] = opencl;
  return d;
}

}  // namespace

}  // namespace graft::python

PYBIND11_MODULE(_graft, m) {
  using namespace graft::python;
  using graft::ErrorKind;
  m.doc() = "graft's Python extension (use the `graft` package)";
  m.attr("__version__") = GRAFT_VERSION;

  // graft.Error(Exception); the kinds subclass it and, where Python has a
  // matching built-in, that too (InvalidArgumentError is a ValueError).
  error_base = PyErr_NewException("graft.Error", PyExc_Exception, nullptr);
  m.add_object("Error", py::handle(error_base));
  struct Kind {
    const char* name;
    PyObject* builtin;
    ErrorKind kind;
  } kinds[] = {{"InvalidModelError", nullptr, ErrorKind::invalid_model},
               {"UnsupportedError", nullptr, ErrorKind::unsupported},
               {"InvalidArgumentError", PyExc_ValueError, ErrorKind::invalid_argument},
               {"IoError", PyExc_OSError, ErrorKind::io},
               {"InternalError", nullptr, ErrorKind::internal},
               {"ResourceExhaustedError", PyExc_MemoryError, ErrorKind::resource_exhausted},
               {"CancelledError", nullptr, ErrorKind::cancelled}};
  for (size_t i = 0; i < 7; ++i) {
    py::tuple bases = kinds[i].builtin ? py::make_tuple(py::handle(error_base), py::handle(kinds[i].builtin))
                                       : py::make_tuple(py::handle(error_base));
    std::string qualified = std::string("graft.") + kinds[i].name;
    error_classes[i] = PyErr_NewException(qualified.c_str(), bases.ptr(), nullptr);
    py::handle(error_classes[i]).attr("kind") = std::string(graft::to_string(kinds[i].kind));
    m.add_object(kinds[i].name, py::handle(error_classes[i]));
  }
  py::handle(error_base).attr("kind") = py::none();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const graft::Error& e) {
      PyErr_SetString(error_class(e.kind()), e.what());
    } catch (const std::bad_alloc&) {
      PyErr_SetString(PyExc_MemoryError, "graft: out of memory");
    }
  });

  py::class_<PySession>(m, "Session")
      .def(py::init([](py::object model, int threads, std::optional<std::vector<std::string>> backends,
                       std::optional<bool> fusion, std::string device, bool profile, std::optional<int> max_plans) {
             return new PySession(model, make_options(threads, backends, fusion, device, profile, max_plans));
           }),
           py::arg("model"), py::arg("threads") = 0, py::arg("backends") = py::none(), py::arg("fusion") = py::none(),
           py::arg("device") = "", py::arg("profile") = false, py::arg("max_specialized_plans") = py::none())
      .def("run", &PySession::run, py::arg("output_names"), py::arg("input_feed"))
      .def("inputs", &PySession::inputs)
      .def("outputs", &PySession::outputs)
      .def("close", &PySession::close)
      .def_property_readonly("closed", &PySession::closed)
      .def("profile", &PySession::profile, py::arg("clear") = false)
      .def("partition_json", &PySession::partition_json)
      .def("backends", &PySession::backends)
      .def("num_threads", &PySession::num_threads);

  m.def("partition_json", &partition_json, py::arg("model"), py::arg("backends") = py::none(),
        py::arg("device") = "", py::arg("fusion") = py::none(),
        py::arg("shapes") = std::map<std::string, std::vector<int64_t>>{});
  m.def("compile", &compile_model, py::arg("model"), py::arg("path"),
        py::arg("shapes") = std::map<std::string, std::vector<int64_t>>{}, py::arg("backends") = py::none(),
        py::arg("device") = "", py::arg("fusion") = py::none(), py::arg("threads") = 0);
  m.def("devices", &devices);
  m.def("backend_names", [] {
    std::vector<std::string> names;
    for (const graft::backend::Backend* b : graft::backend::all_backends()) names.push_back(b->name());
    return names;
  });
  m.def("default_backends", [] { return graft::backend::resolve_backend_order({}); });
  m.def("wait_for_background_compiles", [] {
    py::gil_scoped_release unlocked;
    graft::codegen::CompileCache::global().wait_for_background_compiles();
  });

  // Test hooks: the address a converted input views, and the Tensor an
  // output array's base (a capsule) owns.
  m.def("_input_address", [](py::object value, std::string dtype) {
    graft::DType expected = dtype.empty() ? graft::DType::undefined : graft::dtype_from_name(dtype);
    graft::Tensor t = tensor_from_array(value, expected, "x");
    return reinterpret_cast<uintptr_t>(t.raw_data());
  }, py::arg("value"), py::arg("dtype") = "");
  m.def("_capsule_address", [](py::object capsule) {
    if (!PyCapsule_IsValid(capsule.ptr(), kTensorCapsule)) invalid("not a graft tensor capsule");
    auto* t = static_cast<graft::Tensor*>(PyCapsule_GetPointer(capsule.ptr(), kTensorCapsule));
    return reinterpret_cast<uintptr_t>(t->raw_data());
  });
}

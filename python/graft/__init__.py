"""graft: partition, fuse, compile and run ONNX models, from Python.

The API follows ONNX Runtime's, so that a script written for `onnxruntime`
runs after changing its import and its session line::

    import graft as ort                      # was: import onnxruntime as ort
    sess = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    outputs = sess.run(None, {"x": x})

plus graft's own: `device=`, `backends=`, `graft.partition`, `graft.compile`,
`graft.devices`, `InferenceSession.profile`. docs/python.md.
"""
import enum
import json
import os
import tempfile

import numpy as np

from . import _graft
from ._graft import (Error, InvalidModelError, UnsupportedError, InvalidArgumentError, IoError,
                     InternalError, ResourceExhaustedError, CancelledError)

__version__ = _graft.__version__

__all__ = [
    "InferenceSession", "SessionOptions", "ModelMetadata", "GraphOptimizationLevel", "ExecutionMode", "NodeArg", "RunOptions",
    "Error", "InvalidModelError", "UnsupportedError", "InvalidArgumentError", "IoError", "InternalError",
    "ResourceExhaustedError", "CancelledError",
    "compile", "partition", "devices", "get_available_providers", "get_device", "bfloat16", "bfloat16_to_float32",
    "__version__",
]

#: The numpy dtype of bfloat16 values: their bits as uint16, with the metadata
#: {"graft_dtype": "bfloat16"} (numpy has no bfloat16). Outputs of type
#: bfloat16 have it; a uint16 array feeds a bfloat16 input.
bfloat16 = np.dtype("uint16", metadata={"graft_dtype": "bfloat16"})


def bfloat16_to_float32(array):
    """The float32 values of bfloat16 bits held as uint16."""
    bits = np.asarray(array).view(np.uint16)
    return (bits.astype(np.uint32) << 16).view(np.float32)


# ONNX Runtime's provider names: CPUExecutionProvider stands for graft's
# default order (the CPU backends), DnnlExecutionProvider (ONNX Runtime's
# oneDNN provider) for graft's dnnl backend.
_CPU_PROVIDER_ALIASES = ("CPUExecutionProvider",)
_PROVIDER_ALIASES = {"DnnlExecutionProvider": "dnnl"}

_TYPE_NAMES = {
    "float32": "float", "float64": "double", "float16": "float16", "bfloat16": "bfloat16", "int8": "int8",
    "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8", "uint16": "uint16",
    "uint32": "uint32", "uint64": "uint64", "bool": "bool", "string": "string", "undefined": "undefined",
}


class GraphOptimizationLevel(enum.IntEnum):
    """ONNX Runtime's levels. graft's passes always run; below ORT_ENABLE_EXTENDED
    pointwise fusion is off, from it on fusion is on."""
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """Accepted for compatibility; graft runs nodes in order with intra-op threads."""
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class SessionOptions:
    """ONNX Runtime's SessionOptions, with graft's extras.

    intra_op_num_threads: graft's threads per run (0: GRAFT_NUM_THREADS, else the cores).
    graph_optimization_level: ORT_DISABLE_ALL and ORT_ENABLE_BASIC turn pointwise fusion off.
    enable_profiling / profile_file_prefix: record per-node timings; end_profiling() writes them.
    graft extras: backends (priority order), device ("opencl:0"), fusion (True/False/None),
    max_specialized_plans.
    Accepted and ignored: inter_op_num_threads, execution_mode, log_severity_level,
    log_verbosity_level, enable_cpu_mem_arena, enable_mem_pattern, optimized_model_filepath.
    """

    def __init__(self):
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.enable_profiling = False
        self.profile_file_prefix = "graft_profile"
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.optimized_model_filepath = ""
        self.backends = None
        self.device = ""
        self.fusion = None
        self.max_specialized_plans = None
        self._config = {}

    def add_session_config_entry(self, key, value):
        self._config[key] = value

    def get_session_config_entry(self, key):
        return self._config[key]


class RunOptions:
    """Accepted for compatibility (ONNX Runtime's per-run options)."""

    def __init__(self):
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.run_tag = ""
        self.terminate = False


class ModelMetadata:
    """What InferenceSession.get_modelmeta() returns (ONNX Runtime's fields)."""

    def __init__(self):
        self.producer_name = ""
        self.graph_name = ""
        self.domain = ""
        self.description = ""
        self.graph_description = ""
        self.version = 0
        self.custom_metadata_map = {}


class NodeArg:
    """An input or output: name, shape (ints, and strings for symbolic
    dimensions; None for a dimension without a name) and type ("tensor(float)")."""

    def __init__(self, info):
        self.name = info["name"]
        self.shape = info["shape"] if info["shape"] is not None else []
        element = "tensor(%s)" % _TYPE_NAMES.get(info["dtype"], info["dtype"])
        if info["sequence"]:
            element = "seq(%s)" % element
        if info["optional"]:
            element = "optional(%s)" % element
        self.type = element
        self.dtype = info["dtype"]  # graft's name ("float32")

    def __repr__(self):
        return "NodeArg(name=%r, type=%r, shape=%r)" % (self.name, self.type, self.shape)


def _provider_backends(providers):
    """graft's backend order for ONNX Runtime's `providers` list: graft backend
    names as they are; CPUExecutionProvider stands for the rest of graft's
    default order (alone: the default order, as ONNX Runtime's CPU provider
    takes what the providers before it leave). (name, options) pairs are
    accepted, the options ignored."""
    if providers is None:
        return None
    if isinstance(providers, str):
        providers = [providers]
    names = [p[0] if isinstance(p, (tuple, list)) else p for p in providers]
    known = _graft.backend_names()
    order = []
    for name in names:
        if not isinstance(name, str):
            raise InvalidArgumentError("provider %r is not a name" % (name,))
        name = _PROVIDER_ALIASES.get(name, name)
        if name in _CPU_PROVIDER_ALIASES:
            order.append(name)
        elif name in known:
            order.append(name)
        else:
            raise InvalidArgumentError("unknown provider '%s' (graft's backends: %s; or %s)"
                                       % (name, ", ".join(known),
                                          ", ".join(_CPU_PROVIDER_ALIASES + tuple(_PROVIDER_ALIASES))))
    if not order or order == list(_CPU_PROVIDER_ALIASES):
        return None
    result = []
    for name in order:
        expanded = [b for b in _graft.default_backends() if b not in order] if name in _CPU_PROVIDER_ALIASES else [name]
        result.extend(b for b in expanded if b not in result)
    return result


def get_available_providers():
    """graft's available backends in default order, then ONNX Runtime's CPU name."""
    return [b["name"] for b in devices()["backends"] if b["available"]] + list(_CPU_PROVIDER_ALIASES)


def get_device():
    return "CPU"


class InferenceSession:
    """A model ready to run: ONNX Runtime's InferenceSession.

    path_or_bytes: an ONNX file, a compiled artifact (.graft), their bytes, or an
    onnx.ModelProto. providers: graft backend names in priority order
    (["dnnl", "fuse", "ref"]) or ["CPUExecutionProvider"] (the default order).
    graft extras (keywords): device="opencl:0", backends=[...], fusion=True/False,
    threads=N, profile=True.

    run() releases the GIL; one session may be run from several threads at once.
    """

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
        options = sess_options or SessionOptions()
        backends = _provider_backends(providers)
        if kwargs.get("backends") is not None:
            backends = list(kwargs.pop("backends"))
        elif getattr(options, "backends", None) is not None:
            backends = list(options.backends)
        kwargs.pop("backends", None)
        fusion = kwargs.pop("fusion", getattr(options, "fusion", None))
        if fusion is None and options.graph_optimization_level < GraphOptimizationLevel.ORT_ENABLE_EXTENDED:
            fusion = False
        device = kwargs.pop("device", getattr(options, "device", "")) or ""
        threads = kwargs.pop("threads", options.intra_op_num_threads) or 0
        profile = bool(kwargs.pop("profile", options.enable_profiling))
        max_plans = kwargs.pop("max_specialized_plans", getattr(options, "max_specialized_plans", None))
        if kwargs:
            raise TypeError("InferenceSession got unexpected keyword arguments: %s" % ", ".join(sorted(kwargs)))
        model = path_or_bytes
        if hasattr(model, "SerializeToString"):  # an onnx.ModelProto
            model = model.SerializeToString()
        # For get_modelmeta: the path, or the caller's own object (no copy).
        self._model_source = path_or_bytes
        self._options = options
        self._profile_prefix = getattr(options, "profile_file_prefix", "graft_profile")
        self._sess = _graft.Session(model, threads=int(threads), backends=backends, fusion=fusion, device=device,
                                    profile=profile, max_specialized_plans=max_plans)
        self._inputs = [NodeArg(i) for i in self._sess.inputs()]
        self._outputs = [NodeArg(o) for o in self._sess.outputs()]

    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_overridable_initializers(self):
        return []

    def get_modelmeta(self):
        """ONNX Runtime's ModelMetadata (producer, graph name, domain, description,
        version, custom metadata), read with the onnx package from an ONNX model;
        empty for an artifact or without onnx."""
        meta = ModelMetadata()
        try:
            import onnx
            source = self._model_source
            if hasattr(source, "graph"):
                model = source
            elif isinstance(source, (str, os.PathLike)):
                model = onnx.load(source)
            else:
                model = onnx.load_model_from_string(bytes(source))
        except Exception:  # noqa: BLE001 - an artifact, or no onnx package
            return meta
        meta.producer_name = model.producer_name
        meta.graph_name = model.graph.name
        meta.domain = model.domain
        meta.description = model.doc_string
        meta.graph_description = model.graph.doc_string
        meta.version = model.model_version
        meta.custom_metadata_map = {p.key: p.value for p in model.metadata_props}
        return meta

    def get_providers(self):
        """The backend order the session partitioned with."""
        return self._sess.backends()

    def get_provider_options(self):
        return {name: {} for name in self.get_providers()}

    def get_session_options(self):
        return self._options

    def run(self, output_names, input_feed, run_options=None):
        """Outputs named in output_names (None: all), as numpy arrays, for the
        inputs in input_feed ({name: array}). Contiguous arrays of the input's
        dtype are read in place; each output views graft's buffer."""
        return self._sess.run(output_names, input_feed)

    def profile(self, clear=False):
        """The profiled runs so far (enable_profiling or profile=True): their count,
        mean wall and node time in microseconds, and tables by node, op type and
        backend (lists of dicts, slowest first); "text" is `graft run --profile`'s table."""
        result = self._sess.profile(clear)
        result.pop("chrome_trace", None)
        return result

    def end_profiling(self):
        """Writes the profiled runs as a Chrome trace to PREFIX_<time>.json and
        returns its name (ONNX Runtime's behaviour); clears them."""
        result = self._sess.profile(True)
        import datetime
        name = "%s_%s.json" % (self._profile_prefix, datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S-%f"))
        with open(name, "w") as f:
            f.write(result.get("chrome_trace", '{"traceEvents": []}'))
        return name

    def partition_report(self):
        """Where every node went, and why (graft partition's JSON report as a dict)."""
        return json.loads(self._sess.partition_json())

    @property
    def num_threads(self):
        return self._sess.num_threads()

    def close(self):
        """Releases the model now; later calls raise InvalidArgumentError."""
        self._sess.close()

    @property
    def closed(self):
        return self._sess.closed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _model_path(model, keep):
    """A file name for `model` (a path, bytes or an onnx.ModelProto)."""
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model)
    if hasattr(model, "SerializeToString"):
        model = model.SerializeToString()
    f = tempfile.NamedTemporaryFile(suffix=".onnx", delete=False)
    f.write(bytes(model))
    f.close()
    keep.append(f.name)
    return f.name


def _shapes(shapes):
    return {str(k): [int(d) for d in v] for k, v in (shapes or {}).items()}


def partition(model, backends=None, device="", fusion=None, shapes=None):
    """graft partition's report as a dict: the backend order, every node with the
    backend that runs it (or why each backend declined), the subgraphs and the
    per-backend summaries. shapes={input: [dims]} partitions the plan for them."""
    temporary = []
    try:
        path = _model_path(model, temporary)
        return json.loads(_graft.partition_json(path, backends=list(backends) if backends else None,
                                                device=device or "", fusion=fusion, shapes=_shapes(shapes)))
    finally:
        for name in temporary:
            os.unlink(name)


def compile(model, path, shapes=None, backends=None, device="", fusion=None, threads=0):
    """Compiles `model` for the given input shapes into the artifact `path`
    (graft compile); returns what the artifact holds as a dict.
    InferenceSession(path) then runs it without compiling."""
    temporary = []
    try:
        source = _model_path(model, temporary)
        return _graft.compile(source, os.fspath(path), shapes=_shapes(shapes),
                              backends=list(backends) if backends else None, device=device or "",
                              fusion=fusion, threads=int(threads))
    finally:
        for name in temporary:
            os.unlink(name)


def devices():
    """What this machine offers graft (graft devices): the CPU, each backend and
    whether it is available, the fused-kernel JIT, the compile cache, OpenCL devices."""
    return _graft.devices()

#!/usr/bin/env python3
"""Side-by-side latency of graft, ONNX Runtime and PyTorch on the same models.

Each model is built with torchvision / torch (seeded random weights, batch
norm statistics randomized too so that folding them is not a no-op),
exported to ONNX (for graft and ONNX Runtime) and traced to TorchScript (for
PyTorch). Each runtime then runs in its own fresh worker process
(graft_runner, ort_runner.js, torch_runner.py, one line-based protocol):

* time to first inference: load + compile/optimize + the first run, measured
  inside the fresh worker before anything else runs;
* latency: after --warmup runs each, the runtimes take turns running --block
  runs at a time (rotating who goes first) until each has --runs timed runs;
  the median is reported. Every worker uses 2 threads, batch 1;
* peak RSS: VmHWM of each worker process (/proc/PID/status) before it exits;
* waiting: each runtime's default (idle threads spin-wait for a while, ORT
  allow_spinning=1); --passive makes them sleep (OMP_WAIT_POLICY=PASSIVE,
  ORT allow_spinning=0), for shared or loaded machines;
* accuracy: max |output - PyTorch eager| / max |PyTorch eager| on the first
  output, for graft and for ONNX Runtime.

A model name with the suffix _fp16 (resnet18_fp16, mobilenet_v3_small_fp16)
is that model's export converted to float16, as onnxconverter-common's
convert_float_to_float16 converts plain graphs (weights, constants, Casts to
float, graph inputs and outputs), with float16 inputs; accuracy is against
PyTorch's float32 eager outputs. PyTorch 1.13 has no float16 convolutions on
the CPU, so it sits those out.

A model name with the suffix _qdq (mobilenet_v2_qdq, resnet50_qdq,
bert4_seq128_qdq, ...) is that model's export quantized statically to int8
in the QDQ format by qdq_quantize.py (as ONNX Runtime's quantize_static
writes it, calibrated on 3 random inputs): accuracy is against PyTorch's
float32 model, and "graft vs ORT" gives max |graft - ONNX Runtime| on the
first output in quantization steps of that output. PyTorch runs the float
model, so it sits those out too.

Prints a markdown table and writes everything (all times) as JSON.

    compare.py [--models a,b] [--runs 20] [--quick] [--passive] [--backends dnnl,fuse]
               [--json out.json] [--workdir DIR]

--backends is passed to graft_runner (SessionOptions::backends) and set as
GRAFT_BACKENDS in its environment. Exits 77 when ONNX Runtime (npm install
--ignore-scripts in bench/compare) or PyTorch is missing, so CTest can skip.
"""
import argparse
import datetime
import json
import math
import os
import platform
import select
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SKIP = 77
RUNTIMES = ["graft", "ort", "torch"]
LABELS = {"graft": "graft", "ort": "ONNX Runtime", "torch": "PyTorch"}


# ---------------------------------------------------------------- models

def model_builders():
    import torch
    import torch.nn as nn
    import torchvision

    def vision(name, size=224, **kwargs):
        def build():
            return getattr(torchvision.models, name)(weights=None, **kwargs), (torch.randn(1, 3, size, size),)
        return build

    class BertEncoder(nn.Module):
        """4 BERT-base layers (post-norm, GELU, d 768, 12 heads, ff 3072) on [1, 128, 768] hidden states."""

        def __init__(self):
            super().__init__()
            layer = nn.TransformerEncoderLayer(d_model=768, nhead=12, dim_feedforward=3072, dropout=0.0,
                                               activation="gelu", batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False)
            # TransformerEncoder deep-copies one layer: give every layer its own weights.
            with torch.no_grad():
                for name, p in self.named_parameters():
                    if p.dim() > 1:
                        nn.init.xavier_uniform_(p)
                    elif "norm" in name and name.endswith("weight"):
                        p.copy_(1 + 0.1 * torch.randn_like(p))
                    else:
                        p.copy_(0.02 * torch.randn_like(p))

        def forward(self, hidden):
            return self.encoder(hidden)

    class ResidualGru(nn.Module):
        """A GRU cell (hidden 500) applied for two steps with a residual connection, batch 100."""

        def __init__(self, hidden=500):
            super().__init__()
            self.cell = nn.GRUCell(hidden, hidden)

        def forward(self, x, h):
            for step in range(x.shape[0]):
                h = h + self.cell(x[step], h)
            return h

    class Recurrent(nn.Module):
        """A stack of recurrent layers; its output sequence (final states dropped)."""

        def __init__(self, layers):
            super().__init__()
            self.layers = layers

        def forward(self, x):
            return self.layers(x)[0]

    class CausalLm(nn.Module):
        """A GPT-style language model: token and position embeddings, 4 causal
        pre-norm layers (d 512, 8 heads, ff 2048), tied LM head; 128 tokens."""

        def __init__(self, vocab=8000, d=512, layers=4, seq=128):
            super().__init__()
            self.tokens = nn.Embedding(vocab, d)
            self.positions = nn.Embedding(seq, d)
            layer = nn.TransformerEncoderLayer(d_model=d, nhead=8, dim_feedforward=4 * d, dropout=0.0,
                                               activation="gelu", batch_first=True, norm_first=True)
            self.layers = nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(d)
            self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1))
            self.register_buffer("position_ids", torch.arange(seq).unsqueeze(0))

        def forward(self, ids):
            h = self.tokens(ids) + self.positions(self.position_ids)
            h = self.layers(h, mask=self.mask)
            return self.norm(h) @ self.tokens.weight.t()

    class Segmentation(nn.Module):
        """torchvision's DeepLabV3 on MobileNetV3-Large, 'out' only, 224x224."""

        def __init__(self):
            super().__init__()
            self.net = torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(weights=None,
                                                                                    weights_backbone=None)

        def forward(self, x):
            return self.net(x)["out"]

    class Outputs(nn.Module):
        """A torchvision model whose outputs are a dict or list, as a tuple:
        segmentation's 'out', RAFT's last flow, a detector's first image's
        boxes, scores, labels (and masks) for a batch of one."""

        def __init__(self, net, kind):
            super().__init__()
            self.net = net
            self.kind = kind

        def forward(self, *inputs):
            if self.kind == "segmentation":
                return self.net(inputs[0])["out"]
            if self.kind == "flow":
                return self.net(*inputs)[-1]
            found = self.net([inputs[0][0]])[0]
            return tuple(found[k] for k in ("boxes", "scores", "labels", "masks") if k in found)

    def detection(name, size=320):
        def build():
            net = getattr(torchvision.models.detection, name)(weights=None, weights_backbone=None)
            return Outputs(net, "detection"), (torch.rand(1, 3, size, size),)
        return build

    class TorchvisionModels(dict):
        """The models above, and any other torchvision classification model by
        its function name (mobilenet_v3_large, regnet_y_400mf, convnext_tiny,
        vit_b_16, ...) at 224x224: models this repository was not tuned on."""

        def __missing__(self, name):
            if not callable(getattr(torchvision.models, name, None)):
                raise KeyError(name)
            return vision(name)

    return TorchvisionModels({
        # 2 layers, hidden 256, over 32 steps of batch 8.
        "lstm2_seq32": lambda: (Recurrent(nn.LSTM(128, 256, num_layers=2)), (torch.randn(32, 8, 128),)),
        "gru2_seq32": lambda: (Recurrent(nn.GRU(128, 256, num_layers=2)), (torch.randn(32, 8, 128),)),
        "gpt4_seq128": lambda: (CausalLm(), (torch.randint(0, 8000, (1, 128)),)),
        "deeplabv3_mobilenet": lambda: (Segmentation(), (torch.randn(1, 3, 224, 224),)),
        # Not classification: video, segmentation, optical flow, detection
        # (data-dependent shapes after NonMaxSuppression; random weights make
        # near-tied scores, so detections may come in another order).
        "r3d_18": lambda: (torchvision.models.video.r3d_18(weights=None), (torch.randn(1, 3, 8, 112, 112),)),
        # A video transformer whose export writes tensor_split as Loops over sequences.
        "mvit_v1_b": lambda: (torchvision.models.video.mvit_v1_b(weights=None), (torch.randn(1, 3, 16, 224, 224),)),
        "fcn_resnet50": lambda: (Outputs(torchvision.models.segmentation.fcn_resnet50(
            weights=None, weights_backbone=None, aux_loss=False), "segmentation"), (torch.randn(1, 3, 224, 224),)),
        "lraspp_mobilenet_v3": lambda: (Outputs(torchvision.models.segmentation.lraspp_mobilenet_v3_large(
            weights=None, weights_backbone=None), "segmentation"), (torch.randn(1, 3, 224, 224),)),
        "raft_small": lambda: (Outputs(torchvision.models.optical_flow.raft_small(weights=None), "flow"),
                               (torch.rand(1, 3, 128, 128), torch.rand(1, 3, 128, 128))),
        "ssdlite320": detection("ssdlite320_mobilenet_v3_large"),
        "fasterrcnn_mobilenet_320": detection("fasterrcnn_mobilenet_v3_large_320_fpn"),
        "maskrcnn_resnet50": detection("maskrcnn_resnet50_fpn"),
        "resnet50": vision("resnet50"),
        "mobilenet_v2": vision("mobilenet_v2"),
        "squeezenet1_1": vision("squeezenet1_1"),
        "efficientnet_b0": vision("efficientnet_b0"),
        "densenet121": vision("densenet121"),
        "inception_v3": vision("inception_v3", 299, init_weights=True),
        "bert4_seq128": lambda: (BertEncoder(), (torch.randn(1, 128, 768),)),
        "gru_cell_residual": lambda: (ResidualGru(), (torch.randn(2, 100, 500), torch.randn(100, 500))),
    })


def is_torchvision_model(name):
    try:
        import torchvision
    except ImportError:
        return False
    return not name.startswith("_") and callable(getattr(torchvision.models, name, None))


MODEL_NAMES = ["resnet50", "mobilenet_v2", "squeezenet1_1", "efficientnet_b0", "densenet121", "inception_v3",
               "bert4_seq128", "gru_cell_residual"]
# Not in the default list: models graft was not tuned on (and any
# torchvision classification model by name).
EXTRA_MODEL_NAMES = ["lstm2_seq32", "gru2_seq32", "gpt4_seq128", "deeplabv3_mobilenet", "r3d_18", "mvit_v1_b", "fcn_resnet50",
                     "lraspp_mobilenet_v3", "raft_small", "ssdlite320", "fasterrcnn_mobilenet_320", "maskrcnn_resnet50"]
INPUT_NAMES = {"gru_cell_residual": ["x", "h"], "raft_small": ["a", "b"]}


def randomize_batch_norms(model, torch):
    generator = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            n = m.num_features
            m.running_mean.copy_((torch.rand(n, generator=generator) - 0.5) * 0.2)
            m.running_var.copy_(torch.rand(n, generator=generator) + 0.5)
            m.weight.data.copy_(torch.rand(n, generator=generator) + 0.5)
            m.bias.data.copy_((torch.rand(n, generator=generator) - 0.5) * 0.2)


def write_tensors(tensors, names, folder, prefix):
    manifest = []
    for name, t in zip(names, tensors):
        a = t.detach().contiguous().numpy()
        file = "%s_%s.bin" % (prefix, name)
        a.tofile(os.path.join(folder, file))
        # Relative to the manifest's folder, so a work directory can move.
        manifest.append({"name": name, "dtype": str(a.dtype), "shape": list(a.shape), "file": file})
    return manifest


FLOAT16_SUFFIX = "_fp16"
QDQ_SUFFIX = "_qdq"


def base_model(name):
    for suffix in (FLOAT16_SUFFIX, QDQ_SUFFIX):
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return name


def export_qdq(name, workdir, opset):
    """The float export of the base model, quantized by qdq_quantize.py; inputs
    and reference (PyTorch float32) are the base model's."""
    import torch
    base = export(base_model(name), workdir, opset)
    folder = os.path.join(workdir, name)
    os.makedirs(folder, exist_ok=True)
    paths = dict(base)
    paths["onnx"] = os.path.join(folder, "model.onnx")
    paths["stamp"] = os.path.join(folder, "export.json")
    stamp = {"opset": opset, "torch": torch.__version__, "version": 3, "qdq": 3}
    if os.path.exists(paths["stamp"]) and os.path.exists(paths["onnx"] + ".json"):
        with open(paths["stamp"]) as f:
            if json.load(f) == stamp:
                return paths
    sys.path.insert(0, HERE)
    import qdq_quantize
    manifests = qdq_quantize.random_manifests(base["onnx"], 3, 100, folder)
    qdq_quantize.quantize(base["onnx"], paths["onnx"], manifests, folder)
    with open(paths["stamp"], "w") as f:
        json.dump(stamp, f)
    return paths


def output_step(paths):
    """The quantization step of a QDQ export's first output, or None."""
    info = paths["onnx"] + ".json"
    if not os.path.exists(info):
        return None
    with open(info) as f:
        steps = json.load(f)["output_steps"]
    return steps[0] if steps else None


def steps_apart(a_outputs, b_outputs, step):
    """max |a - b| on the first outputs, in quantization steps."""
    import numpy as np
    a = np.fromfile(a_outputs[0]["file"], dtype=a_outputs[0]["dtype"]).astype(np.float64)
    b = np.fromfile(b_outputs[0]["file"], dtype=b_outputs[0]["dtype"]).astype(np.float64)
    if a.size != b.size:
        return float("inf")
    return float(np.max(np.abs(a - b))) / step if a.size else 0.0


def convert_to_float16(path):
    """Rewrites the ONNX model at `path` to compute in float16 (see the top)."""
    import numpy as np
    import onnx
    from onnx import numpy_helper, TensorProto
    model = onnx.load(path)
    graph = model.graph

    def convert(tensor):
        if tensor.data_type == TensorProto.FLOAT:
            tensor.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(tensor).astype(np.float16), tensor.name))

    for tensor in graph.initializer:
        convert(tensor)
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.TENSOR:
                convert(attribute.t)
            if node.op_type == "Cast" and attribute.name == "to" and attribute.i == TensorProto.FLOAT:
                attribute.i = TensorProto.FLOAT16
    for value in list(graph.input) + list(graph.output):
        if value.type.tensor_type.elem_type == TensorProto.FLOAT:
            value.type.tensor_type.elem_type = TensorProto.FLOAT16
    del graph.value_info[:]
    onnx.save(model, path)


def export(name, workdir, opset):
    """Exports `name` once per (opset, torch version); returns its folder's paths."""
    import torch
    if name.endswith(QDQ_SUFFIX):
        return export_qdq(name, workdir, opset)
    folder = os.path.join(workdir, name)
    os.makedirs(folder, exist_ok=True)
    paths = {k: os.path.join(folder, v) for k, v in
             {"onnx": "model.onnx", "pt": "model.pt", "inputs": "inputs.json", "reference": "reference.json",
              "stamp": "export.json"}.items()}
    stamp = {"opset": opset, "torch": torch.__version__, "version": 3}
    if os.path.exists(paths["stamp"]):
        with open(paths["stamp"]) as f:
            if json.load(f) == stamp and all(os.path.exists(p) for p in paths.values()):
                return paths
    torch.manual_seed(0)
    float16 = name.endswith(FLOAT16_SUFFIX)
    base = name[:-len(FLOAT16_SUFFIX)] if float16 else name
    model, inputs = model_builders()[base]()
    with torch.no_grad():
        randomize_batch_norms(model, torch)
    model.eval()
    names = INPUT_NAMES.get(base, ["input"])
    with torch.no_grad():
        reference = model(*inputs)
    references = list(reference) if isinstance(reference, (tuple, list)) else [reference]
    # Exported with autograd on: PyTorch's fused inference fast paths (the
    # transformer encoder's) only run under no_grad and have no ONNX form.
    torch.onnx.export(model, inputs, paths["onnx"], opset_version=opset, input_names=names,
                      output_names=["output%d" % i for i in range(len(references))], do_constant_folding=True)
    with torch.no_grad():
        traced = torch.jit.trace(model, inputs, check_trace=False)
    traced.save(paths["pt"])
    if float16:
        convert_to_float16(paths["onnx"])
        inputs = [t.half() if t.is_floating_point() else t for t in inputs]
    with open(paths["inputs"], "w") as f:
        json.dump(write_tensors(inputs, names, folder, "input"), f)
    with open(paths["reference"], "w") as f:
        json.dump(write_tensors(references, ["output%d" % i for i in range(len(references))], folder, "reference"), f)
    with open(paths["stamp"], "w") as f:
        json.dump(stamp, f)
    return paths


# ---------------------------------------------------------------- workers

class WorkerError(Exception):
    pass


class Worker:
    """One runtime in its own process, speaking the runner protocol."""

    def __init__(self, runtime, command, env, log_path, timeout):
        self.runtime = runtime
        self.timeout = timeout
        self.buffer = b""
        self.log = open(log_path, "wb")
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     env=env, cwd=HERE)
        self.ready = self.receive()
        self.ready["process_ready_ms"] = (time.perf_counter() - self.started) * 1e3

    def receive(self):
        deadline = time.monotonic() + self.timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise WorkerError("%s: no answer within %d s" % (self.runtime, self.timeout))
            readable, _, _ = select.select([self.proc.stdout], [], [], left)
            if readable:
                chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    self.kill()
                    raise WorkerError("%s: worker exited: %s" % (self.runtime, self.log_tail()))
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            message = json.loads(line)
        except ValueError:
            raise WorkerError("%s: unreadable answer %r" % (self.runtime, line[:200]))
        if "error" in message:
            self.kill()
            raise WorkerError("%s: %s" % (self.runtime, message["error"]))
        return message

    def log_tail(self):
        self.log.flush()
        with open(self.log.name, "rb") as f:
            return f.read()[-600:].decode("utf-8", "replace").strip()

    def run(self, count):
        self.proc.stdin.write(b"run %d\n" % count)
        self.proc.stdin.flush()
        return self.receive()["times_ms"]

    def peak_rss_kb(self):
        """VmHWM of the worker. Not ru_maxrss from wait4: after fork + exec,
        Linux keeps the parent's (this driver's, with torch loaded) peak in it."""
        try:
            with open("/proc/%d/status" % self.proc.pid) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return None

    def close(self):
        """Ends the worker; returns its peak RSS in KiB."""
        peak = self.peak_rss_kb()
        try:
            self.proc.stdin.write(b"quit\n")
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.wait()
        self.log.close()
        return peak

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def worker_command(runtime, paths, out_dir, args):
    if runtime == "graft":
        command = [args.graft_runner, paths["onnx"], paths["inputs"], out_dir, "--threads", str(args.threads)]
        if args.backends:
            command += ["--backends", args.backends]
        return command
    if runtime == "ort":
        return ["node", os.path.join(HERE, "ort_runner.js"), paths["onnx"], paths["inputs"], out_dir,
                "--threads", str(args.threads), "--spin", "1" if args.spin else "0"]
    return [sys.executable, os.path.join(HERE, "torch_runner.py"), paths["pt"], paths["inputs"], out_dir,
            "--threads", str(args.threads)]


def worker_env(args):
    env = dict(os.environ)
    if not args.spin:
        # graft and PyTorch use OpenMP: idle threads sleep instead of spinning.
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    if args.backends:
        env["GRAFT_BACKENDS"] = args.backends
    return env


def max_relative_error(outputs, reference_manifest, reference_folder):
    import numpy as np
    want = reference_manifest[0]
    got = outputs[0]
    a = np.fromfile(got["file"], dtype=got["dtype"]).astype(np.float64)
    b = np.fromfile(os.path.join(reference_folder, os.path.basename(want["file"])), dtype=want["dtype"]).astype(np.float64)
    if list(got["shape"]) != list(want["shape"]) or a.size != b.size:
        return float("inf")
    if a.size == 0:
        return 0.0
    if not np.all(np.isfinite(a)):
        return float("inf")
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-30))


def median(values):
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def compare_model(name, args):
    paths = export(name, args.workdir, args.opset)
    with open(paths["reference"]) as f:
        reference = json.load(f)
    result = {"model": name, "runtimes": {}}
    workers = {}
    env = worker_env(args)
    # Started one at a time: each fresh process has the machine to itself
    # while it loads, compiles and runs its first inference.
    for runtime in args.runtimes:
        out_dir = os.path.join(args.workdir, name, "out_" + runtime)
        os.makedirs(out_dir, exist_ok=True)
        entry = result["runtimes"].setdefault(runtime, {})
        if runtime == "torch" and name.endswith(FLOAT16_SUFFIX):
            entry["error"] = "torch: PyTorch 1.13 has no float16 convolutions on the CPU"
            continue
        if runtime == "torch" and name.endswith(QDQ_SUFFIX):
            continue  # it would run the float model
        # The pause after a turn, before every start too: the workers of the
        # previous model (or runtime) have just exited, and the kernel is
        # still freeing their memory; the first to start would pay for it.
        time.sleep(args.gap_ms / 1000.0)
        try:
            worker = Worker(runtime, worker_command(runtime, paths, out_dir, args), env,
                            os.path.join(args.workdir, name, runtime + ".log"), args.timeout)
            workers[runtime] = worker
            entry.update({k: worker.ready[k] for k in ("load_ms", "first_run_ms", "first_inference_ms",
                                                        "startup_rss_kb", "process_ready_ms") if k in worker.ready})
            entry["max_rel_error"] = max_relative_error(worker.ready["outputs"], reference,
                                                       os.path.dirname(paths["reference"]))
        except WorkerError as e:
            entry["error"] = str(e)
    step = output_step(paths)
    if step and "graft" in workers and "ort" in workers:
        result["runtimes"]["graft"]["steps_from_ort"] = steps_apart(
            workers["graft"].ready["outputs"], workers["ort"].ready["outputs"], step)
    active = list(workers)
    times = {r: [] for r in active}
    try:
        for runtime in active:
            # As between turns: no runtime's runs share the cores with the
            # threads of the one before it (its first inference, or its
            # warm-ups) spinning down.
            time.sleep(args.gap_ms / 1000.0)
            workers[runtime].run(args.warmup)
        time.sleep(args.gap_ms / 1000.0)
        turn = 0
        while any(len(times[r]) < args.runs for r in active):
            order = active[turn % len(active):] + active[:turn % len(active)]
            for runtime in order:
                count = min(args.block, args.runs - len(times[runtime]))
                if count > 0:
                    times[runtime] += workers[runtime].run(count)
                    # Lets the runtime's spinning worker threads go to sleep before the next one starts.
                    time.sleep(args.gap_ms / 1000.0)
            turn += 1
    except WorkerError as e:
        failed = str(e).split(":")[0]
        result["runtimes"][failed]["error"] = str(e)
        active = [r for r in active if r != failed]
    for runtime, worker in workers.items():
        entry = result["runtimes"][runtime]
        if worker.proc.poll() is None:
            entry["peak_rss_kb"] = worker.close()
        if "error" not in entry:
            entry["times_ms"] = times[runtime]
            entry["median_ms"] = median(times[runtime])
            entry["min_ms"] = min(times[runtime])
    return result


# ---------------------------------------------------------------- report

def fmt(value, digits=1):
    if value is None:
        return "–"
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return "%.*f" % (digits, value)


def ratio(a, b):
    return a / b if a is not None and b else None


def markdown(results, runtimes):
    def get(result, runtime, key):
        return result["runtimes"].get(runtime, {}).get(key)

    lines = []
    head = ["model"] + ["%s ms" % LABELS[r] for r in runtimes]
    if "graft" in runtimes:
        head += ["graft / %s" % LABELS[r] for r in runtimes if r != "graft"]
        head += ["graft max rel err"]
        if "ort" in runtimes:
            head += ["ORT max rel err"]
    with_steps = any(get(r, "graft", "steps_from_ort") is not None for r in results)
    if with_steps:
        head += ["graft vs ORT (steps)"]
    head += ["first inference ms (%s)" % " / ".join(LABELS[r] for r in runtimes)]
    head += ["peak RSS MiB (%s)" % " / ".join(LABELS[r] for r in runtimes)]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    ratios = {r: [] for r in runtimes}
    for result in results:
        row = [result["model"]]
        for r in runtimes:
            row.append(fmt(get(result, r, "median_ms"), 2) if get(result, r, "median_ms") is not None else
                       ("error" if get(result, r, "error") else "–"))
        if "graft" in runtimes:
            for r in runtimes:
                if r == "graft":
                    continue
                q = ratio(get(result, "graft", "median_ms"), get(result, r, "median_ms"))
                if q is not None:
                    ratios[r].append(q)
                row.append(fmt(q, 2))
            e = get(result, "graft", "max_rel_error")
            row.append("%.1e" % e if e is not None else "–")
            if "ort" in runtimes:
                e = get(result, "ort", "max_rel_error")
                row.append("%.1e" % e if e is not None else "–")
        if with_steps:
            row.append(fmt(get(result, "graft", "steps_from_ort"), 2))
        row.append(" / ".join(fmt(get(result, r, "first_inference_ms"), 0) for r in runtimes))
        row.append(" / ".join(fmt(get(result, r, "peak_rss_kb") / 1024 if get(result, r, "peak_rss_kb") else None, 0)
                              for r in runtimes))
        lines.append("| " + " | ".join(row) + " |")
    if "graft" in runtimes and any(ratios.values()):
        row = ["geometric mean"] + [""] * len(runtimes)
        for r in runtimes:
            if r == "graft":
                continue
            q = ratios[r]
            row.append(fmt(math.exp(sum(map(math.log, q)) / len(q)), 2) if q else "–")
        row += [""] * (len(head) - len(row))
        lines.append("| " + " | ".join(row) + " |")
    errors = ["- %s, %s: %s" % (result["model"], LABELS[r], entry["error"])
              for result in results for r, entry in result["runtimes"].items() if entry.get("error")]
    if errors:
        lines += ["", "Errors:"] + errors
    return "\n".join(lines)


def machine():
    model = platform.processor()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return {"cpu": model, "cores": os.cpu_count(), "load_average": os.getloadavg()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(MODEL_NAMES), help="comma-separated, or 'all'")
    parser.add_argument("--runs", type=int, default=20, help="timed runs per runtime (median reported)")
    parser.add_argument("--warmup", type=int, default=5,
                        help="untimed runs per runtime after the first (TorchScript optimizes during its first 2-3)")
    parser.add_argument("--block", type=int, default=5, help="runs per turn when the runtimes alternate")
    parser.add_argument("--gap-ms", type=float, default=None,
                        help="pause after each turn so that the last runtime's idle threads stop spinning and go "
                             "to sleep before the next one runs (default: 20, with --spin 300: spinning workers of "
                             "the three processes otherwise compete for the 2 cores)")
    parser.add_argument("--passive", action="store_true",
                        help="make idle worker threads sleep: OMP_WAIT_POLICY=PASSIVE (graft, PyTorch) and ORT "
                             "allow_spinning=0, which a shared or loaded machine needs: there, spinning threads that "
                             "wait at a barrier for a descheduled peer make runs 10-100x slower. Default: each "
                             "runtime's own default, spin-waiting (right on a quiet machine)")
    parser.add_argument("--spin", action="store_true", help="the default (kept for older command lines)")
    parser.add_argument("--quick", action="store_true", help="smoke test: 3 runs, 3 warm-ups, turns of 1")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--backends", default="", help="graft backends in priority order (also GRAFT_BACKENDS)")
    parser.add_argument("--runtimes", default=",".join(RUNTIMES), help="subset of graft,ort,torch")
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--graft-runner", default=os.path.join(ROOT, "build", "bin", "graft_runner"))
    parser.add_argument("--workdir", default=os.path.join(ROOT, "build", "compare"))
    parser.add_argument("--json", default="", help="write all results here (default WORKDIR/compare.json)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds a worker may take for one answer")
    args = parser.parse_args()
    args.spin = not args.passive
    if args.gap_ms is None:
        args.gap_ms = 300.0 if args.spin else 20.0
    if args.quick:
        args.runs, args.warmup, args.block = 3, 3, 1
    # Workers run in bench/compare: every path they get must be absolute.
    args.workdir = os.path.abspath(args.workdir)
    args.graft_runner = os.path.abspath(args.graft_runner)
    args.json = os.path.abspath(args.json) if args.json else ""
    args.runtimes = [r for r in args.runtimes.split(",") if r]
    names = MODEL_NAMES if args.models == "all" else [m for m in args.models.split(",") if m]
    for name in names:
        base = base_model(name)
        if base not in MODEL_NAMES and base not in EXTRA_MODEL_NAMES and not is_torchvision_model(base):
            print("unknown model '%s' (known: %s, or a torchvision.models function name; any with _fp16 or _qdq)"
                  % (name, ", ".join(MODEL_NAMES + EXTRA_MODEL_NAMES)), file=sys.stderr)
            return 2
    for r in args.runtimes:
        if r not in RUNTIMES:
            print("unknown runtime '%s' (known: %s)" % (r, ", ".join(RUNTIMES)), file=sys.stderr)
            return 2
    try:
        import numpy  # noqa: F401
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError as e:
        print("skipped: PyTorch/torchvision not importable (%s); install python3-torch python3-torchvision" % e)
        return SKIP
    if "ort" in args.runtimes and not os.path.isdir(os.path.join(HERE, "node_modules", "onnxruntime-node")):
        print("skipped: ONNX Runtime is not installed; run `npm install --ignore-scripts` in %s" % HERE)
        return SKIP
    if "graft" in args.runtimes and not os.access(args.graft_runner, os.X_OK):
        print("graft runner '%s' not found; build the graft_runner target" % args.graft_runner, file=sys.stderr)
        return 2
    os.makedirs(args.workdir, exist_ok=True)
    json_path = args.json or os.path.join(args.workdir, "compare.json")

    started = datetime.datetime.now(datetime.timezone.utc)
    info = {"date": started.strftime("%Y-%m-%d %H:%M UTC"), "machine": machine(), "runs": args.runs,
            "warmup": args.warmup, "block": args.block, "threads": args.threads, "batch": 1,
            "backends": args.backends or os.environ.get("GRAFT_BACKENDS", "") or "(default)", "opset": args.opset,
            "spin_wait": args.spin}
    results = []
    for name in names:
        t0 = time.perf_counter()
        print("%s ..." % name, file=sys.stderr, flush=True)
        results.append(compare_model(name, args))
        print("%s done in %.0f s" % (name, time.perf_counter() - t0), file=sys.stderr, flush=True)
        with open(json_path, "w") as f:  # after every model, so a long run keeps what it measured
            json.dump({"info": info, "results": results}, f, indent=1)
    info["load_average_after"] = os.getloadavg()
    with open(json_path, "w") as f:
        json.dump({"info": info, "results": results}, f, indent=1)
    print("%s, %s (%d cores, load average %.1f before, %.1f after), %d threads per runtime (%s), batch 1, "
          "median of %d runs; graft backends: %s\n" %
          (info["date"], info["machine"]["cpu"], info["machine"]["cores"], info["machine"]["load_average"][0],
           info["load_average_after"][0], args.threads, "spin-waiting" if args.spin else "passive waiting",
           args.runs, info["backends"]))
    print(markdown(results, args.runtimes))
    print("\nJSON: %s" % json_path)
    failed = any(entry.get("error") for result in results for entry in result["runtimes"].values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""graft as an ONNX backend (onnx.backend.base.Backend), so that ONNX's own
test runner (onnx.backend.test.BackendTest) and other code written against
that interface run models on graft::

    import graft.backend
    rep = graft.backend.prepare(model)          # an onnx.ModelProto or its bytes
    outputs = rep.run([x])                      # inputs in graph-input order

tests/python/test_onnx_backend.py runs ONNX's test suite through it.
"""
import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep

from . import InferenceSession, UnsupportedError


class GraftBackendRep(BackendRep):
    """A prepared model: an InferenceSession and the model's input names."""

    def __init__(self, session, input_names):
        self.session = session
        self.input_names = input_names

    def run(self, inputs, **kwargs):
        if isinstance(inputs, dict):
            feed = dict(inputs)
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            feed = dict(zip(self.input_names, inputs))
        return tuple(self.session.run(None, feed))


class GraftBackend(Backend):
    """onnx.backend.base.Backend over graft.InferenceSession. kwargs of prepare()
    are InferenceSession's (providers=, device=, backends=, fusion=, threads=)."""

    @classmethod
    def is_compatible(cls, model, device="CPU", **kwargs):
        return cls.supports_device(device)

    @classmethod
    def supports_device(cls, device):
        return str(device).upper().startswith("CPU")

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        if isinstance(model, (bytes, bytearray)):
            model = onnx.load_model_from_string(bytes(model))
        elif isinstance(model, str):
            model = onnx.load(model)
        super().prepare(model, device, **kwargs)
        initializers = {t.name for t in model.graph.initializer}
        # The runner feeds graph.input in order; inputs that an initializer
        # gives a default are fed only when given.
        names = [i.name for i in model.graph.input]
        session = InferenceSession(model.SerializeToString(), **kwargs)
        real = {a.name for a in session.get_inputs()}
        names = [n for n in names if n in real or n not in initializers]
        return GraftBackendRep(session, names)

    @classmethod
    def run_model(cls, model, inputs, device="CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device="CPU", outputs_info=None, **kwargs):
        """Runs one NodeProto: a model is made around it, its inputs typed
        after the arrays, its outputs after outputs_info ((dtype, shape) pairs)
        or left for graft to infer."""
        from onnx import helper, numpy_helper, mapping
        graph_inputs = []
        feed = []
        for name, value in zip(node.input, inputs):
            if not name:
                continue
            array = np.asarray(value)
            elem = mapping.NP_TYPE_TO_TENSOR_TYPE[array.dtype]
            graph_inputs.append(helper.make_tensor_value_info(name, elem, array.shape))
            feed.append(array)
        graph_outputs = []
        for k, name in enumerate(node.output):
            if outputs_info and k < len(outputs_info):
                dtype, shape = outputs_info[k]
                graph_outputs.append(helper.make_tensor_value_info(
                    name, mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dtype)], shape))
            else:
                graph_outputs.append(helper.make_empty_tensor_value_info(name))
        graph = helper.make_graph([node], "graft_run_node", graph_inputs, graph_outputs)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid(node.domain or "", kwargs.pop("opset", 17))])
        # Not prepare(): ONNX's checker wants typed outputs, which graft infers.
        session = InferenceSession(model.SerializeToString(), **kwargs)
        return GraftBackendRep(session, [a.name for a in session.get_inputs()]).run(feed)


prepare = GraftBackend.prepare
run_model = GraftBackend.run_model
run_node = GraftBackend.run_node
supports_device = GraftBackend.supports_device
is_compatible = GraftBackend.is_compatible

"""One ONNX backend-test case through Kiln: import, build, run every data set, compare.

Runs inside a worker process (worker_pool.py), so a crash in Kiln takes down the worker, not
the runner. ``evaluate_case(case_dir)`` returns a plain dict (it crosses a pipe as JSON):

    status        "pass", "fail", "unsupported" or "error"
    detail        why, one line ("" for a pass)
    max_abs_err, max_rel_err   over every compared element (None when nothing was compared)
    bound_inputs  graph inputs compiled in as constants (``from_onnx(values=...)``)
    bound_shapes  graph inputs whose shapes were taken from the test data (``shapes=...``)
    unsupported_ops  ["Op (opset N)", ...] when the importer named ops it lacks

Statuses follow the brief of item 6 of "ONNX end to end": ``unsupported`` is what Kiln says it
does not implement (kiln.NotImplementedError, non-tensor or string data, training ops), ``error``
is any other import failure, ``fail`` is anything wrong after a successful import.
"""

import glob
import json
import os
import re

import numpy as np
import onnx
from onnx import numpy_helper

# ONNX's backend test runner (onnx/backend/test/loader/__init__.py): every case on disk uses
# these; only the downloaded "real" models may override them in their data.json.
DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-7

TRAINING_DOMAIN = "ai.onnx.preview.training"

_UNSUPPORTED_OP = re.compile(r"^\s+(.+ \(opset \d+\)), first at node", re.MULTILINE)
_NEEDS_CONSTANT = re.compile(r"input \d+ \('([^']*)'\) must be a constant")
_NEEDS_SHAPE = re.compile(r"give (?:it|the input's shape) with shapes=\{'([^']*)'")


class Unsupported(Exception):
    """The case uses something Kiln does not implement; ``ops`` lists importer op entries."""

    def __init__(self, reason, ops=()):
        super().__init__(reason)
        self.ops = list(ops)


class CaseError(Exception):
    """The case could not be imported for a reason other than a missing feature."""


class CaseFailure(Exception):
    """Kiln imported the case but building, running or the comparison went wrong."""

    def __init__(self, reason, max_abs_err=None, max_rel_err=None):
        super().__init__(reason)
        self.max_abs_err = max_abs_err
        self.max_rel_err = max_rel_err
        self.bound, self.shaped = [], []  # set by run_data_sets once the import succeeded


def first_line(exc):
    """The first non-empty line of an exception's text: Kiln appends context lines below it."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {line}" if line else type(exc).__name__


def tolerances(case_dir):
    """(rtol, atol) for the case: ONNX's defaults unless a data.json beside it overrides them,
    as ONNX's loader does."""
    path = os.path.join(case_dir, "data.json")
    if not os.path.exists(path):
        return DEFAULT_RTOL, DEFAULT_ATOL
    with open(path) as f:
        data = json.load(f)
    return data.get("rtol", DEFAULT_RTOL), data.get("atol", DEFAULT_ATOL)


# ---------------------------------------------------------------------------------------------
# What the case needs, before Kiln sees it


def _type_kind(type_proto):
    """"tensor", "sequence", "optional", "map", "sparse_tensor" or "unknown"."""
    kind = type_proto.WhichOneof("value")
    return kind.replace("_type", "") if kind else "unknown"


def check_supported_data(model):
    """Raises Unsupported for what no importer change alone can run: non-tensor or string graph
    inputs/outputs, and ONNX's training ops (their test data is a gradient step)."""
    for role, values in (("input", model.graph.input), ("output", model.graph.output)):
        for value in values:
            kind = _type_kind(value.type)
            if kind != "tensor":
                raise Unsupported(f"non-tensor graph {role} '{value.name}' ({kind})")
            if value.type.tensor_type.elem_type == onnx.TensorProto.STRING:
                raise Unsupported(f"string tensor graph {role} '{value.name}'")
    training = sorted({n.op_type for n in model.graph.node if n.domain == TRAINING_DOMAIN})
    if training:
        raise Unsupported("training op(s): " + ", ".join(training))


def _read_tensor(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


def _numbered(folder, prefix):
    """input_0.pb, input_1.pb, ... in numeric order (input_10 after input_9)."""
    paths = glob.glob(os.path.join(folder, f"{prefix}_*.pb"))
    return sorted(paths, key=lambda p: int(re.search(r"_(\d+)\.pb$", p).group(1)))


def load_data_sets(case_dir, model):
    """[(inputs: {graph input name: array}, outputs: [array])] per test_data_set_N.

    Like ONNX's runner, input_K belongs to graph.input[K] and output_K to graph.output[K].
    Initializers listed as graph inputs (old IR versions) are constants in Kiln, so they are not
    fed."""
    initializers = {init.name for init in model.graph.initializer}
    sets = []
    folders = glob.glob(os.path.join(case_dir, "test_data_set_*"))
    for folder in sorted(folders, key=lambda p: int(p.rsplit("_", 1)[1])):
        inputs = {}
        for k, path in enumerate(_numbered(folder, "input")):
            name = model.graph.input[k].name
            if name not in initializers:
                inputs[name] = _read_tensor(path)
        outputs = [_read_tensor(path) for path in _numbered(folder, "output")]
        sets.append((inputs, outputs))
    return sets


# ---------------------------------------------------------------------------------------------
# Comparison


def max_errors(expected, actual):
    """(max abs error, max rel error) over elements that are not equal; NaN against NaN and
    equal infinities count as equal, as in numpy.testing.assert_allclose."""
    want = np.asarray(expected, dtype=np.float64)
    got = np.asarray(actual, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        differ = ~((want == got) | (np.isnan(want) & np.isnan(got)))
        if not differ.any():
            return 0.0, 0.0
        diff = np.abs(got[differ] - want[differ])
        diff = np.where(np.isnan(diff), np.inf, diff)  # NaN where a number was expected
        rel = diff / np.abs(want[differ])
        rel = np.where(np.isnan(rel), np.inf, rel)  # inf/inf: a wrong infinity
    return float(diff.max()), float(rel.max())


def compare_output(expected, actual, rtol, atol, index=0):
    """(max abs err, max rel err) of one output; raises CaseFailure on a dtype or shape
    mismatch or when numpy.testing.assert_allclose(actual, expected, rtol, atol) would fail
    (ONNX's check: |actual - expected| <= atol + rtol * |expected|, NaNs equal)."""
    actual = np.asarray(actual)
    if actual.dtype != expected.dtype:
        raise CaseFailure(f"output {index}: dtype {actual.dtype}, expected {expected.dtype}")
    if actual.shape != expected.shape:
        raise CaseFailure(f"output {index}: shape {list(actual.shape)}, "
                          f"expected {list(expected.shape)}")
    abs_err, rel_err = max_errors(expected, actual)
    close = np.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    if not close.all():
        bad = int(close.size - np.count_nonzero(close))
        raise CaseFailure(f"output {index}: {bad}/{close.size} elements differ "
                          f"(max abs err {abs_err:.3g}, max rel err {rel_err:.3g}, "
                          f"rtol {rtol:g}, atol {atol:g})", abs_err, rel_err)
    return abs_err, rel_err


def compare_outputs(expected, actual, rtol, atol):
    """(max abs err, max rel err) over all outputs of one data set; CaseFailure when they
    differ in count, dtype, shape or value."""
    actual = list(actual)
    if len(actual) != len(expected):
        raise CaseFailure(f"{len(actual)} outputs, expected {len(expected)}")
    errors = [compare_output(e, a, rtol, atol, i) for i, (e, a) in enumerate(zip(expected, actual))]
    return (max((e[0] for e in errors), default=0.0), max((e[1] for e in errors), default=0.0))


# ---------------------------------------------------------------------------------------------
# Import, with inputs bound as constants or shapes taken from the data where Kiln needs them


def classify_import_error(exc):
    """The exception to raise for a failed import: Unsupported for kiln.NotImplementedError
    (with the ops it lists), CaseError otherwise."""
    import kiln

    if isinstance(exc, kiln.NotImplementedError):
        ops = _UNSUPPORTED_OP.findall(str(exc))
        return Unsupported(", ".join(ops) if ops else first_line(exc), ops)
    return CaseError(first_line(exc))


def _inputs_behind(graph, name, inputs):
    """The graph inputs among ``inputs`` that value ``name`` is computed from, in graph order:
    what to bind when the importer needs a value the model computes from its inputs."""
    producers = {out: node for node in graph.node for out in node.output}
    behind, stack, seen = set(), [name], set()
    while stack:
        value = stack.pop()
        if value in seen:
            continue
        seen.add(value)
        if value in inputs:
            behind.add(value)
        elif value in producers:
            stack.extend(v for v in producers[value].input if v)
    return [i.name for i in graph.input if i.name in behind]


def _needed_binding(exc, inputs, bound, shaped, graph=None):
    """("value"|"shape", [input names]) when ``exc`` asks for a graph input the data provides
    and that is not bound yet, or for a value computed from such inputs (given ``graph``);
    None otherwise."""
    import kiln

    if not isinstance(exc, kiln.ValueError):
        return None
    match = _NEEDS_CONSTANT.search(str(exc))
    if match and match.group(1) in inputs and match.group(1) not in bound:
        return "value", [match.group(1)]
    if match and graph is not None:
        behind = [n for n in _inputs_behind(graph, match.group(1), inputs) if n not in bound]
        if behind:
            return "value", behind
    match = _NEEDS_SHAPE.search(str(exc))
    if match and match.group(1) in inputs and match.group(1) not in shaped:
        return "shape", [match.group(1)]
    return None


def import_model(model_path, inputs, bound=(), shaped=()):
    """(IRModule, bound, shaped): imports the model, binding the inputs in ``bound`` to their
    arrays in ``inputs`` and the shapes of those in ``shaped``, and adding to either whenever
    the importer says it needs one more, or a value computed from some (until it needs none).
    ``values=`` is used only when the importer has it: otherwise "must be a constant" stays an
    error."""
    import kiln
    import kiln.frontend

    from_onnx = kiln.frontend.from_onnx
    bound, shaped = list(bound), list(shaped)
    graph = None
    while True:
        kwargs = {}
        if shaped:
            kwargs["shapes"] = {name: list(inputs[name].shape) for name in shaped}
        if bound:
            kwargs["values"] = {name: inputs[name] for name in bound}
        try:
            return from_onnx(model_path, **kwargs), bound, shaped
        except Exception as exc:  # noqa: BLE001  (every import failure gets a status)
            if graph is None and isinstance(exc, kiln.ValueError):
                import onnx  # only now: most models never need it

                graph = onnx.load(model_path).graph
            need = _needed_binding(exc, inputs, bound, shaped, graph)
            if need is None:
                raise classify_import_error(exc) from None
            (bound if need[0] == "value" else shaped).extend(need[1])


# ---------------------------------------------------------------------------------------------
# Build and run


def build_and_run(mod, inputs, bound):
    """The outputs of ``mod`` on ``inputs`` (bound ones left out); CaseFailure on an error,
    Unsupported where the build says a feature is not implemented."""
    import kiln

    try:
        ex = kiln.build(mod)
    except kiln.NotImplementedError as exc:  # a feature Kiln says it lacks (control flow)
        raise Unsupported("build: " + first_line(exc)) from None
    except Exception as exc:  # noqa: BLE001
        raise CaseFailure("build: " + first_line(exc)) from None
    feed = {name: value for name, value in inputs.items() if name not in bound}
    try:
        return ex.run(**feed)
    except Exception as exc:  # noqa: BLE001
        raise CaseFailure("run: " + first_line(exc)) from None


def run_data_sets(model_path, data_sets, rtol, atol):
    """(max abs err, max rel err, bound, shaped) over every data set. Without bindings the
    model is built once; with them it is rebuilt per data set, as bound values and shapes
    come from that set."""
    mod, bound, shaped = import_model(model_path, data_sets[0][0])
    worst_abs, worst_rel = 0.0, 0.0
    for index, (inputs, expected) in enumerate(data_sets):
        if index > 0 and (bound or shaped):
            mod, bound, shaped = import_model(model_path, inputs, bound, shaped)
        try:
            abs_err, rel_err = compare_outputs(expected, build_and_run(mod, inputs, bound),
                                               rtol, atol)
        except CaseFailure as failure:
            if len(data_sets) > 1:
                failure.args = (f"test_data_set_{index}: {failure.args[0]}",)
            failure.bound, failure.shaped = bound, shaped
            raise
        worst_abs, worst_rel = max(worst_abs, abs_err), max(worst_rel, rel_err)
    return worst_abs, worst_rel, bound, shaped


def _result(status, detail="", max_abs_err=None, max_rel_err=None, bound=(), shaped=(),
            ops=()):
    return {"status": status, "detail": detail, "max_abs_err": max_abs_err,
            "max_rel_err": max_rel_err, "bound_inputs": list(bound),
            "bound_shapes": list(shaped), "unsupported_ops": list(ops)}


def evaluate_case(case_dir):
    """The result dict of one case folder (model.onnx + test_data_set_N/)."""
    model_path = os.path.join(case_dir, "model.onnx")
    try:
        model = onnx.load(model_path)
        check_supported_data(model)
        data_sets = load_data_sets(case_dir, model)
    except Unsupported as exc:
        return _result("unsupported", str(exc), ops=exc.ops)
    except Exception as exc:  # noqa: BLE001
        return _result("error", "test data: " + first_line(exc))
    if not data_sets:
        return _result("error", "no test_data_set_N folder")
    rtol, atol = tolerances(case_dir)
    try:
        abs_err, rel_err, bound, shaped = run_data_sets(model_path, data_sets, rtol, atol)
    except Unsupported as exc:
        return _result("unsupported", str(exc), ops=exc.ops)
    except CaseError as exc:
        return _result("error", str(exc))
    except CaseFailure as exc:
        return _result("fail", str(exc), exc.max_abs_err, exc.max_rel_err, exc.bound,
                       exc.shaped)
    return _result("pass", "", abs_err, rel_err, bound, shaped)

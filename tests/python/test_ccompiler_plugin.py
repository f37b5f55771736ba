"""The ccompiler plugin end to end: its predicates, each supported op built with
plugins=["ccompiler"] against Kiln's CPU path and numpy, a multi-op region with constants and
several outputs, the generated argument checks, an exported model reloaded in a process that has
only the runtime, and C compiler failures as clear Kiln errors."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kiln
from conftest import load_built_plugin
from kiln import transform

RNG = np.random.default_rng(11)


@pytest.fixture(scope="module")
def ccompiler():
    load_built_plugin("ccompiler")
    return kiln.get_global_func("kiln.ext.ccompiler")


def typed(text, constants=()):
    return transform.InferType()(kiln.ir.ParseModule(text, [kiln.tensor(c) for c in constants]))


def shape_text(shape):
    return "(" + ", ".join(str(d) for d in shape) + ")"


def single_call_model(call, shapes):
    params = ", ".join(f"%{name}: Tensor[{shape_text(shape)}, float32]"
                       for name, shape in shapes.items())
    return typed(f"def @main({params}) {{ {call} }}")


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# (call, numpy reference, input shapes); log and sqrt get positive inputs.
UNARY = {
    "negative": ("negative(%x)", np.negative),
    "abs": ("abs(%x)", np.abs),
    "exp": ("exp(%x)", np.exp),
    "log": ("log(%x)", np.log),
    "sqrt": ("sqrt(%x)", np.sqrt),
    "tanh": ("tanh(%x)", np.tanh),
    "sigmoid": ("sigmoid(%x)", sigmoid),
    "nn.relu": ("nn.relu(%x)", lambda x: np.maximum(x, 0)),
    "nn.leaky_relu": ("nn.leaky_relu(%x, alpha=0.25)", lambda x: np.where(x > 0, x, 0.25 * x)),
    "clip": ("clip(%x, a_min=-0.5, a_max=0.75)", lambda x: np.clip(x, -0.5, 0.75)),
}

BINARY = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
}

# Same shapes, a scalar, one operand broadcast, both broadcast (the loop-nest path).
BROADCASTS = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), ()), ((3, 1), (2, 3, 4)), ((2, 1, 4), (3, 1))]


def inputs_for(op, shapes):
    arrays = {}
    for name, shape in shapes.items():
        array = RNG.standard_normal(shape).astype("float32")
        if op in ("log", "sqrt"):
            array = np.abs(array) + 0.1
        if op == "divide" and name == "y":
            array = np.where(np.abs(array) < 0.1, 0.5, array).astype("float32")
        arrays[name] = array
    return arrays


def check_against_cpu_and_numpy(mod, inputs, want, op):
    plugin = kiln.build(mod, plugins=["ccompiler"], report=True)
    assert f"ccompiler {op} x1" in plugin.placement_report, plugin.placement_report
    host = kiln.build(mod)
    (got,) = plugin.run(**inputs)
    (cpu,) = host.run(**inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, cpu, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_op_matches_cpu_path_and_numpy(ccompiler, op):
    call, reference = UNARY[op]
    shapes = {"x": (2, 3, 4)}
    inputs = inputs_for(op, shapes)
    check_against_cpu_and_numpy(single_call_model(call, shapes), inputs,
                                reference(inputs["x"]), op)


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize("lhs,rhs", BROADCASTS)
def test_binary_op_broadcasts_like_numpy(ccompiler, op, lhs, rhs):
    shapes = {"x": lhs, "y": rhs}
    inputs = inputs_for(op, shapes)
    check_against_cpu_and_numpy(single_call_model(f"{op}(%x, %y)", shapes), inputs,
                                BINARY[op](inputs["x"], inputs["y"]), op)


def test_predicates_take_float32_and_say_why_not(ccompiler):
    take = kiln.ir.op_attrs("add")["target.ccompiler"]
    call = typed("""def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(3, 1, 1), float32]) {
                      add(%x, %y) }""")["main"].body
    assert take(call) is True
    call = typed("""def @main(%x: Tensor[(2, 3), float64], %y: Tensor[(3), float64]) {
                      add(%x, %y) }""")["main"].body
    assert take(call) == "argument 0 is float64, not float32"
    assert "target.ccompiler" not in kiln.ir.op_attrs("nn.softmax")
    report = kiln.build(typed("""def @main(%x: Tensor[(2, 3), float64]) { exp(%x) }"""),
                        plugins=["ccompiler"], report=True).placement_report
    assert "exp x1: ccompiler declined (argument 0 is float64, not float32)" in report, report


# One region of several ops: a constant baked in, an intermediate that is also returned to the
# host (the softmax, which nobody takes, reads it), and a broadcast input.
REGION_MODEL = """
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(3), float32]) {
  %0 = add(%x, meta[Constant][0]);
  %1 = nn.relu(%0);
  %2 = multiply(%1, %y);
  %3 = sigmoid(%2);
  %4 = nn.softmax(%1, axis=1);
  %5 = clip(%3, a_min=0.25);
  (%5, %4)
}
"""
BIAS = RNG.standard_normal((3,)).astype("float32")


def region_reference(x, y):
    hidden = np.maximum(x + BIAS, 0)
    exps = np.exp(hidden - hidden.max(axis=1, keepdims=True))
    return np.maximum(sigmoid(hidden * y), 0.25), exps / exps.sum(axis=1, keepdims=True)


def region_inputs():
    return {"x": RNG.standard_normal((2, 3)).astype("float32"),
            "y": RNG.standard_normal((3,)).astype("float32")}


def test_region_of_several_ops_with_a_constant_and_two_outputs(ccompiler):
    mod = typed(REGION_MODEL, [BIAS])
    model = kiln.build(mod, plugins=["ccompiler"], report=True)
    report = model.placement_report
    assert "ccompiler 5 op calls in 1 function(s)" in report, report
    assert "nn.softmax x1: ccompiler: no predicate for this op" in report, report
    inputs = region_inputs()
    for got, want, cpu in zip(model.run(**inputs), region_reference(**inputs),
                              kiln.build(mod).run(**inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got, cpu, rtol=1e-5, atol=1e-6)


PARTITIONED = """
def @kiln_ccompiler_0(%x: Tensor[(2, 3), float32], %y: Tensor[(3), float32])
    attrs={Compiler="ccompiler", Primitive=1, global_symbol="kiln_ccompiler_0"} {
  %0 = subtract(%x, %y);
  (%0, %x, exp(%0))
}
"""


def test_codegen_returns_one_c_source_module_whose_function_checks_its_arguments(ccompiler):
    mod = typed(PARTITIONED)
    (module,) = ccompiler([mod["kiln_ccompiler_0"]], {})
    assert (module.kind, module.functions) == ("c_source", ["kiln_ccompiler_0"])
    x = RNG.standard_normal((2, 3)).astype("float32")
    y = RNG.standard_normal((3,)).astype("float32")
    outs = [kiln.empty((2, 3), "float32") for _ in range(3)]
    module["kiln_ccompiler_0"](kiln.tensor(x), kiln.tensor(y), *outs)
    for got, want in zip(outs, (x - y, x, np.exp(x - y))):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    with pytest.raises(kiln.ValueError, match=r"'kiln_ccompiler_0': input 'y' expects a compact "
                                              r"float32 \(3,\) CPU tensor"):
        module["kiln_ccompiler_0"](kiln.tensor(x), kiln.tensor(x), *outs)
    with pytest.raises(kiln.TypeError, match=r"'kiln_ccompiler_0' takes 5 arguments: 2 inputs, "
                                             r"then 3 outputs"):
        module["kiln_ccompiler_0"](kiln.tensor(x), kiln.tensor(y))


RELOAD = textwrap.dedent(
    """
    import sys
    import numpy as np
    import kiln

    model = kiln.load_module(sys.argv[1])
    data = np.load(sys.argv[2])
    outputs = model.run(x=data["x"], y=data["y"])
    np.savez(sys.argv[3], *outputs)
    maps = open("/proc/self/maps").read()
    assert "/libkiln.so" not in maps, "the compiler was loaded"
    assert "libkiln_ccompiler.so" not in maps, "the compiler plugin was loaded"
    """
)


def test_exported_model_runs_in_a_process_with_only_the_runtime(ccompiler, tmp_path):
    model = kiln.build(typed(REGION_MODEL, [BIAS]), plugins=["ccompiler"])
    artifact = tmp_path / "model.so"
    model.export_library(artifact)
    inputs = region_inputs()
    np.savez(tmp_path / "inputs.npz", **inputs)
    (tmp_path / "reload.py").write_text(RELOAD)
    env = {k: v for k, v in os.environ.items() if k not in ("KILN_PLUGIN_PATH", "CC")}
    env["CC"] = "false"  # the artifact holds compiled code: nothing is compiled on reload
    run = subprocess.run(
        [sys.executable, str(tmp_path / "reload.py"), str(artifact), str(tmp_path / "inputs.npz"),
         str(tmp_path / "outputs.npz")], capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    outputs = np.load(tmp_path / "outputs.npz")
    for i, want in enumerate(region_reference(**inputs)):
        np.testing.assert_allclose(outputs[f"arr_{i}"], want, rtol=1e-5, atol=1e-6)


def test_failing_c_compiler_is_a_kiln_error_and_leaves_no_files(ccompiler, tmp_path,
                                                                 monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("CC", "false")
    with pytest.raises(kiln.RuntimeError) as info:
        kiln.build(typed(REGION_MODEL, [BIAS]), plugins=["ccompiler"])
    message = str(info.value)
    assert "c_source module (kiln_ccompiler_0)" in message, message
    assert "the C compiler 'false' failed: `false -shared" in message, message
    monkeypatch.delenv("CC")
    model = kiln.build(typed(REGION_MODEL, [BIAS]), plugins=["ccompiler"])
    model.run(**region_inputs())
    assert os.listdir(tmp_path) == []  # the temporary sources and library are gone


def test_c_compile_error_shows_the_compiler_log(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    module = kiln.runtime.CSourceModuleCreate("int f(void) { return undeclared; }", ["f"])
    with pytest.raises(kiln.RuntimeError) as info:
        module["f"]
    message = str(info.value)
    assert "c_source module (f): the C compiler" in message, message
    assert "undeclared" in message and "error" in message, message
    assert os.listdir(tmp_path) == []

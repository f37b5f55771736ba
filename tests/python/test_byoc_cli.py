"""BYOC as a user drives it: `kilnc compile --plugins blas --report [--no-fallback]`,
`kilnc inspect --plugins blas --dot` rendered by Graphviz, `kilnc run` of the artifact with
only the runtime, and `kiln.build(..., plugins=, report=True)`. The blas plugin stands in for
any plugin: it takes the matrix products, so the rest must fall back to the CPU path."""

import os
import shutil
import subprocess

import numpy as np
import pytest

import kiln

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

KILNC = os.environ.get("KILN_KILNC") or shutil.which("kilnc")
BLAS = os.environ.get("KILN_BLAS_PLUGIN")

pytestmark = [
    pytest.mark.skipif(KILNC is None, reason="kilnc not built (KILN_KILNC unset, not on PATH)"),
    pytest.mark.skipif(BLAS is None, reason="the blas plugin was not built (no OpenBLAS)"),
]

RNG = np.random.default_rng(0)
WEIGHT = RNG.standard_normal((16, 8)).astype(np.float32)


@pytest.fixture
def model_path(tmp_path):
    """x (2, 16) -> MatMul (16, 8) -> Relu -> Softmax."""
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Softmax", ["r"], ["y"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
        [numpy_helper.from_array(WEIGHT, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path / "mlp.onnx"
    onnx.save(model, path)
    return path


def expected(x):
    h = np.maximum(x @ WEIGHT, 0)
    e = np.exp(h - h.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def kilnc(*args, plugin_path=True):
    env = dict(os.environ)
    env.pop("KILN_PLUGIN_PATH", None)
    if plugin_path:
        env["KILN_PLUGIN_PATH"] = os.path.dirname(BLAS)
    return subprocess.run([KILNC, *map(str, args)], capture_output=True, text=True, env=env)


def test_compile_report_then_run_with_the_runtime_alone(model_path, tmp_path):
    artifact = tmp_path / "mlp.so"
    compiled = kilnc("compile", model_path, "-o", artifact, "--plugins", "blas", "--report")
    assert compiled.returncode == 0, compiled.stderr
    report = compiled.stdout
    assert "among [blas]" in report
    assert "1 op calls in 1 function(s)" in report  # the product, on blas
    assert "nn.softmax" in report and "blas: no predicate" in report  # and why the rest is not

    x = RNG.standard_normal((2, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "out"
    # No KILN_PLUGIN_PATH: the artifact finds libkiln_runtime_blas.so next to the runtime.
    ran = kilnc("run", artifact, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", out,
                plugin_path=False)
    assert ran.returncode == 0, ran.stderr
    np.testing.assert_allclose(np.load(out / "output_0.npy"), expected(x), rtol=1e-5, atol=1e-6)


def test_no_fallback_fails_after_the_report_names_the_host_ops(model_path, tmp_path):
    artifact = tmp_path / "mlp.so"
    compiled = kilnc("compile", model_path, "-o", artifact, "--plugins", "blas", "--report",
                     "--no-fallback")
    assert compiled.returncode == 1
    assert "fallback is disabled" in compiled.stderr
    assert "nn.softmax" in compiled.stderr and "nn.relu" in compiled.stderr
    assert "left on the host, and why" in compiled.stdout
    assert not artifact.exists()


def test_unknown_plugin_names_the_library_to_install(model_path, tmp_path):
    compiled = kilnc("compile", model_path, "-o", tmp_path / "m.so", "--plugins", "no_such_zz")
    assert compiled.returncode == 1
    assert "libkiln_no_such_zz.so" in compiled.stderr


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed (graphviz)")
def test_inspect_dot_renders_with_graphviz(model_path, tmp_path):
    dot_file = tmp_path / "mlp.dot"
    inspected = kilnc("inspect", model_path, "--plugins", "blas", "--dot", dot_file)
    assert inspected.returncode == 0, inspected.stderr
    assert "among [blas]" in inspected.stdout
    svg = tmp_path / "mlp.svg"
    rendered = subprocess.run(["dot", "-Tsvg", dot_file, "-o", svg], capture_output=True,
                              text=True)
    assert rendered.returncode == 0, rendered.stderr
    text = svg.read_text()
    assert "kiln_blas_0" in text and "host (Kiln CPU)" in text


def test_python_build_prints_and_keeps_the_report(model_path, capsys):
    kiln.load_plugin(BLAS)
    mod = kiln.frontend.from_onnx(str(model_path))
    executable = kiln.build(mod, plugins=["blas"], report=True)
    printed = capsys.readouterr().out
    assert "among [blas]" in printed
    assert executable.placement_report == printed
    x = RNG.standard_normal((2, 16)).astype(np.float32)
    np.testing.assert_allclose(executable.run(x=x)[0], expected(x), rtol=1e-5, atol=1e-6)

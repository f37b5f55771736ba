"""The whole extension at once (issue 7): an ONNX model with a convolution for dnnl, a Swish of
the custom domain com.example.my_ext (the plugin's converter makes my_ext.swish, which runs on
the plugin's CPU kernel), an x * sigmoid(x) that the plugin's pass FuseSwish turns into
my_ext.swish, and an Add + Relu for the plugin's codegen. Built, checked against numpy and the
placement report, exported, and reloaded in a process that has only Kiln's runtime."""

import os
import subprocess
import sys
import textwrap
from collections import Counter

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import kiln
from conftest import placement
from kiln import transform

RNG = np.random.default_rng(2026)
DOMAIN = "com.example.my_ext"
BETA = 1.5
W1, W2 = (RNG.standard_normal((4, 3, 3, 3)).astype("float32") * 0.5 for _ in range(2))
B1, B2 = (RNG.standard_normal(4).astype("float32") for _ in range(2))


def onnx_model():
    """x -> Conv -> Swish(beta)  ─┐
       x -> Conv -> x*Sigmoid(x) ─┴-> Add -> Relu"""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Swish", ["c1"], ["s1"], domain=DOMAIN, beta=BETA),
        helper.make_node("Conv", ["x", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Sigmoid", ["c2"], ["g2"]),
        helper.make_node("Mul", ["c2", "g2"], ["s2"]),
        helper.make_node("Add", ["s1", "s2"], ["a"]),
        helper.make_node("Relu", ["a"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "combined",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 4, 8, 8])],
        [numpy_helper.from_array(a, n) for a, n in ((W1, "w1"), (B1, "b1"), (W2, "w2"), (B2, "b2"))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                   helper.make_opsetid(DOMAIN, 1)])


def numpy_conv(x, w, b):
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    return np.einsum("nchwij,ocij->nohw", windows, w) + b.reshape(1, -1, 1, 1)


def numpy_reference(x):
    x = x.astype("float64")
    c1, c2 = numpy_conv(x, W1, B1), numpy_conv(x, W2, B2)
    return np.maximum(c1 / (1 + np.exp(-BETA * c1)) + c2 / (1 + np.exp(-c2)), 0)


def imported(my_ext):
    """The ONNX model in Kiln's IR, with FuseSwish run before the default pipeline: kiln.build
    takes a whole pipeline or none, so a pass of one's own runs on the module first."""
    mod = kiln.frontend.from_onnx(onnx_model())
    return transform.Sequential([transform.InferType(), my_ext.transform.FuseSwish()])(mod)


def ops_by_target(report):
    """{(target, op): count}, patterns folded in."""
    counts = Counter()
    for (target, op, _), count in placement(report).items():
        counts[target, op] += count
    return dict(counts)


RELOAD = textwrap.dedent(
    """
    import sys
    import numpy as np
    import kiln

    (y,) = kiln.load_module(sys.argv[1]).run(x=np.load(sys.argv[2]))
    np.save(sys.argv[3], y)
    maps = open("/proc/self/maps").read()
    assert "/libkiln.so" not in maps, "the compiler was loaded"
    assert "libkiln_my_ext.so" not in maps, "the plugin's compiler side was loaded"
    for runtime in sys.argv[4:]:
        assert runtime in maps, runtime + " was not loaded"
    """
)


def reload_in_fresh_process(tmp_path, model, x, runtimes):
    """Exports `model`, runs it in a new interpreter that imports kiln's runtime only, and
    returns its output."""
    artifact = tmp_path / "combined.so"
    model.export_library(artifact)
    np.save(tmp_path / "x.npy", x)
    (tmp_path / "reload.py").write_text(RELOAD)
    # No compiler plugin may be found; the runtime sides are, on KILN_RUNTIME_PATH.
    env = {k: v for k, v in os.environ.items() if k != "KILN_PLUGIN_PATH"}
    run = subprocess.run(
        [sys.executable, str(tmp_path / "reload.py"), str(artifact), str(tmp_path / "x.npy"),
         str(tmp_path / "y.npy"), *runtimes], capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    return np.load(tmp_path / "y.npy")


def dnnl_installed():
    path = os.path.join(os.environ["KILN_INSTALLED_PLUGINS"], "libkiln_dnnl.so")
    return os.path.exists(path), path


def test_fuse_swish_leaves_no_sigmoid(my_ext):
    text = kiln.ir.AsText(imported(my_ext))
    assert text.count("my_ext.swish(") == 2, text
    assert "beta=1.5" in text, text
    assert "sigmoid" not in text and "multiply" not in text, text


def test_with_dnnl_exported_and_reloaded(my_ext, tmp_path):
    found, path = dnnl_installed()
    if not found:
        pytest.skip(f"Kiln was installed without the dnnl plugin ({path} is missing)")
    model = kiln.build(imported(my_ext), plugins=["dnnl", "my_ext"], report=True)
    assert ops_by_target(model.placement_report) == {
        ("dnnl", "nn.conv2d"): 2, ("dnnl", "add"): 2,   # each convolution with its bias
        ("my_ext", "add"): 1, ("my_ext", "nn.relu"): 1,  # my_ext.add_relu
        ("host", "my_ext.swish"): 2,
    }, model.placement_report
    assert ("my_ext", "nn.relu", "my_ext.add_relu") in placement(model.placement_report)

    x = RNG.standard_normal((1, 3, 8, 8)).astype("float32")
    (y,) = model.run(x=x)
    np.testing.assert_allclose(y, numpy_reference(x), rtol=1e-4, atol=1e-4)
    reloaded = reload_in_fresh_process(
        tmp_path, model, x, ["libkiln_runtime_my_ext.so", "libkiln_runtime_dnnl.so"])
    np.testing.assert_array_equal(reloaded, y)


def test_without_dnnl_exported_and_reloaded(my_ext, tmp_path):
    # The same model with my_ext alone: the convolutions run on Kiln's CPU path.
    model = kiln.build(imported(my_ext), plugins=["my_ext"], report=True)
    counts = ops_by_target(model.placement_report)
    assert counts[("host", "nn.conv2d")] == 2 and counts[("host", "my_ext.swish")] == 2, counts
    assert counts[("my_ext", "nn.relu")] == 1, counts
    x = RNG.standard_normal((1, 3, 8, 8)).astype("float32")
    (y,) = model.run(x=x)
    np.testing.assert_allclose(y, numpy_reference(x), rtol=1e-4, atol=1e-4)
    reloaded = reload_in_fresh_process(tmp_path, model, x, ["libkiln_runtime_my_ext.so"])
    np.testing.assert_array_equal(reloaded, y)

"""The converter of the ONNX custom-domain op com.example.my_ext::Swish: what it imports to, the
numbers against numpy, and the errors a user meets without the plugin or with a newer opset."""

import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import helper

import kiln
from conftest import PLUGIN

DOMAIN = "com.example.my_ext"
RNG = np.random.default_rng(3)


def swish_model(domain_opset=1, **attrs):
    node = helper.make_node("Swish", ["x"], ["y"], domain=DOMAIN, name="my_swish", **attrs)
    graph = helper.make_graph(
        [node], "swish",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 5])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 5])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                   helper.make_opsetid(DOMAIN, domain_opset)])


@pytest.mark.parametrize("attrs, beta", [({"beta": 0.25}, 0.25), ({}, 1.0)])
def test_imports_as_my_ext_swish_and_matches_numpy(my_ext, attrs, beta):
    mod = kiln.frontend.from_onnx(swish_model(**attrs))
    call = mod["main"].body
    assert call.op.name == "my_ext.swish" and call.attrs["beta"] == beta, mod
    x = (RNG.standard_normal((2, 5)) * 3).astype("float32")
    (y,) = kiln.build(mod).run(x=x)
    np.testing.assert_allclose(y, x / (1 + np.exp(-beta * x.astype("float64"))), rtol=1e-6,
                               atol=1e-6)


def test_a_newer_domain_opset_is_refused_naming_the_node(my_ext):
    with pytest.raises(kiln.NotImplementedError, match=r"(?s)opset 2 is newer.*node 'my_swish'"):
        kiln.frontend.from_onnx(swish_model(domain_opset=2))


def test_without_the_plugin_the_error_names_the_converter(tmp_path):
    # A fresh interpreter that never loads the plugin (nor finds it on KILN_PLUGIN_PATH).
    path = tmp_path / "swish.onnx"
    onnx.save(swish_model(), str(path))
    env = {k: v for k, v in os.environ.items() if k != "KILN_PLUGIN_PATH"}
    code = f"import kiln, kiln.frontend\nkiln.frontend.from_onnx({str(path)!r})\n"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120, check=False)
    assert run.returncode != 0
    assert "com.example.my_ext.Swish" in run.stderr, run.stderr
    assert "frontend.onnx.convert.com.example.my_ext.Swish" in run.stderr, run.stderr
    assert PLUGIN  # the plugin exists: only its absence from the process is tested

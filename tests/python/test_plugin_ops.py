"""A plugin op end to end (tests/plugins/ext_op): imported from ONNX by the plugin's C++
converter, fused by FuseOps, run by the kernel its runtime library registers, folded by
FoldConstant through CpuKernelOf, exported, and run again in a process with only Kiln's
runtime, which loads libkiln_runtime_ext_op.so from the kernel's namespace on its own."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kiln

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import kiln.frontend  # noqa: E402
from kiln import ir, transform  # noqa: E402

F32 = TensorProto.FLOAT
ALPHA = 0.75
BIAS = np.array([0.5, -1.0, 0.25, 2.0], "float32")


def env_path(variable):
    path = os.environ.get(variable)
    if not path:
        pytest.fail(f"{variable} is not set; run through ctest (tests/python/CMakeLists.txt)",
                    pytrace=False)
    return path


@pytest.fixture
def ext_op(monkeypatch):
    """The compiler half loaded; the runtime half's folder on the backend search path, so that
    the compiler finds the kernel as a runtime-only process will."""
    kiln.load_plugin(env_path("KILN_EXT_OP_PLUGIN"))
    monkeypatch.setenv("KILN_RUNTIME_PATH", os.path.dirname(env_path("KILN_EXT_OP_RUNTIME")))


def reference(x):
    swish = x / (1.0 + np.exp(-ALPHA * x))
    return np.maximum(swish + BIAS, 0.0)


def swish_model():
    """y = relu(com.kiln.ext_op.Swish(x, alpha) + bias)."""
    graph = helper.make_graph(
        [
            helper.make_node("Swish", ["x"], ["s"], name="swish_0", domain="com.kiln.ext_op",
                             alpha=ALPHA),
            helper.make_node("Add", ["s", "bias"], ["a"]),
            helper.make_node("Relu", ["a"], ["y"]),
        ],
        "ext_op",
        [helper.make_tensor_value_info("x", F32, [2, 4])],
        [helper.make_tensor_value_info("y", F32, [2, 4])],
        [numpy_helper.from_array(BIAS, "bias")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                   helper.make_opsetid("com.kiln.ext_op", 1)])


def kernel_programs(module):
    """The descriptions (parsed) of every kernel_program module under ``module``."""
    describe = kiln.get_global_func("runtime.KernelProgramDescription")
    found, pending = [], [module]
    while pending:
        current = pending.pop()
        if current.kind == "kernel_program":
            found.append(json.loads(describe(current)))
        pending.extend(current.imports)
    return found


def test_plugin_op_is_converted_fused_and_run(ext_op):
    mod = kiln.frontend.from_onnx(swish_model())
    ex = kiln.build(mod)
    (program,) = kernel_programs(ex.module)
    steps = [[step.get("kernel") for step in f["steps"]] for f in program["functions"]]
    assert ["ext_op.swish", "add", "nn.relu"] in steps, steps
    x = np.linspace(-4, 4, 8, dtype="float32").reshape(2, 4)
    (y,) = ex.run(x=x)
    np.testing.assert_allclose(y, reference(x), rtol=1e-5, atol=1e-6)


def test_plugin_op_folds_through_its_kernel(ext_op):
    x = np.array([-1.0, 0.0, 2.0], "float32")
    body = ir.Call("ext_op.swish", [ir.Constant(x)], {"alpha": ALPHA})
    mod = ir.IRModule({"main": ir.Function([], body)})
    folded = transform.Sequential([transform.InferType(), transform.FoldConstant()])(mod)
    result = folded["main"].body
    assert result.type_key == "kiln.ir.Constant"
    np.testing.assert_allclose(result.data.numpy(), x / (1.0 + np.exp(-ALPHA * x)), rtol=1e-6)


RUN_EXPORTED = textwrap.dedent(
    """
    import os
    import sys
    import numpy as np
    import kiln

    if sys.argv[4] == "after_discovery":
        # Backend discovery (which loads every libkiln_runtime_*.so it finds) is over before the
        # folder is on the path: only the kernel program's own lookup can find the library.
        runtime_path = os.environ.pop("KILN_RUNTIME_PATH")
        kiln.runtime.backends()
        os.environ["KILN_RUNTIME_PATH"] = runtime_path
    ex = kiln.load_module(sys.argv[1])
    np.save(sys.argv[3], ex.run(x=np.load(sys.argv[2]))[0])
    maps = open("/proc/self/maps").read()
    assert "/libkiln.so" not in maps, "the compiler was loaded"
    assert "libkiln_ext_op.so" not in maps, "the plugin's compiler half was loaded"
    assert "libkiln_runtime_ext_op.so" in maps
    """
)


def run_exported(tmp_path, artifact, x, runtime_path, when="from_start"):
    script = tmp_path / "run.py"
    script.write_text(RUN_EXPORTED)
    np.save(tmp_path / "x.npy", x)
    env = {k: v for k, v in os.environ.items()
           if k not in ("KILN_PLUGIN_PATH", "KILN_RUNTIME_PATH")}
    if runtime_path is not None:
        env["KILN_RUNTIME_PATH"] = runtime_path
    return subprocess.run(
        [sys.executable, str(script), str(artifact), str(tmp_path / "x.npy"),
         str(tmp_path / "y.npy"), when],
        capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize("when", ["from_start", "after_discovery"])
def test_exported_model_loads_the_kernel_library_in_a_runtime_only_process(ext_op, tmp_path, when):
    artifact = tmp_path / "swish.so"
    kiln.build(kiln.frontend.from_onnx(swish_model())).export_library(artifact)
    x = np.linspace(-3, 5, 8, dtype="float32").reshape(2, 4)
    result = run_exported(tmp_path, artifact, x, os.environ["KILN_RUNTIME_PATH"], when)
    assert result.returncode == 0, result.stderr
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), reference(x), rtol=1e-5, atol=1e-6)


def test_missing_kernel_library_is_named_with_where_it_was_looked_for(ext_op, tmp_path):
    artifact = tmp_path / "swish.so"
    kiln.build(kiln.frontend.from_onnx(swish_model())).export_library(artifact)
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_exported(tmp_path, artifact, np.zeros((2, 4), "float32"), str(empty))
    assert result.returncode != 0
    expected = "kernel.cpu.ext_op.swish: libkiln_runtime_ext_op.so was not found (searched"
    assert expected in result.stderr
    assert str(empty) in result.stderr

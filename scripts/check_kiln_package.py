"""Checks a Kiln installation from Python, as a user of it: everything Kiln loads comes from ROOT
(the package, libkiln_ffi.so, every compiler plugin and runtime backend), the plugins load, and a
small ONNX model builds, runs (on Kiln's CPU path and through dnnl) and round-trips through
export_library, matching numpy. Used by scripts/check_relocatable.sh (ROOT: a copy of an
installed prefix) and scripts/check_wheels.sh (ROOT: a venv, with --my-ext).

    python3 scripts/check_kiln_package.py ROOT WORK_DIR [--my-ext]

--my-ext also imports the my_ext package (examples/extension/python), calls its functions, runs
its pass, and builds a model with its op (whose kernel is in the runtime side the wheel ships) and
its codegen, which runs, exports and reloads in a process that never imports my_ext. Prints one line per check; exits non-zero at the first failure.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper

import kiln
import kiln.frontend
import kiln.transform


def check_under(root, what, path):
    real = os.path.realpath(path)
    assert real.startswith(root + os.sep), f"{what} is {real}, not under {root}"


def check_locations(root):
    check_under(root, "kiln.__file__", kiln.__file__)
    check_under(root, "libkiln_ffi.so", kiln._ffi.library_path())
    kiln.discover_plugins()  # loads what import did not (a no-op for what it did)
    plugins = kiln.plugins()
    assert plugins, "no compiler plugin was discovered"
    for info in plugins:
        check_under(root, f"plugin {info['name']}", info["path"])
        assert info["status"] == "loaded", (
            f"plugin {info['path']}: {info['status']}: {info['reason']}")
    backends = kiln.runtime.backends()
    for info in backends:
        check_under(root, f"backend {info['name']}", info["path"])
    print(f"ok: kiln, libkiln_ffi.so, plugins {sorted(p['name'] for p in plugins)} and backends "
          f"{sorted(b['name'] for b in backends)} all load from {root}")


def make_mlp(path, rng):
    """x (2, 8) -> MatMul, Add, Relu, MatMul, Add, Softmax; returns the numpy reference function."""
    def normal(*shape):
        return rng.standard_normal(shape).astype("float32")

    w1, b1, w2, b2 = normal(8, 16), normal(16), normal(16, 4), normal(4)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"]),
        helper.make_node("Add", ["h0", "b1"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["h2"]),
        helper.make_node("MatMul", ["h2", "w2"], ["h3"]),
        helper.make_node("Add", ["h3", "b2"], ["h4"]),
        helper.make_node("Softmax", ["h4"], ["y"], axis=-1),
    ]
    params = {"w1": w1, "b1": b1, "w2": w2, "b2": b2}
    inits = [numpy_helper.from_array(array, name) for name, array in params.items()]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 4])],
        inits,
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)

    def reference(x):
        logits = np.maximum(x @ w1 + b1, 0) @ w2 + b2
        e = np.exp(logits - logits.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    return reference


def check_model(work_dir):
    rng = np.random.default_rng(7)
    path = os.path.join(work_dir, "mlp.onnx")
    reference = make_mlp(path, rng)
    x = rng.standard_normal((2, 8)).astype("float32")
    expected = reference(x)
    for plugins in ([], ["dnnl"]):
        ex = kiln.build(kiln.frontend.from_onnx(path), plugins=plugins, fallback=not plugins)
        (y,) = ex.run(x=x)
        np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)
        exported = os.path.join(work_dir, f"mlp{'_' + plugins[0] if plugins else ''}.so")
        ex.export_library(exported)
        (y,) = kiln.load_module(exported).run(x=x)
        np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)
        print(f"ok: an ONNX MLP built with plugins={plugins}, run, exported and reloaded "
              "matches numpy")


def check_my_ext(root):
    import my_ext  # after kiln: the other order is tested by my_ext's own pytest

    check_under(root, "my_ext", my_ext.__file__)
    check_under(root, "libkiln_my_ext.so", my_ext.plugin_info["path"])
    assert my_ext.add_one(41) == 42
    assert my_ext.greet("wheel") == "Hello, wheel!"
    mod = kiln.ir.ParseModule("def @main(%x: Tensor[(4), float32]) {\n"
                              "  %0 = my_ext.identity(%x);\n  %0\n}\n", [])
    out = kiln.transform.Sequential([my_ext.transform.RemoveIdentity()])(mod)
    assert "my_ext.identity" in kiln.ir.AsText(mod) and "my_ext.identity" not in kiln.ir.AsText(out)
    print(f"ok: my_ext from {os.path.dirname(my_ext.__file__)}: add_one, greet and "
          "transform.RemoveIdentity work")
    check_my_ext_model(root, os.path.dirname(my_ext.__file__))


RELOAD_WITHOUT_MY_EXT = """
import sys
import numpy as np
import kiln
(y,) = kiln.load_module(sys.argv[1]).run(x=np.load(sys.argv[2]))
np.save(sys.argv[3], y)
maps = open("/proc/self/maps").read()
assert "libkiln_my_ext.so" not in maps and "/libkiln.so" not in maps, "the compiler was loaded"
print([line.split()[-1] for line in maps.splitlines() if "libkiln_runtime_my_ext.so" in line][0])
"""


def check_my_ext_model(root, package_dir):
    """relu(add(swish(x), x)): swish on the host (the plugin's kernel), add + relu on my_ext."""
    mod = kiln.ir.ParseModule("def @main(%x: Tensor[(2, 8), float32]) {\n"
                              "  %0 = my_ext.swish(%x, beta=2.0);\n"
                              "  %1 = add(%0, %x);\n  nn.relu(%1)\n}\n", [])
    model = kiln.build(mod, plugins=["my_ext"], report=True)
    assert "my_ext    nn.relu x1  in pattern my_ext.add_relu" in model.placement_report, (
        model.placement_report)
    x = np.random.default_rng(3).standard_normal((2, 8)).astype("float32")
    expected = np.maximum(x / (1 + np.exp(-2 * x)) + x, 0)
    (y,) = model.run(x=x)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)
    with tempfile.TemporaryDirectory() as work:
        artifact, x_path, y_path = (os.path.join(work, f) for f in ("m.so", "x.npy", "y.npy"))
        model.export_library(artifact)
        np.save(x_path, x)
        # A process that does not import my_ext finds the runtime side by KILN_RUNTIME_PATH.
        env = dict(os.environ, KILN_RUNTIME_PATH=package_dir)
        run = subprocess.run([sys.executable, "-c", RELOAD_WITHOUT_MY_EXT, artifact, x_path,
                              y_path], capture_output=True, text=True, env=env, check=False)
        assert run.returncode == 0, run.stderr
        check_under(root, "libkiln_runtime_my_ext.so", run.stdout.strip())
        np.testing.assert_array_equal(np.load(y_path), y)
    print("ok: a model with my_ext.swish and the my_ext codegen runs, and reloads without my_ext "
          "imported, its runtime side from the wheel")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root")
    parser.add_argument("work_dir")
    parser.add_argument("--my-ext", action="store_true")
    args = parser.parse_args()
    root = os.path.realpath(args.root)
    check_locations(root)
    check_model(args.work_dir)
    if args.my_ext:
        check_my_ext(root)


if __name__ == "__main__":
    main()

"""The blas plugin end to end: its predicates, its codegen over hand-written partitioned
functions checked against numpy, and an exported artifact reloaded in a process that has only
the runtime (no compiler), with a clear error when libkiln_runtime_blas.so is missing."""

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kiln
from conftest import load_built_plugin
from kiln import transform

RNG = np.random.default_rng(7)


@pytest.fixture(scope="module")
def blas():
    load_built_plugin("blas")
    return kiln.get_global_func("kiln.ext.blas")


def typed(text, constants=()):
    return transform.InferType()(kiln.ir.ParseModule(text, [kiln.tensor(c) for c in constants]))


def predicate(op_name, text):
    """What target.blas says about the one call that is @main's body."""
    call = typed(text)["main"].body
    return kiln.ir.op_attrs(op_name)["target.blas"](call)


def test_predicates_take_float32_products_and_say_why_not(blas):
    assert predicate("nn.dense", """
        def @main(%x: Tensor[(5, 2, 3), float32], %w: Tensor[(4, 3), float32]) {
          nn.dense(%x, %w) }""") is True
    assert predicate("nn.dense", """
        def @main(%x: Tensor[(2, 3), float64], %w: Tensor[(4, 3), float64]) {
          nn.dense(%x, %w) }""") == "argument 0 is float64, not float32"
    assert predicate("matmul", """
        def @main(%x: Tensor[(3), float32], %w: Tensor[(3, 4), float32]) {
          matmul(%x, %w) }""") == "a 1-D operand"
    assert predicate("matmul", """
        def @main(%x: Tensor[(2, 5, 3), float32], %w: Tensor[(1, 3, 4), float32]) {
          matmul(%x, %w) }""") == "broadcast batch dimensions"
    assert predicate("nn.batch_matmul", """
        def @main(%x: Tensor[(1, 3, 5), float32], %w: Tensor[(2, 4, 3), float32]) {
          nn.batch_matmul(%x, %w, transpose_a=true, transpose_b=true) }""") is True


# Two regions as PartitionGraph makes them: attributes, a constant inside the body, a tuple of
# results. The first chains dense -> matmul and returns an intermediate value too.
REGIONS = """
def @kiln_blas_0(%x: Tensor[(2, 5, 3), float32], %m: Tensor[(4, 6), float32])
    attrs={Compiler="blas", Primitive=1, global_symbol="kiln_blas_0"} {
  %0 = nn.dense(%x, meta[Constant][0]);
  %1 = matmul(%0, %m);
  (%1, %0)
}
def @kiln_blas_1(%a: Tensor[(1, 3, 5), float32], %b: Tensor[(2, 4, 3), float32])
    attrs={Compiler="blas", Primitive=1, global_symbol="kiln_blas_1"} {
  %0 = nn.batch_matmul(%a, %b, transpose_a=true, transpose_b=true);
  matmul(%0, meta[Constant][1])
}
"""


def compile_regions(blas):
    w = RNG.standard_normal((4, 3)).astype("float32")
    k = RNG.standard_normal((4, 7)).astype("float32")
    mod = typed(REGIONS, [w, k])
    modules = blas([mod["kiln_blas_0"], mod["kiln_blas_1"]], {})
    return modules, w, k


def make_inputs():
    return {name: RNG.standard_normal(shape).astype("float32")
            for name, shape in [("x", (2, 5, 3)), ("m", (4, 6)), ("a", (1, 3, 5)),
                                ("b", (2, 4, 3))]}


def expected(inputs, w, k):
    dense = inputs["x"] @ w.T
    batch = np.swapaxes(inputs["a"], 1, 2) @ np.swapaxes(inputs["b"], 1, 2)
    return dense @ inputs["m"], dense, batch @ k


def run_regions(module, inputs):
    """Calls both regions through `module` (and its imports) as the graph executor would."""
    y0 = kiln.empty((2, 5, 6), "float32")
    y1 = kiln.empty((2, 5, 4), "float32")
    y2 = kiln.empty((2, 5, 7), "float32")
    module["kiln_blas_0"](kiln.tensor(inputs["x"]), kiln.tensor(inputs["m"]), y0, y1)
    module["kiln_blas_1"](kiln.tensor(inputs["a"]), kiln.tensor(inputs["b"]), y2)
    return y0.numpy(), y1.numpy(), y2.numpy()


def test_codegen_makes_one_module_per_region_matching_numpy(blas):
    modules, w, k = compile_regions(blas)
    assert [(m.kind, m.functions) for m in modules] == [
        ("blas_json", ["kiln_blas_0"]), ("blas_json", ["kiln_blas_1"])]
    root = modules[0]
    root.import_module(modules[1])
    inputs = make_inputs()
    for got, want in zip(run_regions(root, inputs), expected(inputs, w, k)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_matmul_over_equal_batch_dimensions_runs_one_gemm_per_matrix(blas):
    mod = typed("""
        def @r(%a: Tensor[(2, 3, 4, 5), float32], %b: Tensor[(2, 3, 5, 6), float32])
            attrs={Compiler="blas", Primitive=1, global_symbol="kiln_blas_7"} {
          matmul(%a, %b)
        }""")
    (module,) = blas([mod["r"]], {})
    a = RNG.standard_normal((2, 3, 4, 5)).astype("float32")
    b = RNG.standard_normal((2, 3, 5, 6)).astype("float32")
    out = kiln.empty((2, 3, 4, 6), "float32")
    module["kiln_blas_7"](kiln.tensor(a), kiln.tensor(b), out)
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-5, atol=1e-6)


def test_wrong_input_shape_is_named(blas):
    modules, _, _ = compile_regions(blas)
    with pytest.raises(kiln.ValueError, match=r"'kiln_blas_0': input 'm' expects a compact "
                                              r"\(4, 6\) float32, got \(6, 4\) float32"):
        modules[0]["kiln_blas_0"](kiln.tensor(np.zeros((2, 5, 3), "float32")),
                                  kiln.tensor(np.zeros((6, 4), "float32")),
                                  kiln.empty((2, 5, 6), "float32"), kiln.empty((2, 5, 4), "float32"))


RELOAD = textwrap.dedent(
    """
    import sys
    import numpy as np
    import kiln

    module = kiln.load_module(sys.argv[1])
    data = np.load(sys.argv[2])
    for name in ("kiln_blas_0", "kiln_blas_1"):
        assert name in module, name
    x, m, a, b = (kiln.tensor(data[n]) for n in ("x", "m", "a", "b"))
    y0 = kiln.empty((2, 5, 6), "float32")
    y1 = kiln.empty((2, 5, 4), "float32")
    y2 = kiln.empty((2, 5, 7), "float32")
    module["kiln_blas_0"](x, m, y0, y1)
    module["kiln_blas_1"](a, b, y2)
    np.savez(sys.argv[3], y0=y0.numpy(), y1=y1.numpy(), y2=y2.numpy())
    maps = open("/proc/self/maps").read()
    assert "/libkiln.so" not in maps, "the compiler was loaded"
    assert "libkiln_runtime_blas.so" in maps
    """
)


def reload(tmp_path, artifact, inputs, env_update=None):
    script = tmp_path / "reload.py"
    script.write_text(RELOAD)
    np.savez(tmp_path / "inputs.npz", **inputs)
    env = {k: v for k, v in os.environ.items() if k not in ("KILN_PLUGIN_PATH", "KILN_RUNTIME_PATH")}
    env.update(env_update or {})
    return subprocess.run(
        [sys.executable, str(script), str(artifact), str(tmp_path / "inputs.npz"),
         str(tmp_path / "outputs.npz")],
        capture_output=True, text=True, timeout=120, env=env)


def export(blas, tmp_path):
    modules, w, k = compile_regions(blas)
    root = modules[0]
    root.import_module(modules[1])
    artifact = tmp_path / "regions.so"
    root.export_library(str(artifact))
    return artifact, w, k


def test_exported_regions_run_in_a_process_without_the_compiler(blas, tmp_path):
    artifact, w, k = export(blas, tmp_path)
    inputs = make_inputs()
    run = reload(tmp_path, artifact, inputs)
    assert run.returncode == 0, run.stderr
    outputs = np.load(tmp_path / "outputs.npz")
    for got, want in zip((outputs["y0"], outputs["y1"], outputs["y2"]), expected(inputs, w, k)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_missing_runtime_plugin_is_named_and_kiln_runtime_path_finds_it(blas, tmp_path):
    """A runtime-only install without libkiln_runtime_blas.so: the Kiln libraries are copied
    into a folder of their own, which LD_LIBRARY_PATH puts before the build tree (the build
    tree's libraries have a RUNPATH, which LD_LIBRARY_PATH overrides)."""
    artifact, w, k = export(blas, tmp_path)
    build_libs = os.path.dirname(os.path.realpath(os.environ["KILN_FFI_LIBRARY"]))
    runtime_only = tmp_path / "lib"
    runtime_only.mkdir()
    for name in ("libkiln_ffi.so", "libkiln_runtime.so", "libkiln_json_runtime.so"):
        shutil.copy(os.path.join(build_libs, name), runtime_only)
    env = {"LD_LIBRARY_PATH": str(runtime_only)}
    inputs = make_inputs()

    missing = reload(tmp_path, artifact, inputs, env)
    assert missing.returncode != 0
    assert "libkiln_runtime_blas.so was not found" in missing.stderr, missing.stderr
    assert "'blas_json'" in missing.stderr, missing.stderr

    elsewhere = tmp_path / "plugins"
    elsewhere.mkdir()
    shutil.copy(os.path.join(build_libs, "libkiln_runtime_blas.so"), elsewhere)
    found = reload(tmp_path, artifact, inputs, dict(env, KILN_RUNTIME_PATH=str(elsewhere)))
    assert found.returncode == 0, found.stderr
    outputs = np.load(tmp_path / "outputs.npz")
    np.testing.assert_allclose(outputs["y2"], expected(inputs, w, k)[2], rtol=1e-5, atol=1e-6)


# A model partitioned by hand as PartitionGraph would: host ops around a blas region.
PARTITIONED = """
def @main(%x: Tensor[(2, 5, 3), float32], %m: Tensor[(4, 6), float32]) {
  %0 = nn.relu(%x);
  %1 = @kiln_blas_0(%0, %m);
  %2 = %1.0;
  %3 = %1.1;
  %4 = sum(%3, axis=[2], keepdims=true);
  add(%2, %4)
}
""" + REGIONS.split("def @kiln_blas_1")[0]


def test_kiln_build_runs_a_blas_region_between_host_ops(blas, tmp_path):
    w = RNG.standard_normal((4, 3)).astype("float32")
    k = RNG.standard_normal((4, 7)).astype("float32")
    model = kiln.build(typed(PARTITIONED, [w, k]), pipeline="InferType")
    inputs = make_inputs()
    dense = np.maximum(inputs["x"], 0) @ w.T
    want = dense @ inputs["m"] + dense.sum(axis=2, keepdims=True)
    np.testing.assert_allclose(model.run(x=inputs["x"], m=inputs["m"])[0], want,
                               rtol=1e-5, atol=1e-5)


def test_kiln_build_with_plugins_blas_partitions_reports_and_matches_numpy(blas, capsys):
    """The whole flow: blas takes the dense and the matrix product (one region), declines the
    product with a 1-D operand (with its reason in the report), the host runs the rest."""
    w = RNG.standard_normal((4, 3)).astype("float32")
    mod = kiln.ir.ParseModule("""
        def @main(%x: Tensor[(2, 3), float32], %m: Tensor[(4, 6), float32],
                  %v: Tensor[(6), float32]) {
          %0 = nn.relu(%x);
          %1 = nn.dense(%0, meta[Constant][0]);
          %2 = matmul(%1, %m);
          matmul(%2, %v)
        }""", [kiln.tensor(w)])
    model = kiln.build(mod, plugins=["blas"], report=True)
    report = capsys.readouterr().out
    assert "blas      2 op calls in 1 function(s)" in report
    assert "matmul x1: blas declined (a 1-D operand)" in report
    (program,) = model.module.imports
    assert [(m.kind, m.functions) for m in program.imports] == [("blas_json", ["kiln_blas_0"])]
    x = RNG.standard_normal((2, 3)).astype("float32")
    m = RNG.standard_normal((4, 6)).astype("float32")
    v = RNG.standard_normal(6).astype("float32")
    np.testing.assert_allclose(model.run(x=x, m=m, v=v)[0], (np.maximum(x, 0) @ w.T) @ m @ v,
                               rtol=1e-5, atol=1e-5)


def test_an_op_blas_does_not_run_fails_at_codegen_naming_it(blas):
    mod = typed("""
        def @r(%a: Tensor[(2, 3), float32])
            attrs={Compiler="blas", Primitive=1, global_symbol="kiln_blas_8"} {
          nn.relu(%a)
        }""")
    with pytest.raises(kiln.NotImplementedError,
                       match="blas: 'kiln_blas_8' has op 'nn.relu', which blas does not run"):
        blas([mod["r"]], {})

"""kilnc compile / run / inspect as a user runs them, on one of ONNX's own test models: the
outputs `kilnc run` writes must match the outputs ONNX stores with the model."""

import os
import shutil
import subprocess

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
import onnx.numpy_helper as onh  # noqa: E402

KILNC = os.environ.get("KILN_KILNC") or shutil.which("kilnc")
CASE = "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding"

pytestmark = [
    pytest.mark.skipif(KILNC is None, reason="kilnc not built (KILN_KILNC unset, not on PATH)"),
    pytest.mark.skipif(not os.path.isdir(CASE), reason="libonnx-testdata is not installed"),
]


def kilnc(*args):
    return subprocess.run([KILNC, *map(str, args)], capture_output=True, text=True)


def load_pb(path):
    return onh.to_array(onnx.load_tensor(path))


def test_compile_run_inspect_match_onnx_outputs(tmp_path):
    artifact = tmp_path / "conv.so"
    compiled = kilnc("compile", f"{CASE}/model.onnx", "-o", artifact, "--time-passes")
    assert compiled.returncode == 0, compiled.stderr
    assert "pass transform.FuseOps" in compiled.stderr  # the progress line per pass
    assert "pass times:" in compiled.stderr
    assert "planned activation memory" in compiled.stdout

    inputs = {}
    model = onnx.load(f"{CASE}/model.onnx")
    initializers = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in initializers]
    for k, name in enumerate(names):
        np.save(tmp_path / f"{name}.npy", load_pb(f"{CASE}/test_data_set_0/input_{k}.pb"))
        inputs[name] = tmp_path / f"{name}.npy"
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    args = []
    for name, path in inputs.items():
        args += ["--input", f"{name}={path}"]
    ran = kilnc("run", artifact, *args, "--repeat", 3, "--output-dir", out_dir)
    assert ran.returncode == 0, ran.stderr
    assert "latency over 3 run(s): min" in ran.stdout
    expected = load_pb(f"{CASE}/test_data_set_0/output_0.pb")
    np.testing.assert_allclose(np.load(out_dir / "output_0.npy"), expected, rtol=1e-5, atol=1e-6)

    profiled = kilnc("run", artifact, *args, "--repeat", 2, "--profile")
    assert profiled.returncode == 0, profiled.stderr
    assert "profile: median run" in profiled.stdout and "over 2 runs" in profiled.stdout
    # The one node, a convolution of the image by the weight (both inputs), with its shapes.
    assert "fused_nn_conv2d_0  (1x1x7x5, 1x1x3x3 -> 1x1x4x3)" in profiled.stdout
    assert "fused_nn_conv2d (1)" in profiled.stdout

    inspected = kilnc("inspect", artifact)
    assert inspected.returncode == 0, inspected.stderr
    assert "kernel.cpu.nn.conv2d" in inspected.stdout
    assert "bytes of activations" in inspected.stdout


def test_errors_exit_with_a_message(tmp_path):
    missing = kilnc("run", tmp_path / "missing.so")
    assert missing.returncode == 1
    assert "does not exist" in missing.stderr
    usage = kilnc("compile", f"{CASE}/model.onnx")
    assert usage.returncode == 2
    assert "needs a model and -o" in usage.stderr
    artifact = tmp_path / "conv.so"
    assert kilnc("compile", f"{CASE}/model.onnx", "-o", artifact).returncode == 0
    bad_input = kilnc("run", artifact, "--input", f"nope={tmp_path / 'x.npy'}")
    assert bad_input.returncode == 1
    assert "'nope', which is not an input" in bad_input.stderr
    (tmp_path / "bad.npy").write_bytes(b"not numpy at all")
    name = onnx.load(f"{CASE}/model.onnx").graph.input[0].name
    corrupt = kilnc("run", artifact, "--input", f"{name}={tmp_path / 'bad.npy'}")
    assert corrupt.returncode == 1
    assert "is not a .npy file" in corrupt.stderr


def test_a_memory_limit_below_the_plan_fails_naming_both_figures(tmp_path):
    artifact = tmp_path / "conv.so"
    assert kilnc("compile", f"{CASE}/model.onnx", "-o", artifact).returncode == 0
    over = kilnc("run", artifact, "--memory-limit", 100)
    assert over.returncode == 1
    assert "bytes of activation memory per run, over its memory limit of 100 bytes" in over.stderr
    assert kilnc("run", artifact, "--memory-limit", 1 << 30).returncode == 0


def test_a_model_with_a_symbolic_batch_runs_any_batch(tmp_path):
    import onnx.helper as oh

    x = oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", 3])
    y = oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["batch", 3])
    graph = oh.make_graph([oh.make_node("Relu", ["x"], ["y"])], "relu", [x], [y])
    onnx.save(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)]), tmp_path / "m.onnx")
    artifact = tmp_path / "m.so"
    compiled = kilnc("compile", tmp_path / "m.onnx", "-o", artifact)
    assert compiled.returncode == 0, compiled.stderr
    assert "planned per input shape (symbolic sizes: batch)" in compiled.stdout
    inspected = kilnc("inspect", artifact)
    assert "x: %0 float32 (batch, 3)" in inspected.stdout, inspected.stdout
    for batch in (1, 5):
        data = np.arange(batch * 3, dtype="float32").reshape(batch, 3) - 4
        np.save(tmp_path / "x.npy", data)
        out = tmp_path / f"out{batch}"
        ran = kilnc("run", artifact, "--input", f"x={tmp_path / 'x.npy'}", "--max-shape", "batch=8",
                    "--output-dir", out)
        assert ran.returncode == 0, ran.stderr
        np.testing.assert_array_equal(np.load(out / "output_0.npy"), np.maximum(data, 0))
    no_input = kilnc("run", artifact)
    assert no_input.returncode == 1
    assert "input 'x' has the symbolic shape (batch, 3): give it with --input x=file.npy" in \
        no_input.stderr
    over = kilnc("run", artifact, "--input", f"x={tmp_path / 'x.npy'}", "--max-shape", "batch=4")
    assert over.returncode == 1 and "the size 'batch' is 5, over its upper bound 4" in over.stderr


def test_generated_kernels_are_inspected_dumped_and_run(tmp_path):
    """`inspect --tir` prints the loop-level function of each fused group, `compile
    --generated-kernels --dump-ir` writes them and their C, and the artifact runs them."""
    import onnx.helper as oh

    x = oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", 16])
    b = oh.make_tensor_value_info("b", onnx.TensorProto.FLOAT, [16])
    y = oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["batch", 16])
    i = oh.make_tensor_value_info("i", onnx.TensorProto.INT64, ["batch", 1])
    nodes = [oh.make_node("Add", ["x", "b"], ["s"]), oh.make_node("Tanh", ["s"], ["y"]),
             oh.make_node("ArgMax", ["y"], ["i"], axis=1)]
    graph = oh.make_graph(nodes, "add_tanh", [x, b], [y, i])
    onnx.save(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)]), tmp_path / "m.onnx")

    inspected = kilnc("inspect", tmp_path / "m.onnx", "--tir")
    assert inspected.returncode == 0, inspected.stderr
    assert "loop-level functions (1):" in inspected.stdout, inspected.stdout
    assert 'call(name="tanh"' in inspected.stdout
    assert "extent=batch, kind=parallel" in inspected.stdout
    assert "groups that keep the kernels (1):" in inspected.stdout
    assert "op 'argmax' has no compute rule" in inspected.stdout

    artifact, dump = tmp_path / "m.so", tmp_path / "dump"
    compiled = kilnc("compile", tmp_path / "m.onnx", "-o", artifact, "--generated-kernels",
                     "--dump-ir", dump, "--tir-passes", "loop_partition,remove_dead_code",
                     "--time-passes")
    assert compiled.returncode == 0, compiled.stderr
    functions = sorted(p.name for p in (dump / "tir").glob("*.tir"))
    assert len(functions) == 1 and functions[0].startswith("tir_fused_add_tanh"), functions
    assert functions[0][:-len(".tir")] in (dump / "tir" / "generated.c").read_text()
    # The loop-level passes are dumped before and after, counted with the graph's, and timed.
    for tir_pass in ("loop_partition", "remove_dead_code"):
        dumped = sorted(p.name for p in dump.glob(f"*_tir.pass.{tir_pass}_tir_fused_add_tanh*"))
        assert [name.endswith(("_after.tir", "_before.tir")) for name in dumped] == [True, True], \
            dumped
        assert f"tir.pass.{tir_pass}" in compiled.stderr + compiled.stdout
    data = np.linspace(-2, 2, 48, dtype="float32").reshape(3, 16)
    bias = np.linspace(1, -1, 16, dtype="float32")
    np.save(tmp_path / "x.npy", data)
    np.save(tmp_path / "b.npy", bias)
    ran = kilnc("run", artifact, "--input", f"x={tmp_path / 'x.npy'}", "--input",
                f"b={tmp_path / 'b.npy'}", "--output-dir", tmp_path / "out")
    assert ran.returncode == 0, ran.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out" / "output_0.npy"), np.tanh(data + bias),
                               rtol=1e-6)

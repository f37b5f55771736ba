"""kiln.build and kiln.Executable from Python: ONNX in, PyTorch-checked answers out, the
artifact round trip (also in a process that has only the runtime), and the errors users see."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")

import onnx.helper as oh  # noqa: E402
import onnx.numpy_helper as onh  # noqa: E402

import kiln  # noqa: E402
import kiln.frontend  # noqa: E402

RNG = np.random.default_rng(7)


def conv_model():
    """Conv(3->4, 3x3, pad 1) + Relu + GlobalAveragePool + Flatten, and its weights."""
    w = RNG.standard_normal((4, 3, 3, 3)).astype("float32")
    b = RNG.standard_normal(4).astype("float32")
    graph = oh.make_graph(
        [
            oh.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
            oh.make_node("Relu", ["c"], ["r"]),
            oh.make_node("GlobalAveragePool", ["r"], ["g"]),
            oh.make_node("Flatten", ["g"], ["y"]),
        ],
        "conv",
        [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 8, 8])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 4])],
        [onh.from_array(w, "w"), onh.from_array(b, "b")],
    )
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)]), w, b


def torch_conv(x, w, b):
    out = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), padding=1)
    return out.relu().mean((2, 3)).numpy()


def test_build_matches_pytorch_and_reports_memory():
    model, w, b = conv_model()
    ex = kiln.build(kiln.frontend.from_onnx(model))
    assert isinstance(ex, kiln.Executable)
    assert ex.input_names == ["x"]
    x = RNG.standard_normal((1, 3, 8, 8)).astype("float32")
    (y,) = ex.run(x=x)
    np.testing.assert_allclose(y, torch_conv(x, w, b), rtol=1e-5, atol=1e-6)
    plan = ex.memory_plan
    assert plan["total_bytes"] >= x.nbytes + y.nbytes
    assert len(plan["storage_bytes"]) >= 2


def test_run_returns_copies_that_survive_the_next_run():
    model, w, b = conv_model()
    ex = kiln.build(kiln.frontend.from_onnx(model))
    x1 = RNG.standard_normal((1, 3, 8, 8)).astype("float32")
    x2 = RNG.standard_normal((1, 3, 8, 8)).astype("float32")
    (y1,) = ex.run(x=x1)
    ex.run(x=x2)
    np.testing.assert_allclose(y1, torch_conv(x1, w, b), rtol=1e-5, atol=1e-6)


def test_pass_context_and_pipeline_change_the_compile_not_the_answer():
    model, w, b = conv_model()
    mod = kiln.frontend.from_onnx(model)
    x = RNG.standard_normal((1, 3, 8, 8)).astype("float32")
    expected = torch_conv(x, w, b)
    unfused = kiln.build(mod, pass_context={"disabled_passes": ["FuseOps"]})
    fused = kiln.build(mod)
    # Without fusion each op is its own graph node.
    assert len(unfused.module.imports[0].functions) > len(fused.module.imports[0].functions)
    np.testing.assert_allclose(unfused.run(x=x)[0], expected, rtol=1e-5, atol=1e-6)
    minimal = kiln.build(mod, pipeline="InferType")
    np.testing.assert_allclose(minimal.run(x=x)[0], expected, rtol=1e-5, atol=1e-6)
    assert kiln.driver.default_pipeline().info["name"] == "DefaultPipeline"


def test_params_bind_weights_given_apart_from_the_model():
    graph = oh.make_graph(
        [oh.make_node("MatMul", ["x", "w"], ["y"])],
        "mm",
        [
            oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3]),
            oh.make_tensor_value_info("w", onnx.TensorProto.FLOAT, [3, 2]),
        ],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 2])],
    )
    mod = kiln.frontend.from_onnx(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)]))
    w = RNG.standard_normal((3, 2)).astype("float32")
    ex = kiln.build(mod, params={"w": w})
    assert ex.input_names == ["x"]
    x = RNG.standard_normal((2, 3)).astype("float32")
    np.testing.assert_allclose(ex.run(x=x)[0], x @ w, rtol=1e-5, atol=1e-6)
    with pytest.raises(kiln.ValueError, match="no parameter 'weights'.*its parameters: x, w"):
        kiln.build(mod, params={"weights": w})


def test_bad_target_and_bad_input_are_named():
    model, _, _ = conv_model()
    mod = kiln.frontend.from_onnx(model)
    with pytest.raises(kiln.ValueError, match="unknown build target 'gpu'"):
        kiln.build(mod, target="gpu")
    ex = kiln.build(mod)
    with pytest.raises(kiln.ValueError, match=r"input 'x' expects \(1, 3, 8, 8\) float32, got \(1, 3, 4, 4\)"):
        ex.run(x=np.zeros((1, 3, 4, 4), dtype="float32"))


def test_artifact_runs_in_a_process_with_only_the_runtime(tmp_path):
    model, w, b = conv_model()
    ex = kiln.build(kiln.frontend.from_onnx(model))
    path = tmp_path / "model.so"
    ex.export_library(path)
    x = RNG.standard_normal((1, 3, 8, 8)).astype("float32")
    np.save(tmp_path / "x.npy", x)
    # The child never touches kiln.ir / kiln.frontend: libkiln.so (the compiler) must stay
    # unloaded, and the kernels library is found from the artifact's manifest.
    script = textwrap.dedent(
        f"""
        import sys, numpy as np, kiln
        ex = kiln.load_module({str(path)!r})
        y = ex.run(x=np.load({str(tmp_path / "x.npy")!r}))[0]
        np.save({str(tmp_path / "y.npy")!r}, y)
        maps = open("/proc/self/maps").read()
        assert "libkiln.so" not in maps, "the compiler was loaded"
        assert "libkiln_kernels_cpu.so" in maps
        print(type(ex).__name__)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=os.environ.copy())
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Executable"
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), torch_conv(x, w, b), rtol=1e-5, atol=1e-6)


def test_corrupt_kernel_program_bytes_are_a_clear_error():
    load = kiln.get_global_func("runtime.module.load_bytes.kernel_program")
    with pytest.raises(kiln.ValueError, match="truncated"):
        load(b"\x01\x02")
    with pytest.raises(kiln.ValueError, match="truncated"):
        load((1000).to_bytes(8, "little") + b"{}")
    description = b'{"version": 1, "constants": [{"shape": [4], "dtype": "float32"}], "functions": []}'
    with pytest.raises(kiln.ValueError, match="a constant claims 16 bytes"):
        load(len(description).to_bytes(8, "little") + description + b"\x00" * 8)
    description = b'{"version": 9, "constants": [], "functions": []}'
    with pytest.raises(kiln.ValueError, match="format version 9"):
        load(len(description).to_bytes(8, "little") + description)


def test_a_program_gives_back_its_description():
    description = (
        '{"version": 1, "constants": [], "functions": [{"name": "f", "num_inputs": 1, '
        '"num_outputs": 1, "temps": [], "steps": [{"copy": "i0", "to": "o0"}]}]}'
    )
    program = kiln.get_global_func("runtime.KernelProgramCreate")(description, [])
    assert kiln.get_global_func("runtime.KernelProgramDescription")(program) == description
    model, _, _ = conv_model()
    executor = kiln.build(kiln.frontend.from_onnx(model)).module
    with pytest.raises(kiln.TypeError, match="takes a 'kernel_program' module, got 'graph_executor'"):
        kiln.get_global_func("runtime.KernelProgramDescription")(executor)


def test_a_kernel_missing_at_load_is_named():
    description = (
        '{"version": 1, "constants": [], "functions": [{"name": "f", "num_inputs": 1, '
        '"num_outputs": 1, "temps": [], "steps": [{"kernel": "my_ext.nothing", "attrs": {}, '
        '"inputs": ["i0"], "outputs": ["o0"]}]}]}'
    )
    with pytest.raises(kiln.RuntimeError, match="kernel.cpu.my_ext.nothing"):
        kiln.get_global_func("runtime.KernelProgramCreate")(description, [])


def test_1d_convolution_and_pooling_run_as_2d_windows():
    # PyTorch's Conv1d / MaxPool1d / AvgPool1d export as ONNX Conv and pooling over (N, C, W).
    w = RNG.standard_normal((5, 2, 3)).astype("float32")
    b = RNG.standard_normal(5).astype("float32")
    graph = oh.make_graph(
        [
            oh.make_node("Conv", ["x", "w", "b"], ["c"], pads=[2, 1], strides=[2], dilations=[2]),
            oh.make_node("MaxPool", ["c"], ["m"], kernel_shape=[2], pads=[1, 0]),
            oh.make_node("AveragePool", ["m"], ["y"], kernel_shape=[2], strides=[1]),
        ],
        "conv1d",
        [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2, 11])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 5, 4])],
        [onh.from_array(w, "w"), onh.from_array(b, "b")],
    )
    mod = kiln.frontend.from_onnx(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)]))
    x = RNG.standard_normal((1, 2, 11)).astype("float32")
    # ONNX pads [2, 1] are asymmetric: pad by hand, then convolve without padding.
    xp = torch.nn.functional.pad(torch.from_numpy(x), (2, 1))
    c = torch.nn.functional.conv1d(xp, torch.from_numpy(w), torch.from_numpy(b), stride=2, dilation=2)
    m = torch.nn.functional.max_pool1d(torch.nn.functional.pad(c, (1, 0), value=float("-inf")), 2, stride=1)
    expected = torch.nn.functional.avg_pool1d(m, 2, stride=1).numpy()
    (y,) = kiln.build(mod).run(x=x)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


def test_static_sequences_become_tuples():
    # Split x (2, 6) into widths [2, 1, 3], erase piece 1, insert y in front, concatenate;
    # also take the last item, the length, and stack a constructed pair on a new axis.
    int64 = onnx.TensorProto.INT64
    consts = {
        "split": np.array([2, 1, 3], dtype=np.int64),
        "one": np.array(1, dtype=np.int64),
        "zero": np.array(0, dtype=np.int64),
        "minus_one": np.array(-1, dtype=np.int64),
    }
    graph = oh.make_graph(
        [
            oh.make_node("SplitToSequence", ["x", "split"], ["seq"], axis=1),
            oh.make_node("SequenceErase", ["seq", "one"], ["erased"]),
            oh.make_node("SequenceInsert", ["erased", "y", "zero"], ["inserted"]),
            oh.make_node("ConcatFromSequence", ["inserted"], ["joined"], axis=1),
            oh.make_node("SequenceAt", ["inserted", "minus_one"], ["last"]),
            oh.make_node("SequenceLength", ["inserted"], ["length"]),
            oh.make_node("SequenceConstruct", ["y", "y"], ["pair"]),
            oh.make_node("ConcatFromSequence", ["pair"], ["stacked"], axis=0, new_axis=1),
        ],
        "sequences",
        [
            oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 6]),
            oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 4]),
        ],
        [
            oh.make_tensor_value_info("joined", onnx.TensorProto.FLOAT, [2, 9]),
            oh.make_tensor_value_info("last", onnx.TensorProto.FLOAT, [2, 3]),
            oh.make_tensor_value_info("length", int64, []),
            oh.make_tensor_value_info("stacked", onnx.TensorProto.FLOAT, [2, 2, 4]),
        ],
        [onh.from_array(value, name) for name, value in consts.items()],
    )
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)])
    x = RNG.standard_normal((2, 6)).astype("float32")
    y = RNG.standard_normal((2, 4)).astype("float32")
    joined, last, length, stacked = kiln.build(kiln.frontend.from_onnx(model)).run(x=x, y=y)
    pieces = [y, x[:, 0:2], x[:, 3:6]]  # piece 1 (x[:, 2:3]) erased, y inserted first
    np.testing.assert_array_equal(joined, np.concatenate(pieces, axis=1))
    np.testing.assert_array_equal(last, x[:, 3:6])
    assert length.shape == () and int(length) == 3
    np.testing.assert_array_equal(stacked, np.stack([y, y], axis=0))


def test_clip_bounds_given_as_inputs_run_as_maximum_and_minimum():
    graph = oh.make_graph(
        [oh.make_node("Clip", ["x", "lo", "hi"], ["y"])],
        "clip",
        [
            oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3, 4]),
            oh.make_tensor_value_info("lo", onnx.TensorProto.FLOAT, []),
            oh.make_tensor_value_info("hi", onnx.TensorProto.FLOAT, []),
        ],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [3, 4])],
    )
    mod = kiln.frontend.from_onnx(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)]))
    ex = kiln.build(mod)
    x = RNG.standard_normal((3, 4)).astype("float32")
    for lo, hi in [(-0.5, 0.5), (0.2, -0.2)]:  # ONNX: min(max(x, lo), hi), also when lo > hi
        (y,) = ex.run(x=x, lo=np.float32(lo), hi=np.float32(hi))
        np.testing.assert_array_equal(y, np.minimum(np.maximum(x, np.float32(lo)), np.float32(hi)))


def test_a_loaded_artifact_keeps_one_copy_of_its_weights_in_memory(tmp_path):
    """The weights stay in the artifact's mapping (docs/design.md §8): a weight used only in its
    prepacked form is not kept twice. Loading a model with a 32 MiB dense weight, in a fresh
    process, grows its resident memory by about the packed copy alone; loading a copy of every
    byte (as before) would add two or three times the weight."""
    weight = RNG.standard_normal((2048, 4096)).astype("float32")  # 32 MiB
    mod = kiln.ir.ParseModule(
        "def @main(%x: Tensor[(1, 4096), float32], %w: Tensor[(2048, 4096), float32]) {"
        " nn.dense(%x, %w) }", [])
    path = tmp_path / "dense.so"
    kiln.build(mod, params={"w": weight}).export_library(str(path))
    script = textwrap.dedent(f"""
        import numpy as np
        import kiln

        def resident_mib():
            with open("/proc/self/status") as status:
                line = next(line for line in status if line.startswith("VmRSS"))
            return int(line.split()[1]) / 1024

        before = resident_mib()
        model = kiln.load_module({str(path)!r})
        x = np.ones((1, 4096), dtype="float32")
        y = model.run(x=x)[0]
        print(resident_mib() - before, float(y.sum()))
        """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=os.environ.copy())
    assert result.returncode == 0, result.stderr
    grown, total = (float(v) for v in result.stdout.split())
    np.testing.assert_allclose(total, weight.sum(), rtol=1e-3)
    assert grown < 1.5 * 32, f"loading grew resident memory by {grown:.1f} MiB"

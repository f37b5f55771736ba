"""Compile once, run at any size: models exported by torch.onnx with dynamic axes are imported
with size variables, compiled once, and run at several shapes, each checked against PyTorch, in
this process and, through the exported library, in a fresh one."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

import kiln  # noqa: E402
import kiln.frontend  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


class SmallCnn(torch.nn.Module):
    """Conv, batch norm, pooling, a residual add, global pooling, flatten and a linear head:
    every shape rule of a CNN classifier over a symbolic batch."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, stride=2, padding=1), torch.nn.BatchNorm2d(8),
            torch.nn.ReLU(), torch.nn.MaxPool2d(3, stride=2, padding=1))
        self.block = torch.nn.Sequential(
            torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
            torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.BatchNorm2d(8))
        self.head = torch.nn.Linear(8, 5)

    def forward(self, x):
        x = self.stem(x)
        x = torch.relu(x + self.block(x))
        x = torch.nn.functional.adaptive_avg_pool2d(x, 1)
        return self.head(torch.flatten(x, 1))


def _export_cnn(path):
    torch.manual_seed(0)
    model = SmallCnn().eval()
    for module in model.modules():  # non-trivial batch-norm statistics
        if isinstance(module, torch.nn.BatchNorm2d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 1.5)
    torch.onnx.export(model, torch.randn(2, 3, 32, 32), path, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
                      opset_version=17)
    return model


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("cnn") / "cnn.onnx")
    model = _export_cnn(path)
    return model, path


def _reference(model, x):
    with torch.no_grad():
        return model(torch.from_numpy(x)).numpy()


def test_a_dynamic_batch_cnn_compiles_once_and_runs_at_every_batch(cnn):
    model, path = cnn
    mod = kiln.frontend.from_onnx(path)
    assert "Tensor[(batch, 3, 32, 32), float32]" in str(mod)
    ex = kiln.build(mod)
    assert ex.input_info["symbolic_shapes"] == ["(batch, 3, 32, 32)"]
    assert ex.output_info["symbolic_shapes"] == ["(batch, 5)"]
    rng = np.random.default_rng(3)
    for batch in (1, 3, 8, 3):
        x = rng.standard_normal((batch, 3, 32, 32)).astype("float32")
        (y,) = ex.run(x=x)
        assert y.shape == (batch, 5)
        np.testing.assert_allclose(y, _reference(model, x), rtol=RTOL, atol=ATOL)
    assert ex.memory_plan["plans_made"] == 3


def run_in_fresh_process(library, feeds, tmp_path):
    """(outputs, printed Executable): loads `library` in a new Python process and runs it once
    per case of `feeds` ({case: {input name: array}}); outputs are {case: first output}."""
    np.savez(tmp_path / "inputs.npz",
             **{f"{case}/{name}": value for case, inputs in feeds.items()
                for name, value in inputs.items()})
    script = textwrap.dedent(f"""
        import numpy as np
        import kiln
        ex = kiln.load_module({str(library)!r})
        data = np.load({str(tmp_path / "inputs.npz")!r})
        cases = {{}}
        for key in data.files:
            case, name = key.split("/")
            cases.setdefault(case, {{}})[name] = data[key]
        np.savez({str(tmp_path / "outputs.npz")!r},
                 **{{case: ex.run(**inputs)[0] for case, inputs in cases.items()}})
        print(ex)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=os.environ.copy())
    assert result.returncode == 0, result.stderr
    outputs = np.load(tmp_path / "outputs.npz")
    return {case: outputs[case] for case in feeds}, result.stdout


def test_the_exported_library_runs_any_batch_in_a_fresh_process(cnn, tmp_path):
    model, path = cnn
    library = tmp_path / "cnn.so"
    kiln.build(kiln.frontend.from_onnx(path)).export_library(library)
    rng = np.random.default_rng(4)
    feeds = {f"batch{batch}": {"x": rng.standard_normal((batch, 3, 32, 32)).astype("float32")}
             for batch in (2, 5, 7)}
    outputs, printed = run_in_fresh_process(library, feeds, tmp_path)
    assert "x: (batch, 3, 32, 32) float32" in printed
    for case, inputs in feeds.items():
        np.testing.assert_allclose(outputs[case], _reference(model, inputs["x"]), rtol=RTOL,
                                   atol=ATOL)


def test_a_batch_that_breaks_the_signature_is_named(cnn):
    _, path = cnn
    ex = kiln.build(kiln.frontend.from_onnx(path))
    with pytest.raises(kiln.ValueError, match=r"input 'x' has extent 31 at axis 2, where the "
                                              r"model needs 32"):
        ex.run(x=np.zeros((2, 3, 31, 32), "float32"))
    with pytest.raises(kiln.ValueError, match=r"input 'x' has rank 3, expected rank 4"):
        ex.run(x=np.zeros((3, 32, 32), "float32"))


def test_upper_bounds_plan_the_memory_once(cnn):
    _, path = cnn
    ex = kiln.build(kiln.frontend.from_onnx(path), upper_bounds={"batch": 4})
    ex.run(x=np.zeros((1, 3, 32, 32), "float32"))
    at_bound = ex.limits["bytes_per_context"]
    for batch in (4, 2):
        ex.run(x=np.zeros((batch, 3, 32, 32), "float32"))
    assert ex.limits["bytes_per_context"] == at_bound
    with pytest.raises(kiln.ValueError, match="the size 'batch' is 5, over its upper bound 4"):
        ex.run(x=np.zeros((5, 3, 32, 32), "float32"))


class SmallEncoder(torch.nn.Module):
    """Token and position embeddings, a padding mask from the sequence lengths, a two-layer
    transformer encoder and a linear head: what torch.onnx exports with dynamic batch and
    sequence axes computes its shapes at run time (Shape -> Gather -> Concat -> Reshape,
    Range, ConstantOfShape, Expand), which the importer evaluates on size expressions."""

    def __init__(self, max_len=128):
        super().__init__()
        self.emb = torch.nn.Embedding(100, 32)
        self.pos = torch.nn.Embedding(max_len, 32)
        layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.out = torch.nn.Linear(32, 3)

    def forward(self, ids, lengths):
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        mask = pos >= lengths.unsqueeze(1)  # True at the padding
        h = self.emb(ids) + self.pos(pos)
        return self.out(self.enc(h, src_key_padding_mask=mask))


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("encoder") / "encoder.onnx")
    torch.manual_seed(0)
    model = SmallEncoder().eval()
    ids, lengths = torch.randint(0, 100, (2, 7)), torch.tensor([7, 4])
    torch.onnx.export(model, (ids, lengths), path, input_names=["ids", "lengths"],
                      output_names=["y"], opset_version=17,
                      dynamic_axes={"ids": {0: "batch", 1: "seq"}, "lengths": {0: "batch"},
                                    "y": {0: "batch", 1: "seq"}})
    return model, path


def _encoder_inputs(rng, batch, seq):
    """Token ids and lengths that pad every row but the first."""
    ids = rng.integers(0, 100, (batch, seq)).astype("int64")
    lengths = np.array([seq - (row * seq) // (batch + 1) for row in range(batch)], "int64")
    return ids, lengths


def _encoder_reference(model, ids, lengths):
    with torch.no_grad():
        return model(torch.from_numpy(ids), torch.from_numpy(lengths)).numpy()


def test_a_dynamic_transformer_encoder_imports_with_symbolic_shapes(encoder):
    _, path = encoder
    mod = kiln.frontend.from_onnx(path)
    text = str(mod)
    assert "%ids: Tensor[(batch, seq), int64], %lengths: Tensor[(batch), int64]" in text
    assert "arange(size=seq)" in text  # the positions
    assert "newshape=[seq, batch * 4, 8]" in text  # the heads, from Shape/Gather/Concat
    assert "expand(const(float32, (), [0]), shape=[batch * 4, 1, seq])" in text  # the mask
    main = kiln.transform.InferType()(mod)["main"]
    assert kiln.ir.AsText(main.ret_type).strip() == "Tensor[(batch, seq, 3), float32]"


def test_a_dynamic_transformer_encoder_compiles_once_and_runs_at_every_shape(encoder):
    model, path = encoder
    ex = kiln.build(kiln.frontend.from_onnx(path))
    assert ex.output_info["symbolic_shapes"] == ["(batch, seq, 3)"]
    rng = np.random.default_rng(5)
    for batch, seq in ((1, 7), (3, 64), (2, 128)):
        ids, lengths = _encoder_inputs(rng, batch, seq)
        (y,) = ex.run(ids=ids, lengths=lengths)
        assert y.shape == (batch, seq, 3)
        np.testing.assert_allclose(y, _encoder_reference(model, ids, lengths), rtol=RTOL,
                                   atol=ATOL)


def test_the_exported_encoder_runs_at_two_shapes_in_a_fresh_process(encoder, tmp_path):
    model, path = encoder
    library = tmp_path / "encoder.so"
    kiln.build(kiln.frontend.from_onnx(path)).export_library(library)
    rng = np.random.default_rng(6)
    feeds = {}
    for batch, seq in ((2, 9), (4, 33)):
        ids, lengths = _encoder_inputs(rng, batch, seq)
        feeds[f"batch{batch}"] = {"ids": ids, "lengths": lengths}
    outputs, printed = run_in_fresh_process(library, feeds, tmp_path)
    assert "ids: (batch, seq) int64" in printed
    for case, inputs in feeds.items():
        np.testing.assert_allclose(
            outputs[case], _encoder_reference(model, inputs["ids"], inputs["lengths"]),
            rtol=RTOL, atol=ATOL)

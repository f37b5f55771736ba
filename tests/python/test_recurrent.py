"""Recurrent layers (nn.lstm, nn.gru, nn.rnn; ONNX LSTM, GRU, RNN): PyTorch sequence models
exported to ONNX with a symbolic sequence length, compiled once, exported to an artifact and run
in a fresh process at two lengths against PyTorch; and the errors of bad recurrent input.
(ONNX's own backend cases for the three ops are in tests/conformance/expected_passes.txt.)"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kiln

torch = pytest.importorskip("torch")


class Tagger(torch.nn.Module):
    """A two-layer bidirectional recurrent encoder and a linear head per step."""

    def __init__(self, cell):
        super().__init__()
        self.rnn = cell(input_size=12, hidden_size=16, num_layers=2, bidirectional=True)
        self.head = torch.nn.Linear(32, 5)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out)


@pytest.mark.parametrize("cell", [torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN],
                         ids=lambda c: c.__name__)
def test_an_exported_sequence_model_runs_from_its_artifact_at_two_lengths(cell, tmp_path):
    torch.manual_seed(0)
    model = Tagger(cell).eval()
    onnx_path = str(tmp_path / "tagger.onnx")
    torch.onnx.export(model, torch.randn(7, 3, 12), onnx_path, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "seq"}, "y": {0: "seq"}},
                      opset_version=14)
    mod = kiln.frontend.from_onnx(onnx_path)
    assert "Tensor[(seq, 3, 12), float32]" in str(mod)
    artifact = str(tmp_path / "tagger.so")
    kiln.build(mod).export_library(artifact)
    rng = np.random.default_rng(4)
    for length in (5, 23):
        x = rng.standard_normal((length, 3, 12)).astype("float32")
        np.save(tmp_path / "x.npy", x)
        script = textwrap.dedent(f"""
            import numpy as np, kiln
            y = kiln.load_module({artifact!r}).run(x=np.load({str(tmp_path / "x.npy")!r}))[0]
            np.save({str(tmp_path / "y.npy")!r}, y)
        """)
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                env=os.environ.copy())
        assert result.returncode == 0, result.stderr
        with torch.no_grad():
            expected = model(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(np.load(tmp_path / "y.npy"), expected, rtol=1e-4, atol=1e-5)


def lstm_module(attrs="", lens="%lens"):
    text = f"""def @main(%x: Tensor[(4, 2, 3), float32], %w: Tensor[(1, 8, 3), float32],
                          %r: Tensor[(1, 8, 2), float32], %lens: Tensor[(2), int32]) {{
      %0 = nn.lstm(%x, %w, %r, const(float32, (0), []), {lens}, const(float32, (0), []),
                   const(float32, (0), []), const(float32, (0), []), hidden_size=2{attrs});
      %0.0
    }}"""
    return kiln.ir.ParseModule(text, [])


def test_bad_recurrent_input_is_named():
    zeros = {"x": np.zeros((4, 2, 3), "float32"), "w": np.zeros((1, 8, 3), "float32"),
             "r": np.zeros((1, 8, 2), "float32")}
    with pytest.raises(kiln.ValueError, match=r"sequence_lens\[1\] = 9 lies outside \[0, 4\]"):
        kiln.build(lstm_module()).run(lens=np.array([2, 9], "int32"), **zeros)
    with pytest.raises(kiln.ValueError, match="unknown activation 'Swish'"):
        kiln.build(lstm_module(', activations="Sigmoid,Swish,Tanh"')).run(
            lens=np.array([2, 3], "int32"), **zeros)
    with pytest.raises(kiln.TypeError, match=r"'weight' \(argument 1\) must be \(directions, "
                                             r"gates \* hidden, input\) = \(2, 8, 3\), "
                                             r"got \(1, 8, 3\)"):
        kiln.transform.InferType()(lstm_module(', direction="bidirectional"'))
    # A batch entry of length 2 stops there: its outputs after step 2 are zero.
    rng = np.random.default_rng(5)
    inputs = {k: rng.standard_normal(v.shape).astype("float32") for k, v in zeros.items()}
    (y,) = kiln.build(lstm_module()).run(lens=np.array([2, 4], "int32"), **inputs)
    assert not y[2:, 0, 0].any() and y[2:, 0, 1].all()

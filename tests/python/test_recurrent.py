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


@pytest.mark.parametrize("cell,batch", [(torch.nn.LSTM, 2), (torch.nn.LSTM, 6), (torch.nn.GRU, 2),
                                        (torch.nn.GRU, 6), (torch.nn.RNN, 1), (torch.nn.RNN, 6)],
                         ids=lambda p: p.__name__ if isinstance(p, type) else f"batch{p}")
def test_an_exported_sequence_model_runs_from_its_artifact_at_two_lengths(cell, batch, tmp_path):
    """Batches of one or two entries take the kernels' matrix-vector path, larger ones the
    GEMM."""
    torch.manual_seed(0)
    model = Tagger(cell).eval()
    onnx_path = str(tmp_path / "tagger.onnx")
    torch.onnx.export(model, torch.randn(7, batch, 12), onnx_path, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "seq"}, "y": {0: "seq"}},
                      opset_version=14)
    mod = kiln.frontend.from_onnx(onnx_path)
    assert f"Tensor[(seq, {batch}, 12), float32]" in str(mod)
    artifact = str(tmp_path / "tagger.so")
    kiln.build(mod).export_library(artifact)
    rng = np.random.default_rng(4)
    for length in (5, 23):
        x = rng.standard_normal((length, batch, 12)).astype("float32")
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


def test_an_rnn_with_a_parametric_activation_clip_reverse_and_lengths_matches_numpy():
    """ONNX RNN semantics written out in numpy: LeakyRelu with its alpha, clip on the
    activation's input, the reverse direction starting at each entry's own last step."""
    seq, batch, inp, hidden = 6, 3, 4, 5
    rng = np.random.default_rng(6)
    x = rng.standard_normal((seq, batch, inp)).astype("float32")
    w = rng.standard_normal((1, hidden, inp)).astype("float32")
    r = rng.standard_normal((1, hidden, hidden)).astype("float32") * 0.5
    b = rng.standard_normal((1, 2 * hidden)).astype("float32")
    lens = np.array([6, 2, 4], "int32")
    h0 = rng.standard_normal((1, batch, hidden)).astype("float32")
    text = f"""def @main(%x: Tensor[({seq}, {batch}, {inp}), float32], %w: Tensor[(1, {hidden}, {inp}), float32],
                        %r: Tensor[(1, {hidden}, {hidden}), float32], %b: Tensor[(1, {2 * hidden}), float32],
                        %lens: Tensor[({batch}), int32], %h0: Tensor[(1, {batch}, {hidden}), float32]) {{
      nn.rnn(%x, %w, %r, %b, %lens, %h0, hidden_size={hidden}, direction="reverse",
             activations="LeakyRelu", activation_alpha=[0.3], clip=1.5)
    }}"""
    y, y_h = kiln.build(kiln.ir.ParseModule(text, [])).run(x=x, w=w, r=r, b=b, lens=lens, h0=h0)
    expected_y = np.zeros((seq, 1, batch, hidden), "float32")
    expected_h = h0[0].copy()
    for n in range(batch):
        h = h0[0, n]
        for t in reversed(range(lens[n])):
            pre = np.clip(x[t, n] @ w[0].T + h @ r[0].T + b[0, :hidden] + b[0, hidden:], -1.5, 1.5)
            h = np.where(pre >= 0, pre, 0.3 * pre)
            expected_y[t, 0, n] = h
        expected_h[n] = h
    np.testing.assert_allclose(y, expected_y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y_h[0], expected_h, rtol=1e-5, atol=1e-5)


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def steps_of(direction, d, length):
    """The steps direction d of an op runs, in order: a reverse one starts at the entry's own
    last step."""
    forward = direction == "forward" or (direction == "bidirectional" and d == 0)
    return range(length) if forward else reversed(range(length))


def lstm_reference(x, w, r, b, lens, h0, c0, p, direction):
    """ONNX LSTM written out in numpy: gates i, o, f, c; peepholes i, o, f; outputs past an
    entry's length zero."""
    seq, batch, _ = x.shape
    directions, hidden = h0.shape[0], h0.shape[2]
    y = np.zeros((seq, directions, batch, hidden), "float32")
    y_h, y_c = h0.copy(), c0.copy()
    for d in range(directions):
        for n in range(batch):
            h, c = h0[d, n], c0[d, n]
            for t in steps_of(direction, d, lens[n]):
                gates = x[t, n] @ w[d].T + h @ r[d].T + b[d, :4 * hidden] + b[d, 4 * hidden:]
                i, o, f, cell = np.split(gates, 4)
                i = sigmoid(i + p[d, :hidden] * c)
                f = sigmoid(f + p[d, 2 * hidden:] * c)
                c = f * c + i * np.tanh(cell)
                h = sigmoid(o + p[d, hidden:2 * hidden] * c) * np.tanh(c)
                y[t, d, n] = h
            y_h[d, n], y_c[d, n] = h, c
    return y, y_h, y_c


def gru_reference(x, w, r, b, lens, h0, direction, linear_before_reset):
    """ONNX GRU written out in numpy: gates z, r, h; the reset applied before or after the
    hidden gate's recurrence."""
    seq, batch, _ = x.shape
    directions, hidden = h0.shape[0], h0.shape[2]
    y = np.zeros((seq, directions, batch, hidden), "float32")
    y_h = h0.copy()
    for d in range(directions):
        wz, wr, wh = np.split(w[d], 3)
        rz, rr, rh = np.split(r[d], 3)
        wbz, wbr, wbh, rbz, rbr, rbh = np.split(b[d], 6)
        for n in range(batch):
            h = h0[d, n]
            for t in steps_of(direction, d, lens[n]):
                z = sigmoid(x[t, n] @ wz.T + h @ rz.T + wbz + rbz)
                reset = sigmoid(x[t, n] @ wr.T + h @ rr.T + wbr + rbr)
                if linear_before_reset:
                    candidate = np.tanh(x[t, n] @ wh.T + reset * (h @ rh.T + rbh) + wbh)
                else:
                    candidate = np.tanh(x[t, n] @ wh.T + (reset * h) @ rh.T + rbh + wbh)
                h = (1 - z) * candidate + z * h
                y[t, d, n] = h
            y_h[d, n] = h
    return y, y_h


def rnn_reference(x, w, r, b, lens, h0, direction):
    """ONNX RNN with its default tanh, written out in numpy."""
    seq, batch, _ = x.shape
    directions, hidden = h0.shape[0], h0.shape[2]
    y = np.zeros((seq, directions, batch, hidden), "float32")
    y_h = h0.copy()
    for d in range(directions):
        for n in range(batch):
            h = h0[d, n]
            for t in steps_of(direction, d, lens[n]):
                h = np.tanh(x[t, n] @ w[d].T + h @ r[d].T + b[d, :hidden] + b[d, hidden:])
                y[t, d, n] = h
            y_h[d, n] = h
    return y, y_h


@pytest.mark.parametrize("hidden", [37, 70])
@pytest.mark.parametrize("batch", [1, 2, 9])
@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("direction", ["bidirectional", "reverse"])
def test_lstm_gru_and_rnn_with_lengths_and_states_match_numpy(direction, batch, threads, hidden,
                                                              tmp_path):
    """Every path of the kernels: matrix-vector products (batch 1 and 2), the GEMM (batch 9),
    and with more threads the two directions, or one direction's entries (4 and 5 of them), run
    by threads of their own. Hidden 37 leaves partial vectors and row groups everywhere. Hidden
    70 with threads to spare cuts lanes of one or two entries into blocks of 48 and 22 units
    (one direction at 2 threads, both at 4). 70 steps take every lane's input projections over
    more than one chunk of steps (64 rows a chunk)."""
    seq, inp = 70, 6
    rng = np.random.default_rng(batch)
    nd = 2 if direction == "bidirectional" else 1

    def rand(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype("float32")

    lens = rng.integers(1, seq + 1, batch).astype("int32")
    lens[0] = seq
    x = rand(seq, batch, inp)
    lstm = dict(x=x, w=rand(nd, 4 * hidden, inp, scale=0.3),
                r=rand(nd, 4 * hidden, hidden, scale=0.2), b=rand(nd, 8 * hidden, scale=0.1),
                lens=lens, h0=rand(nd, batch, hidden), c0=rand(nd, batch, hidden),
                p=rand(nd, 3 * hidden, scale=0.5))
    gru = dict(x=x, w=rand(nd, 3 * hidden, inp, scale=0.3),
               r=rand(nd, 3 * hidden, hidden, scale=0.2), b=rand(nd, 6 * hidden, scale=0.1),
               lens=lens, h0=rand(nd, batch, hidden))
    rnn = dict(x=x, w=rand(nd, hidden, inp, scale=0.3), r=rand(nd, hidden, hidden, scale=0.2),
               b=rand(nd, 2 * hidden, scale=0.1), lens=lens, h0=rand(nd, batch, hidden))
    np.savez(tmp_path / "lstm.npz", **lstm)
    np.savez(tmp_path / "gru.npz", **gru)
    np.savez(tmp_path / "rnn.npz", **rnn)
    shapes = f"""%x: Tensor[({seq}, {batch}, {inp}), float32], %lens: Tensor[({batch}), int32],
                 %h0: Tensor[({nd}, {batch}, {hidden}), float32], %b: Tensor[({nd}, GB), float32],
                 %w: Tensor[({nd}, GW, {inp}), float32], %r: Tensor[({nd}, GW, {hidden}), float32]"""
    lstm_text = f"""def @main({shapes.replace("GB", str(8 * hidden)).replace("GW", str(4 * hidden))},
                              %c0: Tensor[({nd}, {batch}, {hidden}), float32],
                              %p: Tensor[({nd}, {3 * hidden}), float32]) {{
      nn.lstm(%x, %w, %r, %b, %lens, %h0, %c0, %p, hidden_size={hidden}, direction="{direction}")
    }}"""
    gru_text = f"""def @main({shapes.replace("GB", str(6 * hidden)).replace("GW", str(3 * hidden))}) {{
      nn.gru(%x, %w, %r, %b, %lens, %h0, hidden_size={hidden}, direction="{direction}",
             linear_before_reset=LBR)
    }}"""
    rnn_text = f"""def @main({shapes.replace("GB", str(2 * hidden)).replace("GW", str(hidden))}) {{
      nn.rnn(%x, %w, %r, %b, %lens, %h0, hidden_size={hidden}, direction="{direction}")
    }}"""
    script = textwrap.dedent(f"""
        import numpy as np, kiln
        def run(text, inputs):
            return kiln.build(kiln.ir.ParseModule(text, [])).run(**dict(np.load(inputs)))
        outputs = {{"lstm": run({lstm_text!r}, {str(tmp_path / "lstm.npz")!r}),
                    "rnn": run({rnn_text!r}, {str(tmp_path / "rnn.npz")!r})}}
        for lbr in (0, 1):
            outputs[f"gru{{lbr}}"] = run({gru_text!r}.replace("LBR", str(bool(lbr)).lower()),
                                         {str(tmp_path / "gru.npz")!r})
        np.savez({str(tmp_path / "out.npz")!r},
                 **{{f"{{k}}_{{i}}": v for k, vs in outputs.items() for i, v in enumerate(vs)}})
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=dict(os.environ, KILN_NUM_THREADS=str(threads)))
    assert result.returncode == 0, result.stderr
    out = np.load(tmp_path / "out.npz")
    for i, expected in enumerate(lstm_reference(**lstm, direction=direction)):
        np.testing.assert_allclose(out[f"lstm_{i}"], expected, rtol=1e-4, atol=2e-5)
    for lbr in (0, 1):
        for i, expected in enumerate(gru_reference(**gru, direction=direction,
                                                   linear_before_reset=lbr)):
            np.testing.assert_allclose(out[f"gru{lbr}_{i}"], expected, rtol=1e-4, atol=2e-5)
    for i, expected in enumerate(rnn_reference(**rnn, direction=direction)):
        np.testing.assert_allclose(out[f"rnn_{i}"], expected, rtol=1e-4, atol=2e-5)

"""nn.attention and RecognizeAttention. The CPU kernel (kernel.cpu.nn.attention) against the
attention formula computed by PyTorch in float64, in both layouts, with and without masks, at
odd sizes; the op compiled by kiln.build; and the pass on models that torch.onnx exports
(nn.TransformerEncoderLayer, a BERT-style self-attention): their compiled graphs hold
nn.attention instead of the softmax and still compute PyTorch's outputs."""

import os
import subprocess
import sys

import numpy as np
import pytest

import kiln
import kiln.frontend
import kiln.ir

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

RNG = np.random.default_rng(2024)


def rand(*shape, scale=1.0):
    return (scale * RNG.standard_normal(shape)).astype(np.float32)


def to_bsnh(x, layout):
    """(batch, seq, embed) whatever the layout."""
    return x if layout == "BSNH" else x.transpose(1, 0, 2)


def reference(q, k, v, mask, heads, scale, layout):
    """softmax(q k^T * scale + mask) v per head, in float64."""
    def split(x):
        x = torch.from_numpy(np.ascontiguousarray(to_bsnh(x, layout))).double()
        batch, seq, embed = x.shape
        return x.reshape(batch, seq, heads, embed // heads).permute(0, 2, 1, 3)

    qh, kh, vh = split(q), split(k), split(v)
    scores = qh @ kh.transpose(-1, -2) * scale + torch.from_numpy(mask).double()
    out = (torch.softmax(scores, dim=-1) @ vh).permute(0, 2, 1, 3)
    out = out.reshape(out.shape[0], out.shape[1], -1).numpy().astype(np.float32)
    return to_bsnh(out, layout).copy()


def run_kernel(q, k, v, mask, heads, scale, layout):
    kernel = kiln.get_global_func("kernel.cpu.nn.attention")
    shape = list(q.shape[:2]) + [v.shape[2]]
    out = kiln.empty(shape, "float32")
    kernel([kiln.tensor(np.ascontiguousarray(x)) for x in (q, k, v, mask)], [out],
           {"num_heads": heads, "scale": scale, "layout": layout})
    return out.numpy().copy()


def operands(batch, heads, seq_q, seq_k, head_dim, value_dim, layout):
    def tensor(seq, dim):
        shape = (batch, seq, heads * dim) if layout == "BSNH" else (seq, batch, heads * dim)
        return rand(*shape)

    return tensor(seq_q, head_dim), tensor(seq_k, head_dim), tensor(seq_k, value_dim)


# (batch, heads, seq_q, seq_k, head_dim, value_dim): one position; one query over many keys
# (a decoding step); odd head sizes with different query and key lengths; the reference
# encoder's (1, 4, 128, 128, 64); more keys than one GEMM column block (256).
SHAPES = [(1, 1, 1, 1, 1, 1), (1, 4, 1, 7, 8, 8), (2, 3, 5, 7, 13, 11), (3, 2, 17, 33, 8, 8),
          (1, 4, 128, 128, 64, 64), (2, 2, 40, 300, 16, 16)]

# Mask shapes, from the scores' (batch, heads, seq_q, seq_k).
MASKS = {
    "none": lambda b, n, sq, sk: (),
    "keys": lambda b, n, sq, sk: (sk,),
    "queries_keys": lambda b, n, sq, sk: (sq, sk),
    "padding": lambda b, n, sq, sk: (b, 1, 1, sk),
    "per_head": lambda b, n, sq, sk: (n, sq, 1),
    "full": lambda b, n, sq, sk: (b, n, sq, sk),
}


def mask_of(kind, shape):
    dims = MASKS[kind](*shape[:4])
    return np.zeros((), np.float32) if kind == "none" else rand(*dims, scale=3.0)


@pytest.mark.parametrize("layout", ["BSNH", "SBNH"])
@pytest.mark.parametrize("mask_kind", sorted(MASKS))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_kernel_matches_the_formula(shape, mask_kind, layout):
    batch, heads, seq_q, seq_k, head_dim, value_dim = shape
    q, k, v = operands(*shape, layout)
    mask = mask_of(mask_kind, shape)
    scale = 1 / np.sqrt(head_dim)
    got = run_kernel(q, k, v, mask, heads, scale, layout)
    np.testing.assert_allclose(got, reference(q, k, v, mask, heads, scale, layout), rtol=1e-4,
                               atol=2e-6)


def test_kernel_is_stable_for_large_scores_and_masked_keys():
    """Scores in the thousands do not overflow (the row maximum is subtracted), and -inf mask
    entries, as PyTorch's causal masks have, give those keys no weight."""
    shape = (2, 2, 9, 9, 8, 8)
    q, k, v = operands(*shape, "BSNH")
    causal = np.triu(np.full((9, 9), -np.inf, np.float32), 1)
    for scale in (1.0, 300.0):
        got = run_kernel(q, k, v, causal, 2, scale, "BSNH")
        expected = reference(q, k, v, causal, 2, scale, "BSNH")
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_kernel_names_the_input_that_does_not_fit():
    q, k, v = operands(2, 2, 3, 5, 4, 4, "BSNH")
    with pytest.raises(kiln.ValueError, match=r"kernel.cpu.nn.attention: 'mask' \(3, 3\) does "
                                              r"not broadcast to the scores"):
        run_kernel(q, k, v, rand(3, 3), 2, 0.5, "BSNH")
    with pytest.raises(kiln.ValueError, match="does not split into num_heads = 3"):
        run_kernel(q, k, v, np.zeros((), np.float32), 3, 0.5, "BSNH")


@pytest.mark.skipif(os.environ.get("KILN_NUM_THREADS") == "5", reason="already the 5-thread run")
def test_kernel_with_five_threads():
    """The kernel tests again with 5 threads: fewer (batch, head) pairs than threads split the
    queries into row blocks, which one thread never does."""
    env = dict(os.environ, KILN_NUM_THREADS="5")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
         "kernel"], env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_op_compiles_and_runs():
    """nn.attention written in the IR, compiled by kiln.build: the kernel program calls the
    kernel with the Call's attributes (layout SBNH, a per-query mask)."""
    q, k, v = operands(2, 2, 3, 5, 4, 6, "SBNH")
    mask = rand(3, 5)
    mod = kiln.ir.ParseModule(
        "def @main(%q: Tensor[(3, 2, 8), float32], %k: Tensor[(5, 2, 8), float32],"
        "          %v: Tensor[(5, 2, 12), float32], %mask: Tensor[(3, 5), float32]) {"
        "  nn.attention(%q, %k, %v, %mask, num_heads=2, scale=0.5, layout=\"SBNH\")"
        "}", [])
    (got,) = kiln.build(mod).run(q=q, k=k, v=v, mask=mask)
    np.testing.assert_allclose(got, reference(q, k, v, mask, 2, 0.5, "SBNH"), rtol=1e-4,
                               atol=2e-6)


# ---- RecognizeAttention on exported models ----------------------------------------------------

class BertSelfAttention(torch.nn.Module):
    """Hugging Face BERT's self-attention, as its modeling code writes it."""

    def __init__(self, embed=32, heads=4):
        super().__init__()
        self.heads, self.head_dim = heads, embed // heads
        self.query, self.key, self.value, self.output = (torch.nn.Linear(embed, embed)
                                                         for _ in range(4))

    def forward(self, x, mask):
        batch, seq, embed = x.shape

        def split(t):
            return t.view(batch, seq, self.heads, self.head_dim).permute(0, 2, 1, 3)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / self.head_dim ** 0.5 + mask
        context = torch.matmul(torch.softmax(scores, dim=-1), v).permute(0, 2, 1, 3)
        return self.output(context.contiguous().view(batch, seq, embed))


class EncoderLayer(torch.nn.Module):
    """nn.TransformerEncoderLayer (nn.MultiheadAttention inside), with an optional src_mask."""

    def __init__(self, mask):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64,
                                                      batch_first=True)
        self.mask = mask

    def forward(self, x):
        return self.layer(x) if self.mask is None else self.layer(x, src_mask=self.mask)


def _causal(seq):
    return torch.triu(torch.full((seq, seq), float("-inf")), 1)


def _padding_mask(batch, seq):
    mask = np.zeros((batch, 1, 1, seq), np.float32)
    mask[-1, ..., -2:] = -1e4
    return mask


CASES = {
    # name: (module, inputs)
    "multihead_batch2": (lambda: EncoderLayer(None), lambda: {"x": rand(2, 6, 32)}),
    "multihead_causal_mask": (lambda: EncoderLayer(_causal(6)), lambda: {"x": rand(2, 6, 32)}),
    "multihead_batch1": (lambda: EncoderLayer(None), lambda: {"x": rand(1, 7, 32)}),
    "bert_padding_mask": (BertSelfAttention,
                          lambda: {"x": rand(2, 5, 32), "mask": _padding_mask(2, 5)}),
}


# torch.onnx traces MultiheadAttention's shape checks and says so once per check.
@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")
@pytest.mark.parametrize("case", sorted(CASES))
def test_exported_attention_becomes_one_op(case, tmp_path):
    make_module, make_inputs = CASES[case]
    torch.manual_seed(0)
    module = make_module().eval()
    inputs = make_inputs()
    path = str(tmp_path / "model.onnx")
    with torch.enable_grad():  # TransformerEncoderLayer's fused no_grad path does not export
        torch.onnx.export(module, tuple(torch.from_numpy(x) for x in inputs.values()), path,
                          opset_version=17, input_names=list(inputs))
        expected = module.double()(*(torch.from_numpy(x).double() for x in inputs.values()))
    mod = kiln.frontend.from_onnx(path)
    optimized = str(kiln.driver.default_pipeline()(mod))
    assert optimized.count("nn.attention(") == 1 and "nn.softmax" not in optimized, optimized
    (got,) = kiln.build(mod).run(**inputs)
    np.testing.assert_allclose(got, expected.detach().numpy(), rtol=1e-4, atol=1e-5)

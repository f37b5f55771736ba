"""The channel-blocked layout NCHW16c (docs/design.md §48): block_channels and unblock_channels,
nn.conv2d_nchwc against PyTorch's conv2d, and the BlockChannels pass on whole graphs."""
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import kiln
from kiln import ir, transform
from test_cpu_kernels import (_conv_case, _epilogue, _epilogue_attrs, _run_into_residual, rand,
                              run, run_prepacked)

BLOCK = 16


def blocked(x):
    """(N, C, *S) numpy array in blocks: (N, ceil(C / 16), *S, 16), zero past C."""
    n, c, *spatial = x.shape
    blocks = -(-c // BLOCK)
    padded = np.zeros((n, blocks * BLOCK, *spatial), x.dtype)
    padded[:, :c] = x
    split = padded.reshape(n, blocks, BLOCK, *spatial)
    return np.ascontiguousarray(np.moveaxis(split, 2, -1))


def unblocked(x, channels):
    n, blocks, *spatial, _ = x.shape
    return np.moveaxis(x, -1, 2).reshape(n, blocks * BLOCK, *spatial)[:, :channels]


@pytest.mark.parametrize("shape", [(1, 16, 5, 7), (2, 35, 3, 3), (1, 5, 70), (3, 48, 2, 2, 2),
                                   (1, 1, 1, 1)])
def test_block_and_unblock_channels_match_numpy(shape):
    """Channels past a multiple of 16 are padded with zeros; unblocking drops them again."""
    x = rand(*shape)
    (got,) = run("block_channels", [x], [blocked(x)])
    np.testing.assert_array_equal(got, blocked(x))
    (back,) = run("unblock_channels", [got], [x], channels=shape[1])
    np.testing.assert_array_equal(back, x)


# (N, C, H, W), (O, KH, KW), strides, padding (t, l, b, r), dilation, groups
DENSE_CASES = [
    ((1, 16, 9, 11), (16, 1, 1), [1, 1], [0, 0, 0, 0], [1, 1], 1),  # one block each way
    ((2, 35, 7, 7), (70, 1, 1), [1, 1], [0, 0, 0, 0], [1, 1], 1),  # 49 pixels as one row
    ((1, 20, 12, 13), (100, 1, 1), [2, 2], [0, 0, 0, 0], [1, 1], 1),  # 7 blocks: 4 + 3
    ((1, 32, 14, 29), (48, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1),  # edges and inner tiles
    ((1, 17, 15, 16), (33, 3, 3), [2, 2], [1, 0, 1, 2], [1, 1], 1),  # uneven padding
    ((1, 24, 11, 40), (20, 5, 3), [1, 3], [2, 1, 2, 1], [2, 1], 1),  # stride 3: every tile at edges
    ((1, 64, 6, 5), (64, 7, 7), [1, 1], [3, 3, 3, 3], [1, 1], 1),  # windows wider than the row
    ((1, 16, 30, 70), (16, 3, 3), [1, 1], [1, 1, 1, 1], [1, 2], 1),  # 24-pixel tiles, dilated
    ((1, 16, 5, 6), (20, 1, 1), [1, 1], [0, 0, 1, 2], [1, 1], 1),  # 1x1 padded at its end
]
DEPTHWISE_CASES = [
    ((1, 32, 14, 14), (32, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 32),
    ((2, 35, 17, 23), (35, 3, 3), [2, 2], [1, 1, 1, 1], [1, 1], 35),  # a last block of 3
    ((1, 16, 20, 29), (16, 5, 5), [1, 1], [2, 2, 2, 2], [1, 1], 16),
    ((1, 48, 13, 9), (48, 5, 5), [2, 2], [2, 1, 2, 3], [1, 1], 48),
    ((1, 18, 19, 19), (18, 7, 7), [1, 1], [3, 3, 3, 3], [1, 1], 18),
    ((1, 16, 12, 15), (16, 3, 3), [1, 2], [2, 2, 2, 2], [2, 3], 16),  # the runtime window
    ((1, 20, 3, 4), (20, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 20),  # no inner pixels
]


@pytest.mark.parametrize("case", DENSE_CASES + DEPTHWISE_CASES)
def test_conv2d_nchwc_matches_torch(case):
    """Weights packed per call; padded output lanes are zero (no bias, zero padded weights)."""
    x, w, ref, attrs = _conv_case(case)
    (got,) = run("nn.conv2d_nchwc", [blocked(x), w], [blocked(ref)], **attrs)
    depth = w[0].size  # sums of that many products, in another order than PyTorch's
    np.testing.assert_allclose(got, blocked(ref), rtol=1e-4, atol=1e-4 * max(1, depth / 256))


EPILOGUES = [(True, False, "relu"), (True, True, None), (False, True, "clip"),
             (True, False, "silu"), (True, True, "hardswish"), (False, False, "gelu")]


@pytest.mark.parametrize("case", [DENSE_CASES[1], DENSE_CASES[3], DEPTHWISE_CASES[1],
                                  DEPTHWISE_CASES[5]])
@pytest.mark.parametrize("has_bias,has_residual,activation", EPILOGUES)
def test_conv2d_nchwc_prepacked_with_epilogue(case, has_bias, has_residual, activation):
    """The kernel program's way: weights packed once by the prepack hook (the kernel gets a
    zeroed weight), a bias of one value per channel in blocks, a residual in blocks, and an
    activation, in the epilogue's order. Padded lanes stay zero: each activation maps 0 to 0."""
    x, w, product, attrs = _conv_case(case)
    bias = rand(w.shape[0], 1, 1) if has_bias else None
    residual = rand(*product.shape) if has_residual else None
    expected = blocked(_epilogue(product, bias, residual, activation))
    inputs = [blocked(x), w]
    if has_bias:
        inputs.append(blocked(bias[None]))  # (1, C/16, 1, 1, 16)
    if has_residual:
        inputs.append(blocked(residual))
    attrs.update(_epilogue_attrs(2, bias, residual, activation))
    run_prepacked("nn.conv2d_nchwc", inputs, expected, **attrs)


@pytest.mark.parametrize("case", [DENSE_CASES[3], DEPTHWISE_CASES[0]])
def test_conv2d_nchwc_into_its_residual(case):
    """The output in its residual's storage (design §41): each output vector reads its residual
    just before it is stored."""
    x, w, product, attrs = _conv_case(case)
    residual = rand(*product.shape)
    got = _run_into_residual("nn.conv2d_nchwc", [blocked(x), w], blocked(residual), **attrs,
                             **_epilogue_attrs(2, None, residual, "relu"))
    expected = blocked(_epilogue(product, None, residual, "relu"))
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_conv2d_nchwc_rejects_blocks_that_do_not_hold_the_channels():
    text = """
def @main(%x: Tensor[(1, 2, 8, 8, 16), float32], %w: Tensor[(8, 40, 3, 3), float32]) {
  nn.conv2d_nchwc(%x, %w)
}
"""
    with pytest.raises(kiln.TypeError, match="2 channel blocks of 'data' do not hold the 40"):
        transform.run_pipeline(ir.ParseModule(text, []), "InferType")


class InvertedResidual(torch.nn.Module):
    """MobileNetV2's block: expand 1x1, depthwise 3x3, project 1x1, and the residual; then a
    multiplication by a per-channel constant and a sigmoid, which the blocks take too."""

    def __init__(self, channels=20, expanded=40):
        super().__init__()
        self.expand = torch.nn.Conv2d(channels, expanded, 1)
        self.depthwise = torch.nn.Conv2d(expanded, expanded, 3, padding=1, groups=expanded)
        self.project = torch.nn.Conv2d(expanded, channels, 1)
        self.scale = torch.nn.Parameter(torch.rand(channels, 1, 1))

    def forward(self, x):
        y = F.relu6(self.depthwise(F.relu6(self.expand(x))))
        return torch.sigmoid((x + self.project(y)) * self.scale)


class Shuffled(torch.nn.Module):
    """Convolutions separated by channel shuffles, which do not take blocks."""

    def __init__(self, channels=32):
        super().__init__()
        self.convs = torch.nn.ModuleList(torch.nn.Conv2d(channels, channels, 1) for _ in range(3))

    def forward(self, x):
        for conv in self.convs:
            n, c, h, w = x.shape
            x = conv(x).reshape(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)
        return x


def _exported(module, shape, tmp_path):
    torch.manual_seed(0)
    module = module.eval()
    x = rand(*shape)
    path = str(tmp_path / "model.onnx")
    torch.onnx.export(module, (torch.from_numpy(x),), path, opset_version=17, input_names=["x"])
    with torch.no_grad():
        expected = module.double()(torch.from_numpy(x).double()).numpy()
    return kiln.frontend.from_onnx(path), x, expected


def _blocked_text(mod, mode):
    return str(transform.run_pipeline(mod, "InferType,SimplifyExpr,FoldConstant,BlockChannels",
                                      **{"transform.block_channels": mode}))


@pytest.mark.parametrize("mode", [1, 0])
def test_block_channels_keeps_a_chain_blocked_and_computes_the_same(mode, tmp_path):
    """Forced on, the three convolutions run blocked with one change of layout in and one out;
    the residual, the per-channel constant and the sigmoid take the blocks. Off, nothing
    changes. Both compute what PyTorch does."""
    mod, x, expected = _exported(InvertedResidual(), (2, 20, 9, 13), tmp_path)
    text = _blocked_text(mod, mode)
    counts = [len(re.findall(rf"\b{op}\(", text)) for op in
              ("nn.conv2d_nchwc", "nn.conv2d", "block_channels", "unblock_channels")]
    assert counts == ([3, 0, 1, 1] if mode else [0, 3, 0, 0]), text
    (got,) = kiln.build(mod, pass_context={"transform.block_channels": mode}).run(x=x)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_block_channels_leaves_convolutions_between_layout_changes_alone(tmp_path):
    """By default a graph that would change layout around every convolution keeps NCHW;
    forced on, it is blocked (and still right)."""
    mod, x, expected = _exported(Shuffled(), (1, 32, 6, 6), tmp_path)
    assert "nn.conv2d_nchwc(" not in _blocked_text(mod, -1)
    assert _blocked_text(mod, 1).count("nn.conv2d_nchwc(") == 3
    (got,) = kiln.build(mod, pass_context={"transform.block_channels": 1}).run(x=x)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


class SqueezeExcitation(torch.nn.Module):
    """EfficientNet's gate: a global average, a convolution down to 4 channels and one back up,
    and the product of the input with its sigmoid."""

    def __init__(self, channels=24):
        super().__init__()
        self.conv = torch.nn.Conv2d(channels, channels, 3, padding=1, groups=channels)
        self.reduce = torch.nn.Conv2d(channels, 4, 1)
        self.expand = torch.nn.Conv2d(4, channels, 1)

    def forward(self, x):
        y = self.conv(x)
        gate = torch.sigmoid(self.expand(F.silu(self.reduce(y.mean((2, 3), keepdim=True)))))
        return y * gate


def test_block_channels_takes_a_squeeze_excitation_whole(tmp_path):
    """The average over the plane is a mean over the blocked plane, and the convolution of 4
    channels reads them blocked: nothing changes layout between the first block and the last
    unblock."""
    mod, x, expected = _exported(SqueezeExcitation(), (2, 24, 11, 9), tmp_path)
    text = _blocked_text(mod, 1)
    counts = [len(re.findall(rf"\b{op}\(", text)) for op in
              ("nn.conv2d_nchwc", "mean", "block_channels", "unblock_channels")]
    assert counts == [3, 1, 1, 1], text
    (got,) = kiln.build(mod, pass_context={"transform.block_channels": 1}).run(x=x)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)

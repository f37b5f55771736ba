"""The dnnl plugin (oneDNN) end to end: every op and fused pattern it takes, built with
``kiln.build(..., plugins=["dnnl"])``, against PyTorch (an independent reference) and against
Kiln's own CPU path; the reasons its predicates give; the placement report of a small conv net;
and an exported model reloaded in a process that has only the runtime."""

import os
import re
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import kiln
from conftest import load_built_plugin
from kiln import transform

RNG = np.random.default_rng(11)
RTOL, ATOL = 1e-4, 1e-4


@pytest.fixture(scope="module", autouse=True)
def dnnl():
    load_built_plugin("dnnl")


def randn(*shape):
    return RNG.standard_normal(shape).astype("float32")


def ttype(array):
    return f"Tensor[({', '.join(map(str, array.shape))}), {array.dtype}]"


def module(body, inputs, constants=()):
    """@main(inputs...) { body } with `meta[Constant][i]` standing for constants[i]."""
    params = ", ".join(f"%{name}: {ttype(value)}" for name, value in inputs.items())
    text = f"def @main({params}) {{\n{body}\n}}"
    return transform.InferType()(kiln.ir.ParseModule(text, [kiln.tensor(c) for c in constants]))


def placements(report):
    """{(target, op): count} from the report's per-op lines."""
    found = {}
    for target, op, count in re.findall(r"^  (\S+)\s+(\S+) x(\d+)", report, re.M):
        found[(target, op)] = found.get((target, op), 0) + int(count)
    return found


def run_both(body, inputs, constants=()):
    """(dnnl output, CPU output, placement report) of the model."""
    mod = module(body, inputs, constants)
    cpu = kiln.build(mod).run(**inputs)
    built = kiln.build(mod, plugins=["dnnl"], report=True)
    return built.run(**inputs), cpu, built.placement_report


def check(body, inputs, expected, constants=(), ops_on_dnnl=None, pattern=None, atol=ATOL):
    """Builds `body`, requires every op (or `ops_on_dnnl`) on dnnl and `pattern` among the
    composites, and compares with `expected` (PyTorch) and with Kiln's CPU path."""
    got, cpu, report = run_both(body, inputs, constants)
    found = placements(report)
    assert not [key for key in found if key[0] == "host"], report
    for op in ops_on_dnnl or ():
        assert ("dnnl", op) in found, report
    if pattern is not None:
        assert f"in pattern {pattern}\n" in report, report
    np.testing.assert_allclose(got[0], expected, rtol=RTOL, atol=atol)
    np.testing.assert_allclose(got[0], cpu[0], rtol=RTOL, atol=atol)


def torch_of(*arrays):
    return [torch.from_numpy(a.astype("float64")) for a in arrays]


def np_of(tensor):
    return tensor.numpy().astype("float32")


def ints(values):
    return "[" + ", ".join(map(str, values)) + "]"


# ---- convolution ----

CONVS = [
    # data shape, weight shape, strides, padding (top, left, bottom, right), dilation, groups
    ((2, 3, 9, 9), (8, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ((1, 4, 10, 7), (6, 4, 3, 2), (2, 1), (0, 1, 2, 0), (1, 1), 1),  # asymmetric padding
    ((1, 4, 11, 11), (4, 4, 3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 1),  # dilation
    ((2, 8, 8, 8), (8, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 8),  # depthwise
    ((1, 6, 7, 7), (9, 2, 1, 3), (1, 2), (0, 1, 0, 1), (1, 1), 3),  # grouped
    ((1, 16, 14, 14), (32, 16, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),  # 1x1, blocked sizes
]


def torch_conv(x, w, strides, padding, dilation, groups):
    tx, tw = torch_of(x, w)
    tx = F.pad(tx, (padding[1], padding[3], padding[0], padding[2]))
    return F.conv2d(tx, tw, stride=strides, dilation=dilation, groups=groups)


def conv_call(data, strides, padding, dilation, groups):
    return (f"nn.conv2d({data}, meta[Constant][0], strides={ints(strides)}, "
            f"padding={ints(padding)}, dilation={ints(dilation)}, groups={groups})")


@pytest.mark.parametrize("case", CONVS, ids=lambda c: f"{c[0]}x{c[1]}g{c[5]}")
def test_conv2d_matches_pytorch(case):
    shape, wshape, strides, padding, dilation, groups = case
    x, w = randn(*shape), randn(*wshape)
    want = np_of(torch_conv(x, w, strides, padding, dilation, groups))
    check(conv_call("%x", strides, padding, dilation, groups), {"x": x}, want, [w],
          ops_on_dnnl=["nn.conv2d"])


@pytest.mark.parametrize("case", CONVS[2:4], ids=lambda c: f"g{c[5]}")
@pytest.mark.parametrize("activation", ["relu", "clip", "sigmoid", "tanh", "gelu", "leaky_relu"])
def test_conv2d_bias_activation_is_one_fused_primitive(case, activation):
    shape, wshape, strides, padding, dilation, groups = case
    x, w, b = randn(*shape), randn(*wshape), randn(1, wshape[0], 1, 1)
    conv = torch_conv(x, w, strides, padding, dilation, groups) + torch_of(b)[0]
    calls = {"relu": ("nn.relu(%1)", F.relu), "clip": ("clip(%1, a_min=0.0, a_max=6.0)",
                                                       lambda t: t.clamp(0, 6)),
             "sigmoid": ("sigmoid(%1)", torch.sigmoid), "tanh": ("tanh(%1)", torch.tanh),
             "gelu": ("nn.gelu(%1)", F.gelu),
             "leaky_relu": ("nn.leaky_relu(%1, alpha=0.1)", lambda t: F.leaky_relu(t, 0.1))}
    text, reference = calls[activation]
    body = (f"%0 = {conv_call('%x', strides, padding, dilation, groups)};\n"
            f"%1 = add(%0, meta[Constant][1]);\n{text}")
    check(body, {"x": x}, np_of(reference(conv)), [w, b],
          pattern=f"dnnl.conv2d_bias_{activation}")


@pytest.mark.parametrize("bias_first", [False, True])
@pytest.mark.parametrize("residual_first", [False, True])
def test_conv2d_bias_residual_relu_uses_the_sum_post_op(residual_first, bias_first):
    x, r = randn(1, 8, 6, 6), randn(1, 16, 6, 6)
    w, b = randn(16, 8, 3, 3), randn(1, 16, 1, 1)
    want = F.relu(torch_conv(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1) + torch_of(b)[0]
                  + torch_of(r)[0])
    summed = "add(%r, %1)" if residual_first else "add(%1, %r)"
    biased = "add(meta[Constant][1], %0)" if bias_first else "add(%0, meta[Constant][1])"
    body = (f"%0 = {conv_call('%x', (1, 1), (1, 1, 1, 1), (1, 1), 1)};\n"
            f"%1 = {biased};\n%2 = {summed};\nnn.relu(%2)")
    name = ("dnnl.conv2d" + ("_lbias" if bias_first else "_bias")
            + ("_lsum" if residual_first else "_sum") + "_relu")
    check(body, {"x": x, "r": r}, np_of(want), [w, b], pattern=name)


def test_residual_is_added_in_place_only_when_nothing_reads_it_later():
    """b is read by its add only (the sum post-op writes over it); e is read again by the
    multiply after its add (it must be copied, not overwritten)."""
    x = randn(1, 8, 6, 6)
    w = [randn(8, 8, 3, 3) for _ in range(5)]
    tw = torch_of(*w)
    conv = lambda t, i: F.conv2d(t, tw[i], padding=1)  # noqa: E731
    tx = torch_of(x)[0]
    b, e = conv(tx, 1), conv(tx, 3)
    summed = conv(F.relu(conv(tx, 0)), 2) + b
    want = (conv(summed, 4) + e) * e
    c = lambda data, i: f"nn.conv2d({data}, meta[Constant][{i}], padding=[1, 1, 1, 1])"  # noqa
    body = (f"%0 = {c('%x', 0)};\n%1 = nn.relu(%0);\n%2 = {c('%x', 1)};\n%3 = {c('%1', 2)};\n"
            f"%4 = add(%3, %2);\n%5 = {c('%x', 3)};\n%6 = {c('%4', 4)};\n%7 = add(%6, %5);\n"
            "multiply(%7, %5)")
    check(body, {"x": x}, np_of(want), w, pattern="dnnl.conv2d_sum", atol=1e-3)


def test_a_conv_chain_stays_in_one_region_and_writes_plain_outputs():
    """Two convolutions, a pool and an intermediate that is also a result: blocked layouts
    inside the region, every result row-major."""
    x, w1, w2 = randn(2, 8, 12, 12), randn(16, 8, 3, 3), randn(16, 16, 3, 3)
    body = (f"%0 = {conv_call('%x', (1, 1), (1, 1, 1, 1), (1, 1), 1)};\n"
            "%1 = nn.relu(%0);\n"
            "%2 = nn.conv2d(%1, meta[Constant][1], padding=[1, 1, 1, 1]);\n"
            "%3 = nn.max_pool2d(%2, pool_size=[2, 2], strides=[2, 2]);\n(%3, %1)")
    mod = module(body, {"x": x}, [w1, w2])
    built = kiln.build(mod, plugins=["dnnl"], report=True)
    assert "dnnl      4 op calls in 1 function(s)" in built.placement_report
    pooled, relu = built.run(x=x)
    t1 = F.relu(torch_conv(x, w1, (1, 1), (1, 1, 1, 1), (1, 1), 1))
    t3 = F.max_pool2d(F.conv2d(t1, torch_of(w2)[0], padding=1), 2)
    np.testing.assert_allclose(relu, np_of(t1), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(pooled, np_of(t3), rtol=RTOL, atol=ATOL)


# ---- dense and matrix products ----

@pytest.mark.parametrize("data_shape", [(4, 32), (2, 5, 32)])
def test_dense_bias_gelu_and_plain_dense(data_shape):
    x, w, b = randn(*data_shape), randn(24, 32), randn(24)
    tx, tw, tb = torch_of(x, w, b)
    check("nn.dense(%x, meta[Constant][0])", {"x": x}, np_of(tx @ tw.T), [w],
          ops_on_dnnl=["nn.dense"])
    check("%0 = nn.dense(%x, meta[Constant][0]);\n%1 = add(%0, meta[Constant][1]);\nnn.gelu(%1)",
          {"x": x}, np_of(F.gelu(tx @ tw.T + tb)), [w, b], pattern="dnnl.dense_bias_gelu")


def test_dense_with_a_weight_given_at_run_time():
    x, w = randn(3, 16), randn(8, 16)
    check("nn.dense(%x, %w)", {"x": x, "w": w}, x @ w.T, ops_on_dnnl=["nn.dense"])


@pytest.mark.parametrize("lhs,rhs", [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)),
                                     ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 6))])
def test_matmul_broadcasts_batch_dimensions(lhs, rhs):
    a, b = randn(*lhs), randn(*rhs)
    check("matmul(%a, %b)", {"a": a, "b": b}, np.matmul(a, b), ops_on_dnnl=["matmul"])


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_batch_matmul_transposes(transpose_a, transpose_b):
    a = randn(2, 5, 3) if transpose_a else randn(2, 3, 5)
    b = randn(1, 4, 5) if transpose_b else randn(1, 5, 4)
    ta, tb = torch_of(a, b)
    want = (ta.transpose(1, 2) if transpose_a else ta) @ (tb.transpose(1, 2) if transpose_b else tb)
    flag = lambda v: "true" if v else "false"  # noqa: E731
    check(f"nn.batch_matmul(%a, %b, transpose_a={flag(transpose_a)}, "
          f"transpose_b={flag(transpose_b)})", {"a": a, "b": b}, np_of(want),
          ops_on_dnnl=["nn.batch_matmul"])


def test_matmul_with_a_constant_rhs_fuses_bias_and_residual():
    """The dense layers of an ONNX transformer are MatMul + Add: one primitive on dnnl."""
    x, r, w, b = randn(2, 5, 16), randn(2, 5, 8), randn(16, 8), randn(8)
    body = "%0 = matmul(%x, meta[Constant][0]);\n%1 = add(meta[Constant][1], %0);\nadd(%r, %1)"
    check(body, {"x": x, "r": r}, x @ w + b + r, [w, b], pattern="dnnl.matmul_lbias_lsum")


# ---- pooling ----

POOLS = [
    # kernel, strides, padding, ceil_mode, count_include_pad
    ((2, 2), (2, 2), (0, 0, 0, 0), False, False),
    ((3, 3), (2, 2), (1, 1, 1, 1), False, False),
    ((3, 3), (2, 2), (1, 1, 1, 1), False, True),
    ((3, 3), (2, 2), (0, 0, 0, 0), True, False),
    ((3, 2), (2, 3), (1, 0, 1, 0), True, False),
    ((2, 2), (2, 2), (1, 1, 1, 1), True, True),  # the last window starts in the padding
]


@pytest.mark.parametrize("kind,pool", [("avg", p) for p in POOLS] +
                         [("max", p) for p in POOLS if not p[4]], ids=str)
def test_pool2d_matches_pytorch(kind, pool):
    kernel, strides, padding, ceil_mode, include_pad = pool
    x = randn(2, 8, 10, 9)
    attrs = (f"pool_size={ints(kernel)}, strides={ints(strides)}, padding={ints(padding)}, "
             f"ceil_mode={'true' if ceil_mode else 'false'}")
    tx = torch_of(x)[0]
    if kind == "max":
        want = F.max_pool2d(tx, kernel, strides, padding[:2], ceil_mode=ceil_mode)
        body = f"nn.max_pool2d(%x, {attrs})"
    else:
        want = F.avg_pool2d(tx, kernel, strides, padding[:2], ceil_mode=ceil_mode,
                            count_include_pad=include_pad)
        body = f"nn.avg_pool2d(%x, {attrs}, count_include_pad={'true' if include_pad else 'false'})"
    check(body, {"x": x}, np_of(want), ops_on_dnnl=[f"nn.{kind}_pool2d"])


def test_dilated_max_pool2d_matches_pytorch():
    x = randn(1, 4, 12, 12)
    want = F.max_pool2d(torch_of(x)[0], 3, 1, 1, dilation=2)
    check("nn.max_pool2d(%x, pool_size=[3, 3], padding=[1, 1, 1, 1], dilation=[2, 2])",
          {"x": x}, np_of(want), ops_on_dnnl=["nn.max_pool2d"])


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_global_pool2d_matches_pytorch(kind):
    x = randn(2, 16, 7, 5)
    tx = torch_of(x)[0]
    want = tx.amax(dim=(2, 3), keepdim=True) if kind == "max" else tx.mean(dim=(2, 3), keepdim=True)
    check(f"nn.global_{kind}_pool2d(%x)", {"x": x}, np_of(want),
          ops_on_dnnl=[f"nn.global_{kind}_pool2d"])


# ---- elementwise, binary, normalization ----

UNARY = {
    "nn.relu(%x)": F.relu, "sigmoid(%x)": torch.sigmoid, "tanh(%x)": torch.tanh,
    "exp(%x)": torch.exp, "log(abs(%x))": lambda t: torch.log(torch.abs(t)),
    "sqrt(abs(%x))": lambda t: torch.sqrt(torch.abs(t)),
    "clip(%x, a_min=-0.5, a_max=0.7)": lambda t: t.clamp(-0.5, 0.7),
    "nn.leaky_relu(%x, alpha=0.2)": lambda t: F.leaky_relu(t, 0.2),
    "nn.elu(%x, alpha=0.5)": lambda t: F.elu(t, 0.5), "nn.gelu(%x)": F.gelu,
    "nn.softplus(%x)": F.softplus, "nn.silu(%x)": F.silu, "nn.hardswish(%x)": F.hardswish,
}


@pytest.mark.parametrize("text", list(UNARY), ids=lambda t: t.split("(")[0])
def test_eltwise_matches_pytorch(text):
    x = randn(2, 3, 4, 5)
    check(text, {"x": x}, np_of(UNARY[text](torch_of(x)[0])))


BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
          "divide": np.divide, "maximum": np.maximum, "minimum": np.minimum}


@pytest.mark.parametrize("op", list(BINARY))
@pytest.mark.parametrize("rhs_shape", [(2, 8, 4, 4), (1, 8, 1, 1), (4,), ()], ids=str)
def test_binary_broadcasts_its_rhs(op, rhs_shape):
    x = randn(2, 8, 4, 4)
    y = randn(*rhs_shape) + (3.0 if op == "divide" else 0.0)
    check(f"{op}(%x, %y)", {"x": x, "y": np.asarray(y, "float32")}, BINARY[op](x, y))


def test_binary_inside_a_blocked_region_reads_a_constant_per_channel():
    """A conv's blocked output multiplied by a per-channel constant, then added to itself."""
    x, w, s = randn(1, 8, 6, 6), randn(16, 8, 1, 1), randn(1, 16, 1, 1)
    conv = F.conv2d(*torch_of(x, w))
    want = conv * torch_of(s)[0] + conv
    body = ("%0 = nn.conv2d(%x, meta[Constant][0]);\n%1 = multiply(%0, meta[Constant][1]);\n"
            "add(%1, %0)")
    check(body, {"x": x}, np_of(want), [w, s], ops_on_dnnl=["multiply", "add"])


def test_commutative_binary_swaps_a_broadcast_lhs():
    x, y = randn(8, 1), randn(3, 8, 5)
    check("add(%x, %y)", {"x": x, "y": y}, x + y)


@pytest.mark.parametrize("axis", [-1, 1, 0])
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_matches_pytorch(op, axis):
    x = randn(3, 6, 5)
    fn = F.softmax if op == "softmax" else F.log_softmax
    check(f"nn.{op}(%x, axis={axis})", {"x": x}, np_of(fn(torch_of(x)[0], dim=axis)))


def test_layer_norm_matches_pytorch():
    x, g, b = randn(2, 7, 16), randn(16), randn(16)
    want = F.layer_norm(*torch_of(x), (16,), *torch_of(g, b), eps=1e-5)
    check("nn.layer_norm(%x, %g, %b)", {"x": x, "g": g, "b": b}, np_of(want))


def test_batch_norm_with_run_time_statistics_matches_pytorch():
    """Parameters given at run time cannot be folded away, so the batch norm itself runs."""
    x, g, b, m = randn(2, 8, 5, 5), randn(8), randn(8), randn(8)
    v = np.abs(randn(8)) + 0.5
    want = F.batch_norm(*torch_of(x, m, v), *torch_of(g, b), training=False, eps=1e-3)
    check("nn.batch_norm(%x, %g, %b, %m, %v, epsilon=0.001)",
          {"x": x, "g": g, "b": b, "m": m, "v": v}, np_of(want), ops_on_dnnl=["nn.batch_norm"])


@pytest.mark.parametrize("axes", [None, (0, 2, 1, 3), (3, 1, 0, 2)], ids=str)
def test_transpose_and_reshape_between_dnnl_ops(axes):
    """A transpose is a reorder and a reshape a view, so a region is not cut there; a blocked
    conv output is made row-major before either."""
    x, w = randn(2, 3, 6, 5), randn(8, 3, 3, 3)
    conv = F.conv2d(*torch_of(x, w), padding=1)
    moved = conv.permute(*(axes or (3, 2, 1, 0)))
    attr = "" if axes is None else f", axes={ints(axes)}"
    body = (f"%0 = nn.conv2d(%x, meta[Constant][0], padding=[1, 1, 1, 1]);\n"
            f"%1 = transpose(%0{attr});\n%2 = reshape(%1, newshape=[-1, 40]);\nnn.relu(%2)")
    want = F.relu(moved.reshape(-1, 40))
    got, cpu, report = run_both(body, {"x": x}, [w])
    assert "dnnl      4 op calls in 1 function(s)" in report, report
    np.testing.assert_allclose(got[0], np_of(want), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(got[0], cpu[0], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("channels", [(16, 32), (3, 5)], ids=str)
def test_concatenate_of_conv_outputs_and_of_plain_inputs(channels):
    """Channels of two blocked conv outputs (SqueezeNet's fire modules), then a plain concat
    along the last axis with a region input."""
    x, y = randn(1, 8, 5, 5), randn(1, sum(channels), 5, 2)
    w1, w2 = randn(channels[0], 8, 1, 1), randn(channels[1], 8, 3, 3)
    tx = torch_of(x)[0]
    joined = torch.cat([F.conv2d(tx, torch_of(w1)[0]), F.conv2d(tx, torch_of(w2)[0], padding=1)], 1)
    want = torch.cat([joined, torch_of(y)[0]], 3)
    body = ("%0 = nn.conv2d(%x, meta[Constant][0]);\n"
            "%1 = nn.conv2d(%x, meta[Constant][1], padding=[1, 1, 1, 1]);\n"
            "%2 = concatenate((%0, %1), axis=1);\nconcatenate((%2, %y), axis=-1)")
    check(body, {"x": x, "y": y}, np_of(want), [w1, w2], ops_on_dnnl=["concatenate"])


@pytest.mark.parametrize("begin,end,axes", [([0], [256], [-1]), ([1, -3], [3, 100], [0, 2]),
                                           ([2], [4], None)], ids=str)
def test_strided_slice_with_unit_steps(begin, end, axes):
    x = randn(4, 6, 8)
    slices = [slice(None)] * 3
    for i, axis in enumerate(axes if axes is not None else range(len(begin))):
        slices[axis] = slice(begin[i], end[i])
    attr = "" if axes is None else f", axes={ints(axes)}"
    body = f"%0 = strided_slice(%x, begin={ints(begin)}, end={ints(end)}{attr});\nnn.relu(%0)"
    check(body, {"x": x}, np.maximum(x[tuple(slices)], 0), ops_on_dnnl=["strided_slice"])


def test_exported_gelu_becomes_one_gelu_eltwise():
    """x * (erf(x / sqrt(2)) + 1) * 0.5, as torch.onnx writes GELU."""
    x = randn(3, 40)
    body = ("%0 = divide(%x, const(float32, (), [1.41421354]));\n%1 = erf(%0);\n"
            "%2 = add(%1, const(float32, (), [1]));\n"
            "%3 = multiply(%x, %2);\nmultiply(%3, const(float32, (), [0.5]))")
    check(body, {"x": x}, np_of(F.gelu(torch_of(x)[0])), pattern="dnnl.gelu_erf")


def test_a_reshaped_input_returned_as_is_is_copied_out():
    x = randn(4, 6)
    check("%0 = reshape(%x, newshape=[2, 12]);\n(%0, nn.relu(%0))", {"x": x}, x.reshape(2, 12))


# ---- what the plugin declines, and why ----

def answer(text, inputs):
    call = module(text, inputs)["main"].body
    op = call.op.name
    return kiln.ir.op_attrs(op)["target.dnnl"](call)


def test_predicates_say_why_they_decline():
    x = np.zeros((2, 3, 4), "float32")
    assert answer("nn.relu(%x)", {"x": x}) is True
    assert answer("nn.relu(%x)", {"x": x.astype("float64")}) == "argument 0 is float64, not float32"
    assert answer("nn.layer_norm(%x, %g, %b, axis=1)",
                  {"x": x, "g": np.zeros((3, 4), "float32"), "b": np.zeros((3, 4), "float32")}) \
        == "axis 1 is not the last; oneDNN normalizes the last only"
    assert answer("subtract(%y, %x)", {"x": x, "y": np.zeros((4,), "float32")}) \
        == "lhs is broadcast; oneDNN broadcasts the second source only"
    assert answer("nn.avg_pool2d(%x, pool_size=[2, 2], strides=[2, 2], padding=[0, 0, 0, 0], "
                  "ceil_mode=true, count_include_pad=true)",
                  {"x": np.zeros((1, 1, 5, 5), "float32")}).startswith(
        "count_include_pad with a ceil_mode window past the padding")
    assert answer("matmul(%a, %b)", {"a": np.zeros((4,), "float32"),
                                     "b": np.zeros((4, 3), "float32")}) \
        == "lhs has rank 1; oneDNN takes 2 to 12"
    assert answer("strided_slice(%x, begin=[0], end=[4], strides=[2])", {"x": x}) \
        == "a step of 2; oneDNN slices with step 1"


# ---- a small conv net: placement, export, runtime-only reload ----

NET = """
%0 = nn.conv2d(%x, meta[Constant][0], padding=[1, 1, 1, 1]);
%1 = add(%0, meta[Constant][1]);
%2 = nn.relu(%1);
%3 = nn.max_pool2d(%2, pool_size=[2, 2], strides=[2, 2]);
%4 = nn.conv2d(%3, meta[Constant][2], padding=[1, 1, 1, 1], groups=8);
%5 = add(%4, %3);
%6 = nn.global_avg_pool2d(%5);
%7 = reshape(%6, newshape=[2, 8]);
%8 = nn.dense(%7, meta[Constant][3]);
nn.softmax(%8)
"""


def net():
    consts = [randn(8, 3, 3, 3), randn(1, 8, 1, 1), randn(8, 1, 3, 3), randn(10, 8)]
    return module(NET, {"x": randn(2, 3, 8, 8)}, consts), consts


def torch_net(x, consts):
    w1, b1, w2, w3 = torch_of(*consts)
    t = F.max_pool2d(F.relu(F.conv2d(torch_of(x)[0], w1, padding=1) + b1), 2)
    t = F.conv2d(t, w2, padding=1, groups=8) + t
    return np_of(F.softmax(t.mean(dim=(2, 3)) @ w3.T, dim=-1))


def test_placement_report_of_a_conv_net_puts_conv_dense_pool_on_dnnl():
    mod, consts = net()
    built = kiln.build(mod, plugins=["dnnl"], report=True)
    found = placements(built.placement_report)
    for op in ("nn.conv2d", "nn.dense", "nn.max_pool2d", "nn.global_avg_pool2d", "nn.softmax"):
        assert ("dnnl", op) in found, built.placement_report
    assert not [key for key in found if key[0] == "host"], built.placement_report
    assert "in pattern dnnl.conv2d_bias_relu" in built.placement_report
    assert "in pattern dnnl.conv2d_sum" in built.placement_report
    x = randn(2, 3, 8, 8)
    np.testing.assert_allclose(built.run(x=x)[0], torch_net(x, consts), rtol=RTOL, atol=1e-6)


def test_a_module_initialized_on_one_thread_runs_on_others():
    """Primitives are made on the first caller's thread; other threads run them (the plan owns
    their scratchpad, so none is tied to a thread)."""
    mod, consts = net()
    built = kiln.build(mod, plugins=["dnnl"])
    inputs = [randn(2, 3, 8, 8) for _ in range(4)]
    results = [None] * len(inputs)
    built.run(x=inputs[0])

    def run(i):
        results[i] = built.run(x=inputs[i])[0]

    for i in range(len(inputs)):
        worker = threading.Thread(target=run, args=(i,))
        worker.start()
        worker.join()
    for x, got in zip(inputs, results):
        np.testing.assert_allclose(got, torch_net(x, consts), rtol=RTOL, atol=1e-6)


VERBOSE_RUN = textwrap.dedent(
    """
    import ctypes
    import sys
    import numpy as np
    import kiln
    from kiln import transform

    kiln.load_plugin(sys.argv[1])
    rng = np.random.default_rng(0)
    text = (
        "def @main(%x: Tensor[(1, 16, 14, 14), float32]) {"
        "  %0 = nn.conv2d(%x, meta[Constant][0], padding=[1, 1, 1, 1]);"
        "  %1 = nn.relu(%0);"
        "  %2 = nn.conv2d(%1, meta[Constant][1], padding=[1, 1, 1, 1]);"
        "  nn.max_pool2d(%2, pool_size=[2, 2], strides=[2, 2]) }")
    weights = [rng.standard_normal(s).astype("float32") for s in ((32, 16, 3, 3), (32, 32, 3, 3))]
    mod = transform.InferType()(kiln.ir.ParseModule(text, [kiln.tensor(w) for w in weights]))
    model = kiln.build(mod, plugins=["dnnl"])
    gomp = ctypes.CDLL("libgomp.so.1")
    before = gomp.omp_get_max_threads()
    x = np.ones((1, 16, 14, 14), "float32")
    model.run(x=x)
    print("=== second run", flush=True)
    model.run(x=x)
    print("=== omp threads", before, gomp.omp_get_max_threads(), flush=True)
    """
)


def verbose_run(tmp_path):
    """stdout of VERBOSE_RUN with oneDNN's verbose mode on, KILN_NUM_THREADS=2 and
    OMP_NUM_THREADS=3."""
    script = tmp_path / "verbose_run.py"
    script.write_text(VERBOSE_RUN)
    env = dict(os.environ, ONEDNN_VERBOSE="1", KILN_NUM_THREADS="2", OMP_NUM_THREADS="3")
    run = subprocess.run([sys.executable, str(script), os.environ["KILN_DNNL_PLUGIN"]],
                         capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_onednn_runs_on_kilns_thread_count_and_restores_the_callers(tmp_path):
    out = verbose_run(tmp_path)
    assert "runtime:OpenMP,nthr:2" in out, out
    assert "=== omp threads 3 3" in out, out


def test_a_region_reorders_only_at_its_boundary(tmp_path):
    """conv -> relu -> conv -> pool in one region: one reorder in, one out, none between, and
    the convolutions write a layout of oneDNN's choosing."""
    second = verbose_run(tmp_path).split("=== second run")[1].split("=== omp")[0]
    executed = [line.split(",")[3] for line in second.splitlines()
                if line.startswith("onednn_verbose,exec")]
    assert executed == ["reorder", "convolution", "convolution", "pooling_v2", "reorder"], second
    conv_dst = re.findall(r"convolution,.* dst_f32::blocked:(\w+):", second)
    assert conv_dst and "abcd" not in conv_dst, second


RELOAD = textwrap.dedent(
    """
    import sys
    import numpy as np
    import kiln

    model = kiln.load_module(sys.argv[1])
    x = np.load(sys.argv[2])
    np.save(sys.argv[3], model.run(x=x)[0])
    maps = open("/proc/self/maps").read()
    assert "/libkiln.so" not in maps, "the compiler was loaded"
    assert "libkiln_runtime_dnnl.so" in maps
    """
)


def test_exported_net_runs_in_a_process_with_only_the_runtime(tmp_path):
    mod, consts = net()
    built = kiln.build(mod, plugins=["dnnl"])
    artifact = tmp_path / "net.so"
    built.export_library(str(artifact))
    x = randn(2, 3, 8, 8)
    np.save(tmp_path / "x.npy", x)
    (tmp_path / "reload.py").write_text(RELOAD)
    env = {k: v for k, v in os.environ.items()
           if k not in ("KILN_PLUGIN_PATH", "KILN_RUNTIME_PATH")}
    run = subprocess.run([sys.executable, str(tmp_path / "reload.py"), str(artifact),
                          str(tmp_path / "x.npy"), str(tmp_path / "y.npy")],
                         capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    reloaded = np.load(tmp_path / "y.npy")
    np.testing.assert_allclose(reloaded, torch_net(x, consts), rtol=RTOL, atol=1e-6)
    np.testing.assert_array_equal(reloaded, built.run(x=x)[0])

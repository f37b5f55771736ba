"""CPU kernels (libkiln_kernels_cpu.so): each `kernel.cpu.<op>` against numpy or PyTorch, on
random data with odd sizes (not multiples of the GEMM blocks), broadcasting and strides."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import kiln
from kiln._lib import load_kiln_library

torch = pytest.importorskip("torch")
F = torch.nn.functional

# The runtime side alone (no compiler) must provide the kernels.
_load_error = load_kiln_library("kiln_kernels_cpu")
if _load_error:
    pytest.fail(f"libkiln_kernels_cpu.so did not load: {_load_error}", pytrace=False)

RNG = np.random.default_rng(1234)

# Attribute defaults of the ops' schemas (docs/ops.md): kernels get normalized attributes.
DEFAULTS = {
    "nn.leaky_relu": {"alpha": 0.01},
    "nn.elu": {"alpha": 1.0},
    "nn.hard_sigmoid": {"alpha": 0.2, "beta": 0.5},
    "clip": {"a_min": float("-inf"), "a_max": float("inf")},
    "transpose": {"axes": None},
    "concatenate": {"axis": 0},
    "split": {"axis": 0},
    "strided_slice": {"axes": None, "strides": None},
    "take": {"axis": 0},
    "mod": {"fmod": False},
    "gather_elements": {"axis": 0},
    "scatter_elements": {"axis": 0, "reduction": "none"},
    "gather_nd": {"batch_dims": 0},
    "scatter_nd": {"reduction": "none"},
    "cumsum": {"axis": 0, "exclusive": False, "reverse": False},
    "topk": {"axis": -1, "largest": True},
    "image.grid_sample": {"method": "bilinear", "padding_mode": "zeros", "align_corners": False},
    "nn.batch_matmul": {"transpose_a": False, "transpose_b": False},
    "sum": {"axis": None, "keepdims": True},
    "argmax": {"axis": 0, "keepdims": True},
    "nn.conv2d": {"strides": [1, 1], "padding": [0, 0, 0, 0], "dilation": [1, 1], "groups": 1},
    "nn.conv2d_transpose": {
        "strides": [1, 1],
        "padding": [0, 0, 0, 0],
        "output_padding": [0, 0],
        "dilation": [1, 1],
        "groups": 1,
    },
    "nn.max_pool2d": {
        "strides": [1, 1],
        "padding": [0, 0, 0, 0],
        "dilation": [1, 1],
        "ceil_mode": False,
    },
    "nn.softmax": {"axis": -1},
    "nn.batch_norm": {"axis": 1, "epsilon": 1e-5},
    "nn.layer_norm": {"axis": -1, "epsilon": 1e-5},
    "nn.pad": {"mode": "constant", "pad_value": 0.0},
    "image.resize2d": {
        "method": "nearest",
        "coordinate_transformation_mode": "half_pixel",
        "rounding_method": "round_prefer_floor",
        "cubic_alpha": -0.75,
        "cubic_exclude": False,
        "scales": None,
    },
}
for _op, _base in [("mean", "sum"), ("max", "sum"), ("min", "sum"), ("prod", "sum"),
                   ("argmin", "argmax"), ("nn.avg_pool2d", "nn.max_pool2d"),
                   ("nn.log_softmax", "nn.softmax")]:
    DEFAULTS[_op] = dict(DEFAULTS[_base])
DEFAULTS["nn.avg_pool2d"]["count_include_pad"] = False


def run(op, inputs, outputs_like, **attrs):
    """Runs kernel.cpu.<op> on numpy `inputs` into outputs shaped and typed like
    `outputs_like`; returns the outputs as numpy arrays."""
    kernel = kiln.get_global_func("kernel.cpu." + op)
    args = [kiln.tensor(np.ascontiguousarray(x)) for x in inputs]
    outs = [kiln.empty(list(ref.shape), str(ref.dtype)) for ref in outputs_like]
    kernel(args, outs, {**DEFAULTS.get(op, {}), **attrs})
    return [out.numpy().copy() for out in outs]


def check(op, inputs, expected, rtol=1e-5, atol=1e-6, **attrs):
    expected = np.asarray(expected)
    (got,) = run(op, inputs, [expected], **attrs)
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


def rand(*shape, dtype=np.float32, low=-2.0, high=2.0):
    if np.issubdtype(dtype, np.integer):
        return RNG.integers(int(low) - 3, int(high) + 4, size=shape).astype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) < 0.5
    return RNG.uniform(low, high, size=shape).astype(dtype)


def t(x):
    return torch.from_numpy(np.ascontiguousarray(x))


# ---- elementwise ----------------------------------------------------------------------------

def _erf(x):
    return torch.erf(t(x)).numpy()


UNARY = {
    "negative": np.negative,
    "abs": np.abs,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "reciprocal": lambda x: 1 / x,
    "erf": _erf,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.round,
    "sign": np.sign,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "nn.relu": lambda x: np.maximum(x, 0),
    "nn.gelu": lambda x: F.gelu(t(x)).numpy(),
    "nn.silu": lambda x: F.silu(t(x)).numpy(),
    "nn.hardswish": lambda x: F.hardswish(t(x)).numpy(),
    "nn.softplus": lambda x: F.softplus(t(x)).numpy(),
    "nn.leaky_relu": lambda x: np.where(x >= 0, x, 0.01 * x),
    "nn.elu": lambda x: F.elu(t(x)).numpy(),
    "nn.hard_sigmoid": lambda x: np.clip(0.2 * x + 0.5, 0, 1),
}
# Inputs in the domain of log, sqrt and reciprocal.
UNARY_INPUT = {"log": lambda x: np.abs(x) + 0.1, "sqrt": np.abs,
               "reciprocal": lambda x: np.abs(x) + 0.1, "asin": lambda x: x / 4.5,
               "acos": lambda x: x / 4.5, "atanh": lambda x: x / 4.5,
               "acosh": lambda x: np.abs(x) + 1}


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("shape", [(), (7,), (3, 5, 17), (40, 1001)])
def test_unary(op, shape):
    x = UNARY_INPUT.get(op, lambda v: v)(rand(*shape, low=-4, high=4)).astype(np.float32)
    if op == "round":
        x = np.append(x.ravel(), [0.5, 1.5, -2.5]).astype(np.float32)  # halves go to even
    check(op, [x], np.asarray(UNARY[op](x), dtype=np.float32))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64])
@pytest.mark.parametrize("op,ref", [("negative", np.negative), ("abs", np.abs),
                                    ("sign", np.sign), ("nn.relu", lambda x: np.maximum(x, 0))])
def test_unary_integers(op, ref, dtype):
    x = rand(5, 9, dtype=dtype, low=-5, high=5)
    check(op, [x], ref(x).astype(dtype))


def test_unary_attrs_and_clip():
    x = rand(6, 11)
    check("nn.leaky_relu", [x], np.where(x >= 0, x, 0.3 * x), alpha=0.3)
    check("nn.hard_sigmoid", [x], np.clip(0.1 * x + 0.6, 0, 1), alpha=0.1, beta=0.6)
    check("clip", [x], np.clip(x, -0.5, 0.75), a_min=-0.5, a_max=0.75)
    check("clip", [x], np.clip(x, None, 0.25), a_max=0.25)
    i = rand(20, dtype=np.int64, low=-10, high=10)
    check("clip", [i], np.clip(i, -3, 100), a_min=-3.0)  # infinite a_max on integers
    b = rand(4, 5, dtype=np.bool_)
    check("logical_not", [b], ~b)


CAST_TYPES = [np.float32, np.float64, np.float16, np.int32, np.int64, np.bool_, np.uint8,
              np.int8, np.int16, np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("src", CAST_TYPES)
@pytest.mark.parametrize("dst", CAST_TYPES)
def test_cast(src, dst):
    # Values every destination holds (out-of-range float to integer casts are undefined).
    x = rand(3, 7, dtype=src, low=0, high=100)
    dtype_name = "bool" if dst == np.bool_ else np.dtype(dst).name
    check("cast", [x], x.astype(dst), dtype=dtype_name)


def cast_bits(x, dtype):
    """kernel.cpu.cast of ``x`` to float16 or bfloat16, as the uint16 bit patterns."""
    out = kiln.empty(list(x.shape), dtype)
    kiln.get_global_func("kernel.cpu.cast")([kiln.tensor(x)], [out],
                                            {"dtype": kiln.DataType(dtype)})
    return out.view("uint16").numpy().copy()


def cast_from_bits(bits, dtype, to):
    """kernel.cpu.cast of the float16 or bfloat16 ``dtype`` numbers whose bits are ``bits``."""
    out = kiln.empty(list(bits.shape), to)
    kiln.get_global_func("kernel.cpu.cast")([kiln.tensor(bits).view(dtype)], [out],
                                            {"dtype": kiln.DataType(to)})
    return out.numpy().copy()


def float32_patterns():
    """float32 numbers to narrow to 16 bits: random bit patterns (every sign and exponent,
    subnormals, infinities, NaNs with payloads), the ties of both formats and one step either
    side of them, and the edges (largest numbers, subnormals, zeros)."""
    random = RNG.integers(0, 2**32, size=20000, dtype=np.uint64)
    # float16 normals: 13 dropped mantissa bits 1000000000000; its subnormals: (k + 1/2) 2^-24.
    exponents = RNG.integers(127 - 14, 127 + 16, size=4000, dtype=np.uint64)
    mantissas = RNG.integers(0, 2**10, size=4000, dtype=np.uint64) << 13
    f16_ties = (exponents << 23) | mantissas | 0x1000
    f16_subnormal_ties = ((np.arange(1024) + 0.5) * 2.0**-24).astype(np.float32)
    bf16_ties = (np.arange(2**16, dtype=np.uint64) << 16) | 0x8000
    patterns = np.concatenate([random, f16_ties, f16_ties + 1, f16_ties - 1, bf16_ties,
                               bf16_ties + 1, bf16_ties - 1]).astype(np.uint32)
    signs = RNG.integers(0, 2, size=patterns.shape, dtype=np.uint32) << 31
    edges = np.array([65504, 65519.996, 65520, 65536, 2**-24, 2**-25, 3 * 2**-26, 2**-14,
                      1023.5 * 2**-24, 3.4028235e38, 0.0, np.inf, np.nan], np.float32)
    return np.concatenate([(patterns ^ signs).view(np.float32), f16_subnormal_ties,
                           -f16_subnormal_ties, edges, -edges])


def same_bits_or_both_nan(got, expected, nan):
    """Bit patterns equal, or both NaN (payloads may differ between conversions)."""
    both_nan = nan(got) & nan(expected)
    np.testing.assert_array_equal(np.where(both_nan, 0, got), np.where(both_nan, 0, expected))


def test_cast_to_float16_rounds_to_nearest_even_as_numpy():
    def is_nan(bits):
        return (bits & 0x7FFF) > 0x7C00

    x = float32_patterns()
    with np.errstate(over="ignore", invalid="ignore"):
        same_bits_or_both_nan(cast_bits(x, "float16"), x.astype(np.float16).view(np.uint16),
                              is_nan)
        # From float64 directly, not through float32: no double rounding.
        wide = x.astype(np.float64) * (1 + RNG.uniform(-2**-20, 2**-20, size=x.shape))
        same_bits_or_both_nan(cast_bits(wide, "float16"),
                              wide.astype(np.float16).view(np.uint16), is_nan)


def test_cast_to_bfloat16_rounds_to_nearest_even():
    x = float32_patterns()
    bits = x.view(np.uint32).astype(np.uint64)
    # Round to nearest even on the upper half; NaNs keep their upper half, made quiet.
    expected = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    expected = np.where(np.isnan(x), (bits >> 16).astype(np.uint16) | 0x0040, expected)
    got = cast_bits(x, "bfloat16")
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("to", ["float32", "float64"])
def test_cast_from_every_16_bit_float_is_exact(dtype, to):
    bits = np.arange(2**16, dtype=np.uint32).astype(np.uint16)
    if dtype == "float16":
        expected = bits.view(np.float16).astype(to)
    else:
        with np.errstate(invalid="ignore"):  # NaN payloads
            expected = (bits.astype(np.uint32) << 16).view(np.float32).astype(to)
    got = cast_from_bits(bits, dtype, to)
    np.testing.assert_array_equal(got, expected)  # NaNs compare equal here
    assert (np.signbit(got) == np.signbit(expected)).all()


def test_cast_between_float16_and_bfloat16_and_to_integers():
    # 1 + 2^-8 is exact in float16 and a bfloat16 tie (even: 1); 3 + 2^-6 also a tie (up).
    halves = np.array([1 + 2**-8, 3 + 3 * 2**-7, 65504, -np.inf], np.float16)
    np.testing.assert_array_equal(
        cast_from_bits(halves.view(np.uint16), "float16", "float32").astype(np.float32), halves)
    bf = cast_bits(halves, "bfloat16")
    np.testing.assert_array_equal(bf, [0x3F80, 0x4042, 0x4780, 0xFF80])
    np.testing.assert_array_equal(cast_from_bits(bf, "bfloat16", "int32")[:3], [1, 3, 65536])
    np.testing.assert_array_equal(cast_from_bits(np.array([0x3C00, 0x0000, 0x7E00], np.uint16),
                                                 "float16", "bool"), [True, False, True])


BINARY = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "power": np.power,
    "mod": np.mod,
}
COMPARE = {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
}
BROADCAST_SHAPES = [
    ((4, 5), (4, 5)),
    ((), (3, 7)),
    ((3, 1, 5), (4, 1)),
    ((2, 3, 17, 19), (3, 1, 1)),
    ((1, 129), (257, 1)),
    ((64, 1, 300), (64, 7, 300)),
    # Rows of 16 walked along the axis before them (ForEachBroadcastRow's runs): a
    # channel-blocked plane times one value per lane, and runs that threads' chunks split.
    ((2, 3, 5, 7, 16), (1, 3, 1, 1, 16)),
    ((3, 5000, 16), (3, 1, 16)),
]


def _binary_inputs(op, a_shape, b_shape, dtype):
    a = rand(*a_shape, dtype=dtype)
    b = rand(*b_shape, dtype=dtype)
    if op in ("divide", "mod"):
        b = np.where(b == 0, 3, b).astype(dtype)
    if op == "power":
        a = (np.abs(a) + 1).astype(dtype)
        b = np.clip(b, 0, 3).astype(dtype)
    return a, b


@pytest.mark.parametrize("op", sorted(BINARY) + sorted(COMPARE))
@pytest.mark.parametrize("shapes", BROADCAST_SHAPES)
def test_binary_float32(op, shapes):
    a, b = _binary_inputs(op, *shapes, np.float32)
    ref = {**BINARY, **COMPARE}[op](a, b)
    check(op, [a, b], np.asarray(ref, dtype=ref.dtype), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("op", sorted(BINARY) + sorted(COMPARE))
def test_binary_integers(op, dtype):
    a, b = _binary_inputs(op, (3, 1, 6), (5, 1), dtype)
    if op == "divide":
        expected = np.trunc(a / b).astype(dtype)  # ONNX Div truncates
    else:
        expected = {**BINARY, **COMPARE}[op](a, b)
    check(op, [a, b], expected)


# Arithmetic ops on the integer and 16-bit float types beyond int32/int64, against numpy's
# own arithmetic in the type (which wraps unsigned integers and computes float16 in float).
@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint8, np.uint16, np.uint32, np.uint64,
                                   np.float16])
@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "maximum", "minimum",
                                "mod"])
def test_arithmetic_of_narrow_and_unsigned_types(op, dtype):
    info = np.iinfo(dtype) if np.issubdtype(dtype, np.integer) else np.finfo(dtype)
    low, high = max(float(info.min), -300.0), min(float(info.max), 300.0)
    a = RNG.uniform(low, high, size=(3, 1, 6)).astype(dtype)
    b = RNG.uniform(low, high, size=(5, 1)).astype(dtype)
    b = np.where(b == 0, dtype(3), b)
    if np.issubdtype(dtype, np.unsignedinteger):  # values near the top, to wrap around
        a[0, 0, :3] = info.max - a[0, 0, :3]
    if op == "divide" and np.issubdtype(dtype, np.unsignedinteger):
        expected = a // b
    elif op == "divide" and np.issubdtype(dtype, np.integer):
        expected = np.trunc(a.astype(np.float64) / b).astype(dtype)  # ONNX Div truncates
    else:
        with np.errstate(over="ignore"):
            expected = BINARY[op](a, b)
    (got,) = run(op, [a, b], [expected])
    assert got.dtype == expected.dtype == dtype
    np.testing.assert_array_equal(got, expected)  # exact: float16 rounds once, as numpy does


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64, np.int32, np.int64])
def test_shifts(dtype):
    a = RNG.integers(0, 100, size=(4, 6)).astype(dtype)
    b = RNG.integers(0, 7, size=(6,)).astype(dtype)
    check("left_shift", [a, b], np.left_shift(a, b).astype(dtype))
    check("right_shift", [a, b], np.right_shift(a, b).astype(dtype))
    wide = np.array([70, 8 * np.dtype(dtype).itemsize], dtype)  # shifts past the width give 0
    check("left_shift", [np.array([3, 3], dtype), wide], np.zeros(2, dtype))


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
def test_unsigned_left_shift_drops_the_bits_past_the_width(dtype):
    top = np.iinfo(dtype).max
    a = np.array([top, top, top - 1, 1], dtype)
    b = np.array([1, 4, 8 * np.dtype(dtype).itemsize - 1, 8 * np.dtype(dtype).itemsize - 1],
                 dtype)
    for op, ref in [("left_shift", np.left_shift), ("right_shift", np.right_shift)]:
        np.testing.assert_array_equal(run(op, [a, b], [a])[0], ref(a, b))


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.int64, np.float16, np.float32,
                                   np.float64])
def test_mod_fmod_takes_the_dividend_sign(dtype):
    a = np.array([-7, -4, -1, 0, 3, 5, 8, 9], dtype)
    b = np.array([3, -3, 2, -5, -2, 3, 3, -4], dtype)
    check("mod", [a, b], np.fmod(a, b), fmod=True)
    check("mod", [a, b], np.mod(a, b), fmod=False)


@pytest.mark.parametrize("op", ["logical_and", "logical_or", "logical_xor", "equal"])
def test_logical(op):
    a, b = rand(4, 1, 3, dtype=np.bool_), rand(5, 3, dtype=np.bool_)
    ref = {"logical_and": np.logical_and, "logical_or": np.logical_or,
           "logical_xor": np.logical_xor, "equal": np.equal}[op]
    check(op, [a, b], ref(a, b))


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_where(dtype):
    cond = rand(3, 1, 9, dtype=np.bool_)
    x, y = rand(4, 1, dtype=dtype), rand(3, 4, 9, dtype=dtype)
    check("where", [cond, x, y], np.where(cond, x, y))


def test_unsupported_dtype_names_the_kernel():
    with pytest.raises(ValueError, match=r"kernel\.cpu\.exp: dtype int32 is not supported"):
        run("exp", [np.zeros(3, np.int32)], [np.zeros(3, np.int32)])
    with pytest.raises(ValueError, match=r"kernel\.cpu\.add: inputs 0 and 1 differ in dtype"):
        run("add", [np.zeros(3, np.float32), np.zeros(3)], [np.zeros(3, np.float32)])


# ---- reductions, softmax --------------------------------------------------------------------

REDUCE = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}


@pytest.mark.parametrize("op", sorted(REDUCE))
@pytest.mark.parametrize("axis", [None, [0], [-1], [1, 2], [0, 2], [0, 1, 2, 3], []])
@pytest.mark.parametrize("keepdims", [True, False])
def test_reduce(op, axis, keepdims):
    x = rand(3, 5, 7, 11, low=0.5, high=1.5)
    np_axis = None if axis is None else tuple(axis)
    # The reference accumulates in float64 too: float32 products of 1155 values drift.
    expected = x.copy() if axis == [] else REDUCE[op](x.astype(np.float64), axis=np_axis,
                                                      keepdims=keepdims)
    check(op, [x], np.asarray(expected, np.float32), rtol=1e-5, atol=1e-5, axis=axis,
          keepdims=keepdims)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("op", ["sum", "max", "min", "prod"])
def test_reduce_integers(op, dtype):
    x = rand(4, 6, 5, dtype=dtype, low=-2, high=2)
    check(op, [x], REDUCE[op](x, axis=(0, 2), keepdims=False).astype(dtype), axis=[0, 2],
          keepdims=False)


@pytest.mark.parametrize("op,dtype", [(op, np.float32) for op in sorted(REDUCE)] +
                         [(op, np.int64) for op in ("max", "min", "prod", "sum")])
def test_reduce_a_contiguous_axis_in_lanes_and_a_tail(op, dtype):
    """A reduced innermost axis of 37 runs in 16 lanes (two rounds) and a tail of 5."""
    x = rand(4, 37, dtype=dtype, low=-2, high=2) if dtype == np.int64 else rand(4, 37)
    wide = x.astype(np.float64) if dtype == np.float32 else x
    check(op, [x], REDUCE[op](wide, axis=1, keepdims=True).astype(dtype), rtol=1e-5, atol=1e-5,
          axis=[1], keepdims=True)


def test_reduce_large_is_accurate():
    x = rand(1000, 1003, low=0, high=1)
    check("sum", [x], np.float32(x.astype(np.float64).sum()).reshape(1, 1), rtol=1e-6)


@pytest.mark.parametrize("op,ref", [("argmax", np.argmax), ("argmin", np.argmin)])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_arg_reduce(op, ref, axis, dtype):
    x = rand(6, 9, 5, dtype=dtype, low=-3, high=3)  # integers repeat: first index wins
    expected = np.expand_dims(ref(x, axis=axis), axis).astype(np.int64)
    check(op, [x], expected, axis=axis)
    check(op, [x], ref(x, axis=axis).astype(np.int64), axis=axis, keepdims=False)


@pytest.mark.parametrize("op", ["nn.softmax", "nn.log_softmax"])
@pytest.mark.parametrize("shape,axis", [((7,), 0), ((4, 33), -1), ((3, 5, 7), 1),
                                        ((2, 1000, 3), -2), ((64, 513), 1), ((3, 1000), -1),
                                        ((3234, 5), -1), ((40, 1), -1), ((17, 15), 1)])
def test_softmax(op, shape, axis):
    x = rand(*shape, low=-20, high=20)
    fn = F.softmax if op == "nn.softmax" else F.log_softmax
    check(op, [x], fn(t(x), dim=axis).numpy(), rtol=1e-5, atol=1e-6, axis=axis)


def test_softmax_of_masked_rows():
    """Attention masks: -inf logits get probability 0, a row of equal logits is uniform."""
    x = rand(5, 40, low=-80, high=80)
    x[0, ::3] = -np.inf
    x[1] = 3.0
    x[2, 1:] = -np.inf
    check("nn.softmax", [x], F.softmax(t(x), dim=-1).numpy(), rtol=1e-5, atol=1e-6, axis=-1)
    short = x.reshape(-1, 5)  # rows shorter than a vector take their own path
    check("nn.softmax", [short], F.softmax(t(short), dim=-1).numpy(), rtol=1e-5, atol=1e-6,
          axis=-1)


# ---- data movement --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, np.uint8])
def test_reshape_squeeze_unsqueeze(dtype):
    x = rand(2, 1, 6, dtype=dtype)
    check("reshape", [x], x.reshape(3, 4), newshape=[3, 4])
    check("squeeze", [x], x.reshape(2, 6), axes=[1])
    check("unsqueeze", [x], x.reshape(1, 2, 1, 6), axes=[0])


@pytest.mark.parametrize("shape,axes", [((3, 4), None), ((2, 3, 5), [1, 0, 2]),
                                        ((2, 3, 5, 7), [0, 2, 3, 1]), ((4, 1, 6), [2, 1, 0]),
                                        ((129, 67), [1, 0]), ((2, 24, 17, 19), [0, 2, 3, 1]),
                                        ((1, 9, 11, 20), [0, 3, 1, 2]), ((3, 40, 16), [0, 2, 1]),
                                        ((2, 3, 8, 9), [1, 3, 0, 2]), ((3, 4, 0), [0, 2, 1]),
                                        ((0, 3, 4), [0, 2, 1]), ((2, 0, 5), [0, 2, 1])])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.float64])
def test_transpose(shape, axes, dtype):
    """Any permutation and element size; those that transpose matrices of 4-byte elements (the
    output's last dim strided in the input, the one before it contiguous) move 8 x 8 blocks,
    with rows and columns past whole blocks and several matrices. Empty ones copy nothing."""
    x = rand(*shape, dtype=dtype)
    check("transpose", [x], np.transpose(x, axes), axes=axes)


def test_expand():
    x = rand(3, 1, 5)
    check("expand", [x], np.broadcast_to(x, (2, 3, 4, 5)), shape=[2, 3, 4, 5])
    y = rand(4, 1, dtype=np.int64)
    check("expand", [y], np.broadcast_to(y, (4, 6)), shape=[1, 6])


@pytest.mark.parametrize("begin,end,axes,strides,index", [
    ([1], [4], None, None, np.s_[1:4]),
    ([0, 1], [5, -1], [0, 2], [2, 1], np.s_[0:5:2, :, 1:-1]),
    ([-1], [-(2**63)], [1], [-1], np.s_[:, ::-1]),
    ([10, 2], [2**63 - 1, -100], [2, 0], [1, -2], np.s_[2::-2, :, 10:]),
    ([-100], [2], [-1], [3], np.s_[..., 0:2:3]),
])
def test_strided_slice(begin, end, axes, strides, index):
    x = rand(6, 7, 8)
    check("strided_slice", [x], x[index], begin=begin, end=end, axes=axes, strides=strides)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concatenate_and_split(axis):
    sizes = [1, 0, 3]
    parts = [rand(*[s if d == axis % 3 else (3, 4, 5)[d] for d in range(3)]) for s in sizes]
    whole = np.concatenate(parts, axis=axis)
    check("concatenate", parts, whole, axis=axis)
    got = run("split", [whole], parts, axis=axis, sections=sizes)
    for g, p in zip(got, parts):
        np.testing.assert_array_equal(g, p)


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_take(axis, index_dtype):
    x = rand(4, 5, 6)
    idx = np.array([[0, -1], [2, 3], [1, 1]], dtype=index_dtype)
    check("take", [x, idx], np.take(x, idx, axis=axis), axis=axis)
    with pytest.raises(ValueError, match="out of range"):
        run("take", [x, np.array([7], index_dtype)], [np.zeros((1,) + x.shape[1:], np.float32)])


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_gather_elements(axis, index_dtype):
    x = rand(4, 5, 3)
    shape = list(x.shape)
    shape[axis] = 6
    idx = RNG.integers(-x.shape[axis], x.shape[axis], size=shape).astype(index_dtype)
    normalized = np.where(idx < 0, idx + x.shape[axis], idx)
    check("gather_elements", [x, idx], np.take_along_axis(x, normalized, axis), axis=axis)
    with pytest.raises(kiln.ValueError, match="kernel.cpu.gather_elements: index 5 is out of"):
        run("gather_elements", [x, np.full((1, 1, 1), 5, index_dtype)],
            [np.zeros((1, 1, 1), np.float32)], axis=0)


def _scatter_elements_reference(data, indices, updates, axis, reduction):
    out = data.copy()
    ufunc = {"none": None, "add": np.add, "mul": np.multiply, "max": np.maximum,
             "min": np.minimum}[reduction]
    for position in np.ndindex(*indices.shape):
        target = list(position)
        target[axis] = indices[position] % data.shape[axis]
        target = tuple(target)
        out[target] = updates[position] if ufunc is None else ufunc(out[target],
                                                                     updates[position])
    return out


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("axis", [0, 1])
def test_scatter_elements(reduction, axis):
    data = rand(4, 5)
    idx = RNG.integers(-4, 4, size=(3, 4)).astype(np.int64)  # duplicates apply in order
    upd = rand(3, 4)
    check("scatter_elements", [data, idx, upd],
          _scatter_elements_reference(data, idx, upd, axis, reduction), axis=axis,
          reduction=reduction)


def test_gather_nd():
    x = rand(3, 4, 5)
    idx = np.array([[0, 1], [2, -1], [1, 3]], np.int64)
    check("gather_nd", [x, idx], np.stack([x[0, 1], x[2, 3], x[1, 3]]))
    idx1 = np.array([[[2]], [[0]]], np.int64)
    check("gather_nd", [x, idx1], x[[2, 0]][:, None])
    batch_idx = np.array([[1], [3], [0]], np.int64)  # batch_dims=1: row b picks x[b, i]
    check("gather_nd", [x, batch_idx], np.stack([x[0, 1], x[1, 3], x[2, 0]]), batch_dims=1)


@pytest.mark.parametrize("reduction", ["none", "add", "mul"])
def test_scatter_nd(reduction):
    data = rand(4, 3, 2)
    idx = np.array([[1], [3], [1]], np.int64)
    upd = rand(3, 3, 2)
    expected = data.copy()
    for i, row in enumerate(idx[:, 0]):
        if reduction == "none":
            expected[row] = upd[i]
        elif reduction == "add":
            expected[row] += upd[i]
        else:
            expected[row] *= upd[i]
    check("scatter_nd", [data, idx, upd], expected, reduction=reduction)
    elem = np.array([[0, 2, 1], [3, 0, 0]], np.int64)
    expected = data.copy()
    expected[0, 2, 1], expected[3, 0, 0] = 7.0, 8.0
    check("scatter_nd", [data, elem, np.array([7.0, 8.0], np.float32)], expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum(dtype, axis, exclusive, reverse):
    x = rand(3, 4, 5, dtype=dtype)
    y = np.flip(x, axis) if reverse else x
    expected = np.cumsum(y, axis=axis, dtype=dtype)
    if exclusive:
        expected = expected - y
    if reverse:
        expected = np.flip(expected, axis)
    check("cumsum", [x], expected.astype(dtype), axis=axis, exclusive=exclusive, reverse=reverse)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_topk(largest, axis, dtype):
    x = RNG.integers(-4, 4, size=(4, 6, 5)).astype(dtype)  # many ties: lower positions first
    order = np.argsort(-x if largest else x, axis=axis, kind="stable")
    k = 3
    indices = np.take(order, np.arange(k), axis=axis)
    values = np.take_along_axis(x, indices, axis)
    got_values, got_indices = run("topk", [x], [values, indices], k=k, axis=axis,
                                  largest=largest)
    np.testing.assert_array_equal(got_values, values)
    np.testing.assert_array_equal(got_indices, indices)


@pytest.mark.parametrize("k", [0, 1, 300, 3234])
def test_topk_of_a_long_line_with_ties(k):
    """A detector's scores: k of 3,234 values with many ties, selected then sorted."""
    x = RNG.integers(-50, 50, size=(2, 3234)).astype(np.float32)
    indices = np.argsort(-x, axis=-1, kind="stable")[:, :k]
    values = np.take_along_axis(x, indices, -1)
    got_values, got_indices = run("topk", [x], [values, indices], k=k, axis=-1, largest=True)
    np.testing.assert_array_equal(got_values, values)
    np.testing.assert_array_equal(got_indices, indices)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_pad(mode, dtype):
    x = rand(3, 4, 5, dtype=dtype)
    pads = [1, 0, 2, 2, 1, 4]
    np_pads = [(pads[d], pads[d + 3]) for d in range(3)]
    kwargs = {"constant_values": 1.5 if dtype == np.float32 else 2} if mode == "constant" else {}
    expected = np.pad(x, np_pads, mode={"edge": "edge", "reflect": "reflect",
                                        "constant": "constant"}[mode], **kwargs)
    check("nn.pad", [x], expected, pads=pads, mode=mode, pad_value=1.5 if dtype == np.float32
          else 2.0)
    # Negative pads crop.
    check("nn.pad", [x], x[:, 1:, 1:3], pads=[0, -1, -1, 0, 0, -2])


# ---- GEMM -----------------------------------------------------------------------------------

# Odd sizes around the tiles and blocks: several depth blocks (k > 256), many column blocks
# (n > 256), and few columns with many rows (the GEMM then splits rows between threads).
GEMM_SIZES = [(1, 1, 1), (5, 7, 3), (6, 8, 256), (73, 259, 300), (130, 17, 513), (1, 1000, 97),
              (300, 49, 700), (37, 1500, 530)]


def run_prepacked(op, inputs, expected, **attrs):
    """Runs `op` the way a kernel program runs it with input 1 constant: the op's prepack hook
    packs that input once and the kernel gets the result as attribute "__packed_1". Input 1
    itself is passed zeroed, so the expected result can only come from the packed copy."""
    attrs = {**DEFAULTS.get(op, {}), **attrs}
    prepack = kiln.get_global_func("kernel_prepack.cpu." + op)
    packed = prepack(1, kiln.tensor(np.ascontiguousarray(inputs[1])), attrs)
    assert packed is not None
    assert prepack(0, kiln.tensor(np.ascontiguousarray(inputs[0])), attrs) is None
    zeroed = [inputs[0], np.zeros_like(inputs[1]), *inputs[2:]]
    (got,) = run(op, zeroed, [expected], **attrs, __packed_1=packed)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m,n,k", GEMM_SIZES)
def test_dense(m, n, k):
    x, w = rand(m, k), rand(n, k)
    check("nn.dense", [x, w], x @ w.T, rtol=1e-4, atol=1e-4)
    x3 = rand(2, 3, k)
    check("nn.dense", [x3, w], x3 @ w.T, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [32, 40, 64, 70, 100])
@pytest.mark.parametrize("m", range(1, 25))
def test_dense_rows_ending_in_a_partial_strip_of_each_height(m, n):
    """A tile strip's last rows are computed by a tile of exactly that many rows (1 to 11 of
    AVX-512's 12, 1 to 5 of AVX2's 6), with a depth of two blocks; up to 6 of them on AVX-512 by
    two strips of columns at once: 1, 2 (the last one partial), 3 (the last one alone) and 4.
    Up to 64 columns (two of AVX-512's strips) A is read in place rather than packed."""
    x, w = rand(m, 300), rand(n, 300)
    check("nn.dense", [x, w], x @ w.T, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m,n,k", GEMM_SIZES)
def test_prepacked_dense(m, n, k):
    x, w = rand(2, m, k), rand(n, k)
    run_prepacked("nn.dense", [x, w], x @ w.T)


@pytest.mark.parametrize("a_shape,b_shape", [((9, 31), (31, 17)), ((4, 65, 300), (300, 70)),
                                             ((2, 3, 5, 7), (7, 300))])
def test_prepacked_matmul(a_shape, b_shape):
    a, b = rand(*a_shape), rand(*b_shape)
    run_prepacked("matmul", [a, b], np.matmul(a, b))


def test_gemm_kernels_take_float32_only():
    with pytest.raises(ValueError, match=r"kernel\.cpu\.nn\.dense: dtype float64"):
        run("nn.dense", [np.zeros((2, 3)), np.zeros((4, 3))], [np.zeros((2, 4))])


@pytest.mark.parametrize("a_shape,b_shape", [((5,), (5,)), ((4,), (4, 6)), ((3, 7), (7,)),
                                             ((9, 31), (31, 17)), ((2, 1, 5, 8), (3, 8, 4)),
                                             ((4, 65, 33), (33, 70)), ((6, 1, 40), (40, 9)),
                                             ((2, 3, 5, 7), (1, 7, 4))])
def test_matmul(a_shape, b_shape):
    a, b = rand(*a_shape), rand(*b_shape)
    check("matmul", [a, b], np.matmul(a, b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("batches", [(3, 3), (1, 4), (4, 1)])
def test_batch_matmul(transpose_a, transpose_b, batches):
    m, n, k = 13, 21, 35
    a = rand(batches[0], *((k, m) if transpose_a else (m, k)))
    b = rand(batches[1], *((n, k) if transpose_b else (k, n)))
    ref = np.matmul(a.transpose(0, 2, 1) if transpose_a else a,
                    b.transpose(0, 2, 1) if transpose_b else b)
    check("nn.batch_matmul", [a, b], ref, rtol=1e-4, atol=1e-4, transpose_a=transpose_a,
          transpose_b=transpose_b)


def _gelu(x):
    return F.gelu(t(x)).numpy()


def _epilogue(product, bias, residual, activation):
    """What a merged epilogue computes after the product, in its order."""
    out = product + bias if bias is not None else product
    out = out + residual if residual is not None else out
    return {None: lambda v: v, "relu": lambda v: np.maximum(v, 0),
            "clip": lambda v: np.clip(v, -0.5, 0.75), "gelu": _gelu,
            "silu": lambda v: F.silu(t(v)).numpy(),
            "hardswish": lambda v: F.hardswish(t(v)).numpy()}[activation](out)


def _epilogue_attrs(num_inputs, bias, residual, activation):
    """The attributes a kernel program gives a step merged with that epilogue; the bias and
    residual follow the step's own inputs."""
    attrs = {}
    if bias is not None:
        attrs["__epilogue_bias"] = num_inputs
    if residual is not None:
        attrs["__epilogue_residual"] = num_inputs + (bias is not None)
    if activation == "relu":
        attrs["__epilogue_min"] = 0.0
    elif activation == "clip":
        attrs.update(__epilogue_min=-0.5, __epilogue_max=0.75)
    elif activation in ("gelu", "silu", "hardswish"):
        attrs[f"__epilogue_{activation}"] = True
    return attrs


EPILOGUES = [(True, False, None), (True, True, None), (True, False, "gelu"), (False, True, "relu"),
             (True, True, "clip"), (False, False, "gelu"), (True, False, "silu"),
             (True, True, "hardswish")]


@pytest.mark.parametrize("has_bias,has_residual,activation", EPILOGUES)
@pytest.mark.parametrize("op,a_shape,b_shape", [
    ("nn.dense", (73, 300), (259, 300)), ("nn.dense", (2, 3, 40), (17, 40)),
    ("matmul", (1, 128, 256), (256, 1024)), ("matmul", (130, 1, 513), (513, 17)),
    ("matmul", (2, 3, 5, 7), (1, 7, 300)), ("matmul", (4, 9, 31), (4, 31, 17))])
def test_gemm_epilogue(op, a_shape, b_shape, has_bias, has_residual, activation):
    """dense and matmul merged with a per-column bias, a residual shaped as the output and an
    activation: one GEMM, a batch of them, and a broadcast batch."""
    a, b = rand(*a_shape), rand(*b_shape)
    product = a @ b.T if op == "nn.dense" else np.matmul(a, b)
    bias = rand(product.shape[-1]) if has_bias else None
    residual = rand(*product.shape) if has_residual else None
    inputs = [a, b] + [v for v in (bias, residual) if v is not None]
    check(op, inputs, _epilogue(product, bias, residual, activation), rtol=1e-4, atol=1e-4,
          **_epilogue_attrs(2, bias, residual, activation))


# ---- convolution and pooling ----------------------------------------------------------------

CONV_CASES = [
    # (N, C, H, W), (O, KH, KW), strides, padding (t, l, b, r), dilation, groups
    ((1, 3, 9, 11), (5, 3, 3), [1, 1], [0, 0, 0, 0], [1, 1], 1),
    ((2, 4, 10, 7), (6, 3, 2), [2, 1], [1, 0, 2, 1], [1, 2], 2),
    ((1, 8, 12, 12), (8, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 8),
    ((2, 4, 9, 9), (8, 5, 3), [2, 3], [2, 1, 0, 1], [2, 1], 4),
    ((3, 16, 7, 5), (33, 1, 1), [1, 1], [0, 0, 0, 0], [1, 1], 1),
    ((1, 6, 8, 8), (4, 1, 1), [2, 2], [0, 0, 0, 0], [1, 1], 2),
    ((1, 64, 30, 31), (70, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1),
    ((1, 5, 33, 37), (5, 3, 3), [2, 2], [1, 1, 1, 1], [1, 1], 5),
    ((1, 3, 20, 41), (6, 3, 3), [1, 1], [0, 2, 1, 0], [1, 1], 3),
    # Depthwise on small planes, 16 channels at a time (a last block of 2), with strides,
    # dilation, uneven padding and windows up to 7x7.
    ((1, 18, 11, 10), (18, 3, 3), [2, 1], [2, 1, 1, 2], [2, 2], 18),
    ((2, 17, 9, 8), (34, 7, 5), [1, 2], [3, 2, 3, 2], [1, 1], 17),
    # Depthwise on planes over 32 wide, padded once, row by row: 7 x 7 (ConvNeXt), 5 x 5 with
    # stride 2 and two outputs per channel, and a dilated window of the runtime path.
    ((1, 4, 40, 45), (4, 7, 7), [1, 1], [3, 3, 3, 3], [1, 1], 4),
    ((1, 3, 38, 70), (6, 5, 5), [2, 2], [2, 1, 2, 3], [1, 1], 3),
    ((1, 2, 30, 80), (2, 3, 3), [1, 2], [2, 2, 2, 2], [2, 3], 2),
    # The direct path (every tap in registers, four output rows at a time) at each window and
    # stride: odd output heights (a last row alone) and widths that end inside a vector.
    ((2, 5, 35, 33), (5, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 5),
    ((1, 6, 67, 67), (6, 3, 3), [2, 2], [0, 1, 1, 0], [1, 1], 6),
    ((1, 3, 34, 50), (3, 5, 5), [1, 1], [2, 2, 2, 2], [1, 1], 3),
    ((1, 2, 41, 77), (2, 7, 7), [2, 2], [3, 3, 3, 3], [1, 1], 2),
    # Small planes: rows of 14 take the flat rows (also with two outputs per channel, dilation
    # and uneven padding), rows of 7 the blocks of channels.
    ((1, 20, 14, 14), (20, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 20),
    ((2, 6, 13, 16), (12, 3, 5), [1, 1], [2, 1, 0, 2], [1, 2], 6),
    ((1, 33, 7, 7), (33, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 33),
    # Output channels that fill whole tile vectors over 5 x 5 planes, whose 25 pixels fill 32
    # lanes on every ISA's tile, of deep 1x1 convs: the GEMM runs transposed, pixels along the
    # tile rows (strided: gathered per task), and the depths over 256 accumulate. A shallow one
    # over 7 x 6 runs the usual way. Wider windows over 7 x 7, 9 x 6 and 5 x 4 take the padded
    # rows' GEMM instead, strided ones over their image split into stride phases.
    ((2, 1200, 9, 9), (64, 1, 1), [2, 2], [0, 0, 0, 0], [1, 1], 2),
    ((1, 600, 5, 5), (32, 1, 1), [1, 1], [0, 0, 0, 0], [1, 1], 1),
    ((2, 24, 13, 11), (64, 1, 1), [2, 2], [0, 0, 0, 0], [1, 1], 2),
    ((1, 20, 7, 7), (64, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1),
    ((2, 12, 17, 12), (64, 3, 3), [2, 2], [1, 1, 1, 1], [1, 1], 2),
    ((1, 40, 9, 7), (96, 3, 3), [2, 2], [1, 1, 1, 1], [1, 1], 1),
    ((1, 3, 23, 22), (16, 7, 7), [2, 2], [3, 3, 3, 3], [1, 1], 1),
    ((1, 5, 20, 19), (8, 3, 5), [3, 2], [1, 2, 0, 1], [2, 1], 1),
    # Stride 1 over the padded image with output rows as wide as its rows: dilated with uneven
    # padding over two images, a padded 1x1, and planes whose GEMM column blocks each end
    # inside an output row.
    ((2, 6, 12, 10), (7, 3, 3), [1, 1], [0, 2, 1, 1], [2, 2], 1),
    ((1, 4, 6, 5), (9, 1, 1), [1, 1], [1, 0, 0, 1], [1, 1], 1),
    ((1, 4, 130, 130), (64, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1),
    # Padded windows onto small planes over 256 or more output channels (a group's): the GEMM
    # runs transposed, each task gathering its pixels from the image; at stride 2 over two
    # images, and grouped, dilated and unevenly padded.
    ((1, 40, 7, 7), (256, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1),
    ((2, 40, 13, 13), (256, 3, 3), [2, 2], [1, 1, 1, 1], [1, 1], 1),
    ((1, 128, 9, 8), (512, 3, 3), [1, 1], [0, 2, 1, 1], [2, 1], 2),
    # Winograd's F(2x2, 3x3) (winograd.cc): output extents that end inside a 2 x 2 tile, no
    # padding and uneven padding, two images, and a plane cut into several bands of tiles.
    ((2, 48, 13, 15), (64, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1),
    ((1, 48, 14, 15), (64, 3, 3), [1, 1], [0, 0, 0, 0], [1, 1], 1),
    ((1, 50, 16, 14), (65, 3, 3), [1, 1], [2, 1, 0, 2], [1, 1], 1),
    ((1, 48, 40, 38), (64, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1),
]


def _torch_padded(x, padding):
    return F.pad(t(x), (padding[1], padding[3], padding[0], padding[2]))


def _conv_case(case):
    """Random data and weights of a CONV_CASES entry, PyTorch's conv2d of them, and the kernel's
    attributes."""
    shape, (o, kh, kw), strides, padding, dilation, groups = case
    x = rand(*shape)
    w = rand(o, shape[1] // groups, kh, kw)
    ref = F.conv2d(_torch_padded(x, padding), t(w), stride=strides, dilation=dilation,
                   groups=groups).numpy()
    return x, w, ref, dict(strides=strides, padding=padding, dilation=dilation, groups=groups)


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d(case):
    x, w, ref, attrs = _conv_case(case)
    check("nn.conv2d", [x, w], ref, rtol=1e-4, atol=1e-4, **attrs)


@pytest.mark.parametrize("width", range(33, 48))
def test_depthwise_direct_rows_end_in_every_partial_vector(width):
    """The direct depthwise path writes 16 outputs of a row at a time and the rest of the row,
    1 to 15 of them, by moves of 8, 4, 2 and 1 (conv.cc's StoreFirstLanes)."""
    run_case = ((1, 3, 6, width), (3, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 3)
    x, w, ref, attrs = _conv_case(run_case)
    check("nn.conv2d", [x, w], ref, rtol=1e-4, atol=1e-4, **attrs)


@pytest.mark.parametrize("case", [c for c in CONV_CASES if c[0][1] != c[5]])
def test_prepacked_conv2d(case):
    """Conv2d with prepacked weights (every case but depthwise, which has no GEMM)."""
    x, w, ref, attrs = _conv_case(case)
    run_prepacked("nn.conv2d", [x, w], ref, **attrs)


@pytest.mark.parametrize("case", [c for c in CONV_CASES if c[0][1] != c[5]])
def test_conv2d_prepacked_for_its_output_shape(case):
    """Given the step's output shape, as a kernel program gives it, the prepack hook picks the
    GEMM's orientation for its pixel count; the kernel reads the orientation from the packed
    tensor (2-D when transposed), and computes the same either way."""
    x, w, ref, attrs = _conv_case(case)
    run_prepacked("nn.conv2d", [x, w], ref, **attrs, __prepack_output_shape=list(ref.shape))


@pytest.mark.parametrize("strides", [[1, 1], [2, 2]])
def test_conv2d_prepacks_transposed_for_deep_products_over_planes_that_leave_lanes_empty(strides):
    """64 output channels over a 7 x 7 plane of a 1x1 conv 800 deep: 49 pixels fill 64 (or 56)
    lanes on every ISA's tile, the 64 channels fill theirs exactly, so the weights are packed for
    the transposed GEMM; without the output shape (a symbolic plane) they are packed for the
    usual one. 20 deep, the lanes saved are not worth transposing the output (design §37)."""
    attrs = {**DEFAULTS["nn.conv2d"], "strides": strides}
    prepack = kiln.get_global_func("kernel_prepack.cpu.nn.conv2d")
    deep = kiln.tensor(rand(64, 800, 1, 1))
    assert len(prepack(1, deep, {**attrs, "__prepack_output_shape": [1, 64, 7, 7]}).shape) == 2
    assert len(prepack(1, deep, {**attrs, "__prepack_output_shape": [-1, 64, -1, 7]}).shape) == 1
    assert len(prepack(1, deep, attrs).shape) == 1
    shallow = kiln.tensor(rand(64, 20, 1, 1))
    assert len(prepack(1, shallow, {**attrs, "__prepack_output_shape": [1, 64, 7, 7]}).shape) == 1


def test_conv2d_prepacks_for_winograd_where_it_runs():
    """A 3x3 at unit stride with enough channels and output pixels is packed for Winograd (a
    3-D packed tensor), and not without the output's extents, at stride 2, with few channels
    or over a small plane."""
    attrs = {**DEFAULTS["nn.conv2d"], "padding": [1, 1, 1, 1]}
    prepack = kiln.get_global_func("kernel_prepack.cpu.nn.conv2d")
    w = kiln.tensor(rand(64, 64, 3, 3))
    out = {"__prepack_output_shape": [1, 64, 56, 56]}
    assert len(prepack(1, w, {**attrs, **out}).shape) == 3
    assert len(prepack(1, w, {**attrs, "__prepack_output_shape": [1, 64, -1, -1]}).shape) == 1
    assert len(prepack(1, w, {**attrs, **out, "strides": [2, 2]}).shape) == 1
    assert len(prepack(1, kiln.tensor(rand(64, 32, 3, 3)), {**attrs, **out}).shape) == 1
    assert len(prepack(1, kiln.tensor(rand(32, 64, 3, 3)), {**attrs, **out}).shape) == 1
    small = {"__prepack_output_shape": [1, 64, 7, 7]}
    assert len(prepack(1, w, {**attrs, **small}).shape) == 1


@pytest.mark.parametrize("strides", [[1, 1], [2, 2]])
def test_conv2d_with_a_padded_window_is_prepacked_transposed_only_over_many_channels(strides):
    """A padded 3x3 onto a 7 x 7 plane reads its padded image in place with the usual GEMM at
    64 output channels, and runs transposed at 256, where gathering its pixels per task pays
    (design §44)."""
    attrs = {**DEFAULTS["nn.conv2d"], "strides": strides, "padding": [1, 1, 1, 1]}
    prepack = kiln.get_global_func("kernel_prepack.cpu.nn.conv2d")
    out = {"__prepack_output_shape": [1, 64, 7, 7]}
    assert len(prepack(1, kiln.tensor(rand(64, 40, 3, 3)), {**attrs, **out}).shape) == 1
    out = {"__prepack_output_shape": [1, 256, 7, 7]}
    assert len(prepack(1, kiln.tensor(rand(256, 40, 3, 3)), {**attrs, **out}).shape) == 2


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("has_bias,has_residual,activation",
                         EPILOGUES + [(True, False, "relu"), (True, False, "hardswish"),
                                      (False, False, "clip")])
def test_conv2d_epilogue(case, has_bias, has_residual, activation):
    """A conv2d step merged with its per-channel bias add, a residual add and an activation
    (program_epilogues.cc), on the GEMM path and the depthwise one. Without a residual, the GEMM
    applies the bias and a clamp or hardswish as it stores its tiles (gemm.cc's TileStore)."""
    x, w, product, attrs = _conv_case(case)
    bias = rand(w.shape[0], 1, 1) if has_bias else None
    residual = rand(*product.shape) if has_residual else None
    inputs = [x, w] + [v for v in (bias, residual) if v is not None]
    check("nn.conv2d", inputs, _epilogue(product, bias, residual, activation), rtol=1e-4,
          atol=1e-4, **attrs, **_epilogue_attrs(2, bias, residual, activation))


@pytest.mark.parametrize("plane", [(7, 7), (14, 14), (1, 21), (3, 3), (5, 5)])
@pytest.mark.parametrize("has_bias,has_residual,activation",
                         [(True, False, "relu"), (True, False, "hardswish"), (False, True, None),
                          (False, False, None)])
def test_conv2d_onto_planes_ending_past_whole_vectors(plane, has_bias, has_residual, activation):
    """A 1x1 conv2d with packed weights onto planes of 49, 196 and 21 pixels, which end 1, 4
    and 5 columns past whole vectors on AVX-512: the GEMM computes those columns as vectors
    along the weights' rows (gemm.cc's TailedMicroKernel) and stores them element by element,
    with the bias and activation. 9 and 25 pixels take vectors along the pixels. 300 channels in make two
    depth blocks, the second adding to the first; 29 out, whole strips of rows and a part."""
    x, w, product, attrs = _conv_case(((1, 300, *plane), (29, 1, 1), [1, 1], [0] * 4, [1, 1], 1))
    bias = rand(29, 1, 1) if has_bias else None
    residual = rand(*product.shape) if has_residual else None
    inputs = [x, w] + [v for v in (bias, residual) if v is not None]
    run_prepacked("nn.conv2d", inputs, _epilogue(product, bias, residual, activation), **attrs,
                  **_epilogue_attrs(2, bias, residual, activation))


def _run_into_residual(op, inputs, residual, **attrs):
    """Runs kernel.cpu.<op> with one tensor as its merged residual (its last input) and as its
    output, as a graph node whose output took its residual's storage is run; returns it."""
    kernel = kiln.get_global_func("kernel.cpu." + op)
    out = kiln.tensor(residual.copy())  # the kernel overwrites it
    args = [kiln.tensor(np.ascontiguousarray(x)) for x in inputs] + [out]
    kernel(args, [out], {**DEFAULTS.get(op, {}), **attrs})
    return out.numpy().copy()


IN_PLACE_EPILOGUES = [(True, "relu"), (False, None), (True, "gelu")]


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("has_bias,activation", IN_PLACE_EPILOGUES)
def test_conv2d_into_its_residual(case, has_bias, activation):
    """The output in its residual's storage (design §41): the GEMM adds its product into it,
    over one depth block or several, narrowed or not; the transposed and depthwise paths read a
    copy. The bias and activation come after the sum, as ever."""
    x, w, product, attrs = _conv_case(case)
    bias = rand(w.shape[0], 1, 1) if has_bias else None
    residual = rand(*product.shape)
    inputs = [x, w] + ([bias] if has_bias else [])
    got = _run_into_residual("nn.conv2d", inputs, residual, **attrs,
                             **_epilogue_attrs(2, bias, residual, activation))
    np.testing.assert_allclose(got, _epilogue(product, bias, residual, activation), rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("op,a_shape,b_shape", [
    ("nn.dense", (7, 30), (40, 30)), ("nn.dense", (2, 25, 300), (70, 300)),
    ("nn.dense", (13, 600), (100, 600)), ("matmul", (4, 65, 300), (300, 70)),
    ("matmul", (2, 3, 5, 7), (1, 7, 4)), ("matmul", (9, 0), (0, 5))])
@pytest.mark.parametrize("has_bias,activation", IN_PLACE_EPILOGUES)
def test_gemm_into_its_residual(op, a_shape, b_shape, has_bias, activation):
    """dense and matmul (one GEMM, or one per batch) with the output in the residual's storage;
    depths of one, two and three blocks, and of none."""
    a, b = rand(*a_shape), rand(*b_shape)
    product = a @ b.T if op == "nn.dense" else np.matmul(a, b)
    bias = rand(product.shape[-1]) if has_bias else None
    residual = rand(*product.shape)
    got = _run_into_residual(op, [a, b] + ([bias] if has_bias else []), residual,
                             **_epilogue_attrs(2, bias, residual, activation))
    np.testing.assert_allclose(got, _epilogue(product, bias, residual, activation), rtol=1e-4,
                               atol=1e-4)


def _program(steps, temps, constants, num_inputs=1, specs=None):
    """A one-function kernel program ("f") with float32 tensors of the given shapes; `specs`,
    when given, is (input shapes, output shapes)."""
    spec = lambda shape: {"shape": list(shape), "dtype": "float32"}  # noqa: E731
    function = {"name": "f", "num_inputs": num_inputs, "num_outputs": 1,
                "temps": [spec(s) for s in temps], "steps": steps}
    if specs is not None:
        function.update(inputs=[spec(s) for s in specs[0]], outputs=[spec(s) for s in specs[1]])
    description = json.dumps({
        "version": 1, "constants": [spec(np.shape(c)) for c in constants],
        "functions": [function]})
    program = kiln.get_global_func("runtime.KernelProgramCreate")(
        description, [kiln.tensor(np.ascontiguousarray(c)) for c in constants])
    return program["f"]


def _conv_step(inputs, output):
    attrs = {"strides": {"ints": [1, 1]}, "padding": {"ints": [1, 1, 1, 1]},
             "dilation": {"ints": [1, 1]}, "groups": {"int": 1}}
    return {"kernel": "nn.conv2d", "attrs": attrs, "inputs": inputs, "outputs": [output]}


@pytest.mark.parametrize("bias_shape", [(6, 1, 1), (1, 6, 1, 1), (1, 6, 9, 1)])
@pytest.mark.parametrize("activation",
                         [None, "nn.relu", "clip", "nn.silu", "nn.hardswish", "negative"])
def test_program_merges_conv_epilogues(bias_shape, activation):
    """conv2d -> add(bias) -> relu/clip/silu/hardswish, as FuseOps groups them, computes the same whether the
    program merges the steps (a per-channel bias) or not (any other bias, other ops)."""
    x, w, bias = rand(1, 4, 9, 7, low=-1, high=1), rand(6, 4, 3, 3), rand(*bias_shape)
    out_shape = (1, 6, 9, 7)
    steps = [_conv_step(["i0", "c0"], "t0"),
             {"kernel": "add", "attrs": {}, "inputs": ["c1", "t0"],
              "outputs": ["t1" if activation else "o0"]}]
    ref = F.conv2d(t(x), t(w), padding=1).numpy() + bias
    if activation:
        attrs = {"a_min": {"float": -0.5}, "a_max": {"float": 1.5}} if activation == "clip" else {}
        steps.append({"kernel": activation, "attrs": attrs, "inputs": ["t1"], "outputs": ["o0"]})
        ref = {"nn.relu": np.maximum(ref, 0), "clip": np.clip(ref, -0.5, 1.5),
               "nn.silu": F.silu(t(ref)).numpy(), "nn.hardswish": F.hardswish(t(ref)).numpy(),
               "negative": -ref}[activation]
    f = _program(steps, [out_shape, out_shape], [w, bias])
    y = kiln.empty(list(out_shape), "float32")
    f(kiln.tensor(x), y)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-4, atol=1e-4)


def test_program_keeps_a_conv_output_that_is_read_twice():
    """t0 feeds the bias add and the final add: merging the bias would lose the plain conv."""
    x, w, bias = rand(1, 4, 6, 6), rand(6, 4, 3, 3), rand(6, 1, 1)
    steps = [_conv_step(["i0", "c0"], "t0"),
             {"kernel": "add", "attrs": {}, "inputs": ["t0", "c1"], "outputs": ["t1"]},
             {"kernel": "add", "attrs": {}, "inputs": ["t1", "t0"], "outputs": ["o0"]}]
    f = _program(steps, [(1, 6, 6, 6)] * 2, [w, bias])
    y = kiln.empty([1, 6, 6, 6], "float32")
    f(kiln.tensor(x), y)
    conv = F.conv2d(t(x), t(w), padding=1).numpy()
    np.testing.assert_allclose(y.numpy(), 2 * conv + bias, rtol=1e-4, atol=1e-4)


def test_concatenate_merged_with_a_channel_scale_bias_and_clamp():
    """The kernel as a program runs it after merging: the pieces are the inputs before the
    merged scale (input 2) and bias (input 3); each channel of the output goes through them and
    the clamp."""
    parts = [rand(2, 3, 4, 5), rand(2, 1, 4, 5), rand(2, 4, 4, 5)]
    scale, bias = rand(8, 1, 1), rand(1, 8, 1, 1)
    whole = np.concatenate(parts, axis=1)
    check("concatenate", [*parts, scale, bias], np.clip(whole * scale + bias, 0, 1.5), axis=1,
          __epilogue_scale=3, __epilogue_bias=4, __epilogue_min=0.0, __epilogue_max=1.5)
    check("concatenate", [*parts, bias], np.maximum(whole + bias, 0), rtol=1e-6, axis=-3,
          __epilogue_bias=3, __epilogue_min=0.0)
    with pytest.raises(ValueError, match=r"concatenate: .*float32 \(N, C, H, W\).*piece 1 is "
                                         r"float64 of rank 4"):
        run("concatenate", [parts[0], parts[1].astype(np.float64), bias], [whole], axis=1,
            __epilogue_bias=2)
    with pytest.raises(ValueError, match=r"input 3 must hold one float32 per channel \(8\), "
                                         r"not 7"):
        run("concatenate", [*parts, bias[:, :7]], [whole], axis=1, __epilogue_bias=3)


# (steps after the concatenation: kernel and its constant's shape; concatenation axis)
CONCAT_CHAINS = [
    ([("multiply", (6, 1, 1)), ("add", (6, 1, 1)), ("nn.relu", None)], 1),  # DenseNet's
    ([("multiply", (1, 6, 1, 1)), ("add", (6, 1, 1))], 1),
    ([("add", (6, 1, 1)), ("clip", None)], 1),
    ([("multiply", (6, 1, 1)), ("nn.relu", None)], -3),
    ([("multiply", (1, 6, 4, 1)), ("add", (6, 1, 1)), ("nn.relu", None)], 1),  # not per channel
    ([("multiply", (6, 1, 1)), ("add", (6, 1, 1)), ("nn.silu", None)], 1),  # SiLU stays a step
    ([("multiply", (1, 1, 8, 1)), ("add", (1, 1, 8, 1)), ("nn.relu", None)], 2),  # another axis
]


@pytest.mark.parametrize("chain,axis", CONCAT_CHAINS)
def test_program_merges_a_channel_concatenation_with_its_batch_norm_and_relu(chain, axis):
    """concatenate -> multiply, add by constants -> relu/clip, as FuseOps groups DenseNet's
    layers, computes the same whether the program merges the steps into the concatenation (a
    channel axis, one constant per channel, relu or clip) or not (anything else)."""
    parts = [rand(1, 2, 4, 5), rand(1, 4, 4, 5)] if axis != 2 else [rand(1, 6, 3, 5),
                                                                     rand(1, 6, 5, 5)]
    value = np.concatenate(parts, axis=axis)
    steps = [{"kernel": "concatenate", "attrs": {"axis": {"int": axis}}, "inputs": ["i0", "i1"],
              "outputs": ["t0"]}]
    constants = []
    for i, (kernel, shape) in enumerate(chain):
        inputs, attrs = [f"t{i}"], {}
        if shape is not None:
            constants.append(rand(*shape))
            inputs.append(f"c{len(constants) - 1}")
            value = value * constants[-1] if kernel == "multiply" else value + constants[-1]
        elif kernel == "clip":
            attrs = {"a_min": {"float": -0.5}, "a_max": {"float": 1.5}}
            value = np.clip(value, -0.5, 1.5)
        else:
            value = np.maximum(value, 0) if kernel == "nn.relu" else F.silu(t(value)).numpy()
        output = "o0" if i == len(chain) - 1 else f"t{i + 1}"
        steps.append({"kernel": kernel, "attrs": attrs, "inputs": inputs, "outputs": [output]})
    f = _program(steps, [value.shape] * len(chain), constants, num_inputs=2)
    y = kiln.empty(list(value.shape), "float32")
    f(*[kiln.tensor(p) for p in parts], y)
    np.testing.assert_allclose(y.numpy(), value, rtol=1e-5, atol=1e-5)


def _matmul_bias_residual_gelu_steps():
    """matmul -> add(bias) -> add(residual) -> nn.gelu, as FuseOps groups a transformer FFN."""
    return [{"kernel": "matmul", "attrs": {}, "inputs": ["i0", "c0"], "outputs": ["t0"]},
            {"kernel": "add", "attrs": {}, "inputs": ["c1", "t0"], "outputs": ["t1"]},
            {"kernel": "add", "attrs": {}, "inputs": ["t1", "i1"], "outputs": ["t2"]},
            {"kernel": "nn.gelu", "attrs": {}, "inputs": ["t2"], "outputs": ["o0"]}]


@pytest.mark.parametrize("with_specs", [True, False])
def test_program_merges_matmul_epilogues(with_specs):
    """The chain computes the same merged into the matmul (with input specs: bias, residual and
    GELU) or partly (without them the residual add stays a step)."""
    x, w, bias, residual = rand(1, 20, 48), rand(48, 70), rand(70), rand(1, 20, 70)
    shape = (1, 20, 70)
    specs = ([x.shape, residual.shape], [shape]) if with_specs else None
    f = _program(_matmul_bias_residual_gelu_steps(), [shape] * 3, [w, bias], num_inputs=2,
                 specs=specs)
    y = kiln.empty(list(shape), "float32")
    f(kiln.tensor(x), kiln.tensor(residual), y)
    np.testing.assert_allclose(y.numpy(), _gelu(x @ w + bias + residual), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("with_specs", [True, False])
def test_program_writes_its_output_over_its_residual(with_specs):
    """Called with its output in its residual input's bytes, as a graph node placed there is: the
    merged GEMM adds its product into them (with specs); unmerged, the input is read from a copy."""
    x, w, bias, residual = rand(1, 20, 48), rand(48, 70), rand(70), rand(1, 20, 70)
    shape = (1, 20, 70)
    specs = ([x.shape, residual.shape], [shape]) if with_specs else None
    f = _program(_matmul_bias_residual_gelu_steps(), [shape] * 3, [w, bias], num_inputs=2,
                 specs=specs)
    both = kiln.tensor(residual.copy())
    f(kiln.tensor(x), both, both)
    np.testing.assert_allclose(both.numpy(), _gelu(x @ w + bias + residual), rtol=1e-4,
                               atol=1e-4)


def test_program_reads_a_copy_of_an_input_its_output_overlaps():
    """An input that the GEMM reads as well as adding it, with the output in its bytes: the
    output would overwrite what the GEMM still reads (its A, in place: 48 columns), so the
    program reads a copy."""
    x, w = rand(20, 48), rand(48, 48)
    steps = [{"kernel": "matmul", "attrs": {}, "inputs": ["i0", "c0"], "outputs": ["t0"]},
             {"kernel": "add", "attrs": {}, "inputs": ["t0", "i0"], "outputs": ["o0"]}]
    f = _program(steps, [x.shape], [w], specs=([x.shape], [x.shape]))
    both = kiln.tensor(x.copy())
    f(both, both)
    np.testing.assert_allclose(both.numpy(), x @ w + x, rtol=1e-4, atol=1e-4)


def test_program_keeps_a_residual_add_that_broadcasts():
    """A residual of another shape than the product (it broadcasts) is not merged."""
    x, w, bias, residual = rand(1, 20, 48), rand(48, 70), rand(70), rand(3, 20, 70)
    f = _program(_matmul_bias_residual_gelu_steps(), [(1, 20, 70), (1, 20, 70), (3, 20, 70)],
                 [w, bias], num_inputs=2, specs=([x.shape, residual.shape], [(3, 20, 70)]))
    y = kiln.empty([3, 20, 70], "float32")
    f(kiln.tensor(x), kiln.tensor(residual), y)
    np.testing.assert_allclose(y.numpy(), _gelu(x @ w + bias + residual), rtol=1e-4, atol=1e-4)


def test_program_runs_a_gemm_step_that_writes_its_output():
    """Nothing follows a dense that writes the function's output (a description without specs)."""
    x, w = rand(3, 8), rand(5, 8)
    f = _program([{"kernel": "nn.dense", "attrs": {}, "inputs": ["i0", "c0"], "outputs": ["o0"]}],
                 [], [w])
    y = kiln.empty([3, 5], "float32")
    f(kiln.tensor(x), y)
    np.testing.assert_allclose(y.numpy(), x @ w.T, rtol=1e-5, atol=1e-5)


def test_program_reshapes_into_a_temporary_without_copying():
    """reshape -> add: the temporary the reshape writes is its input under the new shape (the
    add broadcasts a (4,) bias over it, which only a (3, 4) view allows)."""
    x, bias = rand(2, 6), rand(4)
    f = _program([{"kernel": "reshape", "attrs": {"newshape": {"ints": [3, 4]}},
                   "inputs": ["i0"], "outputs": ["t0"]},
                  {"kernel": "add", "attrs": {}, "inputs": ["t0", "c0"], "outputs": ["o0"]}],
                 [(3, 4)], [bias])
    y = kiln.empty([3, 4], "float32")
    f(kiln.tensor(x), y)
    np.testing.assert_allclose(y.numpy(), x.reshape(3, 4) + bias, rtol=1e-6)


def test_program_rejects_a_reshape_into_a_temporary_of_another_size():
    f = _program([{"kernel": "reshape", "attrs": {"newshape": {"ints": [5]}},
                   "inputs": ["i0"], "outputs": ["t0"]},
                  {"kernel": "nn.relu", "attrs": {}, "inputs": ["t0"], "outputs": ["o0"]}],
                 [(5,)], [])
    with pytest.raises(ValueError, match="reshape of 48 bytes into a temporary of 20"):
        f(kiln.tensor(rand(2, 6)), kiln.empty([5], "float32"))


def test_program_rejects_arguments_unlike_its_specs():
    f = _program([{"kernel": "nn.relu", "attrs": {}, "inputs": ["i0"], "outputs": ["o0"]}], [],
                 [], specs=([(2, 3)], [(2, 3)]))
    with pytest.raises(ValueError,
                       match=r"'f': input 0 has extent 3 at axis 0, where the model needs 2 "
                             r"\(it takes \(2, 3\), got \(3, 2\)\)"):
        f(kiln.tensor(rand(3, 2)), kiln.empty([3, 2], "float32"))


# relu into temporary t0, then negative into the output.
RELU_THEN_NEGATE = [{"kernel": "nn.relu", "attrs": {}, "inputs": ["i0"], "outputs": ["t0"]},
                    {"kernel": "negative", "attrs": {}, "inputs": ["t0"], "outputs": ["o0"]}]


def test_symbolic_specs_size_temporaries_per_call():
    # relu into a temporary of (n, 3), then negative into the output: n is read from input 0.
    f = _program(RELU_THEN_NEGATE, [("n", 3)], [], specs=([("n", 3)], [("n", 3)]))
    for n in (2, 5):
        x = rand(n, 3)
        out = kiln.empty([n, 3], "float32")
        f(kiln.tensor(x), out)
        np.testing.assert_array_equal(out.numpy(), -np.maximum(x, 0))
    with pytest.raises(ValueError, match=r"'f': output 0 has extent 4 at axis 0, where the model "
                                         r"needs n = 2.*n = 2 \(from input 0, axis 0\)"):
        f(kiln.tensor(rand(2, 3)), kiln.empty([4, 3], "float32"))


def test_sizes_are_solved_from_extents_that_hold_them():
    # No argument has `n` alone as an extent: it is solved from the input's n * 4.
    f = _program(RELU_THEN_NEGATE, [("n * 4", 3)], [],
                 specs=([("n * 4", 3)], [("n * 4", 3)]))
    x = rand(8, 3)
    out = kiln.empty([8, 3], "float32")
    f(kiln.tensor(x), out)
    np.testing.assert_array_equal(out.numpy(), -np.maximum(x, 0))
    with pytest.raises(ValueError, match=r"input 0 has extent 6 at axis 0, where the model needs "
                                         r"n \* 4 = 4"):
        f(kiln.tensor(rand(6, 3)), kiln.empty([6, 3], "float32"))


def test_an_extent_of_several_sizes_is_read_as_a_whole():
    # A flattened (b * s, 4) argument gives neither b nor s, but the product is all it needs.
    f = _program(RELU_THEN_NEGATE, [("b * s", 4)], [],
                 specs=([("b * s", 4)], [("b * s", 4)]))
    x = rand(6, 4)
    out = kiln.empty([6, 4], "float32")
    f(kiln.tensor(x), out)
    np.testing.assert_array_equal(out.numpy(), -np.maximum(x, 0))
    with pytest.raises(ValueError, match=r"output 0 has extent 5 at axis 0, where the model needs "
                                         r"b \* s = 6"):
        f(kiln.tensor(x), kiln.empty([5, 4], "float32"))


def test_symbolic_temporaries_need_sizes_the_arguments_give():
    steps = [{"kernel": "nn.relu", "attrs": {}, "inputs": ["i0"], "outputs": ["o0"]}]
    with pytest.raises(ValueError, match=r"temporary 0 of shape \(m, 3\) depends on the size 'm', "
                                         r"which no argument gives"):
        _program(steps, [("m", 3)], [], specs=([("n", 3)], [("n", 3)]))


def test_program_rejects_specs_that_do_not_match_the_count():
    with pytest.raises(ValueError, match="'f' lists 2 inputs, but takes 1"):
        _program([], [], [], specs=([(2,), (2,)], [(2,)]))


def test_depthwise_conv2d_is_not_prepacked():
    attrs = {**DEFAULTS["nn.conv2d"], "groups": 4}
    prepack = kiln.get_global_func("kernel_prepack.cpu.nn.conv2d")
    assert prepack(1, kiln.tensor(rand(8, 1, 3, 3)), attrs) is None


@pytest.mark.parametrize("case", [
    # (N, C, H, W), (O/groups, KH, KW), strides, padding, output_padding, dilation, groups
    ((1, 3, 5, 6), (4, 3, 3), [1, 1], [0, 0, 0, 0], [0, 0], [1, 1], 1),
    ((2, 4, 5, 4), (3, 3, 2), [2, 3], [1, 0, 1, 0], [1, 2], [1, 1], 2),
    ((1, 6, 4, 7), (2, 2, 3), [2, 2], [1, 1, 1, 1], [0, 1], [2, 1], 3),
])
def test_conv2d_transpose(case):
    shape, (og, kh, kw), strides, padding, output_padding, dilation, groups = case
    x = rand(*shape)
    w = rand(shape[1], og, kh, kw)
    assert padding[0] == padding[2] and padding[1] == padding[3]  # torch pads symmetrically
    ref = F.conv_transpose2d(t(x), t(w), stride=strides, padding=(padding[0], padding[1]),
                             output_padding=output_padding, groups=groups,
                             dilation=dilation).numpy()
    check("nn.conv2d_transpose", [x, w], ref, rtol=1e-4, atol=1e-4, strides=strides,
          padding=padding, output_padding=output_padding, dilation=dilation, groups=groups)


@pytest.mark.parametrize("pool_size,strides,padding,dilation,ceil_mode", [
    ([2, 2], [2, 2], [0, 0, 0, 0], [1, 1], False),
    ([3, 3], [2, 2], [1, 1, 1, 1], [1, 1], True),
    ([3, 2], [1, 2], [1, 0, 1, 0], [2, 1], False),
    ([2, 3], [3, 2], [0, 1, 0, 1], [1, 1], True),
    # Windows of 2 and 3 columns at stride 1 (their inside columns folded in one pass), one
    # dilated.
    ([3, 3], [1, 1], [1, 1, 1, 1], [1, 1], False),
    ([2, 2], [1, 1], [1, 1, 1, 1], [1, 1], True),
    ([2, 3], [1, 1], [1, 1, 1, 1], [1, 2], False),
])
def test_pool2d(pool_size, strides, padding, dilation, ceil_mode):
    """Rows of 37: whole vectors and a tail inside the window's inside columns."""
    x = rand(2, 3, 11, 37)
    pad = (padding[0], padding[1])
    attrs = {"pool_size": pool_size, "strides": strides, "padding": padding,
             "dilation": dilation, "ceil_mode": ceil_mode}
    ref = F.max_pool2d(t(x), pool_size, strides, pad, dilation, ceil_mode).numpy()
    check("nn.max_pool2d", [x], ref, **attrs)
    if dilation == [1, 1]:
        for include in (False, True):
            ref = F.avg_pool2d(t(x), pool_size, strides, pad, ceil_mode, include).numpy()
            check("nn.avg_pool2d", [x], ref, count_include_pad=include, **attrs)


@pytest.mark.parametrize("case", [
    # (N, C, D, H, W), (O, KD, KH, KW), strides, padding (begins, ends), dilation, groups
    ((1, 2, 5, 6, 7), (3, 2, 3, 2), [1, 1, 1], [0] * 6, [1, 1, 1], 1),
    ((2, 4, 6, 5, 5), (6, 3, 2, 3), [2, 1, 2], [1, 0, 1, 2, 1, 0], [1, 2, 1], 2),
    ((1, 3, 4, 4, 4), (5, 1, 1, 1), [1, 1, 1], [0] * 6, [1, 1, 1], 1),
    # Over 256 rows of im2col (two depth blocks of the GEMM) and runs across output rows.
    ((1, 16, 6, 9, 10), (40, 3, 3, 3), [1, 1, 1], [1] * 6, [1, 1, 1], 1),
])
def test_conv3d(case):
    shape, (o, kd, kh, kw), strides, padding, dilation, groups = case
    x = rand(*shape)
    w = rand(o, shape[1] // groups, kd, kh, kw)
    padded = F.pad(t(x), (padding[2], padding[5], padding[1], padding[4], padding[0], padding[3]))
    ref = F.conv3d(padded, t(w), stride=strides, dilation=dilation, groups=groups).numpy()
    check("nn.conv3d", [x, w], ref, rtol=1e-4, atol=1e-4, strides=strides, padding=padding,
          dilation=dilation, groups=groups)


@pytest.mark.parametrize("pool_size,strides,padding,dilation,ceil_mode", [
    ([2, 2, 2], [2, 2, 2], [0] * 6, [1, 1, 1], False),
    ([3, 3, 2], [2, 1, 2], [1, 1, 0, 1, 1, 0], [1, 1, 1], True),
    ([2, 3, 2], [1, 2, 1], [1, 1, 1, 1, 1, 1], [2, 1, 2], False),
])
def test_pool3d(pool_size, strides, padding, dilation, ceil_mode):
    x = rand(2, 3, 7, 6, 5)
    attrs = {"pool_size": pool_size, "strides": strides, "padding": padding,
             "dilation": dilation, "ceil_mode": ceil_mode}
    pad = tuple(padding[:3])
    ref = F.max_pool3d(t(x), pool_size, strides, pad, dilation, ceil_mode).numpy()
    check("nn.max_pool3d", [x], ref, **attrs)
    if dilation != [1, 1, 1]:  # average pooling has no dilation
        return
    for include in (False, True):
        ref = F.avg_pool3d(t(x), pool_size, strides, pad, ceil_mode, include).numpy()
        check("nn.avg_pool3d", [x], ref, count_include_pad=include, **attrs)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_max_pool2d_integers(dtype):
    x = RNG.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, size=(1, 2, 5, 5)).astype(dtype)
    ref = F.max_pool2d(t(x.astype(np.float32)), 2, 1, 0).numpy().astype(dtype)
    check("nn.max_pool2d", [x], ref, pool_size=[2, 2], strides=[1, 1], padding=[0, 0, 0, 0],
          dilation=[1, 1], ceil_mode=False)


def test_global_pool2d():
    x = rand(2, 5, 7, 9)
    check("nn.global_max_pool2d", [x], x.max(axis=(2, 3), keepdims=True))
    check("nn.global_avg_pool2d", [x], x.mean(axis=(2, 3), keepdims=True))


# ---- normalization --------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [1, -1])
def test_batch_norm(axis):
    x = rand(2, 5, 6, 7)
    c = x.shape[axis]
    gamma, beta, mean = rand(c), rand(c), rand(c)
    var = rand(c, low=0.1, high=2)
    shape = [1] * 4
    shape[axis] = c
    ref = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-3) * gamma.reshape(shape) \
        + beta.reshape(shape)
    check("nn.batch_norm", [x, gamma, beta, mean, var], ref.astype(np.float32), rtol=1e-5,
          atol=1e-5, axis=axis, epsilon=1e-3)


@pytest.mark.parametrize("axis", [-1, 1, 2])
def test_layer_norm(axis):
    x = rand(3, 4, 5, 33)
    norm_shape = x.shape[axis:]
    gamma, beta = rand(*norm_shape), rand(*norm_shape)
    ref = F.layer_norm(t(x), norm_shape, t(gamma), t(beta), eps=1e-5).numpy()
    check("nn.layer_norm", [x, gamma, beta], ref, rtol=1e-4, atol=1e-5, axis=axis)


# ---- resize ---------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [(14, 9), (3, 4), (7, 7)])
def test_resize2d(size):
    x = rand(2, 3, 7, 5)
    check("image.resize2d", [x], F.interpolate(t(x), size=size, mode="nearest").numpy(),
          size=list(size), method="nearest", coordinate_transformation_mode="asymmetric",
          rounding_method="floor")
    for mode, method in [("bilinear", "linear"), ("bicubic", "cubic")]:
        for align, transform in [(False, "half_pixel"), (True, "align_corners")]:
            ref = F.interpolate(t(x), size=size, mode=mode, align_corners=align).numpy()
            check("image.resize2d", [x], ref, rtol=1e-4, atol=1e-5, size=list(size),
                  method=method, coordinate_transformation_mode=transform)


@pytest.mark.parametrize("method", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample(method, padding_mode, align_corners):
    x = rand(2, 3, 5, 6)
    grid = rand(2, 4, 7, 2, low=-1.4, high=1.4)  # some positions outside [-1, 1]
    expected = F.grid_sample(t(x), t(grid), mode=method, padding_mode=padding_mode,
                             align_corners=align_corners).numpy()
    check("image.grid_sample", [x, grid], expected, rtol=1e-4, atol=1e-5, method=method,
          padding_mode=padding_mode, align_corners=align_corners)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_det(dtype):
    x = rand(2, 3, 5, 5, dtype=dtype)
    x[0, 1, 2] = x[0, 1, 0]  # a singular matrix
    x[1, 0] = np.eye(5)[[1, 0, 2, 3, 4]]  # a row swap: -1
    check("det", [x], np.linalg.det(x).astype(dtype), rtol=1e-4, atol=1e-5)


def test_resize2d_tf_half_pixel_for_nn():
    # TensorFlow's nearest: x_in = (x_out + 0.5) / scale, rounded down here.
    x = np.arange(8, dtype=np.float32).reshape(1, 1, 1, 8)
    src = np.floor((np.arange(3) + 0.5) / (3 / 8)).astype(np.int64)
    check("image.resize2d", [x], x[..., src], size=[1, 3], rounding_method="floor",
          coordinate_transformation_mode="tf_half_pixel_for_nn")


def test_resize2d_divides_by_the_given_scales():
    # Linear half_pixel downsampling of 5 by 0.6: 3 outputs at (x + 0.5) / 0.6 - 0.5 (ONNX),
    # not at the ratio 3/5 of the sizes.
    x = np.arange(5, dtype=np.float32).reshape(1, 1, 1, 5) ** 2
    src = np.clip((np.arange(3) + 0.5) / 0.6 - 0.5, 0, 4)
    expected = np.interp(src, np.arange(5), x.ravel()).astype(np.float32).reshape(1, 1, 1, 3)
    check("image.resize2d", [x], expected, size=[1, 3], method="linear", scales=[1.0, 0.6])


def test_resize2d_nearest_half_pixel_and_exclude():
    x = rand(1, 1, 4, 4)
    # 4 -> 8 with half_pixel and round_prefer_floor: output i reads floor-preferring round of
    # (i + 0.5) / 2 - 0.5.
    idx = [max(0, min(3, int(np.ceil((i + 0.5) / 2 - 0.5 - 0.5)))) for i in range(8)]
    check("image.resize2d", [x], x[:, :, idx][:, :, :, idx], size=[8, 8])
    # With exclude_outside, weights of taps outside the image are dropped and renormalized,
    # so a constant image stays constant.
    ones = np.ones((1, 1, 4, 4), np.float32)
    check("image.resize2d", [ones], np.ones((1, 1, 9, 9), np.float32), rtol=1e-5, atol=1e-5,
          size=[9, 9], method="cubic", cubic_exclude=True, cubic_alpha=-0.5)


# ---- threads and the compiler ---------------------------------------------------------------

@pytest.mark.skipif(os.environ.get("KILN_NUM_THREADS") == "5", reason="already the 5-thread run")
def test_with_five_threads():
    """The heavier tests again with 5 threads (more than this machine's cores), so work is
    split unevenly and every kernel's parallel path runs."""
    env = dict(os.environ, KILN_NUM_THREADS="5")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
         "dense or matmul or conv or pool or softmax or reduce or binary_float32 or transpose"
         " or layer_norm or resize"],
        env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


CHECK_EVERY_OP = """
import kiln, kiln.ir
kernels = {name[len("kernel.cpu."):] for name in kiln.list_global_funcs()
           if name.startswith("kernel.cpu.")}
# BYOC's region markers are removed by PartitionGraph before lowering, and define_sizes becomes
# a size definition of the graph: they have no kernel.
ops = {op for op in kiln.ir.list_ops()
       if not op.startswith("annotation.") and op != "define_sizes"}
assert ops <= kernels, f"core ops without a CPU kernel: {sorted(ops - kernels)}"
missing = [op for op in sorted(ops) if "FKernel" not in kiln.ir.op_attrs(op)]
assert not missing, f"ops without FKernel: {missing}"
"""


def test_every_core_op_has_its_kernel():
    """Every core op has a kernel.cpu.<op> and an FKernel forwarding to it. kernel_attrs.cc sets
    FKernel while libkiln initializes, which works only after the op registrations, so this
    catches a change of link order. In a fresh process: other tests register ops of their own."""
    result = subprocess.run([sys.executable, "-c", CHECK_EVERY_OP], capture_output=True,
                            text=True, check=False)
    assert result.returncode == 0, result.stderr[-3000:]


def test_fold_constant_runs_the_cpu_kernel():
    """The compiler's FKernel of a core op forwards to kernel.cpu.<op>, so FoldConstant folds."""
    a, b = rand(2, 3), rand(3)
    mod = kiln.ir.ParseModule(
        "def @main() { add(meta[Constant][0], meta[Constant][1]) }",
        [kiln.tensor(a), kiln.tensor(b)])
    folded = kiln.transform.FoldConstant()(kiln.transform.InferType()(mod))
    body = folded["main"].body
    assert isinstance(body, kiln.ir.Constant)
    np.testing.assert_allclose(body.data.numpy(), a + b, rtol=1e-6)


def test_overriding_the_global_changes_what_fold_constant_runs():
    """FKernel looks kernel.cpu.<op> up on every call, so a plugin's override takes effect."""
    original = kiln.get_global_func("kernel.cpu.subtract")

    def fill_sevens(inputs, outputs, attrs):
        outputs[0].numpy()[...] = 7

    a = rand(4)
    mod = kiln.ir.ParseModule("def @main() { subtract(meta[Constant][0], meta[Constant][0]) }",
                              [kiln.tensor(a)])
    kiln.register_func("kernel.cpu.subtract", fill_sevens, override=True)
    try:
        folded = kiln.transform.FoldConstant()(kiln.transform.InferType()(mod))
    finally:
        kiln.register_func("kernel.cpu.subtract", original, override=True)
    np.testing.assert_array_equal(folded["main"].body.data.numpy(), np.full(4, 7, np.float32))

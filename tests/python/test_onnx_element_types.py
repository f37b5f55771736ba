"""ONNX element types beyond float32/float64/int8/uint8/int32/int64/bool (float16, bfloat16,
int16, uint16, uint32, uint64) end to end: graph inputs fed at run time, initializers from the
typed fields and raw data, Cast/CastLike targets, and the ops ONNX's tests use them with,
against numpy. bfloat16 travels through Executable.run as uint16 bit patterns."""

import numpy as np
import pytest

import kiln

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import kiln.frontend  # noqa: E402

RNG = np.random.default_rng(11)
ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
        np.dtype(np.float16): TensorProto.FLOAT16, np.dtype(np.int16): TensorProto.INT16,
        np.dtype(np.uint16): TensorProto.UINT16, np.dtype(np.uint32): TensorProto.UINT32,
        np.dtype(np.uint64): TensorProto.UINT64}


def run_node(op_type, inputs, opset=13, elems=None, **attrs):
    """Builds a one-node model over ``inputs`` ({name: array}, declared with the arrays' element
    types unless ``elems`` names another; ONNX's shape inference types the output) and runs it
    with every input fed at run time."""
    elems = elems or {}
    graph = helper.make_graph(
        [helper.make_node(op_type, list(inputs), ["y"], **attrs)], "element_types",
        [helper.make_tensor_value_info(name, elems.get(name, ELEM[value.dtype]), value.shape)
         for name, value in inputs.items()],
        [helper.make_empty_tensor_value_info("y")])
    model = onnx.shape_inference.infer_shapes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), strict_mode=True)
    (result,) = kiln.build(kiln.frontend.from_onnx(model)).run(**inputs)
    return result


def bfloat16_bits(x):
    """float32 ``x`` rounded to bfloat16 (nearest, ties to even; no NaNs), as bit patterns."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def test_cast_to_and_from_float16_and_bfloat16():
    x = np.array([1.0, 1 + 2**-11, 1 + 3 * 2**-11, 65520.0, 2**-25, -0.0, np.inf, -3.75],
                 np.float32)
    half = run_node("Cast", {"x": x}, to=TensorProto.FLOAT16)
    assert half.dtype == np.float16
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(half.view(np.uint16), x.astype(np.float16).view(np.uint16))
    back = run_node("Cast", {"x": half}, to=TensorProto.DOUBLE)
    np.testing.assert_array_equal(back, half.astype(np.float64))

    bf = run_node("Cast", {"x": x}, to=TensorProto.BFLOAT16)
    assert bf.dtype == np.uint16  # bit patterns: numpy has no bfloat16
    np.testing.assert_array_equal(bf, bfloat16_bits(x))
    widened = run_node("Cast", {"x": bf}, elems={"x": TensorProto.BFLOAT16},
                       to=TensorProto.FLOAT)
    np.testing.assert_array_equal(widened, (bf.astype(np.uint32) << 16).view(np.float32))


def test_cast_like_takes_the_type_of_a_bfloat16_input():
    x = np.array([0.1, -2.5, 3e38], np.float32)
    like = np.zeros(1, np.uint16)
    y = run_node("CastLike", {"x": x, "like": like}, opset=15,
                 elems={"like": TensorProto.BFLOAT16})
    np.testing.assert_array_equal(y, bfloat16_bits(x))


@pytest.mark.parametrize("dtype", [np.float16, np.int16, np.uint16, np.uint32, np.uint64])
@pytest.mark.parametrize("op_type,ref", [("Max", np.maximum), ("Min", np.minimum)])
def test_variadic_max_and_min_broadcast(op_type, ref, dtype):
    top = float(np.finfo(dtype).max if dtype == np.float16 else np.iinfo(dtype).max)
    bottom = float(np.finfo(dtype).min if dtype == np.float16 else np.iinfo(dtype).min)
    a, b, c = (RNG.uniform(bottom / 2, top / 2, size=shape).astype(dtype)
               for shape in [(2, 1, 4), (3, 1), (4,)])
    y = run_node(op_type, {"a": a, "b": b, "c": c})
    np.testing.assert_array_equal(y, ref(ref(a, b), c))


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", [np.float16, np.int16, np.uint16, np.uint32, np.uint64])
def test_mod_follows_the_divisor_or_with_fmod_the_dividend(fmod, dtype):
    signed = not np.issubdtype(dtype, np.unsignedinteger)
    a = np.array([-7, -4, -1, 0, 3, 5, 8, 9] if signed else [7, 4, 1, 0, 3, 5, 8, 9], dtype)
    b = np.array([3, -3, 2, -5, -2, 3, 3, -4] if signed else [3, 3, 2, 5, 2, 3, 3, 4], dtype)
    y = run_node("Mod", {"a": a, "b": b}, fmod=fmod)
    np.testing.assert_array_equal(y, np.fmod(a, b) if fmod else np.mod(a, b))


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32, np.uint64])
@pytest.mark.parametrize("direction,ref", [("LEFT", np.left_shift), ("RIGHT", np.right_shift)])
def test_bit_shift_of_unsigned_types_wraps(direction, ref, dtype):
    width = 8 * np.dtype(dtype).itemsize
    a = np.array([np.iinfo(dtype).max, 16, 1, 5], dtype)
    b = np.array([3, 2, width - 1, 0], dtype)
    y = run_node("BitShift", {"a": a, "b": b}, direction=direction)
    np.testing.assert_array_equal(y, ref(a, b))


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64])
def test_pow_of_float_to_an_unsigned_exponent(dtype):
    x = np.array([1.5, -2.0, 3.0, 0.5], np.float32)
    e = np.array([2, 3, 0, 5], dtype)
    y = run_node("Pow", {"x": x, "e": e}, opset=15)
    np.testing.assert_allclose(y, np.power(x, e.astype(np.float32)), rtol=1e-6)


def constant_output(tensor):
    """The value of a model whose output is the initializer ``tensor``."""
    graph = helper.make_graph([], "constant", [], [helper.make_tensor_value_info(
        tensor.name, tensor.data_type, list(tensor.dims))], initializer=[tensor])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return kiln.frontend.from_onnx(model)["main"].body.data


@pytest.mark.parametrize("raw", [False, True])
@pytest.mark.parametrize("dtype", [np.float16, np.int16, np.uint16, np.uint32, np.uint64])
def test_initializers_from_typed_fields_and_raw_data(dtype, raw):
    values = np.array([[1, 0, 3], [4, 5, 1]]).astype(dtype)
    if np.issubdtype(dtype, np.unsignedinteger):
        values[0, 0] = np.iinfo(dtype).max  # beyond int32_data's range for uint32
    data = values.tobytes() if raw else values.flatten().tolist()
    constant = constant_output(helper.make_tensor("c", ELEM[np.dtype(dtype)], [2, 3], data, raw))
    assert constant.dtype == np.dtype(dtype).name
    np.testing.assert_array_equal(constant.numpy(), values)


@pytest.mark.parametrize("raw", [False, True])
def test_bfloat16_initializer_holds_its_bit_patterns(raw):
    bits = np.array([0x3F80, 0xC0A0, 0x7F80, 0x0001], np.uint16)  # 1, -5, inf, a subnormal
    tensor = helper.make_tensor("c", TensorProto.BFLOAT16, [4], bits.tobytes(), raw=True)
    if not raw:  # int32_data holds the bit patterns
        tensor.ClearField("raw_data")
        tensor.int32_data.extend(bits.tolist())
    constant = constant_output(tensor)
    assert constant.dtype == "bfloat16"
    np.testing.assert_array_equal(constant.view("uint16").numpy(), bits)


def test_a_bfloat16_input_takes_bit_patterns_only():
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "bf16",
                              [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    ex = kiln.build(kiln.frontend.from_onnx(model))
    bits = np.array([0x3F80, 0xFFC0], np.uint16)
    np.testing.assert_array_equal(ex.run(x=bits)[0], bits)
    np.testing.assert_array_equal(ex.run(x=kiln.tensor(bits).view("bfloat16"))[0], bits)
    with pytest.raises(kiln.ValueError, match="'x' is bfloat16 and expects its uint16 bit"):
        ex.run(x=np.ones(2, np.float32), cast=True)


"""ONNX converters checked by value: each small model is imported with every input bound
(``values=``), folded to constants by InferType + FoldConstant (the CPU kernels), and compared
with numpy or PyTorch. Also the importer's ``values=`` option and its constant folding of shape
chains that ONNX's data propagation leaves alone."""

import numpy as np
import pytest

import kiln
from kiln import transform

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import kiln.frontend  # noqa: E402

F = torch.nn.functional
RNG = np.random.default_rng(7)
ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
        np.dtype(np.int64): TensorProto.INT64, np.dtype(np.int32): TensorProto.INT32,
        np.dtype(np.bool_): TensorProto.BOOL, np.dtype(np.uint8): TensorProto.UINT8,
        np.dtype(np.int8): TensorProto.INT8}


def model_of(nodes, inputs, outputs=("y",), opset=13, inits=None, expected=None):
    """A model over ``inputs`` ({name: numpy array}, declared with their dtypes and shapes);
    its outputs are declared like the ``expected`` arrays when given (ONNX's checker wants
    output shapes, which its inference cannot tell when they depend on input values)."""
    if expected is None:
        declared = [helper.make_empty_tensor_value_info(name) for name in outputs]
    else:
        declared = [helper.make_tensor_value_info(name, ELEM[np.asarray(ref).dtype],
                                                  list(np.shape(ref)))
                    for name, ref in zip(outputs, expected)]
    graph = helper.make_graph(
        nodes, "numerics",
        [helper.make_tensor_value_info(k, ELEM[v.dtype], list(v.shape)) for k, v in inputs.items()],
        declared,
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)


def evaluate(model, inputs):
    """The model's outputs, every input bound to its value and the module folded."""
    mod = kiln.frontend.from_onnx(model, values=inputs)
    assert len(mod["main"].params) == 0
    body = transform.FoldConstant()(transform.InferType()(mod))["main"].body
    fields = body.fields if body.type_key == "kiln.ir.Tuple" else [body]
    results = []
    for field in fields:
        assert field.type_key == "kiln.ir.Constant", field.type_key
        results.append(field.data.numpy().copy())
    return results


def check_node(op_type, inputs, expected, opset=13, rtol=1e-5, atol=1e-6, outputs=("y",),
               **attrs):
    node = helper.make_node(op_type, list(inputs), list(outputs), name="n0", **attrs)
    expected = expected if isinstance(expected, list) else [expected]
    got = evaluate(model_of([node], inputs, outputs, opset, expected=expected), inputs)
    for out, ref in zip(got, expected):
        ref = np.asarray(ref)
        assert out.dtype == ref.dtype and out.shape == ref.shape, (out.dtype, out.shape, ref.dtype,
                                                                   ref.shape)
        np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol)


def rand(*shape, dtype=np.float32):
    return RNG.uniform(-2, 2, size=shape).astype(dtype)


# ---- values= and folding ---------------------------------------------------------------------

def test_bound_input_becomes_a_constant_and_leaves_the_params():
    inputs = {"x": rand(2, 6), "s": np.array([3, 4], np.int64)}
    node = helper.make_node("Reshape", ["x", "s"], ["y"])
    model = model_of([node], inputs, expected=[np.zeros((3, 4), np.float32)])
    # Unbound, the shape is a parameter read at run time; bound, it is folded into the op.
    assert [p.name_hint for p in kiln.frontend.from_onnx(model)["main"].params] == ["x", "s"]
    main = kiln.frontend.from_onnx(model, values={"s": inputs["s"]})["main"]
    assert [p.name_hint for p in main.params] == ["x"]
    assert list(main.body.attrs["newshape"]) == [3, 4]
    (y,) = evaluate(model, inputs)
    np.testing.assert_array_equal(y, inputs["x"].reshape(3, 4))


def test_values_naming_no_input_or_of_another_dtype_is_a_value_error():
    model = model_of([helper.make_node("Relu", ["x"], ["y"])], {"x": rand(2)})
    with pytest.raises(kiln.ValueError, match=r"values= names 'nope'.*its inputs are 'x'"):
        kiln.frontend.from_onnx(model, values={"nope": np.zeros(2, np.float32)})
    with pytest.raises(kiln.ValueError, match=r"'x'.*int64 tensor, but the input is FLOAT"):
        kiln.frontend.from_onnx(model, values={"x": np.zeros(2, np.int64)})


def test_bound_value_sets_the_shape_of_a_symbolic_input():
    graph = helper.make_graph([helper.make_node("Neg", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = rand(5)
    (y,) = evaluate(model, {"x": x})
    np.testing.assert_array_equal(y, -x)


def test_shape_chain_onnx_does_not_propagate_is_folded_at_import():
    # Shape -> Cast(float) -> Mul 0.5 -> Cast(int64) -> Reshape: data propagation stops at the
    # float cast, so the importer evaluates the chain with the CPU kernels.
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Cast", ["s"], ["sf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["sf", "half"], ["hf"]),
             helper.make_node("Cast", ["hf"], ["h"], to=TensorProto.INT64),
             helper.make_node("ConstantOfShape", ["h"], ["k"],
                              value=numpy_helper.from_array(np.array([2.0], np.float32))),
             helper.make_node("Reshape", ["z", "h"], ["r"]),
             helper.make_node("Add", ["r", "k"], ["y"])]
    x, z = rand(4, 6), rand(6)
    model = model_of(nodes, {"x": x, "z": z}, inits={"half": np.array([0.5], np.float32)},
                     expected=[np.zeros((2, 3), np.float32)])
    main = kiln.frontend.from_onnx(model)["main"]
    assert [p.name_hint for p in main.params] == ["x", "z"]
    (y,) = evaluate(model, {"x": x, "z": z})
    np.testing.assert_allclose(y, z.reshape(2, 3) + 2.0)


def test_shape_computed_from_a_parameter_is_read_at_run_time():
    nodes = [helper.make_node("Cast", ["x"], ["s"], to=TensorProto.INT64),
             helper.make_node("Reshape", ["z", "s"], ["y"])]
    inputs = {"x": np.array([3.0, 4.0], np.float32), "z": rand(12)}
    model = model_of(nodes, inputs, expected=[np.zeros((3, 4), np.float32)])
    (y,) = kiln.build(kiln.frontend.from_onnx(model)).run(**inputs)
    np.testing.assert_array_equal(y, inputs["z"].reshape(3, 4))


# ---- elementwise ---------------------------------------------------------------------------

@pytest.mark.parametrize("op_type,ref,low,high", [
    ("Tan", np.tan, -1, 1), ("Asin", np.arcsin, -0.9, 0.9), ("Acos", np.arccos, -0.9, 0.9),
    ("Atan", np.arctan, -3, 3), ("Sinh", np.sinh, -3, 3), ("Cosh", np.cosh, -3, 3),
    ("Asinh", np.arcsinh, -3, 3), ("Acosh", np.arccosh, 1, 4), ("Atanh", np.arctanh, -0.9, 0.9)])
def test_trigonometric(op_type, ref, low, high):
    x = RNG.uniform(low, high, size=(3, 4)).astype(np.float32)
    check_node(op_type, {"x": x}, ref(x).astype(np.float32))


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", [np.int64, np.float32])
def test_mod(fmod, dtype):
    a = np.array([-7, -4, 5, 8, 9, 3], dtype)
    b = np.array([3, -3, -2, 3, -4, 3], dtype)
    check_node("Mod", {"a": a, "b": b}, (np.fmod if fmod else np.mod)(a, b), fmod=fmod)


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bit_shift(direction):
    x = np.array([16, 4, 1, 255], np.uint8)
    n = np.array([1, 2, 3, 1], np.uint8)
    ref = np.left_shift(x, n) if direction == "LEFT" else np.right_shift(x, n)
    check_node("BitShift", {"x": x, "n": n}, ref.astype(np.uint8), opset=11, direction=direction)


def test_activations():
    x = rand(3, 5)
    check_node("Selu", {"x": x}, F.selu(torch.from_numpy(x)).numpy(), opset=6)
    check_node("Celu", {"x": x}, F.celu(torch.from_numpy(x), 0.7).numpy(), alpha=0.7)
    check_node("ThresholdedRelu", {"x": x}, np.where(x > 0.5, x, 0).astype(np.float32),
               opset=10, alpha=0.5)
    check_node("HardSwish", {"x": x}, F.hardswish(torch.from_numpy(x)).numpy(), opset=14)
    check_node("Shrink", {"x": x}, np.where(x < -1, x + 0.25, np.where(x > 1, x - 0.25, 0))
               .astype(np.float32), lambd=1.0, bias=0.25)
    check_node("Softsign", {"x": x}, x / (1 + np.abs(x)))
    slope = rand(5)
    check_node("PRelu", {"x": x, "slope": slope}, np.where(x < 0, x * slope, x))
    check_node("Elu", {"x": x}, F.elu(torch.from_numpy(x), 0.5).numpy(), opset=6, alpha=0.5)


def test_is_nan_and_is_inf():
    x = np.array([1.0, np.nan, np.inf, -np.inf, -2.0], np.float32)
    check_node("IsNaN", {"x": x}, np.isnan(x))
    check_node("IsInf", {"x": x}, np.isinf(x), opset=10)
    check_node("IsInf", {"x": x}, np.isposinf(x), opset=10, detect_negative=0)
    check_node("IsInf", {"x": x}, np.isneginf(x), opset=10, detect_positive=0)


@pytest.mark.parametrize("opset,axis", [(13, -1), (13, 0), (11, 1), (11, 0)])
def test_hardmax(opset, axis):
    x = np.array([[[1, 3, 3], [2, 0, 1]], [[0, 0, 0], [5, 4, 5]]], np.float32)
    if opset >= 13:
        expected = np.moveaxis(np.eye(x.shape[axis], dtype=np.float32)[
            np.argmax(x, axis=axis)], -1, axis)
    else:  # the input viewed as 2-D at axis
        flat = x.reshape(int(np.prod(x.shape[:axis])), -1)
        expected = np.eye(flat.shape[1], dtype=np.float32)[np.argmax(flat, 1)].reshape(x.shape)
    check_node("Hardmax", {"x": x}, expected, opset=opset, axis=axis)


# ---- indexing ------------------------------------------------------------------------------

def test_gather_elements_and_scatter_elements():
    x = rand(3, 4)
    idx = np.array([[0, -1, 2, 1], [2, 2, 0, 0]], np.int64)
    check_node("GatherElements", {"x": x, "i": idx},
               np.take_along_axis(x, np.where(idx < 0, idx + 3, idx), 0), opset=11)
    upd = rand(2, 4)
    expected = x.copy()
    for r in range(2):
        for c in range(4):
            expected[idx[r, c] % 3, c] += upd[r, c]
    check_node("ScatterElements", {"x": x, "i": idx, "u": upd}, expected, opset=16,
               reduction="add")


def test_gather_nd_and_scatter_nd():
    x = rand(3, 4, 2)
    idx = np.array([[2, 1], [0, 3]], np.int64)
    check_node("GatherND", {"x": x, "i": idx}, np.stack([x[2, 1], x[0, 3]]))
    upd = rand(2, 2)
    expected = x.copy()
    expected[2, 1], expected[0, 3] = upd[0], upd[1]
    check_node("ScatterND", {"x": x, "i": idx, "u": upd}, expected)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_compress(axis):
    x = rand(3, 4)
    cond = np.array([True, False, True], np.bool_)
    attrs = {} if axis is None else {"axis": axis}
    check_node("Compress", {"x": x, "c": cond}, np.compress(cond, x, axis=axis), **attrs)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot(axis):
    indices = np.array([[0, 3], [-1, 2]], np.int64)
    depth = np.array(4, np.int64)
    values = np.array([2.0, 5.0], np.float32)
    eye = np.eye(4, dtype=np.float32)[np.where(indices < 0, indices + 4, indices)]
    expected = np.moveaxis(np.where(eye == 1, 5.0, 2.0).astype(np.float32), -1, axis)
    check_node("OneHot", {"i": indices, "d": depth, "v": values}, expected, opset=11, axis=axis)


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_cumsum(exclusive, reverse):
    x = rand(3, 4)
    y = np.flip(x, 1) if reverse else x
    expected = np.cumsum(y, 1) - (y if exclusive else 0)
    expected = np.flip(expected, 1) if reverse else expected
    check_node("CumSum", {"x": x, "a": np.array(1, np.int64)}, expected.astype(np.float32),
               exclusive=exclusive, reverse=reverse)


@pytest.mark.parametrize("largest", [0, 1])
def test_top_k(largest):
    x = np.array([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3]], np.float32)
    order = np.argsort(-x if largest else x, axis=1, kind="stable")[:, :2]
    check_node("TopK", {"x": x, "k": np.array([2], np.int64)},
               [np.take_along_axis(x, order, 1), order.astype(np.int64)], opset=11,
               outputs=("v", "i"), largest=largest)


def test_reverse_sequence():
    x = rand(4, 3, 2)  # (time, batch, feature)
    lengths = np.array([4, 2, 0], np.int64)
    expected = x.copy()
    for b, length in enumerate(lengths):
        expected[:length, b] = x[:length, b][::-1]
    check_node("ReverseSequence", {"x": x, "l": lengths}, expected, opset=10, batch_axis=1,
               time_axis=0)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample(mode):
    x = rand(1, 2, 4, 5)
    grid = RNG.uniform(-1.2, 1.2, size=(1, 3, 3, 2)).astype(np.float32)
    expected = F.grid_sample(torch.from_numpy(x), torch.from_numpy(grid), mode=mode,
                             padding_mode="border", align_corners=True).numpy()
    check_node("GridSample", {"x": x, "g": grid}, expected, opset=16, rtol=1e-4, atol=1e-5,
               mode=mode, padding_mode="border", align_corners=1)


def test_det():
    x = rand(3, 4, 4)
    check_node("Det", {"x": x}, np.linalg.det(x).astype(np.float32), opset=11, rtol=1e-4,
               atol=1e-5)


# ---- generators and layout -----------------------------------------------------------------

def test_range_eye_like_and_trilu():
    check_node("Range", {"s": np.array(10, np.int32), "l": np.array(-2, np.int32),
                         "d": np.array(-3, np.int32)}, np.arange(10, -2, -3, dtype=np.int32))
    check_node("Range", {"s": np.array(1.5, np.float32), "l": np.array(3.0, np.float32),
                         "d": np.array(0.5, np.float32)}, np.arange(1.5, 3.0, 0.5, np.float32))
    x = rand(3, 5)
    check_node("EyeLike", {"x": x}, np.eye(3, 5, k=2, dtype=np.float64), opset=9, k=2,
               dtype=TensorProto.DOUBLE)
    batch = rand(2, 4, 5)
    check_node("Trilu", {"x": batch, "k": np.array(-1, np.int64)}, np.triu(batch, -1), opset=14)
    check_node("Trilu", {"x": batch, "k": np.array(1, np.int64)}, np.tril(batch, 1), opset=14,
               upper=0)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space_and_back(mode):
    x = rand(1, 8, 2, 3)
    t = torch.from_numpy(x)
    if mode == "DCR":
        expected = x.reshape(1, 2, 2, 2, 2, 3).transpose(0, 3, 4, 1, 5, 2).reshape(1, 2, 4, 6)
    else:
        expected = F.pixel_shuffle(t, 2).numpy()
    check_node("DepthToSpace", {"x": x}, expected, blocksize=2, mode=mode)
    y = rand(1, 2, 4, 6)
    expected = y.reshape(1, 2, 2, 2, 3, 2).transpose(0, 3, 5, 1, 2, 4).reshape(1, 8, 2, 3)
    check_node("SpaceToDepth", {"x": y}, expected, blocksize=2)


def test_tile():
    x = rand(2, 3, 1)
    reps = np.array([2, 1, 3], np.int64)
    check_node("Tile", {"x": x, "r": reps}, np.tile(x, reps))


# ---- losses and normalizations --------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [None, 1])
def test_negative_log_likelihood_and_softmax_cross_entropy(reduction, weighted, ignore_index):
    scores = rand(3, 4, 2)
    target = np.array([[0, 1], [3, 1], [2, 2]], np.int64)
    weight = np.abs(rand(4)) + 0.1
    inputs = {"x": scores, "t": target}
    kwargs = {"reduction": reduction}
    if weighted:
        inputs["w"] = weight
    attrs = dict(kwargs)
    if ignore_index is not None:
        attrs["ignore_index"] = ignore_index
        kwargs["ignore_index"] = ignore_index
    w = torch.from_numpy(weight) if weighted else None
    expected = F.nll_loss(torch.from_numpy(scores), torch.from_numpy(target), weight=w,
                          **kwargs).numpy()
    check_node("NegativeLogLikelihoodLoss", inputs, expected, opset=13, atol=1e-5, **attrs)
    log_prob = F.log_softmax(torch.from_numpy(scores), 1)
    loss = F.nll_loss(log_prob, torch.from_numpy(target), weight=w, **kwargs).numpy()
    check_node("SoftmaxCrossEntropyLoss", inputs, [loss, log_prob.numpy()], opset=13, atol=1e-5,
               outputs=("y", "log_prob"), **attrs)


def test_instance_norm_mean_variance_norm_and_lrn():
    x = rand(2, 3, 4, 5)
    scale, bias = rand(3), rand(3)
    expected = F.instance_norm(torch.from_numpy(x), weight=torch.from_numpy(scale),
                               bias=torch.from_numpy(bias), eps=1e-3).numpy()
    check_node("InstanceNormalization", {"x": x, "s": scale, "b": bias}, expected, opset=6,
               rtol=1e-4, atol=1e-5, epsilon=1e-3)
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    std = np.sqrt((x ** 2).mean(axis=(0, 2, 3), keepdims=True) - mean ** 2)
    check_node("MeanVarianceNormalization", {"x": x}, (x - mean) / (std + 1e-9), rtol=1e-4,
               atol=1e-5)
    expected = F.local_response_norm(torch.from_numpy(x), 3, alpha=0.2, beta=0.6, k=1.5).numpy()
    check_node("LRN", {"x": x}, expected, rtol=1e-4, atol=1e-5, size=3, alpha=0.2, beta=0.6,
               bias=1.5)


@pytest.mark.parametrize("equation,shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("i,i", [(5,), (5,)]), ("ij->", [(3, 4)]), ("ijk->kji", [(2, 3, 4)]),
    ("ij,j->i", [(3, 4), (4,)]), ("ik,jk", [(2, 3), (4, 3)]),
    ("...ii->...i", [(2, 3, 3)]), ("ii", [(4, 4)]), ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("bij,jk", [(2, 3, 4), (4, 5)]), ("i...,i...->...", [(3, 2, 4), (3, 1, 4)]),
    ("iij,jk->ik", [(3, 3, 2), (2, 4)])])
def test_einsum(equation, shapes):
    operands = [rand(*shape, dtype=np.float64) for shape in shapes]
    inputs = {f"x{i}": x for i, x in enumerate(operands)}
    check_node("Einsum", inputs, np.einsum(equation, *operands), opset=12, equation=equation)


@pytest.mark.parametrize("op_type,ref", [("ArgMax", np.argmax), ("ArgMin", np.argmin)])
@pytest.mark.parametrize("axis", [0, 1])
def test_arg_reductions_select_the_last_index(op_type, ref, axis):
    x = np.array([[2, 5, 5, 1], [7, 7, 0, 0], [2, 5, 0, 7]], np.float32)
    flipped = np.flip(x, axis)
    expected = x.shape[axis] - 1 - ref(flipped, axis=axis)
    check_node(op_type, {"x": x}, np.expand_dims(expected, axis).astype(np.int64), opset=12,
               axis=axis, select_last_index=1)


def test_layer_norm_mean_and_inverse_std_outputs():
    x, gamma, beta = rand(2, 3, 4), rand(3, 4), rand(3, 4)
    mean = x.mean(axis=(1, 2), keepdims=True)
    inv_std = 1 / np.sqrt(x.var(axis=(1, 2), keepdims=True) + 1e-5)
    y = (x - mean) * inv_std * gamma + beta
    check_node("LayerNormalization", {"x": x, "g": gamma, "b": beta}, [y, mean, inv_std],
               opset=17, rtol=1e-4, atol=1e-5, outputs=("y", "mean", "inv_std"), axis=1)


def test_dropout_at_inference_passes_through_with_an_all_true_mask():
    x = rand(3, 4)
    check_node("Dropout", {"x": x, "r": np.array(0.5, np.float32)},
               [x, np.ones((3, 4), np.bool_)], opset=13, outputs=("y", "mask"))
    model = model_of([helper.make_node("Dropout", ["x", "r", "t"], ["y"])],
                     {"x": x, "r": np.array(0.5, np.float32), "t": np.array(True)},
                     expected=[x])
    with pytest.raises(kiln.NotImplementedError, match="training_mode with a non-zero ratio"):
        kiln.frontend.from_onnx(model, values={"r": np.array(0.5, np.float32),
                                               "t": np.array(True)})
    (y,) = evaluate(model, {"x": x, "r": np.array(0.0, np.float32), "t": np.array(True)})
    np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("op_type,coefficients", [
    ("HannWindow", [0.5, 0.5]), ("HammingWindow", [25 / 46, 21 / 46]),
    ("BlackmanWindow", [0.42, 0.5, 0.08])])
@pytest.mark.parametrize("periodic", [0, 1])
def test_window_functions(op_type, coefficients, periodic):
    n = np.arange(10)
    period = 10 if periodic else 9
    expected = sum((-1) ** i * a * np.cos(2 * np.pi * i * n / period)
                   for i, a in enumerate(coefficients))
    check_node(op_type, {"size": np.array(10, np.int64)}, expected.astype(np.float32), opset=17,
               atol=1e-6, periodic=periodic)


def test_batch_norm_in_training_mode_uses_and_updates_the_batch_statistics():
    x, scale, bias = rand(2, 3, 4, 5), rand(3), rand(3)
    running_mean, running_var = rand(3), np.abs(rand(3)) + 0.5
    mean = x.mean(axis=(0, 2, 3))
    var = x.var(axis=(0, 2, 3))
    view = (1, 3, 1, 1)
    y = (x - mean.reshape(view)) / np.sqrt(var.reshape(view) + 1e-3) * scale.reshape(view) \
        + bias.reshape(view)
    check_node("BatchNormalization",
               {"x": x, "s": scale, "b": bias, "m": running_mean, "v": running_var},
               [y, running_mean * 0.8 + mean * 0.2, running_var * 0.8 + var * 0.2], opset=15,
               rtol=1e-4, atol=1e-5, outputs=("y", "rm", "rv"), epsilon=1e-3, momentum=0.8,
               training_mode=1)


def test_reshape_allowzero_with_an_empty_extent():
    x = np.zeros((0, 3, 4), np.float32)
    check_node("Reshape", {"x": x, "s": np.array([3, 4, 0], np.int64)},
               np.zeros((3, 4, 0), np.float32), opset=14, allowzero=1)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_max_pool_of_8_bit_integers_with_indices(dtype):
    x = RNG.integers(0 if dtype == np.uint8 else -128, 128, size=(1, 2, 5, 5)).astype(dtype)
    values, per_plane = F.max_pool2d(torch.from_numpy(x.astype(np.float32)), 3, stride=2,
                                     padding=1, return_indices=True)
    planes = (np.arange(2) * 25).reshape(1, 2, 1, 1)
    check_node("MaxPool", {"x": x}, [values.numpy().astype(dtype), per_plane.numpy() + planes],
               opset=12, outputs=("y", "i"), kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1])


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]},
    {"kernel_shape": [2, 3], "strides": [1, 2], "dilations": [2, 1]},
    {"kernel_shape": [2, 2]}])
def test_max_pool_indices_are_flat_nchw_positions(attrs):
    x = RNG.integers(-5, 5, size=(2, 3, 6, 7)).astype(np.float32)  # ties: the first maximum
    pads = attrs.get("pads", [0, 0, 0, 0])
    values, per_plane = F.max_pool2d(torch.from_numpy(x), attrs["kernel_shape"],
                                     stride=attrs.get("strides", 1), padding=pads[:2],
                                     dilation=attrs.get("dilations", 1), return_indices=True)
    planes = (np.arange(6) * 42).reshape(2, 3, 1, 1)
    check_node("MaxPool", {"x": x}, [values.numpy(), per_plane.numpy() + planes], opset=12,
               outputs=("y", "i"), **attrs)


def test_max_pool_indices_in_column_major_storage_order():
    x = rand(1, 2, 4, 5)
    values, per_plane = F.max_pool2d(torch.from_numpy(x), 2, return_indices=True)
    rows, columns = per_plane.numpy() // 5, per_plane.numpy() % 5
    planes = (np.arange(2) * 20).reshape(1, 2, 1, 1)
    check_node("MaxPool", {"x": x}, [values.numpy(), columns * 4 + rows + planes], opset=12,
               outputs=("y", "i"), kernel_shape=[2, 2], strides=[2, 2], storage_order=1)



@pytest.mark.parametrize("with_shape", [False, True])
def test_max_unpool_scatters_to_the_pooling_indices(with_shape):
    x = rand(1, 2, 4, 4)
    values, indices = F.max_pool2d(torch.from_numpy(x), 2, return_indices=True)
    expected = F.max_unpool2d(values, indices, 2).numpy()
    planes = (np.arange(2) * 16).reshape(1, 2, 1, 1)
    inputs = {"x": values.numpy(), "i": indices.numpy() + planes}
    if with_shape:  # a larger output_shape pads the unpooled tensor with zeros at the ends
        inputs["s"] = np.array([1, 2, 5, 6], np.int64)
        expected = np.pad(expected, [(0, 0), (0, 0), (0, 1), (0, 2)])
    check_node("MaxUnpool", inputs, expected, opset=11, kernel_shape=[2, 2], strides=[2, 2])


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling_ratio", [0, 2])
def test_roi_align_against_torchvision(aligned, sampling_ratio):
    torchvision = pytest.importorskip("torchvision")
    x = rand(2, 3, 8, 9)
    rois = np.array([[0.5, 1.0, 6.2, 7.0], [2.0, 0.0, 8.5, 3.5], [-1.0, 2.0, 4.0, 9.5]],
                    np.float32)
    batch = np.array([1, 0, 1], np.int64)
    boxes = torch.from_numpy(np.concatenate([batch[:, None].astype(np.float32), rois], 1))
    expected = torchvision.ops.roi_align(torch.from_numpy(x), boxes, (3, 4), spatial_scale=0.9,
                                         sampling_ratio=sampling_ratio, aligned=aligned).numpy()
    mode = "half_pixel" if aligned else "output_half_pixel"
    check_node("RoiAlign", {"x": x, "rois": rois, "batch": batch}, expected, opset=16,
               rtol=1e-4, atol=1e-5, output_height=3, output_width=4, spatial_scale=0.9,
               sampling_ratio=sampling_ratio, coordinate_transformation_mode=mode)

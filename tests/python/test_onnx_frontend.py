"""The ONNX frontend: small models built with onnx.helper, imported and type-checked.

Kiln has no CPU kernels on this branch yet, so the checks are structural: which core ops the
importer emits, and that InferType gives every output the type ONNX's shape inference gives it.
"""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import kiln
from kiln import ir, transform

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper, shape_inference  # noqa: E402

import kiln.frontend  # noqa: E402

TESTDATA = pathlib.Path("/usr/share/libonnx-testdata/data/node")
F32 = TensorProto.FLOAT


def make_model(nodes, inputs, opset=13, inits=None, outputs=("y",)):
    """A model of ``nodes`` over ``inputs`` ({name: shape} of float32, or (shape, elem_type)),
    with ``inits`` ({name: numpy array}) as initializers; ONNX's shape inference types the
    outputs (the checker wants them typed), which is what the import is compared with."""
    graph_inputs = []
    for name, spec in inputs.items():
        shape, elem = spec if isinstance(spec, tuple) and isinstance(spec[1], int) else (spec, F32)
        graph_inputs.append(helper.make_tensor_value_info(name, elem, shape))
    graph = helper.make_graph(
        nodes,
        "test",
        graph_inputs,
        [helper.make_empty_tensor_value_info(name) for name in outputs],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)


def with_output_type(model, shape, elem=F32):
    """``model`` with its output typed by hand, where ONNX's shape inference cannot tell (the
    checker wants output shapes)."""
    name = model.graph.output[0].name
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info(name, elem, shape))
    return model


def node(op_type, inputs, outputs=("y",), **attrs):
    return helper.make_node(op_type, list(inputs), list(outputs), name=f"{op_type.lower()}_0",
                            **attrs)


def ops_used(expr):
    """Names of the ops called anywhere under ``expr``."""
    names, stack = set(), [expr]
    while stack:
        e = stack.pop()
        key = e.type_key
        if key == "kiln.ir.Call":
            names.add(e.op.name)
            stack.extend(e.args)
        elif key == "kiln.ir.Tuple":
            stack.extend(e.fields)
        elif key == "kiln.ir.TupleGetItem":
            stack.append(e.tuple)
    return names


def kiln_type(t):
    if t.type_key == "kiln.ir.TupleType":
        return [kiln_type(f) for f in t.fields]
    return (tuple(d.value for d in t.shape), str(t.dtype))


_ONNX_DTYPES = {F32: "float32", TensorProto.DOUBLE: "float64", TensorProto.INT64: "int64",
                TensorProto.INT32: "int32", TensorProto.INT8: "int8", TensorProto.UINT8: "uint8",
                TensorProto.BOOL: "bool"}


def onnx_types(model):
    types = []
    for out in model.graph.output:
        tt = out.type.tensor_type
        types.append((tuple(d.dim_value for d in tt.shape.dim), _ONNX_DTYPES[tt.elem_type]))
    return types[0] if len(types) == 1 else types


def import_and_check(model, expected_ops, shapes=None):
    """Imports ``model``, checks the ops used and that the result type matches ONNX's."""
    mod = kiln.frontend.from_onnx(model, shapes=shapes)
    main = transform.InferType()(mod)["main"]
    assert expected_ops <= ops_used(main.body), ops_used(main.body)
    assert kiln_type(main.ret_type) == onnx_types(model)
    return main


X23 = {"x": [2, 3]}
IMG = {"x": [1, 3, 8, 8]}
ALL_UNARY = {"Relu": "nn.relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exp", "Log": "log",
             "Sqrt": "sqrt", "Abs": "abs", "Neg": "negative", "Erf": "erf", "Floor": "floor",
             "Ceil": "ceil", "Reciprocal": "reciprocal", "Softplus": "nn.softplus"}


@pytest.mark.parametrize("op_type", sorted(ALL_UNARY))
def test_unary(op_type):
    import_and_check(make_model([node(op_type, ["x"])], X23), {ALL_UNARY[op_type]})


@pytest.mark.parametrize("op_type,op", [("Add", "add"), ("Sub", "subtract"), ("Mul", "multiply"),
                                        ("Div", "divide"), ("Pow", "power")])
def test_binary_broadcasts(op_type, op):
    import_and_check(make_model([node(op_type, ["x", "b"])], {"x": [2, 3], "b": [3]}), {op})


@pytest.mark.parametrize("op_type,ops", [("Max", {"maximum"}), ("Min", {"minimum"}),
                                         ("Sum", {"add"}), ("Mean", {"add", "divide"})])
def test_variadic_chains(op_type, ops):
    model = make_model([node(op_type, ["a", "b", "c"])], {"a": [2, 3], "b": [3], "c": [1, 3]})
    main = import_and_check(model, ops)
    assert len(main.params) == 3


def test_comparison_logic_and_where():
    model = make_model(
        [node("Less", ["x", "z"], ["lt"]), node("Equal", ["x", "z"], ["eq"]),
         node("Or", ["lt", "eq"], ["le"]), node("Not", ["le"], ["gt"]),
         node("Where", ["gt", "x", "z"])],
        {"x": [2, 3], "z": [2, 3]})
    import_and_check(model, {"less", "equal", "logical_or", "logical_not", "where"})


@pytest.mark.parametrize("op_type,attrs,op", [
    ("LeakyRelu", {"alpha": 0.2}, "nn.leaky_relu"), ("Elu", {}, "nn.elu"),
    ("HardSigmoid", {"beta": 0.4}, "nn.hard_sigmoid")])
def test_activations_with_attributes(op_type, attrs, op):
    main = import_and_check(make_model([node(op_type, ["x"], **attrs)], X23), {op})
    for name, value in attrs.items():
        assert main.body.attrs[name] == pytest.approx(value)


def test_clip_bounds_from_inputs_and_attributes():
    inits = {"lo": np.float32(0.0), "hi": np.float32(6.0)}
    main = import_and_check(make_model([node("Clip", ["x", "lo", "hi"])], X23, 13, inits),
                            {"clip"})
    assert (main.body.attrs["a_min"], main.body.attrs["a_max"]) == (0.0, 6.0)
    main = import_and_check(make_model([node("Clip", ["x"], min=-1.0)], X23, 7), {"clip"})
    assert main.body.attrs["a_min"] == -1.0


def test_cast_identity_dropout():
    model = make_model([node("Identity", ["x"], ["i"]), node("Dropout", ["i"], ["d"]),
                        node("Cast", ["d"], to=TensorProto.INT64)], X23)
    main = import_and_check(model, {"cast"})
    assert ops_used(main.body) == {"cast"}


def test_conv_with_bias_and_same_padding():
    inits = {"w": np.zeros((4, 3, 3, 3), np.float32), "b": np.zeros(4, np.float32)}
    model = make_model([node("Conv", ["x", "w", "b"], auto_pad="SAME_UPPER", strides=[2, 2])],
                       IMG, 13, inits)
    main = import_and_check(model, {"nn.conv2d", "add", "reshape"})
    assert len(main.params) == 1


def test_conv_1d_imports_as_a_2d_window():
    model = make_model([node("Conv", ["x", "w"])], {"x": [1, 3, 8]}, 13,
                       {"w": np.zeros((4, 3, 3), np.float32)})
    import_and_check(model, {"unsqueeze", "nn.conv2d", "squeeze"})


def test_conv_and_pooling_3d():
    model = make_model([node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1, 1, 1]),
                        node("MaxPool", ["c"], ["m"], kernel_shape=[2, 2, 2]),
                        node("GlobalAveragePool", ["m"])],
                       {"x": [1, 3, 4, 4, 4]}, 13, {"w": np.zeros((4, 3, 3, 3, 3), np.float32)})
    import_and_check(model, {"nn.conv3d", "nn.max_pool3d", "mean"})


def test_conv_transpose_3d_is_unsupported():
    model = make_model([node("ConvTranspose", ["x", "w"])], {"x": [1, 3, 4, 4, 4]}, 13,
                       {"w": np.zeros((3, 4, 3, 3, 3), np.float32)})
    with pytest.raises(kiln.NotImplementedError, match="2-D windows"):
        kiln.frontend.from_onnx(model)


def test_conv_transpose():
    model = make_model([node("ConvTranspose", ["x", "w"], strides=[2, 2], pads=[1, 1, 1, 1])],
                       IMG, 13, {"w": np.zeros((3, 2, 3, 3), np.float32)})
    import_and_check(model, {"nn.conv2d_transpose"})


def test_gemm_alpha_beta_transpose():
    model = make_model([node("Gemm", ["a", "b", "c"], alpha=0.5, beta=2.0, transA=1)],
                       {"a": [4, 2], "b": [4, 5], "c": [5]})
    import_and_check(model, {"nn.dense", "transpose", "multiply", "add"})


def test_matmul():
    import_and_check(make_model([node("MatMul", ["a", "b"])], {"a": [2, 3, 4], "b": [4, 5]}),
                     {"matmul"})


@pytest.mark.parametrize("op_type,attrs,op", [
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
     "nn.max_pool2d"),
    ("AveragePool", {"kernel_shape": [2, 2], "auto_pad": "SAME_LOWER", "count_include_pad": 1},
     "nn.avg_pool2d"),
    ("MaxPool", {"kernel_shape": [3, 3], "ceil_mode": 1, "strides": [2, 2]}, "nn.max_pool2d"),
    ("GlobalAveragePool", {}, "nn.global_avg_pool2d"),
    ("GlobalMaxPool", {}, "nn.global_max_pool2d")])
def test_pooling(op_type, attrs, op):
    import_and_check(make_model([node(op_type, ["x"], **attrs)], IMG), {op})


def test_batch_norm_and_layer_norm():
    c = np.ones(3, np.float32)
    model = make_model([node("BatchNormalization", ["x", "s", "b", "m", "v"])], IMG, 15,
                       {"s": c, "b": c, "m": c, "v": c})
    import_and_check(model, {"nn.batch_norm"})
    model = make_model([node("LayerNormalization", ["x", "s"], axis=-2)], {"x": [2, 3, 4]}, 17,
                       {"s": np.ones((3, 4), np.float32)})
    import_and_check(model, {"nn.layer_norm"})


def test_softmax_before_13_flattens_at_axis():
    model = make_model([node("Softmax", ["x"], axis=1)], {"x": [2, 3, 4]}, 11)
    main = import_and_check(model, {"nn.softmax", "reshape"})
    assert list(main.body.args[0].args[0].attrs["newshape"]) == [2, 12]
    main = import_and_check(make_model([node("LogSoftmax", ["x"], axis=1)], {"x": [2, 3, 4]}),
                            {"nn.log_softmax"})
    assert main.body.attrs["axis"] == 1


def test_reductions():
    model = make_model([node("ReduceSum", ["x", "axes"], keepdims=0)], {"x": [2, 3, 4]}, 13,
                       {"axes": np.array([1], np.int64)})
    import_and_check(model, {"sum"})
    model = make_model([node("ReduceMean", ["x"], axes=[-1])], {"x": [2, 3, 4]}, 11)
    import_and_check(model, {"mean"})
    model = make_model([node("ReduceMax", ["x"])], {"x": [2, 3, 4]}, 13)
    import_and_check(model, {"max"})
    model = make_model([node("ArgMax", ["x"], axis=2, keepdims=0)], {"x": [2, 3, 4]}, 13)
    import_and_check(model, {"argmax"})


@pytest.mark.parametrize("op_type,ops", [
    ("ReduceSumSquare", {"sum", "multiply"}), ("ReduceL1", {"sum", "abs"}),
    ("ReduceL2", {"sqrt", "sum", "multiply"}), ("ReduceLogSum", {"log", "sum"}),
    ("ReduceLogSumExp", {"log", "sum", "exp", "max", "subtract", "add"})])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_composite_reductions(op_type, ops, keepdims):
    model = make_model([node(op_type, ["x"], axes=[1], keepdims=keepdims)], {"x": [2, 3, 4]})
    import_and_check(model, ops)


def test_cast_like_and_size():
    model = make_model([node("CastLike", ["x", "t"])],
                       {"x": [2, 3], "t": ([1], TensorProto.INT32)}, 15)
    import_and_check(model, {"cast"})
    model = make_model([node("Size", ["x"], ["n"]), node("Cast", ["n"], to=F32)], X23)
    main = import_and_check(model, {"cast"})
    assert int(main.body.args[0].data.numpy()) == 6


def test_reshape_flatten_transpose_concat():
    model = make_model(
        [node("Reshape", ["x", "shape"], ["r"]), node("Transpose", ["r"], ["t"], perm=[1, 0]),
         node("Flatten", ["x"], ["f"], axis=0), node("Concat", ["t", "t"], ["y"], axis=0)],
        {"x": [2, 3]}, 13, {"shape": np.array([3, -1], np.int64)}, outputs=("y", "f"))
    import_and_check(model, {"reshape", "transpose", "concatenate"})


@pytest.mark.parametrize("opset,inputs,attrs,inits", [
    (11, ["x"], {"split": [1, 2], "axis": 1}, {}),
    (13, ["x", "s"], {"axis": 1}, {"s": np.array([2, 1], np.int64)}),
    (13, ["x"], {"axis": 1}, {})])
def test_split(opset, inputs, attrs, inits):
    outputs = ("y0", "y1", "y2") if not inits and "split" not in attrs else ("y0", "y1")
    model = make_model([node("Split", inputs, outputs, **attrs)], {"x": [2, 3]}, opset, inits,
                       outputs=outputs)
    import_and_check(model, {"split"})


def test_slice_attributes_and_inputs():
    model = make_model([node("Slice", ["x"], starts=[1], ends=[100], axes=[1])], {"x": [2, 5]}, 9)
    import_and_check(model, {"strided_slice"})
    inits = {"s": np.array([0, 4], np.int64), "e": np.array([2, -6], np.int64),
             "a": np.array([0, 1], np.int64), "st": np.array([1, -2], np.int64)}
    model = make_model([node("Slice", ["x", "s", "e", "a", "st"])], {"x": [2, 5]}, 13, inits)
    import_and_check(model, {"strided_slice"})


def test_gather_squeeze_unsqueeze_expand():
    model = make_model(
        [node("Gather", ["x", "i"], ["g"], axis=1), node("Unsqueeze", ["g", "ax"], ["u"]),
         node("Squeeze", ["u", "ax"], ["s"]), node("Expand", ["s", "shape"])],
        {"x": [2, 3]}, 13,
        {"i": np.array([0, 2], np.int64), "ax": np.array([0], np.int64),
         "shape": np.array([3, 2, 2], np.int64)})
    import_and_check(model, {"take", "unsqueeze", "squeeze", "expand"})
    model = make_model([node("Unsqueeze", ["x"], ["u"], axes=[0]), node("Squeeze", ["u"])],
                       {"x": [2, 3]}, 11)
    with_output_type(model, [2, 3])
    import_and_check(model, {"unsqueeze", "squeeze"})


def test_pad_attribute_and_input_forms():
    model = make_model([node("Pad", ["x"], pads=[0, 1, 0, 1], mode="edge")], {"x": [2, 3]}, 7)
    import_and_check(model, {"nn.pad"})
    model = make_model([node("Pad", ["x", "p", "v"])], {"x": [2, 3]}, 13,
                       {"p": np.array([1, 0, 1, 0], np.int64), "v": np.float32(1.5)})
    main = import_and_check(model, {"nn.pad"})
    assert main.body.attrs["pad_value"] == 1.5


def test_resize_and_upsample():
    model = make_model([node("Resize", ["x", "", "scales"], mode="linear")], IMG, 13,
                       {"scales": np.array([1, 1, 2, 2], np.float32)})
    main = import_and_check(model, {"image.resize2d"})
    assert list(main.body.attrs["size"]) == [16, 16]
    model = make_model([node("Resize", ["x", "", "", "sizes"])], IMG, 13,
                       {"sizes": np.array([1, 3, 5, 4], np.int64)})
    import_and_check(model, {"image.resize2d"})
    model = make_model([node("Upsample", ["x", "scales"])], IMG, 9,
                       {"scales": np.array([1, 1, 2, 3], np.float32)})
    import_and_check(model, {"image.resize2d"})


def test_shape_constant_and_constant_of_shape_fold_to_constants():
    model = make_model(
        [node("Shape", ["x"], ["s"]), node("Reshape", ["z", "s"], ["r"]),
         helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(
             np.array([2, 3], np.int64))),
         node("ConstantOfShape", ["c"], ["k"], value=numpy_helper.from_array(
             np.array([1.0], np.float32))),
         node("Add", ["r", "k"])],
        {"x": [2, 3], "z": [6]})
    with_output_type(model, [2, 3])
    import_and_check(model, {"reshape", "add"})


def test_shape_arithmetic_chain_folds_through_onnx_data_propagation():
    # As PyTorch exports x.view(x.size(0), -1): Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
    model = make_model(
        [node("Shape", ["x"], ["s"]), node("Gather", ["s", "i"], ["b"]),
         node("Unsqueeze", ["b", "ax"], ["bu"]), node("Concat", ["bu", "rest"], ["ns"], axis=0),
         node("Reshape", ["x", "ns"])],
        {"x": [2, 3, 4]}, 13,
        {"i": np.array(0, np.int64), "ax": np.array([0], np.int64),
         "rest": np.array([-1], np.int64)})
    if not model.graph.output[0].type.tensor_type.shape.dim:
        with_output_type(model, [2, 12])
    main = import_and_check(model, {"reshape"})
    assert list(main.body.attrs["newshape"]) == [2, -1]


def test_shape_start_and_end_slice_the_shape():
    model = make_model([node("Shape", ["x"], start=1, end=-1)], {"x": [2, 3, 4, 5]}, 15)
    main = import_and_check(model, set())
    assert list(main.body.data.numpy()) == [3, 4]


def test_initializer_that_is_also_an_input_is_a_constant():
    model = make_model([node("Add", ["x", "w"])], {"x": [2, 3], "w": [2, 3]}, 13,
                       {"w": np.ones((2, 3), np.float32)})
    main = import_and_check(model, {"add"})
    assert [p.name_hint for p in main.params] == ["x"]
    assert main.body.args[1].type_key == "kiln.ir.Constant"


def test_several_outputs_make_a_tuple():
    model = make_model([node("Relu", ["x"], ["a"]), node("Neg", ["x"], ["b"])], X23,
                       outputs=("a", "b"))
    main = import_and_check(model, {"nn.relu", "negative"})
    assert main.body.type_key == "kiln.ir.Tuple"


def type_text(t):
    """A type as the IR text writes it: a symbolic dimension as its size expression."""
    return ir.AsText(t).strip()


def import_symbolic(model):
    """Imports and type-checks ``model``, whose inputs have symbolic dimensions. Skips while an
    op it uses still has a static type relation (relations become symbolic op by op,
    docs/design.md §20): what the importer emits is checked once they are."""
    try:
        return transform.InferType()(kiln.frontend.from_onnx(model))["main"]
    except kiln.TypeError as error:
        if "needs a static shape" not in str(error):
            raise
        pytest.skip("an op's type relation is still static: " + str(error).splitlines()[0])


def test_symbolic_dimension_becomes_a_size_variable_and_shapes_specializes():
    model = make_model([node("Relu", ["x"])], {"x": ["batch", 3]})
    main = transform.InferType()(kiln.frontend.from_onnx(model))["main"]
    assert type_text(main.params[0].type_annotation) == "Tensor[(batch, 3), float32]"
    assert type_text(main.ret_type) == "Tensor[(batch, 3), float32]"
    main = kiln.frontend.from_onnx(model, shapes={"x": [4, 3]})["main"]
    assert kiln_type(main.params[0].type_annotation) == ((4, 3), "float32")
    with pytest.raises(kiln.ValueError, match=r"shapes= gives input 'x' .* extent 5 in "
                                              r"dimension 1, but the model declares it static"):
        kiln.frontend.from_onnx(model, shapes={"x": [4, 5]})
    with pytest.raises(kiln.KeyError, match="'nope'.*'x'"):
        kiln.frontend.from_onnx(model, shapes={"nope": [1]})


def test_inputs_sharing_a_dim_param_share_its_variable():
    model = make_model([node("Add", ["x", "z"])], {"x": ["batch", 3], "z": ["batch", 3]})
    main = transform.InferType()(kiln.frontend.from_onnx(model))["main"]
    assert [type_text(p.type_annotation) for p in main.params] == \
        ["Tensor[(batch, 3), float32]"] * 2
    # add proves the two extents equal only because they are one variable
    assert type_text(main.ret_type) == "Tensor[(batch, 3), float32]"


def test_unknown_dimension_becomes_input_and_axis():
    model = make_model([node("Relu", ["x"])], {"x": [2, None]})
    main = kiln.frontend.from_onnx(model)["main"]
    assert type_text(main.params[0].type_annotation) == "Tensor[(2, x_1), float32]"


def test_size_variable_names_are_identifiers_and_never_a_models_dim_param():
    # "input.1" axis 0 would be input_1_0, which the model uses as a dim_param of another input;
    # "seq len" and "2d" are no identifiers.
    inputs = {"input.1": [None, "seq len"], "x": ["input_1_0", "2d"], "z": ["seq len", "min"]}
    nodes = [node("Relu", [name], [f"y{i}"]) for i, name in enumerate(inputs)]
    model = make_model(nodes, inputs, outputs=("y0", "y1", "y2"))
    main = kiln.frontend.from_onnx(model)["main"]
    assert [type_text(p.type_annotation) for p in main.params] == [
        "Tensor[(input_1_0_2, seq_len), float32]", "Tensor[(input_1_0, _2d), float32]",
        "Tensor[(seq_len, min_), float32]"]


def test_input_without_a_shape_needs_shapes():
    model = with_output_type(make_model([node("Relu", ["x"])], {"x": None}), [2, 3])
    with pytest.raises(kiln.ValueError, match=r"'x' has no shape.*shapes=\{'x'"):
        kiln.frontend.from_onnx(model)
    main = kiln.frontend.from_onnx(model, shapes={"x": [2, 3]})["main"]
    assert kiln_type(main.params[0].type_annotation) == ((2, 3), "float32")


def test_dense_model_with_symbolic_batch():
    w = np.ones((5, 12), np.float32)
    model = make_model([node("Gemm", ["x", "w", "b"], ["g"], transB=1),
                        node("Relu", ["g"], ["r"]), node("Softmax", ["r"], ["s"], axis=-1),
                        node("Transpose", ["s"], ["t"]),
                        node("ReduceMean", ["t"], axes=[0], keepdims=0)],
                       {"x": ["batch", 12]}, 13, {"w": w, "b": np.zeros(5, np.float32)})
    main = transform.InferType()(kiln.frontend.from_onnx(model))["main"]
    assert {"nn.dense", "nn.relu", "nn.softmax", "transpose", "mean"} <= ops_used(main.body)
    assert type_text(main.ret_type) == "Tensor[(batch), float32]"


def test_flatten_gemm_relu_softmax_with_symbolic_batch():
    model = make_model([node("Flatten", ["x"], ["f"]), node("Gemm", ["f", "w"], ["g"], transB=1),
                        node("Relu", ["g"], ["r"]), node("Softmax", ["r"], axis=1)],
                       {"x": ["batch", 3, 2, 2]}, 11, {"w": np.ones((5, 12), np.float32)})
    main = import_symbolic(model)
    flatten = main.body.args[0].args[0].args[0]
    assert flatten.op.name == "reshape" and list(flatten.attrs["newshape"]) == [0, -1]
    assert type_text(main.ret_type) == "Tensor[(batch, 5), float32]"


@pytest.mark.parametrize("shape,axis,newshape", [
    (["batch", 3, 2, 2], 2, [-1, 4]), ([2, 3, "n"], 2, [6, -1]), (["batch", "n"], 0, [1, -1]),
    (["batch", "n"], 2, [-1, 1]), ([2, 3, 4], 2, [6, 4])])
def test_flatten_copies_or_infers_the_symbolic_side(shape, axis, newshape):
    model = make_model([node("Flatten", ["x"], axis=axis)], {"x": shape})
    main = import_symbolic(model)
    assert list(main.body.attrs["newshape"]) == newshape


def test_flatten_of_symbolic_extents_on_both_sides_needs_shapes():
    model = make_model([node("Flatten", ["x"], axis=2)], {"x": ["batch", 3, "n"]})
    with pytest.raises(kiln.ValueError,
                       match=r"Flatten node 'flatten_0' views input 0 \('x'\) of shape "
                             r"\(batch, 3, n\) as a matrix at axis 2.*"
                             r"give the input's shape with shapes=\{'x': \[...\]\}"):
        kiln.frontend.from_onnx(model)
    main = kiln.frontend.from_onnx(model, shapes={"x": [2, 3, 4]})["main"]
    assert list(main.body.attrs["newshape"]) == [6, 4]


def test_softmax_before_13_of_a_symbolic_batch_reshapes_with_0_and_minus_1():
    model = make_model([node("LogSoftmax", ["x"], axis=1)], {"x": ["batch", 3, 4]}, 11)
    main = import_symbolic(model)
    assert list(main.body.attrs["newshape"]) == [-1, 3, 4]
    assert list(main.body.args[0].args[0].attrs["newshape"]) == [0, -1]
    assert type_text(main.ret_type) == "Tensor[(batch, 3, 4), float32]"


def test_cnn_with_symbolic_batch():
    c = np.ones(4, np.float32)
    nodes = [node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"]),
             node("Relu", ["n"], ["r"]), node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2]),
             node("GlobalAveragePool", ["p"], ["a"]), node("Flatten", ["a"], ["f"]),
             node("Gemm", ["f", "fc"], transB=1)]
    model = make_model(nodes, {"x": ["batch", 3, 8, 8]}, 13,
                       {"w": np.ones((4, 3, 3, 3), np.float32), "s": c, "b": c, "m": c, "v": c,
                        "fc": np.ones((2, 4), np.float32)})
    main = import_symbolic(model)
    assert type_text(main.ret_type) == "Tensor[(batch, 2), float32]"


def test_attention_block_with_symbolic_batch_and_sequence():
    heads = np.array([0, 0, 2, -1], np.int64)
    nodes = [node("MatMul", ["x", "w"], ["q"]), node("Reshape", ["q", "heads"], ["h"]),
             node("Transpose", ["h"], ["t"], perm=[0, 2, 1, 3]),
             node("Transpose", ["h"], ["k"], perm=[0, 2, 3, 1]),
             node("MatMul", ["t", "k"], ["s"]), node("Softmax", ["s"], ["p"], axis=-1),
             node("MatMul", ["p", "t"], ["o"]), node("Transpose", ["o"], ["b"], perm=[0, 2, 1, 3]),
             node("Reshape", ["b", "merge"], ["m"]), node("Add", ["m", "x"], ["r"]),
             node("LayerNormalization", ["r", "g"], axis=-1)]
    model = make_model(nodes, {"x": ["batch", "seq", 8]}, 17,
                       {"w": np.ones((8, 8), np.float32), "heads": heads,
                        "merge": np.array([0, 0, -1], np.int64), "g": np.ones(8, np.float32)})
    main = import_symbolic(model)
    assert type_text(main.ret_type) == "Tensor[(batch, seq, 8), float32]"


def test_converter_needing_a_static_extent_names_the_dimension():
    model = make_model([node("Split", ["x"], ("y0", "y1"))], {"x": ["n", 4]}, 13,
                       outputs=("y0", "y1"))
    with pytest.raises(kiln.ValueError,
                       match=r"Split node 'split_0' needs a static extent in dimension 0 of "
                             r"input 0 \('x'\), which is symbolic \(n\); "
                             r"give the input's shape with shapes=\{'x': \[...\]\}"):
        kiln.frontend.from_onnx(model)
    model = make_model([node("Split", ["x"], ("y0", "y1"), axis=1)], {"x": ["n", 4]}, 13,
                       outputs=("y0", "y1"))
    main = import_symbolic(model)
    assert list(main.body.fields[0].tuple.attrs["sections"]) == [2, 2]
    # The symbolic extent reaches the Conv through a Relu: the error names the graph input
    # whose dimension it is.
    model = make_model([node("Relu", ["image"], ["x"]),
                        node("Conv", ["x", "w"], auto_pad="SAME_UPPER")],
                       {"image": [1, 3, "h", 8]}, 13, {"w": np.ones((4, 3, 3, 3), np.float32)})
    with pytest.raises(kiln.ValueError,
                       match=r"Conv node 'conv_0' needs a static extent in dimension 2 of "
                             r"input 0 \('x'\), which is symbolic \(h\); "
                             r"give the input's shape with shapes=\{'image': \[...\]\}"):
        kiln.frontend.from_onnx(model)
    main = kiln.frontend.from_onnx(model, shapes={"image": [1, 3, 8, 8]})["main"]
    assert "nn.conv2d" in ops_used(main.body)


# Shape-value propagation: shape arithmetic over symbolic sizes is evaluated at import on size
# expressions, and the consumers take the expressions as attributes.

I64 = TensorProto.INT64
SEQ_INPUT = {"x": ["batch", "seq", 64]}


def const_node(name, value):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(value)))


def extents(prefix):
    """Shape(x), and s0, s1, s2: its elements as scalars (Gather) and u0, u1, u2 unsqueezed, as
    torch.onnx writes x.shape[i] into a new shape."""
    nodes = [node("Shape", ["x"], ["s"]), const_node("ax", [0])]
    for i in range(3):
        nodes += [const_node(f"i{i}", i), node("Gather", ["s", f"i{i}"], [f"s{i}"]),
                  node("Unsqueeze", [f"s{i}", "ax"], [f"u{i}"])]
    return [n for n in nodes if prefix is None or n.output[0] != prefix]


def symbolic_main(nodes, inputs=None, opset=17, out_rank=None, **inits):
    """The type-checked @main and the module's text of a model over SEQ_INPUT (or ``inputs``);
    ``out_rank`` types the output (unknown extents) where ONNX's shape inference cannot."""
    model = make_model(nodes, inputs or SEQ_INPUT, opset, inits)
    if out_rank is not None and not model.graph.output[0].type.tensor_type.HasField("shape"):
        with_output_type(model, [None] * out_rank)
    mod = kiln.frontend.from_onnx(model)
    return transform.InferType()(mod)["main"], str(mod)


def test_a_shape_chain_over_symbolic_sizes_becomes_a_symbolic_newshape():
    # x.view(x.shape[0], x.shape[1], 4, 16), as PyTorch exports it.
    nodes = extents(None) + [const_node("heads", [4, 16]),
                             node("Concat", ["u0", "u1", "heads"], ["ns"], axis=0),
                             node("Reshape", ["x", "ns"])]
    main, text = symbolic_main(nodes)
    assert "reshape(%x, newshape=[batch, seq, 4, 16])" in text
    assert type_text(main.ret_type) == "Tensor[(batch, seq, 4, 16), float32]"
    assert ops_used(main.body) == {"reshape"}  # no IR for the shape arithmetic


def test_scalar_arithmetic_on_extents_is_simplified():
    # (seq * 4) / 4 is seq; (batch + 1) - 1 is batch; 64 % 48 and min/max fold to constants.
    nodes = extents(None) + [
        const_node("four", 4), const_node("one", 1), const_node("c48", 48),
        node("Mul", ["s1", "four"], ["s1x4"]), node("Div", ["s1x4", "four"], ["q"]),
        node("Add", ["s0", "one"], ["b1"]), node("Sub", ["b1", "one"], ["b"]),
        node("Mod", ["s2", "c48"], ["m"]), node("Max", ["m", "one"], ["mx"]),
        node("Min", ["mx", "s2"], ["mn"]),
        node("Unsqueeze", ["b", "ax"], ["ub"]), node("Unsqueeze", ["q", "ax"], ["uq"]),
        node("Unsqueeze", ["mn", "ax"], ["um"]), const_node("four1", [4]),
        node("Concat", ["ub", "uq", "um", "four1"], ["ns"], axis=0),
        node("Reshape", ["x", "ns"])]
    main, text = symbolic_main(nodes, out_rank=4)
    assert "newshape=[batch, seq, 16, 4]" in text
    assert type_text(main.ret_type) == "Tensor[(batch, seq, 16, 4), float32]"


def test_integer_division_that_the_analyzer_cannot_write_is_not_a_shape_value():
    # seq / 3 truncates to floordiv(seq, 3); (seq - 100) / 2 may be negative, where ONNX
    # truncates and floor division would not: Div then divides the tensor of seq - 100, computed
    # at run time.
    nodes = extents(None) + [const_node("three", 3), node("Div", ["s1", "three"], ["q"]),
                             node("Unsqueeze", ["q", "ax"], ["uq"]),
                             node("Concat", ["u0", "uq", "u2"], ["ns"], axis=0),
                             node("Expand", ["x", "ns"])]
    _, text = symbolic_main(nodes)
    assert "shape=[batch, floordiv(seq, 3), 64]" in text
    nodes = extents(None) + [const_node("c", 100), const_node("two", 2),
                             node("Sub", ["s1", "c"], ["d"]), node("Div", ["d", "two"], ["y"])]
    main, _ = symbolic_main(nodes)
    assert main.body.op.name == "divide"
    ex = kiln.build(kiln.frontend.from_onnx(make_model(nodes, SEQ_INPUT, 17)))
    (y,) = ex.run(x=np.zeros((1, 5, 64), np.float32))
    assert y.tolist() == -47  # (5 - 100) / 2, truncated


def test_casts_to_float_and_back_keep_integer_shape_values():
    # int(x.shape[1] * 2.0): Cast -> Mul -> Cast, as PyTorch writes scaled sizes.
    nodes = extents(None) + [node("Cast", ["u1"], ["f"], to=TensorProto.FLOAT),
                             const_node("two", np.array([2.0], np.float32)),
                             node("Mul", ["f", "two"], ["f2"]),
                             node("Cast", ["f2"], ["n"], to=I64),
                             node("Concat", ["u0", "n", "u2"], ["ns"], axis=0),
                             node("ConstantOfShape", ["ns"])]
    main, text = symbolic_main(nodes)
    assert "shape=[batch, seq * 2, 64]" in text
    assert type_text(main.ret_type) == "Tensor[(batch, seq * 2, 64), float32]"


def test_constant_of_shape_of_a_symbolic_shape_expands_a_scalar():
    value = numpy_helper.from_array(np.array([7], np.int64))
    main, text = symbolic_main([node("Shape", ["x"], ["s"]),
                                node("ConstantOfShape", ["s"], value=value)])
    assert "expand(const(int64, (), [7]), shape=[batch, seq, 64])" in text
    assert type_text(main.ret_type) == "Tensor[(batch, seq, 64), int64]"


@pytest.mark.parametrize("start,delta,size", [(0, 1, "seq"), (2, 3, "floordiv(seq, 3)"),
                                              (0, -1, "0")])
def test_range_to_a_symbolic_limit_is_an_arange(start, delta, size):
    nodes = extents(None) + [const_node("start", start), const_node("delta", delta),
                             node("Range", ["start", "s1", "delta"])]
    main, text = symbolic_main(nodes)
    assert ops_used(main.body) == {"arange"}
    assert f"size={size}" in text
    assert type_text(main.ret_type) == f"Tensor[({size}), int64]"


def test_a_constant_range_is_still_a_constant():
    model = make_model([node("Range", ["a", "b", "c"])], {}, 13,
                       {"a": np.array(1), "b": np.array(7), "c": np.array(2)})
    main = import_and_check(model, set())
    assert list(main.body.data.numpy()) == [1, 3, 5]


def test_expand_through_where_and_equal_decides_on_sizes():
    # x.expand(x.shape[0], 4, -1) for x of (batch, 1, seq), as torch.onnx writes it: the sizes
    # are flattened by Reshape(sizes, [-1]); the -1 entries keep x's extents through
    # Where(Equal(sizes, -1 * ones), ones, sizes); batch == -1 is decided false (sizes >= 1).
    nodes = extents("u2") + [const_node("four", [4]), const_node("minus", [-1]),
                             node("Concat", ["u0", "four", "minus"], ["sizes"], axis=0),
                             node("Reshape", ["sizes", "minus"], ["flat"]),
                             node("Shape", ["flat"], ["n"]),
                             node("ConstantOfShape", ["n"], ["ones"],
                                  value=numpy_helper.from_array(np.array([1]))),
                             const_node("neg", -1), node("Mul", ["ones", "neg"], ["negs"]),
                             node("Equal", ["flat", "negs"], ["is_neg"]),
                             node("Where", ["is_neg", "ones", "flat"], ["shape"]),
                             node("Expand", ["x", "shape"])]
    main, text = symbolic_main(nodes, {"x": ["batch", 1, "seq"]}, out_rank=3)
    assert "expand(%x, shape=[batch, 4, 1])" in text
    assert type_text(main.ret_type) == "Tensor[(batch, 4, seq), float32]"
    # An Equal it cannot decide (batch against seq) is no shape value: it compares the sizes as
    # tensors at run time.
    nodes = extents("u2") + [node("Equal", ["u0", "u1"], ["same"]), node("Not", ["same"])]
    ex = kiln.build(kiln.frontend.from_onnx(make_model(nodes, {"x": ["batch", "seq", 8]}, 17)))
    assert ex.run(x=np.zeros((2, 2, 8), np.float32))[0].tolist() == [False]
    assert ex.run(x=np.zeros((2, 3, 8), np.float32))[0].tolist() == [True]


def test_slice_and_squeeze_and_reduce_prod_of_a_shape():
    # x.reshape(-1, prod(x.shape[1:])): Slice of Shape, ReduceProd; Squeeze of a 1-element slice.
    nodes = [node("Shape", ["x"], ["s"]), const_node("one", [1]), const_node("big", [99]),
             const_node("zero", [0]), node("Slice", ["s", "one", "big"], ["tail"]),
             node("ReduceProd", ["tail"], ["n"], keepdims=1),
             node("Slice", ["s", "zero", "one"], ["head"]),
             node("Squeeze", ["head", "zero"], ["b"]), node("Unsqueeze", ["b", "zero"], ["ub"]),
             node("Concat", ["ub", "n"], ["ns"], axis=0), node("Reshape", ["x", "ns"])]
    main, text = symbolic_main(nodes, out_rank=2)
    assert "newshape=[batch, seq * 64]" in text
    assert type_text(main.ret_type) == "Tensor[(batch, seq * 64), float32]"


def test_a_slice_to_the_symbolic_extent_runs_to_the_end():
    # x[:, :x.shape[1]] exports its end as a shape value equal to the axis' extent.
    nodes = extents("u0") + [const_node("zero", [0]), const_node("axis", [1]),
                             node("Slice", ["x", "zero", "u1", "axis"])]
    main, text = symbolic_main(nodes, out_rank=3)
    assert f"end=[{2**63 - 1}]" in text
    assert type_text(main.ret_type) == "Tensor[(batch, seq, 64), float32]"
    # x[:, :x.shape[0]] may end anywhere along axis 1: the slice is read at run time.
    nodes = extents("u1") + [const_node("zero", [0]), const_node("axis", [1]),
                             node("Slice", ["x", "zero", "u0", "axis"])]
    model = make_model(nodes, SEQ_INPUT, 17)
    with_output_type(model, [None] * 3)
    ex = kiln.build(kiln.frontend.from_onnx(model))
    x = np.random.default_rng(0).standard_normal((2, 5, 64)).astype(np.float32)
    np.testing.assert_array_equal(ex.run(x=x)[0], x[:, :2])
    np.testing.assert_array_equal(ex.run(x=x[:1, :3])[0], x[:1, :1])


def test_all_constant_shape_values_stay_constants():
    # The static extent of a symbolic Shape is an int64 Constant, as Shape of a static tensor
    # always was; what only constants feed stays the converters' (a multiply of Constants).
    nodes = extents(None) + [node("Mul", ["s2", "s2"], ["y"])]
    main, _ = symbolic_main(nodes)
    assert main.body.op.name == "multiply"
    assert [a.type_key for a in main.body.args] == ["kiln.ir.Constant"] * 2
    assert main.body.args[0].data.numpy().tolist() == 64


@pytest.mark.parametrize("op_type", ["Shape", "Size"])
def test_a_symbolic_shape_value_as_graph_output_is_computed_at_run_time(op_type):
    model = make_model([node(op_type, ["x"])], {"x": ["batch", 3]})
    ex = kiln.build(kiln.frontend.from_onnx(model))
    for batch in (1, 4):
        (y,) = ex.run(x=np.zeros((batch, 3), np.float32))
        assert y.tolist() == ([batch, 3] if op_type == "Shape" else batch * 3)


def test_a_symbolic_shape_value_used_as_a_tensor_is_computed_at_run_time():
    nodes = [node("Shape", ["x"], ["s"]), node("Cast", ["s"], ["f"], to=TensorProto.FLOAT),
             node("MatMul", ["f", "w"])]
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    model = make_model(nodes, SEQ_INPUT, 17, {"w": w})
    ex = kiln.build(kiln.frontend.from_onnx(model))
    for batch, seq in ((2, 5), (1, 9)):
        (y,) = ex.run(x=np.zeros((batch, seq, 64), np.float32))
        np.testing.assert_array_equal(y, np.array([batch, seq, 64], np.float32) @ w)
    # Tile's repeats computed from symbolic sizes are read at run time as well.
    tile = make_model([node("Shape", ["x"], ["s"]), node("Tile", ["t", "s"])],
                      {"x": ["batch", "seq", 2], "t": [1, 2, 3]}, 17)
    with_output_type(tile, [None] * 3)
    ex = kiln.build(kiln.frontend.from_onnx(tile))
    t = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    (y,) = ex.run(x=np.zeros((2, 3, 2), np.float32), t=t)
    np.testing.assert_array_equal(y, np.tile(t, (2, 3, 2)))
    # shapes= makes the same model static again.
    model = make_model([node("Shape", ["x"], ["s"]), node("Cast", ["s"], ["f"], to=F32),
                        node("MatMul", ["f", "w"])], SEQ_INPUT, 17,
                       {"w": np.ones((3, 2), np.float32)})
    main = kiln.frontend.from_onnx(model, shapes={"x": [2, 5, 64]})["main"]
    assert "matmul" in ops_used(main.body)


def test_shape_slice_of_static_extents_is_still_a_constant():
    model = make_model([node("Shape", ["x"], start=1)], {"x": ["batch", 3, 4]}, 15)
    main = kiln.frontend.from_onnx(model)["main"]
    assert list(main.body.data.numpy()) == [3, 4]


def test_input_kiln_takes_as_an_attribute_must_be_constant():
    # A shape fed at run time is read then (test_value_shapes.py); Dropout's training_mode is
    # not: Kiln draws no random mask, so it must know training drops nothing.
    model = make_model([node("Dropout", ["x", "r", "t"])],
                       {"x": [2, 3], "r": ([], TensorProto.FLOAT), "t": ([], TensorProto.BOOL)})
    with pytest.raises(kiln.ValueError, match=r"dropout_0.*'t'.*constant"):
        kiln.frontend.from_onnx(model)


def test_unsupported_ops_are_listed_together():
    model = make_model([node("RandomUniformLike", ["x"], ["h"]), node("Multinomial", ["x"], ["d"]),
                        node("RandomUniformLike", ["x"], ["y"])], {"x": [3, 3]}, 13,
                       outputs=("y", "d"))
    with pytest.raises(kiln.NotImplementedError) as info:
        kiln.frontend.from_onnx(model)
    message = str(info.value)
    assert "RandomUniformLike (opset 13), first at node 'randomuniformlike_0'" in message
    assert "Multinomial (opset 13), first at node 'multinomial_0'" in message


def test_malformed_bytes_and_truncated_file(tmp_path):
    with pytest.raises(kiln.ValueError, match="not a valid ONNX model"):
        kiln.frontend.from_onnx(b"\x08\x07\x12\xffgarbage")
    data = make_model([node("Relu", ["x"])], X23).SerializeToString()
    path = tmp_path / "truncated.onnx"
    path.write_bytes(data[: len(data) - 7])
    with pytest.raises(kiln.ValueError, match="truncated.onnx.*not a valid ONNX model"):
        kiln.frontend.from_onnx(path)
    with pytest.raises(kiln.ValueError, match="cannot open"):
        kiln.frontend.from_onnx(str(tmp_path / "missing.onnx"))


def test_a_conv_whose_weight_outranks_its_input_is_an_error_not_a_crash():
    """ONNX 1.12's own Conv shape inference reads past its vectors here (found by fuzzing);
    the importer checks the ranks first, also for a weight another node computes."""
    corpus = pathlib.Path(__file__).parents[1] / "fuzz" / "corpus" / "onnx"
    with pytest.raises(kiln.ValueError, match="Conv: the input has rank 4 and the weight rank 5"):
        kiln.frontend.from_onnx(corpus / "regression_conv_weight_rank_above_input_rank.onnx")
    weight = numpy_helper.from_array(np.ones((2, 3, 1, 1, 1), np.float32), "w0")
    graph = helper.make_graph(
        [node("Identity", ["w0"], ["w"]), node("Conv", ["x", "w"], ["y"])], "test",
        [helper.make_tensor_value_info("x", F32, [1, 3, 4, 4])],
        [helper.make_tensor_value_info("y", F32, [1, 2, 4, 4])], initializer=[weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(kiln.ValueError, match="Conv: the input has rank 4 and the weight rank 5"):
        kiln.frontend.from_onnx(model)


def test_from_onnx_rejects_other_argument_types():
    with pytest.raises(TypeError, match="path, bytes or an onnx.ModelProto, not int"):
        kiln.frontend.from_onnx(42)


def test_path_and_bytes_import_the_same_model(tmp_path):
    model = make_model([node("Relu", ["x"])], X23)
    path = tmp_path / "relu.onnx"
    onnx.save(model, str(path))
    from_path = kiln.frontend.from_onnx(path)
    from_bytes = kiln.frontend.from_onnx(path.read_bytes())
    assert ir.StructuralEqual(from_path, from_bytes, False)


_CLASSIFY = r"""
import json, pathlib, sys
import kiln, kiln.frontend
counts = {"imported": 0, "unsupported": 0, "other": 0}
other, leaked = {}, []
for path in sorted(pathlib.Path(sys.argv[1]).glob("*/model.onnx")):
    try:
        kiln.frontend.from_onnx(path)
        counts["imported"] += 1
    except kiln.NotImplementedError:
        counts["unsupported"] += 1
    except kiln.KilnError as error:
        counts["other"] += 1
        other[path.parent.name] = f"{type(error).__name__}: {str(error).splitlines()[0]}"
    except Exception as error:  # a non-Kiln exception leaked out of the importer
        leaked.append(f"{path.parent.name}: {type(error).__name__}: {error}")
print(json.dumps({"counts": counts, "other": other, "leaked": leaked}))
"""


@pytest.mark.skipif(not TESTDATA.is_dir(), reason="libonnx-testdata is not installed")
def test_onnx_node_testdata_imports_or_fails_cleanly():
    # A child process, so that a crash in the importer fails this test instead of pytest.
    run = subprocess.run([sys.executable, "-c", _CLASSIFY, str(TESTDATA)], capture_output=True,
                         text=True, env=dict(os.environ), timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    result = json.loads(run.stdout.splitlines()[-1])
    print("ONNX node testdata:", result["counts"])
    for name, error in sorted(result["other"].items()):
        print(f"  {name}: {error}")
    assert result["leaked"] == []
    assert result["counts"]["imported"] > 0


def constant_model(tensor):
    """A model whose output is the initializer ``tensor``."""
    graph = helper.make_graph([], "constant", [], [helper.make_tensor_value_info(
        tensor.name, tensor.data_type, list(tensor.dims))], initializer=[tensor])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("raw", [False, True])
@pytest.mark.parametrize("elem,np_dtype,name", [
    (F32, np.float32, "float32"), (TensorProto.DOUBLE, np.float64, "float64"),
    (TensorProto.INT32, np.int32, "int32"), (TensorProto.INT64, np.int64, "int64"),
    (TensorProto.INT8, np.int8, "int8"), (TensorProto.UINT8, np.uint8, "uint8"),
    (TensorProto.BOOL, np.bool_, "bool")])
def test_initializers_of_every_type_from_typed_fields_and_raw_data(elem, np_dtype, name, raw):
    values = np.array([[1, 0, 3], [4, 5, 1]]).astype(np_dtype)
    vals = values.tobytes() if raw else values.flatten().tolist()
    model = constant_model(helper.make_tensor("c", elem, [2, 3], vals, raw=raw))
    main = import_and_check(model, set())
    assert main.body.type_key == "kiln.ir.Constant"
    if name != "bool":  # bool is uint1 in Kiln, which numpy has no dtype for
        np.testing.assert_array_equal(main.body.data.numpy(), values)


def test_initializer_data_must_match_its_shape_and_live_inside_the_model():
    bad = helper.make_tensor("c", F32, [2, 3], b"\x00" * 24, raw=True)
    bad.raw_data = b"\x00" * 20
    with pytest.raises(kiln.ValueError, match="tensor 'c' holds 20 bytes"):
        kiln.frontend.from_onnx(constant_model(bad))
    external = helper.make_tensor("c", F32, [2, 3], [0.0] * 6)
    external.ClearField("float_data")
    external.data_location = TensorProto.EXTERNAL
    entry = external.external_data.add()
    entry.key, entry.value = "location", "weights.bin"
    with pytest.raises(kiln.NotImplementedError, match="tensor 'c'.*external"):
        kiln.frontend.from_onnx(constant_model(external))


def test_raw_data_that_is_not_whole_elements_is_an_error_before_shape_inference():
    """Found by kiln_onnx_fuzzer: Resize's scales as 10 bytes of raw_data for 4 floats made
    ONNX 1.12's shape inference copy past its buffer (ParseData); every tensor of the model,
    Constant values and subgraphs included, is checked against its shape first."""
    corpus = pathlib.Path(__file__).parents[1] / "fuzz" / "corpus" / "onnx"
    with pytest.raises(kiln.ValueError, match="tensor 's' holds 10 bytes of raw_data, but its "
                                              "shape needs 4 elements"):
        kiln.frontend.from_onnx(corpus / "regression_resize_scales_raw_data_not_whole_floats.onnx")
    bad = helper.make_tensor("v", F32, [4], b"\x00" * 16, raw=True)
    bad.raw_data = b"\x00" * 10
    graph = helper.make_graph(
        [node("Constant", [], ["s"], value=bad),
         node("Resize", ["x", "", "s"], ["y"], mode="nearest")], "test",
        [helper.make_tensor_value_info("x", F32, [1, 1, 2, 2])],
        [helper.make_tensor_value_info("y", F32, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(kiln.ValueError, match="tensor 'v' holds 10 bytes of raw_data"):
        kiln.frontend.from_onnx(model)


def test_an_old_opset_gemm_of_a_declared_scalar_is_an_error_before_shape_inference():
    """Found by kiln_onnx_fuzzer: an opset-6 Gemm whose A is declared rank 0 made ONNX 1.12's
    Gemm shape inference, run before the upgrade, read past its dims (SEGV)."""
    corpus = pathlib.Path(__file__).parents[1] / "fuzz" / "corpus" / "onnx"
    with pytest.raises(kiln.ValueError, match="reads 'x' of rank 0; Gemm multiplies matrices"):
        kiln.frontend.from_onnx(
            corpus / "regression_gemm_opset6_rank0_input_before_inference.onnx")


def test_old_opset_model_with_an_undefined_output_is_a_clear_error():
    # Found by kiln_onnx_fuzzer: ONNX's version converter dereferences undefined values, so an
    # opset-6 model is checked before the upgrade.
    model = with_output_type(make_model([node("Relu", ["x"], ["r"])], {"x": [2, 3]}, 6), [2, 3])
    with pytest.raises(kiln.ValueError, match="graph output 'y' is never defined"):
        kiln.frontend.from_onnx(model.SerializeToString())

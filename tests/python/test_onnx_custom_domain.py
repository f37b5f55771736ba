"""Ops of custom ONNX domains, converted by registered global functions
(kiln/frontend/onnx_converter.h): from Python here, from a plugin in test_plugin_ops.py."""

import numpy as np
import pytest

import kiln
from kiln import ir

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import kiln.frontend  # noqa: E402

DOMAIN = "com.example.kiln_test"
F32 = TensorProto.FLOAT


@pytest.fixture
def register():
    """register(op_type)(f): registers a converter for DOMAIN.op_type, removed after the test so
    that every test starts without converters."""
    names = []

    def decorate(op_type, domain=DOMAIN):
        names.append(f"frontend.onnx.convert.{domain}.{op_type}")
        return kiln.frontend.register_onnx_converter(domain, op_type)

    yield decorate
    for name in names:
        if kiln.get_global_func(name, allow_missing=True) is not None:
            kiln.remove_global_func(name)


def custom_model(nodes, inputs, outputs, opset=13, domain_opset=1):
    """A model of ``nodes`` over float32 ``inputs`` ({name: shape}) with float32 ``outputs``
    ({name: shape}, typed by hand: ONNX cannot infer through a custom op)."""
    graph = helper.make_graph(
        nodes,
        "custom",
        [helper.make_tensor_value_info(name, F32, shape) for name, shape in inputs.items()],
        [helper.make_tensor_value_info(name, F32, shape) for name, shape in outputs.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset),
                                                   helper.make_opsetid(DOMAIN, domain_opset)])


def swish_node(name="swish_0", **attrs):
    return helper.make_node("Swish", ["x"], ["y"], name=name, domain=DOMAIN, **attrs)


def swish(inputs, attrs, opset):
    x = inputs[0]
    alpha = ir.Constant(np.array(attrs.get("alpha", 1.0), "float32"))
    return ir.Call("multiply", [x, ir.Call("sigmoid", [ir.Call("multiply", [x, alpha])])])


def reference_swish(x, alpha):
    return x / (1.0 + np.exp(-alpha * x))


def test_converted_op_runs_end_to_end(register):
    register("Swish")(swish)
    model = custom_model([swish_node(alpha=0.5)], {"x": [2, 3]}, {"y": [2, 3]})
    ex = kiln.build(kiln.frontend.from_onnx(model))
    x = np.linspace(-3, 3, 6, dtype="float32").reshape(2, 3)
    (y,) = ex.run(x=x)
    np.testing.assert_allclose(y, reference_swish(x, 0.5), rtol=1e-6, atol=1e-6)


def test_converter_receives_each_attribute_kind_and_the_domain_opset(register):
    seen = {}

    @register("Probe")
    def probe(inputs, attrs, opset):
        seen.update(attrs=attrs, opset=opset, inputs=inputs)
        return inputs[0]

    tensor = np.arange(6, dtype="float32").reshape(2, 3)
    node = helper.make_node(
        "Probe", ["x"], ["y"], name="probe_0", domain=DOMAIN,
        i=7, f=0.25, s="mode", ints=[1, -2], floats=[0.5, 1.5], strings=["a", "bc"],
        t=numpy_helper.from_array(tensor))
    kiln.frontend.from_onnx(custom_model([node], {"x": [2, 3]}, {"y": [2, 3]}, domain_opset=3))

    attrs = seen["attrs"]
    assert attrs["i"] == 7 and isinstance(attrs["i"], int)
    assert attrs["f"] == 0.25 and isinstance(attrs["f"], float)
    assert attrs["s"] == "mode"
    assert attrs["ints"] == [1, -2]
    assert attrs["floats"] == [0.5, 1.5]
    assert attrs["strings"] == ["a", "bc"]
    assert isinstance(attrs["t"], kiln.Tensor)
    np.testing.assert_array_equal(attrs["t"].numpy(), tensor)
    assert seen["opset"] == 3
    assert [x.name_hint for x in seen["inputs"]] == ["x"]


def test_omitted_optional_input_is_none(register):
    seen = []

    @register("Optional")
    def optional(inputs, attrs, opset):
        seen.extend(inputs)
        return inputs[0]

    node = helper.make_node("Optional", ["x", "", "z", ""], ["y"], name="opt_0", domain=DOMAIN)
    kiln.frontend.from_onnx(custom_model([node], {"x": [2], "z": [2]}, {"y": [2]}))
    # The middle omission is None; the trailing one is dropped.
    assert len(seen) == 3
    assert seen[1] is None
    assert seen[2].name_hint == "z"


def test_graph_attribute_is_not_implemented_naming_node_and_attribute(register):
    register("Swish")(swish)
    body = helper.make_graph([], "body", [], [])
    node = swish_node(name="with_graph", body=body)
    with pytest.raises(kiln.NotImplementedError, match=r"with_graph.*attribute 'body' is a GRAPH"):
        kiln.frontend.from_onnx(custom_model([node], {"x": [2, 3]}, {"y": [2, 3]}))


@pytest.mark.parametrize("as_tuple", [False, True], ids=["list", "ir.Tuple"])
def test_node_with_several_outputs(register, as_tuple):
    @register("SumAndProduct")
    def sum_and_product(inputs, attrs, opset):
        a, b = inputs
        outputs = [ir.Call("add", [a, b]), ir.Call("multiply", [a, b])]
        return ir.Tuple(outputs) if as_tuple else outputs

    node = helper.make_node("SumAndProduct", ["a", "b"], ["s", "p"], name="sp_0", domain=DOMAIN)
    relu = helper.make_node("Relu", ["p"], ["r"])
    model = custom_model([node, relu], {"a": [4], "b": [4]}, {"s": [4], "r": [4]})
    ex = kiln.build(kiln.frontend.from_onnx(model))
    a = np.array([1, -2, 3, -4], "float32")
    b = np.array([2, 2, -1, -1], "float32")
    s, r = ex.run(a=a, b=b)
    np.testing.assert_array_equal(s, a + b)
    np.testing.assert_array_equal(r, np.maximum(a * b, 0))


def test_missing_converter_is_listed_with_a_hint_beside_a_missing_default_op():
    nodes = [
        helper.make_node("Nope", ["x"], ["t"], name="nope_0", domain=DOMAIN),
        helper.make_node("RandomUniformLike", ["t"], ["y"], name="randomuniformlike_0"),
    ]
    model = custom_model(nodes, {"x": [4]}, {"y": [4]})
    with pytest.raises(kiln.NotImplementedError) as error:
        kiln.frontend.from_onnx(model)
    message = str(error.value)
    assert "2 unsupported ONNX op(s)" in message
    assert f"{DOMAIN}.Nope (opset 1), first at node 'nope_0'" in message
    assert f"frontend.onnx.convert.{DOMAIN}.Nope" in message
    assert "kiln.load_plugin" in message and "KILN_PLUGIN_PATH" in message
    assert "RandomUniformLike (opset 13), first at node 'randomuniformlike_0'" in message


def test_converter_registered_after_import_is_found_and_not_cached(register):
    model = custom_model([swish_node()], {"x": [3]}, {"y": [3]})
    with pytest.raises(kiln.NotImplementedError, match="Swish"):
        kiln.frontend.from_onnx(model)
    register("Swish")(swish)
    mod = kiln.frontend.from_onnx(model)
    assert mod["main"].body.op.name == "multiply"
    kiln.remove_global_func(f"frontend.onnx.convert.{DOMAIN}.Swish")
    with pytest.raises(kiln.NotImplementedError, match="Swish"):
        kiln.frontend.from_onnx(model)


def test_converter_error_names_the_node_and_keeps_the_message(register):
    @register("Swish")
    def failing(inputs, attrs, opset):
        raise kiln.ValueError("alpha must be positive")

    model = custom_model([swish_node(name="bad_swish", alpha=-1.0)], {"x": [3]}, {"y": [3]})
    with pytest.raises(kiln.ValueError) as error:
        kiln.frontend.from_onnx(model)
    text = str(error.value)
    assert "alpha must be positive" in text
    assert "Swish node 'bad_swish'" in text and DOMAIN in text


def test_converter_returning_something_else_is_a_type_error(register):
    register("Swish")(lambda inputs, attrs, opset: 3)
    model = custom_model([swish_node(name="odd")], {"x": [3]}, {"y": [3]})
    with pytest.raises(kiln.TypeError, match=r"Swish node 'odd' returned a int"):
        kiln.frontend.from_onnx(model)


def test_custom_domain_in_a_model_upgraded_from_an_old_opset(register):
    register("Swish")(swish)
    # Opset 6 is upgraded by ONNX's version converter, which must leave the custom node be.
    nodes = [swish_node(name="swish_old"), helper.make_node("Relu", ["y"], ["r"])]
    model = custom_model(nodes, {"x": [4]}, {"y": [4], "r": [4]}, opset=6)
    ex = kiln.build(kiln.frontend.from_onnx(model))
    x = np.array([-2, -1, 1, 2], "float32")
    y, r = ex.run(x=x)
    np.testing.assert_allclose(y, reference_swish(x, 1.0), rtol=1e-6)
    np.testing.assert_allclose(r, np.maximum(reference_swish(x, 1.0), 0), rtol=1e-6)


def test_custom_op_named_like_a_default_op_goes_through_its_converter_only(register):
    # Relu of the custom domain is not ONNX's Relu: without a converter it is unsupported, with
    # one it is what the converter makes.
    node = helper.make_node("Relu", ["x"], ["y"], name="own_relu", domain=DOMAIN)
    model = custom_model([node], {"x": [3]}, {"y": [3]})
    with pytest.raises(kiln.NotImplementedError, match=f"{DOMAIN}.Relu"):
        kiln.frontend.from_onnx(model)
    register("Relu")(lambda inputs, attrs, opset: ir.Call("negative", [inputs[0]]))
    assert kiln.frontend.from_onnx(model)["main"].body.op.name == "negative"

"""The my_ext codegen (BYOC): its predicates, its pattern table, where a build places each op,
and the numbers its runtime module computes, against numpy."""

import numpy as np
import pytest

import kiln
from conftest import placement
from kiln import transform

RNG = np.random.default_rng(11)
SCALE = RNG.standard_normal((2, 4)).astype("float32")

# The multiply (by a constant of its shape) and the add + relu go to my_ext; the last add
# broadcasts %b, which my_ext's loops do not, so it stays on the host.
MODEL = """
def @main(%x: Tensor[(2, 4), float32], %y: Tensor[(2, 4), float32], %b: Tensor[(4), float32]) {
  %0 = multiply(%x, meta[Constant][0]);
  %1 = add(%0, %y);
  %2 = nn.relu(%1);
  %3 = add(%2, %b);
  (%3, %0)
}
"""


def typed():
    return transform.InferType()(kiln.ir.ParseModule(MODEL, [kiln.tensor(SCALE)]))


def numpy_reference(x, y, b):
    scaled = x * SCALE
    return np.maximum(scaled + y, 0) + b, scaled


def inputs():
    return {"x": RNG.standard_normal((2, 4)).astype("float32"),
            "y": RNG.standard_normal((2, 4)).astype("float32"),
            "b": RNG.standard_normal(4).astype("float32")}


def calls_of(mod):
    """The op calls of @main by op name, outermost first: {"add": [%3, %1], ...}."""
    found = {}

    def visit(expr):
        if isinstance(expr, kiln.ir.Call):
            found.setdefault(expr.op.name, []).append(expr)
            for arg in expr.args:
                visit(arg)
        elif isinstance(expr, kiln.ir.Tuple):
            for field in expr.fields:
                visit(field)

    visit(mod["main"].body)
    return found


def test_predicates_take_one_shape_and_decline_a_broadcast(my_ext):
    calls = calls_of(typed())
    broadcast_add, plain_add = calls["add"]
    for call in (plain_add, calls["multiply"][0], calls["nn.relu"][0]):
        (answer,) = transform.ask_compilers(call, ["my_ext"])
        assert answer["answer"] == "taken", (call, answer)
    (answer,) = transform.ask_compilers(broadcast_add, ["my_ext"])
    assert answer["answer"] == "declined"
    assert answer["reason"] == "argument 1 is broadcast; my_ext takes operands of one shape"


def test_pattern_table_merges_add_relu(my_ext):
    merged = transform.run_pipeline(typed(), "MergeComposite(my_ext),InferType")
    text = kiln.ir.AsText(merged)
    assert text.count('Composite="my_ext.add_relu"') == 1, text
    assert "nn.relu(" in text.split('Composite="my_ext.add_relu"', 1)[1], text


def test_build_places_ops_and_matches_numpy(my_ext, capsys):
    model = kiln.build(typed(), plugins=["my_ext"], report=True)
    assert placement(model.placement_report) == {
        ("my_ext", "multiply", None): 1,
        ("my_ext", "add", "my_ext.add_relu"): 1,
        ("my_ext", "nn.relu", "my_ext.add_relu"): 1,
        ("host", "add", None): 1,
    }, model.placement_report
    assert "my_ext declined (argument 1 is broadcast" in model.placement_report
    data = inputs()
    for got, want in zip(model.run(**data), numpy_reference(**data)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def partitioned():
    return transform.run_pipeline(
        typed(), "MergeComposite(my_ext),AnnotateTarget(my_ext),MergeCompilerRegions,"
                 "PartitionGraph,InferType")


def test_codegen_makes_a_my_ext_json_module(my_ext):
    mod = partitioned()
    (module,) = kiln.get_global_func("kiln.ext.my_ext")([mod["kiln_my_ext_0"]], {})
    assert (module.kind, module.functions) == ("my_ext_json", ["kiln_my_ext_0"])
    data = inputs()
    # The region's inputs are %x and %y; its results the product and the relu.
    product, relu = kiln.empty((2, 4), "float32"), kiln.empty((2, 4), "float32")
    module["kiln_my_ext_0"](kiln.tensor(data["x"]), kiln.tensor(data["y"]), product, relu)
    scaled = data["x"] * SCALE
    np.testing.assert_allclose(relu.numpy(), np.maximum(scaled + data["y"], 0), rtol=1e-6)
    np.testing.assert_allclose(product.numpy(), scaled, rtol=1e-6)


def test_runtime_names_an_op_it_does_not_run(my_ext):
    mod = transform.InferType()(kiln.ir.ParseModule("""
    def @r(%a: Tensor[(3), float32]) attrs={Compiler="my_ext", Primitive=1,
                                            global_symbol="kiln_my_ext_9"} {
      exp(%a)
    }""", []))
    with pytest.raises(kiln.NotImplementedError, match="'kiln_my_ext_9' has op 'exp'"):
        kiln.get_global_func("kiln.ext.my_ext")([mod["r"]], {})

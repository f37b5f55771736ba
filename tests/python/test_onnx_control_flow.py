"""ONNX If and Loop import as the IR's control flow (docs/design.md §32): each body a function
that reads the enclosing graph's values by name. Compiling a branch or loop is not built yet;
an If whose condition is a constant folds to its branch and runs."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import kiln  # noqa: E402
import kiln.frontend  # noqa: E402
from kiln import transform  # noqa: E402

FLOAT, BOOL, INT64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64


def value(name, elem_type, shape):
    return helper.make_tensor_value_info(name, elem_type, shape)


def branch(name, nodes, output, elem_type=FLOAT, shape=(3,)):
    """A graph of no inputs for an If: `nodes` may read the enclosing graph's values."""
    return helper.make_graph(nodes, name, [], [value(output, elem_type, list(shape))])


def if_model(then_graph, else_graph, outputs=(("y", FLOAT, [3]),)):
    """y = If(cond) over the graph inputs cond and x (float32, (3,))."""
    node = helper.make_node("If", ["cond"], [o[0] for o in outputs], then_branch=then_graph,
                            else_branch=else_graph)
    graph = helper.make_graph([node], "if", [value("cond", BOOL, []), value("x", FLOAT, [3])],
                              [value(*o) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def doubling_or_squaring():
    """then: x + x; else: x * x; both read the outer x."""
    return if_model(branch("then", [helper.make_node("Add", ["x", "x"], ["sum"])], "sum"),
                    branch("else", [helper.make_node("Mul", ["x", "x"], ["product"])], "product"))


def result_type(mod):
    return transform.InferType()(mod)["main"].ret_type


def test_if_imports_as_an_if_whose_branches_read_outer_values():
    mod = kiln.frontend.from_onnx(doubling_or_squaring())
    text = str(mod)
    assert "if(%cond" in text
    assert "add(%x, %x)" in text and "multiply(%x, %x)" in text
    assert str(result_type(mod)) == "Tensor[(3), float32]\n"


@pytest.mark.parametrize("cond", [True, False])
def test_an_if_on_a_bound_condition_folds_to_its_branch_and_runs(cond):
    mod = kiln.frontend.from_onnx(doubling_or_squaring())
    ex = kiln.build(mod, params={"cond": np.array(cond)})
    x = np.array([1.5, -2.0, 3.0], dtype=np.float32)
    (y,) = ex.run(x=x)
    np.testing.assert_array_equal(y, x + x if cond else x * x)


def test_an_if_on_a_run_time_condition_is_not_compiled_yet_and_says_so():
    mod = kiln.frontend.from_onnx(doubling_or_squaring())
    with pytest.raises(NotImplementedError, match="does not compile them yet"):
        kiln.build(mod)


def test_branches_that_disagree_in_rank_are_a_type_error_naming_both():
    axes = helper.make_node("Constant", [], ["axes"],
                            value=helper.make_tensor("axes_value", INT64, [1], [0]))
    model = if_model(
        branch("then", [helper.make_node("Add", ["x", "x"], ["sum"])], "sum"),
        branch("else", [axes, helper.make_node("Unsqueeze", ["x", "axes"], ["row"])], "row",
               shape=(1, 3)),
        outputs=(("y", FLOAT, [3]),))
    with pytest.raises(TypeError, match=r"branches of an If disagree.*\(3\).*\(1, 3\)"):
        kiln.frontend.from_onnx(model)


def test_unsupported_ops_inside_bodies_are_listed_with_the_others():
    model = if_model(
        branch("then", [helper.make_node("NoSuchOp", ["x"], ["a"], domain="my.ops")], "a"),
        branch("else", [helper.make_node("AlsoMissing", ["x"], ["b"], domain="my.ops")], "b"))
    model.opset_import.append(helper.make_opsetid("my.ops", 1))
    with pytest.raises(NotImplementedError) as error:
        kiln.frontend.from_onnx(model)
    assert "2 unsupported ONNX op(s)" in str(error.value)
    assert "NoSuchOp" in str(error.value) and "AlsoMissing" in str(error.value)


def loop_model(trip_count=None):
    """A running sum: acc += x each iteration, with acc's values scanned; x is outer."""
    body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "x"], ["acc_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["acc_out"], ["scanned"])],
        "body",
        [value("i", INT64, []), value("cond_in", BOOL, []), value("acc_in", FLOAT, [3])],
        [value("cond_out", BOOL, []), value("acc_out", FLOAT, [3]), value("scanned", FLOAT, [3])])
    inputs = [value("x", FLOAT, [3]), value("acc", FLOAT, [3])]
    initializers = []
    if trip_count is None:
        inputs.append(value("n", INT64, []))
    else:
        initializers.append(helper.make_tensor("n", INT64, [], [trip_count]))
    node = helper.make_node("Loop", ["n", "", "acc"], ["final", "all"], body=body)
    graph = helper.make_graph([node], "loop", inputs,
                              [value("final", FLOAT, [3]), value("all", FLOAT, [None, 3])],
                              initializer=initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_a_loop_with_a_constant_trip_count_scans_that_many_values():
    mod = kiln.frontend.from_onnx(loop_model(trip_count=4))
    text = str(mod)
    assert "iterations=4" in text
    assert "add(%acc_in, %x)" in text
    assert str(result_type(mod)) == "(Tensor[(3), float32], Tensor[(4, 3), float32])\n"


def test_a_loop_with_a_run_time_trip_count_scans_a_size_of_its_own():
    mod = kiln.frontend.from_onnx(loop_model())
    ret = str(result_type(mod))
    iterations = ret.split("Tensor[(")[2].split(",")[0]
    assert iterations.isidentifier(), ret
    assert f"iterations={iterations}" in str(mod)

"""kiln.pattern: building and matching patterns, pattern tables with Python checks, and
kiln.transform.MergeComposite over them."""

from pathlib import Path

import pytest

import kiln
from kiln import transform
from kiln.pattern import (
    Pattern,
    PatternEntry,
    bind,
    is_constant,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    match,
    pattern_table,
    register_pattern_table,
    wildcard,
)

CONV_BIAS_RELU = """
def @main(%x: Tensor[(1, 1, 2, 2), float32]) {
  %0 = nn.conv2d(%x, const(float32, (2, 1, 1, 1), [1, 2]));
  %1 = add(%0, const(float32, (2, 1, 1), [1, 2]));
  %2 = nn.relu(%1);
  %2
}
"""

DENSES = """
def @main(%x: Tensor[(1, 3), float32], %y: Tensor[(2, 3), float32], %w: Tensor[(4, 3), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = nn.dense(%y, %w);
  %2 = (%0, %1);
  %2
}
"""


def typed(text):
    return transform.InferType()(kiln.ir.ParseModule(text, []))


def body(mod):
    return mod["main"].body


def conv_bias_relu_pattern():
    conv = is_op("nn.conv2d")(wildcard(), is_constant()).has_attr({"groups": 1})
    bias = is_op("add")(conv, is_constant())
    return bias.optional(lambda p: is_op("nn.relu")(p))


def test_builders_make_patterns_with_readable_reprs():
    pattern = conv_bias_relu_pattern()
    assert isinstance(pattern, Pattern)
    assert repr(is_op("nn.relu")(wildcard()) | is_var()) == "<Pattern (nn.relu(*) | var)>"
    assert repr(is_tuple_get_item(is_tuple([is_var()]), 0).has_rank(2).has_dtype("int8")) == (
        "<Pattern tuple(var).0.has_shape((-1, -1)).has_dtype(int8)>"
    )


def test_match_and_binding():
    relu = body(typed(CONV_BIAS_RELU))
    bias_expr = relu.args[0]
    conv_expr = bias_expr.args[0]
    data = wildcard()
    conv = is_op("nn.conv2d")(data, is_constant())
    bias = is_op("add")(conv, is_constant())
    relu_pattern = is_op("nn.relu")(bias)
    assert match(relu_pattern, relu)
    assert not match(relu_pattern, bias_expr)
    assert match(bias, bias_expr)
    binding = bind(relu_pattern, relu)
    assert binding[relu_pattern].same_as(relu)
    assert binding[conv].same_as(conv_expr)
    assert binding[data].same_as(conv_expr.args[0])
    assert bind(relu_pattern, conv_expr) is None


def test_optional_alternatives_and_predicates():
    relu = body(typed(CONV_BIAS_RELU))
    pattern = conv_bias_relu_pattern()
    assert match(pattern, relu) and match(pattern, relu.args[0])
    conv_expr = relu.args[0].args[0]
    assert not match(is_op("nn.conv2d")(wildcard(), wildcard()).has_attr({"groups": 2}), conv_expr)
    assert match(wildcard().has_dtype("float32").has_shape((1, 2, -1, -1)), conv_expr)
    assert not match(wildcard().has_shape((1, 3, 2, 2)), conv_expr)
    assert not match(wildcard().has_rank(3), conv_expr)
    assert match(is_op("tanh")(wildcard()) | is_op("nn.relu")(wildcard()), relu)
    assert not match(is_op("tanh")(wildcard()) | is_op("sigmoid")(wildcard()), relu)
    assert match(is_var(), conv_expr.args[0]) and not match(is_constant(), conv_expr.args[0])


def test_bad_builders_raise_kiln_errors_naming_the_input():
    with pytest.raises(kiln.KeyError, match="nn.conv2dd"):
        is_op("nn.conv2dd")
    with pytest.raises(kiln.ValueError, match="floaty32"):
        wildcard().has_dtype("floaty32")


def test_type_predicates_need_typed_expressions():
    untyped = body(kiln.ir.ParseModule(CONV_BIAS_RELU, []))
    with pytest.raises(kiln.ValueError, match="InferType"):
        match(wildcard().has_dtype("float32"), untyped)


def test_python_table_with_a_check_drives_merge_composite():
    seen = []

    def batch_of_one(call):
        seen.append(call)
        return call.checked_type.shape[0].value == 1

    entries = register_pattern_table(
        "py_test",
        [("py_test.dense", is_op("nn.dense")(wildcard(), wildcard()), batch_of_one)],
    )
    try:
        assert [entry.name for entry in entries] == ["py_test.dense"]
        assert [entry.name for entry in pattern_table("py_test")] == ["py_test.dense"]
        out = transform.MergeComposite(["py_test"])(typed(DENSES))
        assert len(seen) == 2  # both denses were offered to the check
        first, second = body(out).fields
        assert first.op.attrs["Composite"] == "py_test.dense"
        assert isinstance(second.op, kiln.ir.Op)  # declined: batch 2
        assert transform.MergeComposite(["py_test"]).info["name"] == (
            "transform.MergeComposite(py_test)"
        )
    finally:
        kiln.remove_global_func("kiln.ext.py_test.pattern_table")
    assert pattern_table("py_test") == []


def test_merge_composite_with_a_table_and_through_a_pipeline_string():
    entry = PatternEntry("py_pipe.conv2d_bias_relu", conv_bias_relu_pattern())
    assert entry.check is None and entry.name == "py_pipe.conv2d_bias_relu"
    out = transform.MergeComposite([entry])(typed(CONV_BIAS_RELU))
    composite = body(out).op
    assert composite.attrs["Composite"] == "py_pipe.conv2d_bias_relu"
    assert [type(arg) for arg in body(out).args] == [
        kiln.ir.Var,
        kiln.ir.Constant,
        kiln.ir.Constant,
    ]

    register_pattern_table("py_pipe", [entry])
    try:
        piped = transform.run_pipeline(typed(CONV_BIAS_RELU), "MergeComposite(py_pipe)")
        assert kiln.ir.structural_equal(piped, out)
        unchanged = transform.run_pipeline(typed(CONV_BIAS_RELU), "MergeComposite")
        assert isinstance(body(unchanged).op, kiln.ir.Op)
    finally:
        kiln.remove_global_func("kiln.ext.py_pipe.pattern_table")


def test_misnamed_entries_are_value_errors_naming_the_compiler():
    register_pattern_table("py_bad", [("other.relu", is_op("nn.relu")(wildcard()))])
    try:
        with pytest.raises(kiln.ValueError, match="py_bad"):
            transform.MergeComposite(["py_bad"])(typed(CONV_BIAS_RELU))
    finally:
        kiln.remove_global_func("kiln.ext.py_bad.pattern_table")


def test_docs_example_runs(capsys):
    text = (Path(__file__).resolve().parents[2] / "docs" / "byoc.md").read_text()
    section = text[text.index("## Patterns"):]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    try:
        exec(compile(code, "docs/byoc.md", "exec"), {})  # noqa: S102 (our own documentation)
    finally:
        kiln.remove_global_func("kiln.ext.mylib.pattern_table")
    assert capsys.readouterr().out.startswith("mylib.conv2d_bias_relu\n")

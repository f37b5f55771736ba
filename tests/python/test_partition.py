"""BYOC from Python: predicates registered in Python, AnnotateTarget, MergeCompilerRegions and
PartitionGraph as kiln.transform passes, and their errors."""

import pytest

import kiln
import kiln.ir as ir
from kiln import transform

COMPILER = "test_py_partition"

MODULE_TEXT = """
def @main(%x: Tensor[(2, 3), float32]) {
  %0 = nn.relu(%x);
  %1 = exp(%0);
  %2 = nn.relu(%1);
  %3 = tanh(%2);
  %4 = nn.relu(%3);
  %4
}
"""

seen_ops = []


@pytest.fixture(scope="module", autouse=True)
def predicates():
    """relu is taken; exp is declined with a reason; tanh is taken only with tanh_ok set."""

    @transform.register_target_predicate("nn.relu", COMPILER)
    def _relu(call):
        seen_ops.append(call.op.name)
        return True

    transform.register_target_predicate("exp", COMPILER, lambda call: "no exp in Python")
    transform.register_target_predicate("tanh", COMPILER, lambda call: False)


def typed_module():
    return transform.InferType()(ir.ParseModule(MODULE_TEXT, []))


def calls_of(function):
    calls = []
    expr = function.body
    while isinstance(expr, ir.Call):
        calls.append(expr)
        expr = expr.args[0]
    return list(reversed(calls))


def test_python_predicates_answer_for_calls():
    relu, exp, _, tanh, _ = calls_of(typed_module()["main"])
    assert transform.ask_compilers(relu, [COMPILER]) == [
        {"compiler": COMPILER, "answer": "taken", "reason": ""}]
    assert transform.ask_compilers(exp, [COMPILER, "nobody"]) == [
        {"compiler": COMPILER, "answer": "declined", "reason": "no exp in Python"},
        {"compiler": "nobody", "answer": "no_predicate", "reason": ""}]
    assert transform.ask_compilers(tanh, [COMPILER])[0]["answer"] == "declined"


def test_a_second_predicate_needs_override():
    with pytest.raises(kiln.KeyError):
        transform.register_target_predicate("exp", COMPILER, lambda call: True)
    transform.register_target_predicate("exp", COMPILER, lambda call: "still no exp", override=True)
    exp = calls_of(typed_module()["main"])[1]
    assert transform.ask_compilers(exp, [COMPILER])[0]["reason"] == "still no exp"


def test_partition_makes_one_function_per_region():
    seen_ops.clear()
    annotate = transform.AnnotateTarget([COMPILER])
    assert annotate.info["name"] == f"transform.AnnotateTarget({COMPILER})"
    seq = transform.Sequential([
        annotate, transform.MergeCompilerRegions(), transform.PartitionGraph(),
        transform.InferType()])
    out = seq(typed_module())
    assert seen_ops == ["nn.relu"] * 3  # asked once per relu call
    names = sorted(gvar.name_hint for gvar, _ in out.functions.items())
    # exp and tanh stay on the host and separate the three relus.
    assert names == ["kiln_test_py_partition_0", "kiln_test_py_partition_1",
                     "kiln_test_py_partition_2", "main"]
    region = out["kiln_test_py_partition_0"]
    assert region.attrs["Compiler"] == COMPILER
    assert region.attrs["Primitive"] == 1
    assert region.attrs["global_symbol"] == "kiln_test_py_partition_0"
    assert region.body.op.name == "nn.relu"
    main_ops = [call.op for call in calls_of(out["main"])]
    assert [getattr(op, "name_hint", None) or op.name for op in main_ops] == [
        "kiln_test_py_partition_0", "exp", "kiln_test_py_partition_1", "tanh",
        "kiln_test_py_partition_2"]


def test_pipeline_string_with_compiler_list():
    out = transform.run_pipeline(
        typed_module(), f"AnnotateTarget({COMPILER}),MergeCompilerRegions,PartitionGraph")
    assert "kiln_test_py_partition_2" in [gvar.name_hint for gvar, _ in out.functions.items()]


def test_invalid_hand_written_regions_name_the_node():
    mod = transform.InferType()(ir.ParseModule("""
def @main(%x: Tensor[(2), float32]) {
  %0 = annotation.compiler_begin(%x, compiler="a");
  %1 = nn.relu(%0);
  %2 = annotation.compiler_end(%1, compiler="b");
  %2
}
""", []))
    with pytest.raises(kiln.ValueError, match=r"mismatched compilers: .*compiler_end\(%1, "
                       r"compiler=\"b\"\)' marks, for compiler 'b'"):
        transform.PartitionGraph()(mod)


def test_annotate_target_rejects_a_malformed_compiler_name():
    with pytest.raises(kiln.ValueError, match="compiler name 'a,b'"):
        transform.AnnotateTarget(["a,b"])

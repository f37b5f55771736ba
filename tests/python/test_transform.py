"""kiln.transform: passes as callable objects, Sequential, pipelines, the transform.* globals."""

import numpy as np
import pytest

import kiln
from kiln import transform

MODULE_TEXT = """
def @main(%x) {
  %0 = @helper(%x);
  %0
}

def @helper(%y) {
  %y
}

def @unused(%z) {
  %z
}
"""


@pytest.fixture
def mod():
    return kiln.ir.ParseModule(MODULE_TEXT, [])


def function_names(module):
    return sorted(gvar.name_hint for gvar, _ in module.functions.items())


def test_sequential_of_a_built_in_pass_runs_it(mod):
    seq = transform.Sequential([transform.DeadCodeElimination()], name="cleanup")
    assert isinstance(seq, transform.Sequential) and isinstance(seq, transform.Pass)
    assert seq.info == {"name": "cleanup", "opt_level": 0, "required": False}
    out = seq(mod)
    assert isinstance(out, kiln.ir.IRModule)
    assert function_names(out) == ["helper", "main"]
    assert function_names(mod) == ["helper", "main", "unused"]  # the input is unchanged


def test_pass_is_callable_with_settings(mod):
    dce = transform.DeadCodeElimination()
    assert dce.info == {"name": "transform.DeadCodeElimination", "opt_level": 1, "required": False}
    assert repr(dce) == "<Pass 'transform.DeadCodeElimination'>"
    assert dce(mod, opt_level=0).same_as(mod)
    assert dce(mod, disabled_passes=["DeadCodeElimination"]).same_as(mod)
    assert function_names(dce(mod, opt_level=0, required_passes=["DeadCodeElimination"])) == [
        "helper",
        "main",
    ]


@pytest.mark.parametrize("pipeline", ["DeadCodeElimination", " transform.DeadCodeElimination ,"])
def test_run_pipeline(mod, pipeline):
    assert function_names(transform.run_pipeline(mod, pipeline)) == ["helper", "main"]
    assert transform.run_pipeline(mod, pipeline, opt_level=0).same_as(mod)


def test_unknown_pass_name_in_a_pipeline_suggests_close_names(mod):
    with pytest.raises(kiln.KeyError, match="transform.DeadCodeElimination") as info:
        transform.run_pipeline(mod, "DeadCodeEliminaton")
    assert "while parsing the pass pipeline 'DeadCodeEliminaton'" in str(info.value)


def test_unknown_attribute_suggests_close_names():
    with pytest.raises(AttributeError, match="DeadCodeElimination"):
        transform.DeadCodeEliminaton


def test_sequential_rejects_what_is_not_a_pass():
    with pytest.raises(TypeError):
        transform.Sequential([transform.DeadCodeElimination(), 42])


def test_pass_registered_after_import_is_an_attribute(mod):
    name = "transform.TestPythonCleanup"
    kiln.register_func(name, lambda: transform.Sequential([transform.DeadCodeElimination()]))
    try:
        assert "TestPythonCleanup" in dir(transform)
        assert function_names(transform.TestPythonCleanup()(mod)) == ["helper", "main"]
        assert function_names(transform.run_pipeline(mod, "TestPythonCleanup")) == [
            "helper",
            "main",
        ]
    finally:
        kiln.remove_global_func(name)


CONV_TEXT = """
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
  %1 = reshape(%0, newshape=[4, 64]);
  %2 = reshape(%1, newshape=[1, 4, 8, 8]);
  %3 = nn.relu(%2);
  %3
}
"""


def test_built_in_passes_run_by_name_from_python():
    mod = kiln.ir.ParseModule(CONV_TEXT, [])
    out = transform.run_pipeline(mod, "InferType,SimplifyExpr,FuseOps", opt_level=3)
    main = out["main"]
    # InferType set the result type; SimplifyExpr removed the reshape pair; FuseOps put conv2d
    # and its relu epilogue into one primitive function called from @main.
    assert "Tensor[(1, 4, 8, 8), float32]" in repr(main.ret_type)
    call = main.body
    assert call.op.attrs["Primitive"] == 1
    text = repr(out)
    assert "reshape" not in text
    assert text.count("nn.conv2d") == 1 and text.count("nn.relu") == 1


def test_ill_typed_program_names_op_argument_and_shapes():
    bad = CONV_TEXT.replace("(4, 3, 3, 3)", "(4, 2, 3, 3)")
    mod = kiln.ir.ParseModule(bad, [])
    with pytest.raises(TypeError) as info:
        transform.InferType()(mod)
    message = str(info.value)
    assert "nn.conv2d" in message and "'data'" in message and "'weight'" in message
    assert "Tensor[(1, 3, 8, 8), float32]" in message
    assert "transform.InferType on @main" in message


class _DoubleToAdd(kiln.ir.ExprMutator):
    """multiply(x, 2.0) -> add(x, x), a rewrite written in Python."""

    def visit_call(self, call):
        call = super().visit_call(call)
        factor = call.args[1] if len(call.args) == 2 else None
        if (isinstance(call.op, kiln.ir.Op) and call.op.name == "multiply"
                and isinstance(factor, kiln.ir.Constant) and factor.data.numpy().size == 1
                and float(factor.data.numpy().reshape(-1)[0]) == 2.0):
            return kiln.ir.Call("add", [call.args[0], call.args[0]])
        return call


def test_a_function_pass_written_in_python_runs_in_a_pipeline_with_cpp_passes():
    calls = []

    @transform.function_pass("test_py.DoubleToAdd")
    def double_to_add(function, mod, ctx):
        calls.append(function)
        return _DoubleToAdd().visit(function)

    assert isinstance(double_to_add, transform.Pass)
    assert double_to_add.info["name"] == "test_py.DoubleToAdd"
    mod = kiln.ir.ParseModule("""
def @main(%x: Tensor[(3), float32]) {
  %0 = multiply(%x, const(float32, (), [2]));
  %1 = nn.relu(%0);
  multiply(%1, const(float32, (), [3]))
}""", [])
    text = str(transform.run_pipeline(mod, "InferType,test_py.DoubleToAdd,InferType"))
    assert len(calls) == 1
    assert "add(%x, %x)" in text and text.count("multiply(") == 1, text
    # kiln.build takes the same names, and the model computes the same.
    executable = kiln.build(mod, pipeline="InferType,test_py.DoubleToAdd,FuseOps,InferType")
    x = np.array([-1.0, 0.5, 2.0], dtype=np.float32)
    np.testing.assert_allclose(executable.run(x=x)[0], np.maximum(2 * x, 0) * 3)


def test_a_module_pass_and_a_visitor_see_each_node_once():
    seen = {}

    class CountOps(kiln.ir.ExprVisitor):
        def visit_call(self, call):
            name = call.op.name
            seen[name] = seen.get(name, 0) + 1

    @transform.module_pass("CountOpsForTest")
    def count_ops(mod, ctx):
        CountOps().visit(mod["main"])
        return mod

    # %0 is used twice: it is one node, counted once.
    mod = kiln.ir.ParseModule("""
def @main(%x: Tensor[(3), float32]) {
  %0 = exp(%x);
  add(%0, %0)
}""", [])
    out = transform.run_pipeline(mod, "CountOpsForTest")
    assert seen == {"exp": 1, "add": 1}
    assert out.same_as(mod)


def test_a_rewrite_of_a_deep_graph_does_not_hit_pythons_recursion_limit():
    text = ["def @main(%x: Tensor[(2), float32]) {", "  %0 = negative(%x);"]
    text += [f"  %{i} = negative(%{i - 1});" for i in range(1, 3000)]
    text += ["  %2999", "}"]
    mod = kiln.ir.ParseModule("\n".join(text), [])

    class NegToAbs(kiln.ir.ExprMutator):
        def visit_call(self, call):
            call = super().visit_call(call)
            return kiln.ir.Call("abs", list(call.args))

    rewritten = NegToAbs().visit(mod["main"])
    assert str(rewritten).count("abs(") == 3000

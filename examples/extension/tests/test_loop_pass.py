"""The plugin's loop-level pass (src/unroll_short_loops.cc) over the tensor-level IR: alone, in
a build with generated kernels, and composed by name with a pass written in Python."""

import numpy as np
import pytest

import kiln
from kiln import tir

from conftest import PLUGIN

SOFTMAX = """
def @main(%x: Tensor[(n, 3), float32]) {
  %0 = exp(subtract(%x, max(%x, axis=[1], keepdims=true)));
  divide(%0, sum(%0, axis=[1], keepdims=true))
}"""


def loop_kinds(node, kinds=None):
    """{loop variable: kind} of every loop under ``node``."""
    kinds = {} if kinds is None else kinds

    def visit(n):
        if tir.kind_of(n) == "for":
            kinds[n.var] = n.kind
        return None

    tir.mutate(node, visit)
    return kinds


def test_the_pass_unrolls_short_serial_loops():
    kiln.load_plugin(PLUGIN)
    a = tir.node("buffer", name="a", dtype="float32", shape=["n", 3])
    store = tir.node("store", buffer=a, indices=["i", "j"],
                     value=tir.node("float", value=0.0, dtype="float32"))
    inner = tir.node("for", var="j", extent=3, kind="serial", body=store)
    func = tir.node("prim_func", name="zero", params=[a],
                    body=tir.node("for", var="i", extent="n", kind="serial", body=inner))
    after = kiln.get_global_func("tir.RunPasses")(func, "my_ext.unroll_short_loops")
    assert loop_kinds(after) == {"i": "serial", "j": "unrolled"}


def test_a_build_runs_it_with_a_python_pass_after_it():
    kiln.load_plugin(PLUGIN)
    seen = []

    @tir.prim_func_pass("my_ext_test.record_loops")
    def record_loops(func):
        seen.append(loop_kinds(func))
        return func

    executable = kiln.build(kiln.ir.ParseModule(SOFTMAX, []), generated_kernels=True,
                            tir_passes="my_ext.unroll_short_loops,my_ext_test.record_loops")
    assert seen and all(kinds for kinds in seen)
    assert any("unrolled" in kinds.values() for kinds in seen), seen
    x = np.random.default_rng(0).standard_normal((5, 3)).astype("float32")
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(executable.run(x=x)[0], e / e.sum(1, keepdims=True), rtol=1e-5)


def test_the_plugins_node_prints_parses_and_is_lowered_by_its_pass():
    kiln.load_plugin(PLUGIN)
    b = tir.Builder("inverse_norm")
    x = b.param("x", "float32", [4])
    out = b.param("out", "float32", [4])
    with b.loop("i", 4) as i:
        b.store(out, [i], tir.node("my_ext.rsqrt", value=x[i] * x[i] + 1.0))
    func = b.finish()
    text = str(func)
    assert "my_ext.rsqrt(value=add(a=mul(" in text
    assert tir.structural_equal(tir.parse(text), func)
    with pytest.raises(kiln.NotImplementedError, match="no C for the value 'my_ext.rsqrt'"):
        tir.generate_c(func)
    lowered = kiln.get_global_func("tir.RunPasses")(func, "my_ext.lower_rsqrt")
    assert "my_ext.rsqrt" not in str(lowered) and 'call(name="sqrt"' in str(lowered)
    data = np.array([0.0, 1.0, -2.0, 3.0], np.float32)
    result = kiln.empty([4], "float32")
    tir.build_c(lowered)(kiln.tensor(data), result)
    np.testing.assert_allclose(result.numpy(), 1 / np.sqrt(data * data + 1), rtol=1e-6)


def test_the_plugins_op_is_lowered_by_its_compute_rule():
    kiln.load_plugin(PLUGIN)
    mod = kiln.ir.ParseModule("""
def @main(%x: Tensor[(n, 8), float32]) {
  add(my_ext.swish(%x, beta=2.0), %x)
}""", [])
    executable = kiln.build(mod, generated_kernels=True)

    def generated(module):
        own = [f for f in (module.functions or []) if f.startswith("tir_")]
        return own + [f for child in module.imports for f in generated(child)]

    assert generated(executable.module) == ["tir_fused_my_ext_swish_add_0"]
    x = np.linspace(-3, 3, 24, dtype=np.float32).reshape(3, 8)
    np.testing.assert_allclose(executable.run(x=x)[0], x / (1 + np.exp(-2 * x)) + x, rtol=1e-5)


def test_the_plugins_schedule_schedules_the_groups_holding_its_op():
    """src/swish_schedule.cc: `tir.schedule.for_op.my_ext.swish` splits the innermost loop into
    vectors of 8 (the tail, here 13 % 8, moved out of the loop by loop_partition). The per-row
    %b keeps the row loop apart: the default schedule fuses nested loops only where the fused
    index stays contiguous in every buffer."""
    kiln.load_plugin(PLUGIN)
    mod = kiln.ir.ParseModule("""
def @main(%x: Tensor[(n, 13), float32], %b: Tensor[(n, 1), float32]) {
  add(my_ext.swish(%x, beta=2.0), %b)
}""", [])
    fused = kiln.transform.run_pipeline(mod, "InferType,FuseOps,InferType")
    call = fused["main"].body
    func = tir.lower_fused_group(call.op, call.args, "f")
    text = str(func)
    assert "var=swish_v0, extent=8, kind=vectorized" in text, text
    assert "var=swish_v0, extent=5, kind=vectorized" in text, text  # the tail, peeled
    assert "if(" not in text and "kind=parallel" in text, text
    executable = kiln.build(mod, generated_kernels=True)
    for rows in (1, 4):
        x = np.linspace(-3, 3, rows * 13, dtype=np.float32).reshape(rows, 13)
        b = np.arange(rows, dtype=np.float32).reshape(rows, 1)
        np.testing.assert_allclose(executable.run(x=x, b=b)[0], x / (1 + np.exp(-2 * x)) + b,
                                   rtol=1e-5, atol=1e-6)

"""The plugin's loop-level pass (src/unroll_short_loops.cc) over the tensor-level IR: alone, in
a build with generated kernels, and composed by name with a pass written in Python."""

import numpy as np

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

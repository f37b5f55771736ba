"""my_ext.swish from Python: its CPU kernel against numpy (called directly and in a compiled
model), its fusion with neighbouring ops, and FuseSwish turning x * sigmoid(x) into it."""

import numpy as np
import pytest

import kiln
from conftest import RUNTIME
from kiln import transform

RNG = np.random.default_rng(7)


def numpy_swish(x, beta=1.0):
    return x / (1.0 + np.exp(-beta * x.astype("float64")))


def typed(text):
    return transform.InferType()(kiln.ir.ParseModule(text, []))


@pytest.mark.parametrize("beta", [1.0, 0.5, -2.0])
def test_kernel_matches_numpy(my_ext, beta):
    kiln.load_plugin(RUNTIME)  # the kernel's library; a compiled model loads it by itself
    x = (RNG.standard_normal((3, 50)) * 4).astype("float32")
    out = np.zeros_like(x)
    kernel = kiln.get_global_func("kernel.cpu.my_ext.swish")
    kernel([kiln.tensor(x)], [kiln.tensor(out)], {"beta": beta})
    np.testing.assert_allclose(out, numpy_swish(x, beta), rtol=1e-6, atol=1e-6)


def test_kernel_refuses_float64_naming_the_input(my_ext):
    kiln.load_plugin(RUNTIME)
    x = np.ones(4)
    kernel = kiln.get_global_func("kernel.cpu.my_ext.swish")
    with pytest.raises(kiln.ValueError, match="kernel.cpu.my_ext.swish: input 'x'.*float64"):
        kernel([kiln.tensor(x)], [kiln.tensor(np.zeros(4, "float32"))], {"beta": 1.0})


def test_compiled_model_runs_the_kernel(my_ext):
    mod = typed("""
    def @main(%x: Tensor[(2, 8), float32]) {
      my_ext.swish(%x, beta=1.5)
    }
    """)
    x = RNG.standard_normal((2, 8)).astype("float32")
    (got,) = kiln.build(mod).run(x=x)
    np.testing.assert_allclose(got, numpy_swish(x, 1.5), rtol=1e-6, atol=1e-6)


def test_fold_constant_runs_the_kernel_on_a_constant(my_ext):
    c = RNG.standard_normal(5).astype("float32")
    mod = transform.InferType()(kiln.ir.ParseModule("""
    def @main() {
      my_ext.swish(meta[Constant][0], beta=2.0)
    }
    """, [kiln.tensor(c)]))
    folded = transform.FoldConstant()(mod)["main"].body
    assert isinstance(folded, kiln.ir.Constant), folded
    np.testing.assert_allclose(folded.data.numpy(), numpy_swish(c, 2.0), rtol=1e-6, atol=1e-6)


def test_float64_input_is_a_type_error_naming_the_op(my_ext):
    with pytest.raises(kiln.TypeError, match="my_ext.swish"):
        typed("def @main(%x: Tensor[(4), float64]) { my_ext.swish(%x) }")


def test_fuse_ops_fuses_it_with_its_neighbours(my_ext):
    # An elementwise op: exp -> swish -> negative is one primitive function, one kernel call each.
    mod = typed("""
    def @main(%x: Tensor[(4), float32]) {
      negative(my_ext.swish(exp(%x)))
    }
    """)
    fused = transform.FuseOps()(mod)
    text = kiln.ir.AsText(fused)
    assert text.count("Primitive=1") == 1, text
    x = RNG.standard_normal(4).astype("float32")
    (got,) = kiln.build(mod).run(x=x)
    np.testing.assert_allclose(got, -numpy_swish(np.exp(x)), rtol=1e-6)


SPELLED_OUT = """
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) {
  %0 = multiply(%x, sigmoid(%x));
  %1 = multiply(sigmoid(%y), %y);
  add(%0, %1)
}
"""


def test_fuse_swish_from_a_pipeline_string(my_ext):
    out = transform.run_pipeline(kiln.ir.ParseModule(SPELLED_OUT, []),
                                 "InferType,my_ext.transform.FuseSwish")
    text = kiln.ir.AsText(out)
    assert text.count("my_ext.swish(") == 2, text
    assert "sigmoid" not in text and "multiply" not in text, text


def test_fuse_swish_then_build_matches_numpy(my_ext):
    fused = transform.Sequential([transform.InferType(), my_ext.transform.FuseSwish()])(
        kiln.ir.ParseModule(SPELLED_OUT, []))
    x, y = (RNG.standard_normal((2, 3)).astype("float32") for _ in range(2))
    (got,) = kiln.build(fused).run(x=x, y=y)
    np.testing.assert_allclose(got, numpy_swish(x) + numpy_swish(y), rtol=1e-6, atol=1e-6)

"""Fused groups lowered to the loop IR and run as generated C (kiln.build(...,
generated_kernels=True)): every compute rule against the hand-written kernel, random
elementwise/broadcast/reduction graphs against numpy (static and symbolic sizes), the export
round trip, the golden loop nests of tests/tir/lower/, and the errors of a wrong rule."""

import glob
import os
import platform
import re
import subprocess

import numpy as np
import pytest

import kiln
import kiln.ir as ir
from kiln import tir

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN_DIR = os.path.join(HERE, "..", "tir", "lower")
INCLUDE_DIR = os.path.join(HERE, "..", "..", "include")
RNG = np.random.default_rng(18)


def parse(text):
    return ir.ParseModule(text, [])


def generated_functions(module):
    """Names of the functions of every c_source or host_library module under ``module``."""
    names = []
    if module.kind in ("c_source", "host_library"):
        names += [name for name in module.functions or [] if name.startswith("tir_")]
    for child in module.imports:
        names += generated_functions(child)
    return names


def build_both(text):
    """The model built with the kernels and with generated kernels."""
    mod = parse(text)
    return kiln.build(mod), kiln.build(mod, generated_kernels=True)


# ---- each compute rule against its kernel ----------------------------------------------------

POSITIVE = ("log", "sqrt", "power", "reciprocal")
UNIT = ("asin", "acos", "atanh")


def sample(op, shape, dtype="float32"):
    if dtype == "bool":
        return RNG.random(shape) < 0.5
    if dtype == "int32":
        return RNG.integers(-9, 9, shape).astype("int32")
    x = RNG.standard_normal(shape).astype(dtype)
    if op in POSITIVE:
        return np.abs(x) + np.float32(0.5)
    if op in UNIT:
        return np.tanh(x) * np.float32(0.9)
    if op == "acosh":
        return np.abs(x) + np.float32(1.0)
    return x * np.float32(3.0)


UNARY = ["exp", "log", "sqrt", "erf", "floor", "ceil", "round", "sin", "cos", "tan", "asin",
         "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "tanh", "negative", "abs",
         "sign", "reciprocal", "sigmoid", "nn.relu", "nn.gelu", "nn.silu", "nn.hardswish", "nn.softplus",
         "nn.leaky_relu(alpha=0.1)", "nn.elu(alpha=0.5)", "nn.hard_sigmoid",
         "clip(a_min=-0.5, a_max=1.5)",
         "cast(dtype=\"int32\")", "cast(dtype=\"bool\")", "cast(dtype=\"float64\")"]
BINARY = ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "mod",
          "mod(fmod=true)", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]
REDUCE = ["sum(axis=[1])", "mean(axis=[0], keepdims=true)", "max", "min(axis=[-1])",
          "prod(axis=[0, 1], keepdims=true)"]
INJECTIVE = [("transpose", (3, 5)), ("reshape(newshape=[5, 3])", (3, 5)),
             ("unsqueeze(axes=[1])", (3, 5)), ("squeeze(axes=[0])", (1, 5)),
             ("expand(shape=[4, 3, 5])", (3, 1)),
             ("strided_slice(begin=[1, -2], end=[3, -9], strides=[1, -2])", (4, 9)),
             ("strided_slice(begin=[2], end=[100], axes=[1])", (3, 5)),
             ("nn.pad(pads=[1, 0, 2, 1], pad_value=0.5)", (3, 5)),
             ("nn.pad(pads=[0, -1, 0, 2])", (3, 5))]


def call(op, args):
    """`op(args)` in the text format, `op` optionally with attributes: "clip(a_min=0.0)"."""
    name, _, attrs = op.partition("(")
    attrs = attrs.rstrip(")")
    return f"{name}({', '.join(args)}{', ' + attrs if attrs else ''})"


def check_against_kernel(op, inputs, dtypes):
    params = ", ".join(f"%x{i}: Tensor[{tuple(x.shape)}, {dtypes[i]}]".replace(",)", ")")
                       for i, x in enumerate(inputs))
    text = f"def @main({params}) {{ {call(op, [f'%x{i}' for i in range(len(inputs))])} }}"
    kernels, generated = build_both(text)
    assert generated_functions(generated.module), f"{op}: the group was not lowered"
    feed = {f"x{i}": x for i, x in enumerate(inputs)}
    (want,), (got,) = kernels.run(**feed), generated.run(**feed)
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, err_msg=op)
    else:
        np.testing.assert_array_equal(got, want, err_msg=op)


@pytest.mark.parametrize("op", UNARY)
def test_each_unary_rule_matches_the_kernel(op):
    check_against_kernel(op, [sample(op.partition("(")[0], (3, 5))], ["float32"])


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("rhs_shape", [(3, 5), (5,), (3, 1)])
def test_each_broadcasting_rule_matches_the_kernel(op, rhs_shape):
    name = op.partition("(")[0]
    check_against_kernel(op, [sample(name, (3, 5)), sample(name, rhs_shape)],
                         ["float32", "float32"])


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "maximum", "minimum", "less"])
def test_integer_rules_match_the_kernel(op):
    check_against_kernel(op, [sample(op, (4, 3), "int32"), sample(op, (3,), "int32")],
                         ["int32", "int32"])


@pytest.mark.parametrize("op", ["logical_and", "logical_or", "logical_xor"])
def test_logical_rules_match_the_kernel(op):
    check_against_kernel(op, [sample(op, (2, 3), "bool"), sample(op, (3,), "bool")],
                         ["bool", "bool"])
    check_against_kernel("logical_not", [sample(op, (2, 3), "bool")], ["bool"])


def test_where_matches_the_kernel():
    check_against_kernel("where", [sample("where", (3, 1), "bool"), sample("where", (3, 5)),
                                   sample("where", (5,))], ["bool", "float32", "float32"])


@pytest.mark.parametrize("op", REDUCE)
def test_each_reduction_rule_matches_the_kernel(op):
    check_against_kernel(op, [sample(op, (4, 7))], ["float32"])


@pytest.mark.parametrize("op,shape", INJECTIVE)
def test_each_injective_rule_matches_the_kernel(op, shape):
    check_against_kernel(op, [sample(op, shape)], ["float32"])


# ---- random graphs against numpy -------------------------------------------------------------

NUMPY_UNARY = {
    "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "nn.relu": lambda x: np.maximum(x, 0),
    "negative": np.negative,
    "abs": np.abs,
    "exp": lambda x: np.exp(x),
}
NUMPY_BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
                "maximum": np.maximum, "minimum": np.minimum}
NUMPY_REDUCE = {"sum": np.sum, "max": np.max, "mean": np.mean}


def random_graph(rng, rows):
    """A random chain over x (rows, 6) and b (6,): unary, broadcasting and reduce-then-broadcast
    steps, as IR text and a numpy function of (x, b)."""
    lines, value, count = [], ("%x", lambda x, b: x), 0

    def emit(expr, fn):
        nonlocal count, value
        lines.append(f"  %{count} = {expr};")
        value = (f"%{count}", fn)
        count += 1

    for _ in range(rng.integers(2, 7)):
        name, fn = value
        kind = rng.integers(3)
        if kind == 0:
            op = rng.choice(sorted(NUMPY_UNARY))
            if op == "exp":  # bounded first, so that nothing overflows
                emit(f"tanh({name})", lambda x, b, fn=fn: np.tanh(fn(x, b)))
                name, fn = value
            emit(f"{op}({name})", lambda x, b, fn=fn, op=op: NUMPY_UNARY[op](fn(x, b)))
        elif kind == 1:
            op = rng.choice(sorted(NUMPY_BINARY))
            emit(f"{op}({name}, %b)", lambda x, b, fn=fn, op=op: NUMPY_BINARY[op](fn(x, b), b))
        else:
            op = rng.choice(sorted(NUMPY_REDUCE))
            emit(f"{op}({name}, axis=[1], keepdims=true)",
                 lambda x, b, fn=fn, op=op: NUMPY_REDUCE[op](fn(x, b), axis=1, keepdims=True))
            reduced, reduced_fn = value
            emit(f"subtract({name}, {reduced})",
                 lambda x, b, fn=fn, reduced_fn=reduced_fn: fn(x, b) - reduced_fn(x, b))
    text = (f"def @main(%x: Tensor[({rows}, 6), float32], %b: Tensor[(6), float32]) {{\n"
            + "\n".join(lines) + f"\n  {value[0]}\n}}")
    return text, value[1]


ALL_LOOP_PASSES = "loop_partition,unroll,flatten_buffers,storage_rewrite,remove_dead_code"


@pytest.mark.parametrize("seed,tir_passes",
                         [(seed, "") for seed in range(12)]
                         + [(seed, ALL_LOOP_PASSES) for seed in range(12, 18)])
def test_random_fused_graphs_match_numpy(seed, tir_passes):
    """Random groups lowered, compiled and run; six of them through every built-in loop pass."""
    rng = np.random.default_rng(seed)
    symbolic = seed % 2 == 1
    text, reference = random_graph(rng, "n" if symbolic else 5)
    executable = kiln.build(parse(text), generated_kernels=True, tir_passes=tir_passes)
    assert generated_functions(executable.module), text
    for rows in (1, 4, 9) if symbolic else (5,):
        x = rng.standard_normal((rows, 6)).astype("float32")
        b = rng.standard_normal(6).astype("float32")
        (got,) = executable.run(x=x, b=b)
        np.testing.assert_allclose(got, reference(x, b), rtol=1e-5, atol=1e-5, err_msg=text)


# ---- a matrix product with its epilogue generated ---------------------------------------------

DENSE_EPILOGUES = {
    "none": ("%0", lambda y, b, r: y),
    "bias_relu": ("nn.relu(add(%0, %b))", lambda y, b, r: np.maximum(y + b, 0)),
    "bias_gelu": ("nn.gelu(add(%0, %b))",
                  lambda y, b, r: 0.5 * (y + b) * (1 + erf((y + b) / np.sqrt(2)))),
    "tanh_scale_residual": ("add(multiply(tanh(%0), const(float32, (), [0.5])), %r)",
                            lambda y, b, r: np.tanh(y) * 0.5 + r),
    "sigmoid_times_bias": ("multiply(sigmoid(add(%0, %b)), %b)",
                           lambda y, b, r: b / (1 + np.exp(-(y + b)))),
}


def erf(x):
    from math import erf as scalar_erf
    return np.vectorize(scalar_erf)(x).astype(x.dtype)


@pytest.mark.parametrize("epilogue", sorted(DENSE_EPILOGUES))
@pytest.mark.parametrize("rows", ["n", "n, 3"])
def test_a_dense_group_calls_the_gemm_and_generates_its_epilogue(epilogue, rows):
    """nn.dense and the elementwise ops after it: the GEMM micro-kernel with the rest as a
    callback on each finished tile; 2-D and 3-D data, symbolic rows, against numpy."""
    tail, reference = DENSE_EPILOGUES[epilogue]
    lead = "(" + rows + ", "
    text = f"""def @main(%x: Tensor[{lead}40), float32], %w: Tensor[(72, 40), float32],
                         %b: Tensor[(72), float32], %r: Tensor[{lead}72), float32]) {{
      %0 = nn.dense(%x, %w);
      {tail}
    }}"""
    mod = parse(text)
    (call,) = fused_calls(mod)
    lowered = tir.lower_fused_group(call.op, call.args, "f")
    assert "tir.micro_kernel.sgemm_bt" in str(lowered)
    assert ("callback(" in str(lowered)) == (epilogue != "none")
    executable = kiln.build(mod, generated_kernels=True)
    assert generated_functions(executable.module)
    extra = (3,) if rows == "n, 3" else ()
    for n in (1, 7, 50):
        x = RNG.standard_normal((n, *extra, 40)).astype("float32")
        w = RNG.standard_normal((72, 40)).astype("float32")
        b = RNG.standard_normal(72).astype("float32")
        r = RNG.standard_normal((n, *extra, 72)).astype("float32")
        (got,) = executable.run(x=x, w=w, b=b, r=r)
        np.testing.assert_allclose(got, reference(x @ w.T, b, r), rtol=1e-4, atol=1e-4)


CONV_EPILOGUES = {
    "bias_relu": ("nn.relu(add(%0, %b))", lambda y, b, r: np.maximum(y + b, 0)),
    "residual_clip": ("clip(add(%0, %r), a_min=-1.0, a_max=2.0)",
                      lambda y, b, r: np.clip(y + r, -1, 2)),
    "sigmoid_gate": ("multiply(sigmoid(add(%0, %b)), %r)",
                     lambda y, b, r: r / (1 + np.exp(-(y + b)))),
}


@pytest.mark.parametrize("epilogue", sorted(CONV_EPILOGUES))
@pytest.mark.parametrize("groups,stride,pad,channels", [
    (1, 1, 1, 8), (1, 2, 0, 8), (4, 1, 2, 8), (8, 2, 1, 8), (2, 2, 0, 64)])
def test_a_conv2d_group_calls_the_conv_kernel_and_generates_its_epilogue(epilogue, groups,
                                                                         stride, pad, channels):
    """nn.conv2d (plain, grouped, depthwise) with its epilogue as a callback on each finished
    tile (image, channels, spatial positions), symbolic batch, against PyTorch."""
    torch = pytest.importorskip("torch")
    tail, reference = CONV_EPILOGUES[epilogue]
    out_h, out_w = (11 + 2 * pad - 3) // stride + 1, (10 + 2 * pad - 3) // stride + 1
    text = f"""def @main(%x: Tensor[(n, 8, 11, 10), float32], %w: Tensor[({channels}, {8 // groups}, 3, 3), float32],
                         %b: Tensor[({channels}, 1, 1), float32],
                         %r: Tensor[(n, {channels}, {out_h}, {out_w}), float32]) {{
      %0 = nn.conv2d(%x, %w, strides=[{stride}, {stride}], padding=[{pad}, {pad}, {pad}, {pad}],
                     groups={groups});
      {tail}
    }}"""
    mod = parse(text)
    lowered = [tir.lower_fused_group(c.op, c.args, "f") for c in fused_calls(mod)]
    assert any("tir.micro_kernel.conv2d" in str(f) and "callback(" in str(f) for f in lowered)
    executable = kiln.build(mod, generated_kernels=True)
    for n in (1, 3):
        x = RNG.standard_normal((n, 8, 11, 10)).astype("float32")
        w = RNG.standard_normal((channels, 8 // groups, 3, 3)).astype("float32")
        b = RNG.standard_normal((channels, 1, 1)).astype("float32")
        r = RNG.standard_normal((n, channels, out_h, out_w)).astype("float32")
        (got,) = executable.run(x=x, w=w, b=b, r=r)
        conv = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w),
                                          stride=stride, padding=pad, groups=groups).numpy()
        np.testing.assert_allclose(got, reference(conv, b, r), rtol=1e-4, atol=1e-4)


def test_a_product_epilogue_that_reads_other_elements_keeps_the_kernels():
    """An epilogue reading the product at another element than its own (a transpose) would read
    a tile the GEMM has not finished: the group is declined."""
    main = kiln.transform.InferType()(parse("""
      def @main(%a: Tensor[(8, 4), float32], %w: Tensor[(8, 4), float32]) {
        %0 = nn.dense(%a, %w);
        add(%0, transpose(%0))
      }"""))["main"]
    assert tir.lower_fused_group(main, list(main.params), "f") == (
        "the epilogue of a matrix product reads other elements of it")


# ---- artifacts, goldens, errors --------------------------------------------------------------

SOFTMAX_OF_RELU = """
def @main(%x: Tensor[(n, 8), float32], %b: Tensor[(8), float32]) {
  %0 = nn.relu(add(%x, %b));
  %1 = exp(subtract(%0, max(%0, axis=[1], keepdims=true)));
  divide(%1, sum(%1, axis=[1], keepdims=true))
}"""


def softmax_of_relu(x, b):
    h = np.maximum(x + b, 0)
    e = np.exp(h - h.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


SOFTMAX_ROWS = """def @main(%x: Tensor[(n, {cols}), float32]) {{
  %0 = exp(subtract(%x, max(%x, axis=[1], keepdims=true)));
  divide(%0, sum(%0, axis=[1], keepdims=true))
}}"""


@pytest.mark.parametrize("cols", [5, 37, 128])
def test_softmax_is_one_row_loop_that_computes_each_exponential_once(cols):
    """Fusion joins both halves of a softmax (the exponentials are read by the sum and by the
    division); the lowering computes the maximum and the sum at each row, stores the
    exponentials into a row buffer as it sums them, and multiplies by the sum's reciprocal.
    5 columns take one accumulator lane, 37 take 16 lanes and a tail of 5."""
    text = SOFTMAX_ROWS.format(cols=cols)
    (func,) = lowered_groups(text)
    printed = str(func)
    (output,) = [line for line in printed.splitlines() if "store(buffer=%out0" in line]
    assert "%cache0" in output and "exp" not in output and "div(" not in output, printed
    assert printed.count("div(") == 1, printed  # the reciprocal, once per row
    executable = kiln.build(parse(text), generated_kernels=True)
    for rows in (1, 3):
        x = RNG.standard_normal((rows, cols)).astype("float32") * 4
        e = np.exp(x - x.max(1, keepdims=True))
        np.testing.assert_allclose(executable.run(x=x)[0], e / e.sum(1, keepdims=True),
                                   rtol=1e-5, atol=1e-7)


def test_a_row_too_long_for_a_stack_buffer_computes_the_shared_value_twice():
    text = SOFTMAX_ROWS.format(cols=1100)
    (func,) = lowered_groups(text)
    (output,) = [line for line in str(func).splitlines() if "store(buffer=%out0" in line]
    assert "exp" in output and "cache" not in str(func), func
    x = RNG.standard_normal((2, 1100)).astype("float32")
    e = np.exp(x - x.max(1, keepdims=True))
    got = kiln.build(parse(text), generated_kernels=True).run(x=x)[0]
    np.testing.assert_allclose(got, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-8)


LAYER_NORM_ROWS = """def @main(%x: Tensor[(n, 48), float32], %g: Tensor[(48), float32],
                              %b: Tensor[(48), float32]) {
  %0 = subtract(%x, mean(%x, axis=[1], keepdims=true));
  %1 = mean(multiply(%0, %0), axis=[1], keepdims=true);
  add(multiply(divide(%0, sqrt(add(%1, const(float32, (), [1e-05])))), %g), %b)
}"""


def test_a_layer_norm_written_in_core_ops_is_one_group_matching_numpy():
    (func,) = lowered_groups(LAYER_NORM_ROWS)
    assert "name=stage" not in str(func), func  # both statistics are row scalars
    executable = kiln.build(parse(LAYER_NORM_ROWS), generated_kernels=True)
    x, g, b = (RNG.standard_normal(shape).astype("float32") for shape in ((3, 48), 48, 48))
    centred = x - x.mean(1, keepdims=True)
    want = centred / np.sqrt((centred * centred).mean(1, keepdims=True) + 1e-5) * g + b
    np.testing.assert_allclose(executable.run(x=x, g=g, b=b)[0], want, rtol=1e-5, atol=1e-5)


DENSE_THEN_SOFTMAX = """
def @main(%x: Tensor[(n, 8), float32], %w: Tensor[(8, 8), float32], %b: Tensor[(8), float32]) {
  %0 = nn.relu(add(nn.dense(%x, %w), %b));
  %1 = exp(subtract(%0, max(%0, axis=[1], keepdims=true)));
  divide(%1, sum(%1, axis=[1], keepdims=true))
}"""


def test_the_generated_code_exports_into_the_artifact_and_loads_back(tmp_path):
    """A dense group (the GEMM with a generated epilogue) and a softmax's groups, exported
    into one artifact and run from it."""
    executable = kiln.build(parse(DENSE_THEN_SOFTMAX), generated_kernels=True)
    names = generated_functions(executable.module)
    assert len(names) >= 2 and any("nn_dense" in name for name in names), names
    path = str(tmp_path / "model.so")
    executable.export_library(path)
    loaded = kiln.load_module(path)
    assert sorted(generated_functions(loaded.module)) == sorted(names)
    x = RNG.standard_normal((3, 8)).astype("float32")
    w = RNG.standard_normal((8, 8)).astype("float32")
    b = RNG.standard_normal(8).astype("float32")
    (got,) = loaded.run(x=x, w=w, b=b)
    np.testing.assert_allclose(got, softmax_of_relu(x @ w.T, b), rtol=1e-5, atol=1e-6)


def fused_calls(module):
    """The calls of fused functions in @main of ``module`` optimized as kiln.build does, in the
    order they run."""
    main = kiln.get_global_func("driver.Optimize")(module, {})["main"]
    found = []

    def walk(expr):
        if isinstance(expr, ir.Call):
            for arg in expr.args:
                walk(arg)
            if isinstance(expr.op, ir.Function) and all(c is not expr for c in found):
                found.append(expr)
        elif isinstance(expr, ir.Tuple):
            for field in expr.fields:
                walk(field)

    walk(main.body)
    return found


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(GOLDEN_DIR, "*.kiln"))),
                         ids=os.path.basename)
def test_fused_groups_lower_to_the_golden_loop_nests(path):
    """Each tests/tir/lower/<case>.kiln lowers, group by group, to <case>.tir (written and
    checked by hand: one prim_func per fused group, separated by blank lines)."""
    calls = fused_calls(parse(open(path).read()))
    lowered = [tir.lower_fused_group(c.op, c.args, f"f{i}") for i, c in enumerate(calls)]
    golden = open(path[:-len(".kiln")] + ".tir").read()
    expected = [tir.parse(text) for text in golden.split("\n\n")]
    assert len(lowered) == len(expected)
    for got, want in zip(lowered, expected):
        assert tir.structural_equal(got, want), f"got:\n{got}\nwant:\n{want}"


def test_a_rule_that_reads_out_of_bounds_is_an_error_when_it_is_lowered():
    original = kiln.get_global_func("tir.compute.nn.relu")

    @tir.compute_rule("nn.relu")
    def shifted(inputs, output, indices, attrs):  # reads x[i, j + 1]
        read = [indices[0], f"{tir.index_text(indices[1])} + 1"]
        return tir.node("load", buffer=inputs[0], indices=read)

    try:
        mod = parse("def @main(%x: Tensor[(2, 4), float32]) { nn.relu(%x) }")
        with pytest.raises(kiln.ValueError,
                           match=r"compute rule of 'nn.relu' reads input 0 out of bounds: "
                                 r"index i1 \+ 1 of axis 1 \(extent 4\)"):
            kiln.build(mod, generated_kernels=True)
    finally:
        kiln.register_func("tir.compute.nn.relu", original, override=True)
    assert generated_functions(kiln.build(mod, generated_kernels=True).module)


def test_a_python_rule_is_inlined_like_a_builtin_one():
    original = kiln.get_global_func("tir.compute.nn.relu")

    @tir.compute_rule("nn.relu")
    def relu_plus_one(inputs, output, indices, attrs):
        one = tir.node("float", value=1.0, dtype="float32")
        load = tir.node("load", buffer=inputs[0], indices=list(indices))
        return tir.node("add", a=tir.node("max", a=load, b=tir.node("float", value=0.0,
                                                                    dtype="float32")), b=one)

    try:
        executable = kiln.build(parse("def @main(%x: Tensor[(2, 4), float32]) "
                                      "{ nn.relu(multiply(%x, %x)) }"), generated_kernels=True)
    finally:
        kiln.register_func("tir.compute.nn.relu", original, override=True)
    x = RNG.standard_normal((2, 4)).astype("float32")
    np.testing.assert_allclose(executable.run(x=x)[0], x * x + 1, rtol=1e-6)


def test_a_group_without_rules_keeps_the_kernels_and_says_why():
    mod = parse("def @main(%x: Tensor[(3, 4), float32]) { argmax(add(%x, %x), axis=1) }")
    calls = fused_calls(mod)
    assert [tir.lower_fused_group(c.op, c.args, "f") for c in calls] == [
        "op 'argmax' has no compute rule tir.compute.argmax"]
    executable = kiln.build(mod, generated_kernels=True)
    assert not generated_functions(executable.module)
    x = RNG.standard_normal((3, 4)).astype("float32")
    np.testing.assert_array_equal(executable.run(x=x)[0], np.argmax(x + x, axis=1, keepdims=True))


# ---- the generated loops vectorize ------------------------------------------------------------

MEMORY_BOUND_GROUPS = {
    "gelu": "def @main(%x: Tensor[(8, 3072), float32]) { nn.gelu(%x) }",
    "bias_residual_relu": "def @main(%x: Tensor[(1, 8, 56, 56), float32], %b: Tensor[(8, 1, 1), "
                          "float32], %r: Tensor[(1, 8, 56, 56), float32]) "
                          "{ nn.relu(add(add(%x, %b), %r)) }",
    "softmax": SOFTMAX_OF_RELU.replace("8", "128"),
    "sqrt_of_mean": "def @main(%x: Tensor[(4, 768), float32]) "
                    "{ sqrt(add(mean(%x, axis=[1], keepdims=true), %x)) }",
}


def gcc_version():
    try:
        out = subprocess.run(["cc", "--version"], capture_output=True, text=True).stdout
    except OSError:
        return None
    return out.splitlines()[0] if "Free Software Foundation" in out else None


@pytest.mark.skipif(gcc_version() is None, reason="the vectorization report read here is GCC's "
                                                  "(-fopt-info-vec); cc is not GCC")
@pytest.mark.parametrize("name", sorted(MEMORY_BOUND_GROUPS))
def test_the_inner_loops_of_generated_groups_vectorize(name, tmp_path):
    """GCC's report on the generated C, compiled as the host compiler compiles it: every loop
    that stores an element of an output or a stage, and every loop accumulating into lanes, is
    vectorized (it or the loop right around it, which GCC picks for a short inner loop), in the
    x86-64 baseline and in the AVX-512 clone."""
    clones = 2 if platform.machine() == "x86_64" else 1
    for i, c in enumerate(fused_calls(parse(MEMORY_BOUND_GROUPS[name]))):
        func = tir.lower_fused_group(c.op, c.args, f"f{i}")
        source = tmp_path / f"f{i}.c"
        source.write_text(tir.generate_c(func))
        report = subprocess.run(
            ["cc", "-O2", "-fno-math-errno", "-std=c11", f"-I{INCLUDE_DIR}", "-c",
             "-fopt-info-vec-optimized", str(source), "-o", str(tmp_path / f"f{i}.o")],
            capture_output=True, text=True, check=True).stderr
        vectorized = re.findall(r":(\d+):\d+: optimized: loop vectorized", report)
        lines = source.read_text().splitlines()
        # (Not the steps that combine the lanes pairwise, which read acc[lane + half]: GCC
        # unrolls those few iterations into straight-line vector code.)
        stores = (r"\s*(b_out|b_stage)|"
                  r"\s*b_acc(\d+)\[v_lane\d+\] = (?!.*b_acc\2\[\(v_lane).*b_acc\2\[v_lane")
        checked = [n + 1 for n, line in enumerate(lines[:-1])
                   if line.lstrip().startswith("for (") and re.match(stores, lines[n + 1])]
        assert checked, f"{name}: no loop to check in\n{source.read_text()}"
        for line in checked:
            above = [n for n in (line - 1, line - 2) if n >= 1 and
                     lines[n - 1].lstrip().startswith(("for (", "#pragma"))]
            around = next((n for n in above if lines[n - 1].lstrip().startswith("for (")), line)
            reported = vectorized.count(str(line)) + vectorized.count(str(around)) * (around != line)
            assert reported >= clones, (
                f"{name}, f{i}: the loop at line {line} is not vectorized "
                f"({gcc_version()}):\n{lines[line - 1]}\n{lines[line]}\n{report}")


# ---- group schedules ---------------------------------------------------------------------------

def loop_kinds(func):
    """{loop variable: kind} of ``func``."""
    kinds = {}

    def visit(node):
        if tir.kind_of(node) == "for":
            kinds[node.var] = node.kind

    tir.mutate(func, visit)
    return kinds


@pytest.fixture
def restore_schedules():
    """Puts back the globals a test replaces: schedules are process-wide."""
    names = ["tir.schedule.default.reduce", "tir.schedule.for_op.tanh"]
    saved = {name: kiln.get_global_func(name, allow_missing=True) for name in names}
    yield
    for name, func in saved.items():
        if func is not None:
            kiln.register_func(name, func, override=True)
        elif kiln.get_global_func(name, allow_missing=True) is not None:
            kiln.remove_global_func(name)


def lowered_groups(text):
    return [tir.lower_fused_group(c.op, c.args, f"f{i}")
            for i, c in enumerate(fused_calls(parse(text)))]


# The anchor is the broadcasting multiply; tanh's own schedule still wins over its default.
TANH_CHAIN = """def @main(%x: Tensor[(n, 10), float32]) {
  multiply(tanh(%x), const(float32, (), [2.0]))
}"""


def test_a_pattern_default_schedule_can_be_replaced(restore_schedules):
    # One group with two row reductions (softmax joins relu(x + b) and both halves), and an
    # elementwise group (TANH_CHAIN, below).
    (default,) = lowered_groups(SOFTMAX_OF_RELU)
    assert "parallel" in loop_kinds(default).values()
    kiln.register_func("tir.schedule.default.reduce", lambda func: func, override=True)
    (reduction,) = lowered_groups(SOFTMAX_OF_RELU)
    assert "parallel" not in loop_kinds(reduction).values(), reduction
    (elementwise,) = lowered_groups(TANH_CHAIN)
    assert "parallel" in loop_kinds(elementwise).values()
    executable = kiln.build(parse(SOFTMAX_OF_RELU), generated_kernels=True)
    x = RNG.standard_normal((5, 8)).astype("float32")
    b = RNG.standard_normal(8).astype("float32")
    np.testing.assert_allclose(executable.run(x=x, b=b)[0], softmax_of_relu(x, b), rtol=1e-5,
                               atol=1e-6)


def test_an_op_schedule_wins_over_the_pattern_default(restore_schedules):
    def split_rows(func):
        inner = [v for v, kind in loop_kinds(func).items() if kind == "serial"][0]
        split = tir.schedule.Split(func, inner, 4, "jo", "ji")
        return tir.run_passes(tir.schedule.Vectorize(split, "ji"), "loop_partition")

    kiln.register_func("tir.schedule.for_op.tanh", split_rows, override=True)
    (func,) = lowered_groups(TANH_CHAIN)
    assert loop_kinds(func)["ji"] == "vectorized" and "if(" not in str(func), func
    executable = kiln.build(parse(TANH_CHAIN), generated_kernels=True)
    for rows in (1, 3):
        x = RNG.standard_normal((rows, 10)).astype("float32")
        np.testing.assert_allclose(executable.run(x=x)[0], np.tanh(x) * 2, rtol=1e-5, atol=1e-6)


def test_a_broken_schedule_is_an_error_naming_it(restore_schedules):
    kiln.register_func("tir.schedule.for_op.tanh", lambda func: 3, override=True)
    with pytest.raises(kiln.TypeError, match=r"the schedule tir.schedule.for_op.tanh returned "
                                             r"a int, not a prim_func"):
        lowered_groups(TANH_CHAIN)

    def failing(func):
        raise ValueError("no such loop")

    kiln.register_func("tir.schedule.for_op.tanh", failing, override=True)
    with pytest.raises(Exception, match=r"in the schedule tir.schedule.for_op.tanh of f0"):
        lowered_groups(TANH_CHAIN)

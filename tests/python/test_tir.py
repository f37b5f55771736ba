"""The tensor-level IR from Python (kiln.tir): building nodes of any kind by name, the text
format's round trip, structural equality, and passes written in Python."""

import numpy as np
import pytest

import kiln
from kiln import tir


def add_relu():
    """out[i, j] = max(a[i, j] + b[j], 0) over (n, 64), built from Python."""
    a = tir.node("buffer", name="a", dtype="float32", shape=["n", 64])
    b = tir.node("buffer", name="b", dtype="float32", shape=[64])
    out = tir.node("buffer", name="out", dtype="float32", shape=["n", 64])
    total = tir.node("add", a=tir.node("load", buffer=a, indices=["i", "j"]),
                     b=tir.node("load", buffer=b, indices=["j"]))
    zero = tir.node("float", value=0.0, dtype="float32")
    store = tir.node("store", buffer=out, indices=["i", "j"],
                     value=tir.node("max", a=total, b=zero))
    inner = tir.node("for", var="j", extent=64, kind="vectorized", body=store)
    return tir.node("prim_func", name="add_relu", params=[a, b, out],
                    body=tir.node("for", var="i", extent="n", kind="parallel", body=inner))


def test_nodes_built_by_kind_print_parse_back_and_compare_structurally():
    func = add_relu()
    text = str(func)
    assert "for(var=i, extent=n, kind=parallel, body=" in text
    assert "load(buffer=%a, indices=[i, j])" in text
    parsed = tir.parse(text)
    assert tir.structural_equal(parsed, func)
    assert tir.structural_hash(parsed) == tir.structural_hash(func)
    assert not tir.structural_equal(parsed, parsed.body)
    # Fields read as attributes (a loop's kind too); values have a dtype.
    assert tir.kind_of(func) == "prim_func" and func.name == "add_relu"
    assert [p.name for p in func.params] == ["a", "b", "out"]
    assert tir.kind_of(func.body) == "for" and func.body.kind == "parallel"
    value = func.body.body.body.value
    assert tir.kind_of(value) == "max" and str(value.dtype) == "float32"
    assert {"for", "load", "store", "prim_func"} <= set(tir.kinds())


def test_bad_fields_are_errors_that_name_them():
    with pytest.raises(TypeError, match="tir.for has no field 'step'"):
        tir.node("for", var="i", extent=4, kind="serial", step=2,
                 body=tir.node("evaluate", value=tir.node("int", value=0, dtype="int32")))
    with pytest.raises(TypeError, match="tir.for needs field 'body'"):
        tir.node("for", var="i", extent=4, kind="serial")
    with pytest.raises(kiln.ValueError, match="'i \\+' is not a size expression"):
        tir.node("index", index="i +", dtype="int64")
    with pytest.raises(kiln.TypeError, match="tir.add: operands of float32 and int32"):
        tir.node("add", a=tir.node("float", value=1.0, dtype="float32"),
                 b=tir.node("int", value=1, dtype="int32"))
    with pytest.raises(kiln.ValueError, match="line 1, column 1: unknown node kind 'nope'"):
        tir.parse("nope()")


def test_a_pass_written_in_python_rewrites_loops_and_is_registered_by_name():
    @tir.prim_func_pass("test_unroll_vectorized")
    def unroll_vectorized(func):
        """Vectorized loops become unrolled ones."""
        def rewrite(node):
            if tir.kind_of(node) == "for" and node.kind == "vectorized":
                return tir.node("for", var=node.var, extent=node.extent, kind="unrolled",
                                body=node.body)
            return None

        return tir.mutate(func, rewrite)

    func = add_relu()
    unrolled = unroll_vectorized(func)
    assert "kind=unrolled" in str(unrolled) and "vectorized" not in str(unrolled)
    assert "vectorized" in str(func)  # the input is unchanged: nodes are immutable
    by_name = kiln.get_global_func("tir.pass.test_unroll_vectorized")
    assert tir.structural_equal(by_name(func), unrolled)
    with pytest.raises(TypeError, match="takes a prim_func, got for"):
        unroll_vectorized(func.body)
    # Composed by name with a C++ pass, as a pipeline.
    piped = kiln.get_global_func("tir.RunPasses")(func, "test_unroll_vectorized,simplify")
    assert tir.structural_equal(piped, unrolled)



def test_a_prim_func_built_in_python_compiles_to_c_and_runs_on_tensors():
    add = tir.build_c(add_relu())
    rng = np.random.default_rng(0)
    for rows in (1, 5):
        a = rng.standard_normal((rows, 64)).astype(np.float32)
        b = rng.standard_normal(64).astype(np.float32)
        out = kiln.empty([rows, 64], "float32")
        add(kiln.tensor(a), kiln.tensor(b), out)
        np.testing.assert_array_equal(out.numpy(), np.maximum(a + b, 0))
    assert "int add_relu(void* self" in tir.generate_c(add_relu())
    with pytest.raises(kiln.ValueError, match="argument 'b' has the wrong extent at axis 0"):
        add(kiln.tensor(np.zeros((2, 64), np.float32)), kiln.tensor(np.zeros(3, np.float32)),
            kiln.empty([2, 64], "float32"))


def test_the_builder_writes_the_nodes_of_node_calls():
    b = tir.Builder("add_relu")
    a = b.param("a", "float32", ["n", 64])
    bias = b.param("b", "float32", [64])
    out = b.param("out", "float32", ["n", 64])
    with b.loop("i", "n", kind="parallel") as i:
        with b.loop("j", 64, kind="vectorized") as j:
            b.store(out, [i, j], tir.call("max", a[i, j] + bias[j], 0.0))
    assert tir.structural_equal(b.finish(), add_relu())


def test_a_function_written_with_the_builder_runs():
    """Row sums through a local accumulator, each row read backwards (index arithmetic), and a
    branch: out[i] = sum_k a[i, 7 - k] when that is positive, else -1."""
    b = tir.Builder("row_sums")
    a = b.param("a", "float32", ["n", 8])
    out = b.param("out", "float32", ["n"])
    with b.loop("i", "n", kind="parallel") as i:
        with b.allocate("acc", "float32", [1]) as acc:
            b.store(acc, [0], 0.0)
            with b.loop("k", 8) as k:
                b.store(acc, [0], acc[0] + a[i, 7 - k])
            b.store(out, [i], -1.0)
            with b.if_then(acc[0] > 0.0):
                b.store(out, [i], acc[0])
    row_sums = tir.build_c(b.finish())
    x = np.random.default_rng(1).standard_normal((6, 8)).astype(np.float32)
    result = kiln.empty([6], "float32")
    row_sums(kiln.tensor(x), result)
    sums = x[:, ::-1].sum(axis=1)
    np.testing.assert_allclose(result.numpy(), np.where(sums > 0, sums, -1), rtol=1e-6)
    with pytest.raises(RuntimeError, match="still open"):
        unfinished = tir.Builder("f")
        with unfinished.loop("i", 4):
            unfinished.finish()


def scale_rows():
    """out[i, j] = a[i, j] * 2 + j over (n, 10), written with the builder."""
    b = tir.Builder("scale_rows")
    a = b.param("a", "float32", ["n", 10])
    out = b.param("out", "float32", ["n", 10])
    with b.loop("i", "n") as i:
        with b.loop("j", 10) as j:
            b.store(out, [i, j], a[i, j] * 2.0 + tir.node("cast", value=tir.node(
                "index", index=j, dtype="int64"), dtype="float32"))
    return b.finish()


def run_scale_rows(func, rows=3):
    a = np.arange(rows * 10, dtype=np.float32).reshape(rows, 10)
    out = kiln.empty([rows, 10], "float32")
    tir.build_c(func)(kiln.tensor(a), out)
    return out.numpy(), a * 2 + np.arange(10, dtype=np.float32)


def loops(func):
    """[(variable, extent, kind)] of the loops of ``func``, outermost first."""
    found = []

    def visit(node):
        if tir.kind_of(node) == "for":
            found.insert(0, (node.var, tir.index_text(node.extent), node.kind))

    tir.mutate(func, visit)
    return found


def test_schedule_primitives_transform_loops_and_keep_the_results():
    schedule = kiln.tir.schedule
    func = scale_rows()
    # 10 split by 4 leaves a tail, which an if skips; by 5 it needs none.
    split = schedule.Split(func, "j", 4, "jo", "ji")
    assert loops(split) == [("i", "n", "serial"), ("jo", "3", "serial"), ("ji", "4", "serial")]
    assert "if(cond=lt(a=index(index=jo * 4 + ji" in str(split)
    assert "if(" not in str(schedule.Split(func, "j", 5, "jo", "ji"))
    fused = schedule.Fuse(func, "i", "j", "ij")
    assert loops(fused) == [("ij", "n * 10", "serial")]
    reordered = schedule.Reorder(func, "i", "j")
    assert [v for v, _, _ in loops(reordered)] == ["j", "i"]
    tuned = schedule.Vectorize(schedule.Parallel(split, "i"), "ji")
    assert loops(tuned) == [("i", "n", "parallel"), ("jo", "3", "serial"), ("ji", "4", "vectorized")]
    for transformed in (split, fused, reordered, tuned, schedule.Unroll(func, "j")):
        got, want = run_scale_rows(transformed)
        np.testing.assert_array_equal(got, want)


def test_the_built_in_loop_passes_keep_the_results_of_scheduled_functions():
    """Each pass rewrites what the schedule left (goldens: tests/tir/passes/) and the C it
    compiles to computes the same numbers, for a static and a symbolic tail."""
    schedule = kiln.tir.schedule
    func = scale_rows()
    split_j = schedule.Split(func, "j", 4, "jo", "ji")  # 10 = 4 + 4 + a tail of 2
    split_i = schedule.Split(func, "i", 2, "io", "ii")  # n rows by 2: a symbolic tail
    partitioned = tir.run_passes(split_j, "loop_partition")
    assert "if(" not in str(partitioned)
    assert ("jo", "2", "serial") in loops(partitioned) and ("ji", "2", "serial") in loops(
        partitioned)
    assert ("ii", "min(n - io * 2, 2)", "serial") in loops(tir.run_passes(split_i, "loop_partition"))
    unrolled = tir.run_passes(schedule.Unroll(split_j, "ji"), "unroll")
    assert [v for v, _, _ in loops(unrolled)] == ["i", "jo"]
    everything = "loop_partition,unroll,flatten_buffers,storage_rewrite,remove_dead_code,simplify"
    for transformed in (partitioned, unrolled, tir.run_passes(split_i, everything)):
        for rows in (1, 3, 4):
            got, want = run_scale_rows(transformed, rows)
            np.testing.assert_array_equal(got, want)


def test_loop_passes_run_under_the_pass_context_settings():
    split = kiln.tir.schedule.Split(scale_rows(), "j", 4, "jo", "ji")
    assert tir.structural_equal(
        tir.run_passes(split, "loop_partition", disabled_passes=["tir.pass.loop_partition"]), split)
    with pytest.raises(kiln.KeyError, match="no loop-level pass 'no_such_pass'"):
        tir.run_passes(split, "simplify,no_such_pass")


def mirrored_sum():
    """out[i, j] = t[i, j] + t[i, 7 - j] with the stage t = a * 2 computed first, whole."""
    b = tir.Builder("mirrored_sum")
    a = b.param("a", "float32", ["n", 8])
    out = b.param("out", "float32", ["n", 8])
    with b.allocate("t", "float32", ["n", 8], scope="global") as t:
        with b.loop("i", "n") as i:
            with b.loop("j", 8) as j:
                b.store(t, [i, j], a[i, j] * 2.0)
        with b.loop("i2", "n") as i2:
            with b.loop("j2", 8) as j2:
                b.store(out, [i2, j2], t[i2, j2] + t[i2, 7 - j2])
    return b.finish()


def run_mirrored_sum(func, rows):
    a = np.random.default_rng(rows).standard_normal((rows, 8)).astype(np.float32)
    out = kiln.empty([rows, 8], "float32")
    tir.build_c(func)(kiln.tensor(a), out)
    return out.numpy(), a * 2 + (a * 2)[:, ::-1]


def allocations(func):
    """{buffer name: (shape text, scope)} of the function's allocations."""
    found = {}

    def visit(node):
        if tir.kind_of(node) == "allocate":
            found[node.buffer.name] = ([tir.index_text(e) for e in node.buffer.shape], node.scope)

    tir.mutate(func, visit)
    return found


def test_stages_move_into_loops_or_inline_and_keep_the_results():
    schedule = kiln.tir.schedule
    func = mirrored_sum()
    assert allocations(func) == {"t": (["n", "8"], "global")}
    # compute-at the row loop: each row computes its 8 values of t into a local buffer.
    at_row = schedule.ComputeAt(func, "t", "i2")
    assert allocations(at_row) == {"t": (["8"], "local")}
    assert sorted(v for v, _, _ in loops(at_row)) == ["i2", "j", "j2"]
    # inlined: no stage at all, a recomputed twice per element.
    inlined = schedule.ComputeInline(func, "t")
    assert allocations(inlined) == {} and [v for v, _, _ in loops(inlined)] == ["i2", "j2"]
    for transformed in (func, at_row, inlined):
        for rows in (1, 5):
            got, want = run_mirrored_sum(transformed, rows)
            np.testing.assert_allclose(got, want, rtol=1e-6)


def test_stage_primitives_name_the_buffer_and_the_reason_where_they_are_invalid():
    schedule = kiln.tir.schedule
    func = mirrored_sum()
    with pytest.raises(kiln.ValueError, match=r"buffer 't' of mirrored_sum is read at index "
                                              r"7 - j2 of axis 1 inside loop 'j2', not at loop "
                                              r"'j2''s variable"):
        schedule.ComputeAt(func, "t", "j2")
    with pytest.raises(kiln.ValueError, match=r"buffer 'out' of mirrored_sum is a parameter"):
        schedule.ComputeInline(func, "out")
    with pytest.raises(kiln.ValueError, match=r"buffer 'u' of mirrored_sum does not exist "
                                              r"\(allocated buffers: t\)"):
        schedule.ComputeInline(func, "u")
    with pytest.raises(kiln.ValueError, match=r"is computed after loop 'j' or in another sequence"):
        schedule.ComputeAt(func, "t", "j")


def test_a_primitive_applied_where_it_is_invalid_names_the_loop_and_the_reason():
    schedule = kiln.tir.schedule
    func = scale_rows()
    with pytest.raises(kiln.ValueError, match=r"scale_rows has no loop 'k' \(its loops: i, j\)"):
        schedule.Parallel(func, "k")
    with pytest.raises(kiln.ValueError, match="loop 'i' of scale_rows holds loop 'j'; only an "
                                              "innermost loop is vectorized"):
        schedule.Vectorize(func, "i")
    with pytest.raises(kiln.ValueError, match="loop 'i' is not the whole body of loop 'j'"):
        schedule.Fuse(func, "j", "i", "ji")
    with pytest.raises(kiln.ValueError, match="split by 0 \\(the factor must be at least 1\\)"):
        schedule.Split(func, "j", 0, "jo", "ji")
    with pytest.raises(kiln.ValueError, match="scale_rows already has a loop 'i'"):
        schedule.Split(func, "j", 2, "i", "ji")

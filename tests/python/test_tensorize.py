"""Tensorize (kiln/tir/schedule.h): a loop nest replaced by a hand-written micro-kernel's call
when it computes what a tensor intrinsic describes, run and compared with numpy; intrinsics
registered from Python; and the errors that name the loop and the first difference."""

import ctypes

import numpy as np
import pytest

import kiln
from kiln import tir


def matmul(x_shape, w_shape, w_index, batched=False):
    """y = x * w as a plain loop nest (y zeroed, then accumulated), with the row count `n`
    symbolic; `w_index` is "r, j" for w of (k, n) or "j, r" for a dense layer's (n, k)."""
    lead = "b, " if batched else ""
    loops_open = "for(var=b, extent=2, kind=serial, body=\n" if batched else ""
    loops_close = ")" if batched else ""
    y_shape = ("2, " if batched else "") + "n, 40"
    return tir.parse(f"""prim_func(name=mm, params=[buffer(name=x, dtype=float32, shape=[{x_shape}]),
      buffer(name=w, dtype=float32, shape=[{w_shape}]), buffer(name=y, dtype=float32, shape=[{y_shape}])], body=
      {loops_open}for(var=i, extent=n, kind=serial, body=
        for(var=j, extent=40, kind=serial, body=
          seq(stmts=[
            store(buffer=%y, indices=[{lead}i, j], value=float(value=0.0, dtype=float32)),
            for(var=r, extent=24, kind=serial, body=
              store(buffer=%y, indices=[{lead}i, j], value=add(a=load(buffer=%y, indices=[{lead}i, j]),
                b=mul(a=load(buffer=%x, indices=[{lead}i, r]), b=load(buffer=%w, indices=[{w_index}]))))),
          ]))){loops_close})""")


def run(func, *arrays, out_shape):
    out = kiln.tensor(np.full(out_shape, np.nan, dtype="float32"))
    tir.build_c(func)(*[kiln.tensor(a) for a in arrays], out)
    return out.numpy()


def calls_of(func):
    found = []
    tir.mutate(func, lambda node: found.append(node.name) if tir.kind_of(node) == "call_packed"
               else None)
    return found


def loop_vars(func):
    found = []
    tir.mutate(func, lambda node: found.append(node.var) if tir.kind_of(node) == "for" else None)
    return found


def test_the_tiles_of_a_split_matmul_become_gemm_calls_with_symbolic_tails():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((24, 40), dtype=np.float32)
    func = tir.schedule.Split(matmul("n, 24", "24, 40", "r, j"), "i", 8, "io", "ii")
    # Split leaves the tail as an `if`, which no intrinsic describes; loop_partition turns it
    # into a loop of min(n - io * 8, 8) rows, the micro-kernel's m.
    func = tir.run_passes(func, "loop_partition")
    tiled = tir.schedule.Tensorize(func, "ii", "sgemm")
    assert calls_of(tiled) == ["tir.micro_kernel.sgemm"]
    assert loop_vars(tiled) == ["io"]
    assert "address(buffer=%x, indices=[io * 8, 0])" in str(tiled)
    for rows in (16, 13, 1):
        x = rng.standard_normal((rows, 24), dtype=np.float32)
        np.testing.assert_allclose(run(tiled, x, w, out_shape=(rows, 40)), x @ w,
                                   rtol=1e-5, atol=1e-5)


def test_a_dense_layout_and_a_batch_offset_are_matched():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 9, 24), dtype=np.float32)
    w = rng.standard_normal((40, 24), dtype=np.float32)  # (n, k): y = x * w^T
    func = matmul("2, n, 24", "40, 24", "j, r", batched=True)
    with pytest.raises(kiln.ValueError, match="buffer 'w' .* index j of axis 0"):
        tir.schedule.Tensorize(func, "i", "sgemm")
    tensorized = tir.schedule.Tensorize(func, "i", "sgemm_bt")
    assert loop_vars(tensorized) == ["b"]
    assert "address(buffer=%x, indices=[b, 0, 0])" in str(tensorized)
    np.testing.assert_allclose(run(tensorized, x, w, out_shape=(2, 9, 40)), x @ w.T,
                               rtol=1e-5, atol=1e-5)


def test_what_does_not_match_is_named_with_the_loop_and_the_first_difference():
    func = tir.schedule.Split(matmul("n, 24", "24, 40", "r, j"), "i", 8, "io", "ii")
    with pytest.raises(kiln.ValueError,
                       match="loop 'ii' of mm does not compute what intrinsic 'sgemm' describes: "
                             "the description has 'for' where the nest has 'if'"):
        tir.schedule.Tensorize(func, "ii", "sgemm")
    with pytest.raises(kiln.ValueError, match="no tensor intrinsic 'nope' .*sgemm"):
        tir.schedule.Tensorize(func, "io", "nope")
    with pytest.raises(kiln.ValueError, match="has no loop 'q'"):
        tir.schedule.Tensorize(func, "q", "sgemm")
    strided = matmul("n, 48", "24, 40", "r, j").__str__().replace(
        "load(buffer=%x, indices=[i, r])", "load(buffer=%x, indices=[i, r * 2])")
    with pytest.raises(kiln.ValueError, match=r"buffer 'x' .* index r \* 2 of axis 1"):
        tir.schedule.Tensorize(tir.parse(strided), "i", "sgemm")
    # An offset that does not vary inside the nest is a region, not a mismatch: x[i, r + 3].
    shifted = matmul("n, 27", "24, 40", "r, j").__str__().replace(
        "load(buffer=%x, indices=[i, r])", "load(buffer=%x, indices=[i, r + 3])")
    assert "address(buffer=%x, indices=[0, 3])" in str(
        tir.schedule.Tensorize(tir.parse(shifted), "i", "sgemm"))


def test_an_intrinsic_registered_from_python_calls_a_python_global():
    """A row zeroed by a 'micro-kernel' registered in Python, called from the generated C
    through the FFI with the row's address."""
    desc = tir.parse("""prim_func(name=zero_row, params=[buffer(name=v, dtype=float32, shape=[len])],
      body=for(var=t, extent=len, kind=serial, body=
        store(buffer=%v, indices=[t], value=float(value=0.0, dtype=float32))))""")
    calls = []

    def zero(address, count):
        calls.append(count)
        ctypes.memset(address, 0, 4 * count)

    kiln.register_func("test_tensorize.zero", zero, override=True)

    @tir.tensor_intrin("test_zero_row", desc)
    def zero_row(buffers, sizes):
        v = buffers["v"]
        assert [tir.index_text(s) for s in v["strides"]] == ["1"]
        address = tir.node("address", buffer=v["buffer"], indices=list(v["offset"]))
        count = tir.node("index", index=sizes["len"], dtype="int64")
        return tir.node("evaluate", value=tir.node("call_packed", name="test_tensorize.zero",
                                                   args=[address, count]))

    func = tir.parse("""prim_func(name=clear, params=[buffer(name=a, dtype=float32, shape=[3, 5])],
      body=for(var=i, extent=3, kind=serial, body=for(var=j, extent=5, kind=serial, body=
        store(buffer=%a, indices=[i, j], value=float(value=0.0, dtype=float32)))))""")
    cleared = tir.schedule.Tensorize(func, "j", "test_zero_row")
    assert calls_of(cleared) == ["test_tensorize.zero"]
    assert tir.structural_equal(tir.parse(str(cleared)), cleared)
    a = kiln.tensor(np.ones((3, 5), dtype="float32"))
    tir.build_c(cleared)(a)
    assert calls == [5, 5, 5]
    assert not a.numpy().any()


def test_a_micro_kernel_error_is_the_generated_functions_error():
    def fail(address, count):
        raise ValueError(f"refused {count} elements")

    kiln.register_func("test_tensorize.fail", fail, override=True)
    func = tir.parse("""prim_func(name=f, params=[buffer(name=a, dtype=float32, shape=[4])],
      body=evaluate(value=call_packed(name="test_tensorize.fail",
        args=[address(buffer=%a, indices=[1]), index(index=3, dtype=int64)])))""")
    with pytest.raises(ValueError, match="refused 3 elements"):
        tir.build_c(func)(kiln.tensor(np.zeros(4, dtype="float32")))
    with pytest.raises(kiln.NotImplementedError, match="only host code can"):
        tir.generate_cuda(func)

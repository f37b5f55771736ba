"""One loaded model, many threads: every concurrent run gets the answer it gets alone, on
Kiln's CPU path and through each plugin; the GIL is released while Kiln runs; inputs are
strict (missing ones named, dtypes checked) and forgiving (strided arrays copied); outputs can
be written into the caller's arrays; a memory limit fails before allocating."""

import os
import threading

import numpy as np
import pytest

import kiln
from conftest import load_built_plugin
from helpers import run_threads

RNG = np.random.default_rng(19)
THREADS, RUNS = 4, 6

# Convolutions, an elementwise chain, a residual, a dense layer and softmax: enough parallel
# regions and temporaries that runs sharing buffers would clobber each other.
MODEL = """
def @main(%x: Tensor[(2, 8, 16, 16), float32], %bias: Tensor[(2, 32), float32]) {
  %0 = nn.conv2d(%x, meta[Constant][0], padding=[1, 1, 1, 1]);
  %1 = nn.relu(%0);
  %2 = nn.conv2d(%1, meta[Constant][1], padding=[1, 1, 1, 1]);
  %3 = add(%2, %x);
  %4 = reshape(%3, newshape=[2, 2048]);
  %5 = nn.dense(%4, meta[Constant][2]);
  %6 = add(%5, %bias);
  nn.softmax(%6)
}
"""
WEIGHTS = [RNG.standard_normal(shape).astype("float32") * 0.1
           for shape in ((8, 8, 3, 3), (8, 8, 3, 3), (32, 2048))]

# Plugins whose modules run inside the model; each is left out when it was not built.
DENSE_MODEL = """
def @main(%x: Tensor[(16, 256), float32], %bias: Tensor[(16, 128), float32]) {
  %0 = nn.relu(%x);
  %1 = nn.dense(%0, meta[Constant][0]);
  %2 = add(%1, %bias);
  matmul(%2, meta[Constant][1])
}
"""
DENSE_WEIGHTS = [RNG.standard_normal((128, 256)).astype("float32"),
                 RNG.standard_normal((128, 64)).astype("float32")]

CONV_MODEL = """
def @main(%x: Tensor[(4, 32, 32, 32), float32]) {
  %0 = nn.conv2d(%x, meta[Constant][0], padding=[1, 1, 1, 1]);
  %1 = nn.relu(%0);
  %2 = nn.conv2d(%1, meta[Constant][1], padding=[1, 1, 1, 1]);
  add(%2, %x)
}
"""
CONV_WEIGHTS = [RNG.standard_normal((32, 32, 3, 3)).astype("float32") * 0.1 for _ in range(2)]


def build(text=MODEL, weights=WEIGHTS, plugins=()):
    return kiln.build(kiln.ir.ParseModule(text, [kiln.tensor(w) for w in weights]),
                      plugins=list(plugins))


def module_kinds(module):
    """Kinds of `module` and of every module it imports, depth first."""
    return [module.kind] + [kind for child in module.imports for kind in module_kinds(child)]


def feeds(model, count):
    names = model.input_names
    shapes = model.input_info["shapes"]
    return [{name: RNG.standard_normal(shape).astype("float32")
             for name, shape in zip(names, shapes)} for _ in range(count)]


def assert_concurrent_runs_match_single_runs(model):
    """THREADS threads x RUNS runs, each thread alternating between two inputs of its own (so
    that an output left over from the thread's previous run is wrong too), every output
    compared with what one run alone gave for the same inputs."""
    inputs = feeds(model, 2 * THREADS)
    alone = [model.run(**feed) for feed in inputs]
    wrong = []

    def worker(n):
        for run in range(RUNS):
            which = 2 * n + run % 2
            got = model.run(**inputs[which])
            if not all(np.array_equal(a, b) for a, b in zip(got, alone[which])):
                wrong.append((n, run))

    run_threads(worker, THREADS)
    assert not wrong, f"{len(wrong)} of {THREADS * RUNS} concurrent runs differ: {wrong}"


def test_concurrent_runs_on_one_executable_match_single_runs():
    model = build()
    assert_concurrent_runs_match_single_runs(model)
    assert 1 <= model.limits["contexts"] <= THREADS


def test_concurrent_runs_of_a_loaded_artifact_match_single_runs(tmp_path):
    build().export_library(tmp_path / "model.so")
    assert_concurrent_runs_match_single_runs(kiln.load_module(tmp_path / "model.so"))


@pytest.mark.parametrize("plugin,text,weights", [
    ("dnnl", DENSE_MODEL, DENSE_WEIGHTS), ("blas", DENSE_MODEL, DENSE_WEIGHTS),
    # Calls that overlap run on plans of their own (docs/byoc.md): convolutions of about a
    # millisecond, so that the threads' runs overlap, and a residual, whose intermediates two
    # runs sharing one plan would clobber.
    ("dnnl", CONV_MODEL, CONV_WEIGHTS)])
def test_concurrent_runs_through_a_plugin_match_single_runs(plugin, text, weights):
    if not os.environ.get(f"KILN_{plugin.upper()}_PLUGIN"):
        pytest.skip(f"the {plugin} plugin was not built")
    load_built_plugin(plugin)
    model = build(text, weights, plugins=[plugin])
    assert f"{plugin}_json" in module_kinds(model.module)
    assert_concurrent_runs_match_single_runs(model)


def test_max_concurrent_runs_caps_the_contexts_and_runs_stay_right():
    model = build()
    model.set_limits(max_concurrent_runs=1)
    assert_concurrent_runs_match_single_runs(model)
    assert model.limits["contexts"] == 1


def test_a_memory_limit_below_one_run_fails_before_allocating():
    model = build()
    needed = model.memory_plan["total_bytes"]
    model.set_limits(memory_limit=needed - 1)
    before = kiln.runtime.allocator_stats()["allocations"]
    with pytest.raises(kiln.MemoryError) as info:
        model.run(**feeds(model, 1)[0])
    assert f"needs {needed} bytes" in str(info.value) and f"limit of {needed - 1}" in str(info.value)
    assert kiln.runtime.allocator_stats()["allocations"] == before
    model.set_limits(memory_limit=needed)  # one run fits: runs proceed one at a time
    assert_concurrent_runs_match_single_runs(model)
    assert model.limits["contexts"] == 1


def test_kiln_calls_release_the_gil(testing):
    """A call waits for a flag that only another Python thread's call raises: without the GIL
    released it would wait out its timeout."""
    result = []
    waiter = threading.Thread(target=lambda: result.append(testing.wait_for_signal(20000)))
    waiter.start()
    testing.raise_signal()
    waiter.join()
    assert result == [True]


# ---- strict, forgiving inputs ----

def test_every_missing_input_is_named():
    model = build()
    with pytest.raises(kiln.ValueError) as info:
        model.run()
    assert "inputs 'x', 'bias' not given" in str(info.value)
    with pytest.raises(kiln.ValueError, match="input 'bias' not given"):
        model.run(x=np.zeros((2, 8, 16, 16), np.float32))
    with pytest.raises(kiln.KeyError, match="no input 'y'"):
        model.run(y=1)


def test_the_stateful_run_names_inputs_not_set():
    model = build()
    with pytest.raises(kiln.ValueError) as info:
        kiln.runtime.GraphExecutor.run(model)
    assert "inputs 'x', 'bias' not set" in str(info.value)


def test_strided_and_reordered_arrays_are_copied_into_place():
    model = build()
    feed = feeds(model, 1)[0]
    expected = model.run(**feed)[0]
    x = feed["x"]
    padded = np.zeros((2, 8, 16, 32), np.float32)
    padded[..., ::2] = x
    for view in (np.asfortranarray(x), padded[..., ::2], x[::-1].copy()[::-1],
                 np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)):
        assert not view.flags.c_contiguous
        np.testing.assert_array_equal(model.run(x=view, bias=feed["bias"])[0], expected)


def test_a_dtype_mismatch_is_an_error_unless_a_cast_is_asked_for():
    model = build()
    feed = feeds(model, 1)[0]
    doubles = feed["x"].astype(np.float64)
    with pytest.raises(kiln.ValueError, match="'x' expects float32, got float64.*cast=True"):
        model.run(x=doubles, bias=feed["bias"])
    np.testing.assert_array_equal(model.run(x=doubles, bias=feed["bias"], cast=True)[0],
                                  model.run(x=doubles.astype(np.float32), bias=feed["bias"])[0])


def test_outputs_are_written_into_the_callers_arrays():
    model = build()
    feed = feeds(model, 1)[0]
    expected = model.run(**feed)[0]
    out = np.full((2, 32), np.nan, np.float32)
    (got,) = model.run(feed, out=[out])
    assert got is out
    np.testing.assert_array_equal(out, expected)
    strided = np.full((32, 2), np.nan, np.float32).T  # Fortran order: written through strides
    model.run(feed, out=[strided])
    np.testing.assert_array_equal(strided, expected)
    with pytest.raises(kiln.ValueError, match="output 0 expects"):
        model.run(feed, out=[np.zeros((2, 31), np.float32)])
    read_only = np.zeros((2, 32), np.float32)
    read_only.flags.writeable = False
    with pytest.raises(BufferError, match="writeable"):
        model.run(feed, out=[read_only])


def test_outputs_of_one_run_survive_the_next():
    model = build()
    first, second = feeds(model, 2)
    (a,) = model.run(**first)
    kept = a.copy()
    model.run(**second)
    np.testing.assert_array_equal(a, kept)


def test_an_input_passed_straight_through_is_returned_as_a_copy():
    model = kiln.build(kiln.ir.ParseModule(
        "def @main(%x: Tensor[(3), float32]) { (%x, nn.relu(%x)) }", []))
    x = np.array([-1.0, 0.5, 2.0], np.float32)
    same, relu = model.run(x=x)
    np.testing.assert_array_equal(same, x)
    np.testing.assert_array_equal(relu, np.maximum(x, 0))
    same[0] = 7.0
    assert x[0] == -1.0

"""ONNX If and Loop: imported as the IR's control flow, each body a function that reads the
enclosing graph's values by name, and compiled with each body an Executable of its own that a
control_flow module runs (docs/design.md §32). Every input is fed at run time unless a test
binds it; results are checked against numpy."""

import os
import pathlib
import subprocess
import sys
import threading

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import kiln  # noqa: E402
import kiln.frontend  # noqa: E402
from kiln import transform  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "models"))
import detection  # noqa: E402  (tests/models/detection.py: SSDlite for tests and benchmarks)

FLOAT, BOOL, INT64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64


def value(name, elem_type, shape):
    return helper.make_tensor_value_info(name, elem_type, shape)


def branch(name, nodes, output, elem_type=FLOAT, shape=(3,)):
    """A graph of no inputs for an If: `nodes` may read the enclosing graph's values."""
    return helper.make_graph(nodes, name, [], [value(output, elem_type, list(shape))])


def if_model(then_graph, else_graph, outputs=(("y", FLOAT, [3]),)):
    """y = If(cond) over the graph inputs cond and x (float32, (3,))."""
    node = helper.make_node("If", ["cond"], [o[0] for o in outputs], then_branch=then_graph,
                            else_branch=else_graph)
    graph = helper.make_graph([node], "if", [value("cond", BOOL, []), value("x", FLOAT, [3])],
                              [value(*o) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def doubling_or_squaring():
    """then: x + x; else: x * x; both read the outer x."""
    return if_model(branch("then", [helper.make_node("Add", ["x", "x"], ["sum"])], "sum"),
                    branch("else", [helper.make_node("Mul", ["x", "x"], ["product"])], "product"))


def result_type(mod):
    return transform.InferType()(mod)["main"].ret_type


def test_if_imports_as_an_if_whose_branches_read_outer_values():
    mod = kiln.frontend.from_onnx(doubling_or_squaring())
    text = str(mod)
    assert "if(%cond" in text
    assert "add(%x, %x)" in text and "multiply(%x, %x)" in text
    assert str(result_type(mod)) == "Tensor[(3), float32]\n"


@pytest.mark.parametrize("cond", [True, False])
def test_an_if_on_a_bound_condition_folds_to_its_branch_and_runs(cond):
    mod = kiln.frontend.from_onnx(doubling_or_squaring())
    ex = kiln.build(mod, params={"cond": np.array(cond)})
    x = np.array([1.5, -2.0, 3.0], dtype=np.float32)
    (y,) = ex.run(x=x)
    np.testing.assert_array_equal(y, x + x if cond else x * x)


def test_an_if_on_a_run_time_condition_runs_the_branch_it_picks_each_run():
    ex = kiln.build(kiln.frontend.from_onnx(doubling_or_squaring()))
    x = np.array([1.5, -2.0, 3.0], dtype=np.float32)
    for cond in (True, False, True):
        (y,) = ex.run(cond=np.array(cond), x=x)
        np.testing.assert_array_equal(y, x + x if cond else x * x)


def test_an_if_exports_to_one_library_and_runs_in_a_fresh_process(tmp_path):
    path = str(tmp_path / "if.so")
    kiln.build(kiln.frontend.from_onnx(doubling_or_squaring())).export_library(path)
    script = (
        "import numpy as np, kiln\n"
        f"ex = kiln.load_module({path!r})\n"
        "x = np.array([1.5, -2.0, 3.0], dtype=np.float32)\n"
        "print(ex.run(cond=np.array(True), x=x)[0].tolist(),"
        " ex.run(cond=np.array(False), x=x)[0].tolist())\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=dict(os.environ), check=True).stdout
    assert out.strip() == "[3.0, -4.0, 6.0] [2.25, 4.0, 9.0]"


def test_concurrent_runs_each_take_their_own_branch():
    ex = kiln.build(kiln.frontend.from_onnx(doubling_or_squaring()))
    x = np.array([1.5, -2.0, 3.0], dtype=np.float32)
    failures = []

    def client(cond):
        for _ in range(50):
            (y,) = ex.run(cond=np.array(cond), x=x)
            if not np.array_equal(y, x + x if cond else x * x):
                failures.append(cond)

    threads = [threading.Thread(target=client, args=(i % 2 == 0,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures


def test_branches_that_disagree_in_rank_are_a_type_error_naming_both():
    axes = helper.make_node("Constant", [], ["axes"],
                            value=helper.make_tensor("axes_value", INT64, [1], [0]))
    model = if_model(
        branch("then", [helper.make_node("Add", ["x", "x"], ["sum"])], "sum"),
        branch("else", [axes, helper.make_node("Unsqueeze", ["x", "axes"], ["row"])], "row",
               shape=(1, 3)),
        outputs=(("y", FLOAT, [3]),))
    with pytest.raises(TypeError, match=r"branches of an If disagree.*\(3\).*\(1, 3\)"):
        kiln.frontend.from_onnx(model)


def test_unsupported_ops_inside_bodies_are_listed_with_the_others():
    model = if_model(
        branch("then", [helper.make_node("NoSuchOp", ["x"], ["a"], domain="my.ops")], "a"),
        branch("else", [helper.make_node("AlsoMissing", ["x"], ["b"], domain="my.ops")], "b"))
    model.opset_import.append(helper.make_opsetid("my.ops", 1))
    with pytest.raises(NotImplementedError) as error:
        kiln.frontend.from_onnx(model)
    assert "2 unsupported ONNX op(s)" in str(error.value)
    assert "NoSuchOp" in str(error.value) and "AlsoMissing" in str(error.value)


def loop_model(trip_count=None, scan=True, stop_after=None, width=3):
    """A running sum: acc += x each iteration (x is outer), with acc's values scanned when
    `scan`; with `stop_after`, the body's condition turns false once i reaches it. x and acc
    have `width` elements (a number, or a dim_param's name)."""
    nodes = [helper.make_node("Add", ["acc_in", "x"], ["acc_out"])]
    if stop_after is None:
        nodes.append(helper.make_node("Identity", ["cond_in"], ["cond_out"]))
    else:
        limit = helper.make_tensor("limit_value", INT64, [], [stop_after])
        nodes += [helper.make_node("Constant", [], ["limit"], value=limit),
                  helper.make_node("Less", ["i", "limit"], ["cond_out"])]
    outputs = [value("cond_out", BOOL, []), value("acc_out", FLOAT, [width])]
    if scan:
        nodes.append(helper.make_node("Identity", ["acc_out"], ["scanned"]))
        outputs.append(value("scanned", FLOAT, [width]))
    body = helper.make_graph(
        nodes, "body",
        [value("i", INT64, []), value("cond_in", BOOL, []), value("acc_in", FLOAT, [width])],
        outputs)
    inputs = [value("x", FLOAT, [width]), value("acc", FLOAT, [width])]
    initializers = []
    if trip_count is None:
        inputs.append(value("n", INT64, []))
    else:
        initializers.append(helper.make_tensor("n", INT64, [], [trip_count]))
    graph_outputs = [value("final", FLOAT, [width])] + ([value("all", FLOAT, [None, width])]
                                                         if scan else [])
    node = helper.make_node("Loop", ["n", "", "acc"], [o.name for o in graph_outputs], body=body)
    graph = helper.make_graph([node], "loop", inputs, graph_outputs, initializer=initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


X = np.array([1.5, -2.0, 3.0], dtype=np.float32)
ACC = np.array([10.0, 20.0, 30.0], dtype=np.float32)


def test_a_loop_with_a_constant_trip_count_scans_that_many_values():
    mod = kiln.frontend.from_onnx(loop_model(trip_count=4))
    text = str(mod)
    assert "iterations=4" in text
    assert "add(%acc_in, %x)" in text
    assert str(result_type(mod)) == "(Tensor[(3), float32], Tensor[(4, 3), float32])\n"


def test_a_loop_with_a_run_time_trip_count_scans_a_size_of_its_own():
    mod = kiln.frontend.from_onnx(loop_model())
    ret = str(result_type(mod))
    iterations = ret.split("Tensor[(")[2].split(",")[0]
    assert iterations.isidentifier(), ret
    assert f"iterations={iterations}" in str(mod)


def test_a_loop_with_a_constant_trip_count_runs_and_stacks_its_scan_output():
    ex = kiln.build(kiln.frontend.from_onnx(loop_model(trip_count=4)))
    final, scanned = ex.run(x=X, acc=ACC)
    expected = np.stack([ACC + X * (k + 1) for k in range(4)])
    np.testing.assert_allclose(scanned, expected, rtol=1e-6)
    np.testing.assert_allclose(final, expected[-1], rtol=1e-6)


@pytest.mark.parametrize("n", [0, 1, 5])
def test_a_loop_with_a_run_time_trip_count_carries_its_values(n):
    ex = kiln.build(kiln.frontend.from_onnx(loop_model(scan=False)))
    (final,) = ex.run(x=X, acc=ACC, n=np.array(n, dtype=np.int64))
    np.testing.assert_allclose(final, ACC + X * n, rtol=1e-6)


def test_a_loop_stops_when_its_body_returns_false():
    ex = kiln.build(kiln.frontend.from_onnx(loop_model(scan=False, stop_after=2)))
    (final,) = ex.run(x=X, acc=ACC, n=np.array(100, dtype=np.int64))
    # Iterations 0, 1 and 2 run; the third returns false.
    np.testing.assert_allclose(final, ACC + X * 3, rtol=1e-6)


def test_a_loop_past_the_iteration_cap_is_an_error_that_names_the_setting(monkeypatch):
    ex = kiln.build(kiln.frontend.from_onnx(loop_model(scan=False)))
    monkeypatch.setenv("KILN_LOOP_MAX_ITERATIONS", "10")
    with pytest.raises(RuntimeError, match="ran 10 iterations.*KILN_LOOP_MAX_ITERATIONS"):
        ex.run(x=X, acc=ACC, n=np.array(11, dtype=np.int64))
    (final,) = ex.run(x=X, acc=ACC, n=np.array(10, dtype=np.int64))
    np.testing.assert_allclose(final, ACC + X * 10, rtol=1e-6)


def allocator_requests():
    return kiln.runtime.allocator_stats()["allocations"]  # fresh or from the cache


def requests_of_a_run(ex, **inputs):
    """Memory the CPU allocator handed out (fresh or from its cache) during one run."""
    before = allocator_requests()
    outputs = ex.run(**inputs)
    return allocator_requests() - before, outputs


def test_a_loop_allocates_nothing_per_iteration_for_carried_values():
    ex = kiln.build(kiln.frontend.from_onnx(loop_model(scan=False, width=64)))
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    acc = np.ones(64, dtype=np.float32)
    requests = {}
    for n in (3, 3, 4, 40):  # the first runs plan and make their contexts
        requests[n], (final,) = requests_of_a_run(ex, x=x, acc=acc, n=np.array(n, dtype=np.int64))
        np.testing.assert_allclose(final, acc + x * n, rtol=1e-5, atol=1e-5)
    assert requests[40] == requests[4]


def test_a_loop_writes_its_scanned_values_into_its_output_without_allocating_per_iteration():
    requests = {}
    for trips in (3, 40):
        ex = kiln.build(kiln.frontend.from_onnx(loop_model(trip_count=trips)))
        for _ in range(2):  # the first runs plan and make their contexts
            requests_of_a_run(ex, x=X, acc=ACC)
        requests[trips], (final, scanned) = requests_of_a_run(ex, x=X, acc=ACC)
        expected = np.stack([ACC + X * (k + 1) for k in range(trips)])
        np.testing.assert_allclose(scanned, expected, rtol=1e-6)
        np.testing.assert_allclose(final, expected[-1], rtol=1e-6)
    assert requests[40] == requests[3]


@pytest.mark.parametrize("n", [0, 1, 4])
def test_scan_outputs_of_a_run_time_length_are_sized_by_the_loop_and_feed_later_nodes(n):
    model = loop_model()
    model.graph.node.append(helper.make_node("Add", ["all", "all"], ["twice"]))
    model.graph.output.append(value("twice", FLOAT, [None, 3]))
    ex = kiln.build(kiln.frontend.from_onnx(model))
    final, scanned, twice = ex.run(x=X, acc=ACC, n=np.array(n, dtype=np.int64))
    expected = np.array([ACC + X * (k + 1) for k in range(n)], dtype=np.float32).reshape(n, 3)
    assert scanned.shape == (n, 3) and twice.shape == (n, 3)
    np.testing.assert_allclose(scanned, expected, rtol=1e-6)
    np.testing.assert_allclose(twice, expected * 2, rtol=1e-6)
    np.testing.assert_allclose(final, ACC + X * n, rtol=1e-6)


NESTED = """
def @main(%x: Tensor[(3), float32], %n: Tensor[(), int64], %flip: Tensor[(), bool]) {
  %0 = nn.relu(%x);
  %1 = fn (%i: Tensor[(), int64], %cond: Tensor[(), bool], %acc: Tensor[(3), float32]) {
    %2 = fn () { add(%acc, %0) };
    %3 = fn () { subtract(%acc, %0) };
    %4 = if(%flip, %2, %3);
    (%cond, %4)
  };
  %5 = loop(%n, const(bool, (), [1]), %x, %1, iterations=n_steps);
  %5.0
}
"""


@pytest.mark.parametrize("flip", [True, False])
def test_an_if_inside_a_loop_body_reads_values_of_main(flip):
    ex = kiln.build(kiln.ir.ParseModule(NESTED, []))
    (y,) = ex.run(x=X, n=np.array(3, dtype=np.int64), flip=np.array(flip))
    step = np.maximum(X, 0)
    np.testing.assert_allclose(y, X + 3 * step if flip else X - 3 * step, rtol=1e-6)


@pytest.mark.parametrize("description", ["{", '{"version": 2, "functions": []}',
                                         '{"version": 1, "functions": [{"name": "f"}]}'])
def test_a_malformed_control_flow_module_is_a_value_error(description):
    create = kiln.get_global_func("runtime.ControlFlowModuleCreate")
    with pytest.raises(ValueError, match="control_flow module"):
        create(description)


def scripted_loop_and_branch():
    """A TorchScript module whose loop count and branch depend on its inputs."""
    torch = pytest.importorskip("torch")

    class LoopThenBranch(torch.nn.Module):
        def forward(self, x, n):
            for _ in range(int(n)):
                x = torch.relu(x * 2.0 - 1.0)
            if bool(x.sum() > 10.0):
                y = x * 3.0
            else:
                y = x - 1.0
            return y

    return torch, LoopThenBranch()


def test_a_scripted_pytorch_loop_and_branch_match_pytorch_after_export_and_reload(tmp_path):
    torch, module = scripted_loop_and_branch()
    onnx_path, library = str(tmp_path / "scripted.onnx"), str(tmp_path / "scripted.so")
    torch.onnx.export(torch.jit.script(module), (torch.ones(2, 3), torch.tensor(2)), onnx_path,
                      input_names=["x", "n"], output_names=["y"], opset_version=13)
    kiln.build(kiln.frontend.from_onnx(onnx_path)).export_library(library)
    rng = np.random.default_rng(0)
    cases = [(rng.standard_normal((2, 3)).astype(np.float32) * 3, n) for n in (0, 1, 3, 6)]
    inputs = str(tmp_path / "inputs.npz")
    np.savez(inputs, **{f"x{i}": x for i, (x, _) in enumerate(cases)})
    script = (
        "import numpy as np, kiln\n"
        f"ex = kiln.load_module({library!r})\n"
        f"data = np.load({inputs!r})\n"
        f"ns = {[n for _, n in cases]!r}\n"
        "ys = [ex.run(x=data[f'x{i}'], n=np.array(n, dtype=np.int64))[0] for i, n in enumerate(ns)]\n"
        f"np.savez({str(tmp_path / 'outputs.npz')!r}, *ys)\n")
    subprocess.run([sys.executable, "-c", script], env=dict(os.environ), check=True)
    outputs = np.load(str(tmp_path / "outputs.npz"))
    taken = set()
    for i, (x, n) in enumerate(cases):
        expected = module(torch.from_numpy(x), torch.tensor(n)).numpy()
        np.testing.assert_allclose(outputs[f"arr_{i}"], expected, rtol=1e-6, atol=1e-6)
        looped = x
        for _ in range(n):
            looped = np.maximum(looped * 2 - 1, 0)
        taken.add(bool(looped.sum() > 10.0))
    assert taken == {True, False}, "the cases should take both branches"


def scan_model(axis, direction):
    """Scan over `axis` of x (3, 4), in `direction` (1: reverse): the state sums the rows seen
    so far, and each step scans the state times 2."""
    body = helper.make_graph(
        [helper.make_node("Add", ["sum_in", "row"], ["sum_out"]),
         helper.make_node("Add", ["sum_out", "sum_out"], ["doubled"])],
        "body", [value("sum_in", FLOAT, [None]), value("row", FLOAT, [None])],
        [value("sum_out", FLOAT, [None]), value("doubled", FLOAT, [None])])
    length = 4 if axis == 1 else 3
    node = helper.make_node("Scan", ["init", "x"], ["total", "steps"], body=body,
                            num_scan_inputs=1, scan_input_axes=[axis],
                            scan_input_directions=[direction])
    graph = helper.make_graph(
        [node], "scan", [value("init", FLOAT, [7 - length]), value("x", FLOAT, [3, 4])],
        [value("total", FLOAT, [7 - length]), value("steps", FLOAT, [length, 7 - length])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("axis,direction", [(0, 0), (1, 0), (1, 1)])
def test_scan_runs_as_a_loop_over_its_axis_in_either_direction(axis, direction):
    ex = kiln.build(kiln.frontend.from_onnx(scan_model(axis, direction)))
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    rows = list(np.moveaxis(x, axis, 0))
    if direction:
        rows.reverse()
    init = np.ones(rows[0].shape, dtype=np.float32)
    total, steps = ex.run(init=init, x=x)
    running = np.cumsum(rows, axis=0) + init
    np.testing.assert_allclose(steps, running * 2, rtol=1e-6)
    np.testing.assert_allclose(total, running[-1], rtol=1e-6)


def scan8_model(direction, with_lengths=False):
    """Scan before opset 9: x (2, 3, 4) has a batch axis and a sequence axis; per batch entry,
    the state sums the rows of its sequence (in `direction`) and each step scans it times 2."""
    body = helper.make_graph(
        [helper.make_node("Add", ["sum_in", "row"], ["sum_out"]),
         helper.make_node("Add", ["sum_out", "sum_out"], ["doubled"])],
        "body", [value("sum_in", FLOAT, [4]), value("row", FLOAT, [4])],
        [value("sum_out", FLOAT, [4]), value("doubled", FLOAT, [4])])
    inputs = ["lengths" if with_lengths else "", "init", "x"]
    node = helper.make_node("Scan", inputs, ["total", "steps"], body=body, num_scan_inputs=1,
                            directions=[direction])
    graph_inputs = [value("init", FLOAT, [2, 4]), value("x", FLOAT, [2, 3, 4])]
    if with_lengths:
        graph_inputs.insert(0, value("lengths", INT64, [2]))
    graph = helper.make_graph(
        [node], "scan8", graph_inputs,
        [value("total", FLOAT, [2, 4]), value("steps", FLOAT, [2, 3, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)])


@pytest.mark.parametrize("direction", [0, 1])
def test_scan8_scans_each_batch_entry_on_its_own(direction):
    ex = kiln.build(kiln.frontend.from_onnx(scan8_model(direction)))
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    init = np.stack([np.ones(4, np.float32), np.full(4, -5, np.float32)])
    total, steps = ex.run(init=init, x=x)
    rows = x[:, ::-1] if direction else x
    running = np.cumsum(rows, axis=1) + init[:, None, :]
    np.testing.assert_allclose(steps, running * 2, rtol=1e-6)
    np.testing.assert_allclose(total, running[:, -1], rtol=1e-6)


@pytest.mark.parametrize("direction", [0, 1])
@pytest.mark.parametrize("lengths", [[3, 1], [0, 2], [5, -1]])
def test_scan8_scans_each_entry_for_its_sequence_length(direction, lengths):
    """Each entry runs its first sequence_lens[b] rows (its last of them first in reverse), its
    later steps scan zeros and leave its state as it was, as ONNX Runtime's Scan-8 does; lengths
    are taken within [0, 3]."""
    ex = kiln.build(kiln.frontend.from_onnx(scan8_model(direction, with_lengths=True)))
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7
    init = np.stack([np.ones(4, np.float32), np.full(4, -5, np.float32)])
    total, steps = ex.run(lengths=np.array(lengths, np.int64), init=init, x=x)
    for b, length in enumerate(lengths):
        length = min(max(length, 0), 3)
        rows = x[b, :length][::-1] if direction else x[b, :length]
        running = init[b] + np.cumsum(np.concatenate([np.zeros((1, 4), np.float32), rows]), 0)
        expected_steps = np.zeros((3, 4), np.float32)
        expected_steps[:length] = running[1:] * 2
        np.testing.assert_allclose(steps[b], expected_steps, rtol=1e-6)
        np.testing.assert_allclose(total[b], running[-1], rtol=1e-6)


def test_scan8_sequence_lengths_must_be_an_int64_vector():
    model = scan8_model(0, with_lengths=True)
    model.graph.input[0].CopyFrom(value("lengths", INT64, [2, 1]))
    with pytest.raises(kiln.TypeError, match="sequence_lens must be an int64 vector, got rank 2"):
        kiln.frontend.from_onnx(model)


@pytest.mark.parametrize("direction", [0, 1])
def test_scan_over_a_symbolic_length_runs_every_length(direction):
    """x ("n", 4): the trip count is n, read from x's shape at run time, and the scanned
    values are allocated by the loop, n rows."""
    body = helper.make_graph(
        [helper.make_node("Add", ["sum_in", "row"], ["sum_out"]),
         helper.make_node("Add", ["sum_out", "sum_out"], ["doubled"])],
        "body", [value("sum_in", FLOAT, [4]), value("row", FLOAT, [4])],
        [value("sum_out", FLOAT, [4]), value("doubled", FLOAT, [4])])
    node = helper.make_node("Scan", ["init", "x"], ["total", "steps"], body=body,
                            num_scan_inputs=1, scan_input_directions=[direction])
    graph = helper.make_graph(
        [node], "scan", [value("init", FLOAT, [4]), value("x", FLOAT, ["n", 4])],
        [value("total", FLOAT, [4]), value("steps", FLOAT, ["n", 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    ex = kiln.build(kiln.frontend.from_onnx(model))
    init = np.ones(4, dtype=np.float32)
    for n in (1, 3, 6):
        x = np.arange(n * 4, dtype=np.float32).reshape(n, 4)
        total, steps = ex.run(init=init, x=x)
        running = np.cumsum(x[::-1] if direction else x, axis=0) + init
        np.testing.assert_allclose(steps, running * 2, rtol=1e-6)
        np.testing.assert_allclose(total, running[-1], rtol=1e-6)


@pytest.mark.parametrize("out_axis,out_direction", [(1, 0), (0, 1), (-1, 1)])
def test_scan_outputs_go_along_the_axis_and_in_the_direction_asked(out_axis, out_direction):
    """Scan over axis 0 of x (3, 4); the scanned running sums (3, 4) are reversed along the scan
    axis when scan_output_directions says 1, and stacked along scan_output_axes."""
    body = helper.make_graph(
        [helper.make_node("Add", ["sum_in", "row"], ["sum_out"]),
         helper.make_node("Identity", ["sum_out"], ["step"])],
        "body", [value("sum_in", FLOAT, [4]), value("row", FLOAT, [4])],
        [value("sum_out", FLOAT, [4]), value("step", FLOAT, [4])])
    node = helper.make_node("Scan", ["init", "x"], ["total", "steps"], body=body,
                            num_scan_inputs=1, scan_output_axes=[out_axis],
                            scan_output_directions=[out_direction])
    shape = [3, 4] if out_axis == 0 else [4, 3]
    graph = helper.make_graph(
        [node], "scan", [value("init", FLOAT, [4]), value("x", FLOAT, [3, 4])],
        [value("total", FLOAT, [4]), value("steps", FLOAT, shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    ex = kiln.build(kiln.frontend.from_onnx(model))
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    total, steps = ex.run(init=np.zeros(4, np.float32), x=x)
    expected = np.cumsum(x, axis=0)
    if out_direction:
        expected = expected[::-1]
    if out_axis != 0:
        expected = expected.T
    np.testing.assert_allclose(steps, expected, rtol=1e-6)
    np.testing.assert_allclose(total, x.sum(axis=0), rtol=1e-6)


def growing_loop_model():
    """acc = Loop(n, acc0): each iteration appends its index to acc (a generation loop's
    concatenation), so the carried value has one more element after every iteration, and
    each iteration also scans the sum so far."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["i_float"], to=FLOAT),
         helper.make_node("Unsqueeze", ["i_float", "zero_axis"], ["row"]),
         helper.make_node("Concat", ["acc_in", "row"], ["acc_out"], axis=0),
         helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [value("i", INT64, []), value("cond_in", BOOL, []), value("acc_in", FLOAT, [None])],
        [value("cond_out", BOOL, []), value("acc_out", FLOAT, [None]), value("total", FLOAT, [])],
        initializer=[helper.make_tensor("zero_axis", INT64, [1], [0])])
    node = helper.make_node("Loop", ["n", "", "acc0"], ["acc", "totals"], body=body)
    graph = helper.make_graph(
        [node], "grow", [value("n", INT64, []), value("acc0", FLOAT, [1])],
        [value("acc", FLOAT, [None]), value("totals", FLOAT, [None])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("n", [0, 1, 4])
def test_a_carried_value_that_grows_each_iteration_is_returned_at_its_final_extent(n):
    mod = kiln.frontend.from_onnx(growing_loop_model())
    ex = kiln.build(mod)
    acc0 = np.array([10.0], dtype=np.float32)
    acc, totals = ex.run(n=np.array(n, dtype=np.int64), acc0=acc0)
    expected = np.concatenate([acc0, np.arange(n, dtype=np.float32)])
    np.testing.assert_array_equal(acc, expected)
    np.testing.assert_allclose(totals, [expected[:k + 2].sum() for k in range(n)], rtol=1e-6)


def test_a_scripted_generation_loop_that_concatenates_matches_pytorch(tmp_path):
    """Each iteration feeds the last row through a linear layer and appends the result, as a
    greedy decoder appends tokens: the carried tensor gains a row every iteration."""
    torch = pytest.importorskip("torch")

    class Generate(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(4, 4)

        def forward(self, x, n: int):
            out = x
            for _ in range(n):
                out = torch.cat([out, torch.tanh(self.proj(out[-1:]))], dim=0)
            return out

    torch.manual_seed(0)
    module = Generate().eval()
    path = str(tmp_path / "generate.onnx")
    torch.onnx.export(torch.jit.script(module), (torch.randn(1, 4), 3), path,
                      input_names=["x", "n"], output_names=["y"], opset_version=13)
    ex = kiln.build(kiln.frontend.from_onnx(path))
    for n in (0, 1, 5):
        x = torch.randn(1, 4)
        (y,) = ex.run(x=x.numpy(), n=np.array(n, dtype=np.int64))
        with torch.no_grad():
            np.testing.assert_allclose(y, module(x, n).numpy(), rtol=1e-5, atol=1e-6)


def test_python_mutators_rewrite_inside_if_and_loop_bodies():
    class ReluToSigmoid(kiln.ir.ExprMutator):
        def visit_call(self, call):
            call = super().visit_call(call)
            if call.op.name == "nn.relu":
                return kiln.ir.Call("sigmoid", list(call.args))
            return call

    class CountBodies(kiln.ir.ExprVisitor):
        def __init__(self):
            super().__init__()
            self.ifs, self.loops = 0, 0

        def visit_if(self, node):
            self.ifs += 1

        def visit_loop(self, loop):
            self.loops += 1

    text = NESTED.replace("add(%acc, %0)", "add(%acc, nn.relu(%acc))")
    main = kiln.ir.ParseModule(text, [])["main"]
    rewritten = ReluToSigmoid().visit(main.body)
    assert "nn.relu" not in repr(rewritten) and repr(rewritten).count("sigmoid(") == 2
    assert "iterations=n_steps" in repr(rewritten)
    counter = CountBodies()
    counter.visit(rewritten)
    assert (counter.ifs, counter.loops) == (1, 1)


def test_scanned_rows_may_have_a_symbolic_width_besides_the_run_time_length():
    ex = kiln.build(kiln.frontend.from_onnx(loop_model(width="w")))
    for width, n in ((3, 2), (5, 3), (1, 0)):
        x = np.arange(width, dtype=np.float32)
        acc = np.ones(width, dtype=np.float32)
        final, scanned = ex.run(x=x, acc=acc, n=np.array(n, dtype=np.int64))
        assert scanned.shape == (n, width)
        np.testing.assert_allclose(final, acc + x * n, rtol=1e-6)
        for k in range(n):
            np.testing.assert_allclose(scanned[k], acc + x * (k + 1), rtol=1e-6)


def test_branches_of_different_extents_give_an_output_sized_by_the_branch_taken():
    """then: x (3,); else: an empty tensor (0,), as torchvision's batched NMS returns when
    there are no boxes. The If's extent is a size the run defines."""
    empty = helper.make_tensor("empty_value", FLOAT, [0], [])
    model = if_model(branch("then", [helper.make_node("Identity", ["x"], ["same"])], "same"),
                     branch("else", [helper.make_node("Constant", [], ["none"], value=empty)],
                            "none", shape=(0,)),
                     outputs=(("y", FLOAT, [None]),))
    model.graph.node.append(helper.make_node("Add", ["y", "y"], ["twice"]))
    model.graph.output.append(value("twice", FLOAT, [None]))
    mod = kiln.frontend.from_onnx(model)
    assert "sizes=[" in str(mod)
    ex = kiln.build(mod)
    x = np.array([1.5, -2.0, 3.0], dtype=np.float32)
    y, twice = ex.run(cond=np.array(True), x=x)
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(twice, x * 2)
    y, twice = ex.run(cond=np.array(False), x=x)
    assert y.shape == (0,) and twice.shape == (0,)


def test_an_output_whose_extents_the_branches_agree_on_is_returned_with_its_values():
    """The If returns both of its outputs (one has extents the branches disagree on), and the
    one whose shape the graph knows ahead, (3,), must still be the branch's value, not a tensor
    the run allocated for it beforehand."""
    empty = helper.make_tensor("empty_value", FLOAT, [0], [])

    def two_outputs(name, nodes, second, second_shape):
        return helper.make_graph(nodes, name, [], [value("scaled_" + name, FLOAT, [3]),
                                                   value(second, FLOAT, list(second_shape))])

    then_graph = two_outputs("then", [helper.make_node("Add", ["x", "x"], ["scaled_then"]),
                                      helper.make_node("Identity", ["x"], ["same"])],
                             "same", (3,))
    else_graph = two_outputs("else", [helper.make_node("Mul", ["x", "x"], ["scaled_else"]),
                                      helper.make_node("Constant", [], ["none"], value=empty)],
                             "none", (0,))
    model = if_model(then_graph, else_graph, outputs=(("y", FLOAT, [3]), ("z", FLOAT, [None])))
    ex = kiln.build(kiln.frontend.from_onnx(model))
    x = np.array([1.5, -2.0, 3.0], dtype=np.float32)
    y, z = ex.run(cond=np.array(True), x=x)
    np.testing.assert_array_equal(y, x + x)
    np.testing.assert_array_equal(z, x)
    y, z = ex.run(cond=np.array(False), x=x)
    np.testing.assert_array_equal(y, x * x)
    assert z.shape == (0,)


def test_a_branch_using_a_size_of_main_gets_it_from_a_captured_carrier():
    """Neither branch reads a tensor of main, but both build one of main's extent n: the
    branch's module needs a tensor that has n as an extent (here x) to know it."""
    text = """
def @main(%x: Tensor[(n), float32], %c: Tensor[(), bool]) {
  %0 = fn () { expand(const(float32, (), [1]), shape=[n]) };
  %1 = fn () { expand(const(float32, (), [2]), shape=[n]) };
  if(%c, %0, %1)
}
"""
    ex = kiln.build(kiln.ir.ParseModule(text, []))
    for n, cond in ((3, True), (5, False)):
        (y,) = ex.run(x=np.zeros(n, dtype=np.float32), c=np.array(cond))
        np.testing.assert_array_equal(y, np.full(n, 1.0 if cond else 2.0, dtype=np.float32))


def test_a_carried_value_whose_extent_only_the_run_knows_comes_back_at_that_extent():
    """The body returns x[:i + 2] as the carried value that entered as (1,) (a Slice to a
    run-time end): the body takes it at an extent of its own, and the loop returns it."""
    constant = [("two", [], [2]), ("axes", [1], [0]), ("starts", [1], [0])]
    body = helper.make_graph(
        [helper.make_node("Constant", [], [name], value=helper.make_tensor(name, INT64, dims, vals))
         for name, dims, vals in constant] +
        [helper.make_node("Add", ["i", "two"], ["end"]),
         helper.make_node("Unsqueeze", ["end", "axes"], ["ends"]),
         helper.make_node("Slice", ["x", "starts", "ends"], ["y_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [value("i", INT64, []), value("cond_in", BOOL, []), value("y_in", FLOAT, [None])],
        [value("cond_out", BOOL, []), value("y_out", FLOAT, [None])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["n", "", "y"], ["final"], body=body)], "grow",
        [value("x", FLOAT, [5]), value("y", FLOAT, [1]), value("n", INT64, [])],
        [value("final", FLOAT, [None])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    ex = kiln.build(kiln.frontend.from_onnx(model))
    x, y = np.arange(5, dtype=np.float32), np.zeros(1, dtype=np.float32)
    (final,) = ex.run(x=x, y=y, n=np.array(0, dtype=np.int64))
    np.testing.assert_array_equal(final, y)
    for n in (1, 3):
        (final,) = ex.run(x=x, y=y, n=np.array(n, dtype=np.int64))
        np.testing.assert_array_equal(final, x[:n + 1])


@pytest.mark.parametrize("trips", [1, 4])
def test_unroll_loops_replaces_a_small_constant_loop_with_its_body_and_keeps_its_values(trips):
    mod = kiln.frontend.from_onnx(loop_model(trip_count=trips))
    unrolled = transform.run_pipeline(mod, "InferType,UnrollLoops")
    assert "loop(" not in str(unrolled)
    pipeline = "InferType,UnrollLoops,SimplifyExpr,FoldConstant,FuseOps,InferType"
    ex = kiln.build(mod, pipeline=pipeline)
    final, scanned = ex.run(x=X, acc=ACC)
    expected = np.stack([ACC + X * (k + 1) for k in range(trips)])
    np.testing.assert_allclose(scanned, expected, rtol=1e-6)
    np.testing.assert_allclose(final, expected[-1], rtol=1e-6)
    # Past the limit (a config key of the pass context), the loop stays a loop.
    kept = transform.run_pipeline(mod, "InferType,UnrollLoops",
                                  **{"transform.unroll_loops.max_trip_count": trips - 1})
    assert "loop(" in str(kept)


def test_torchvision_ssdlite_detects_what_pytorch_detects_after_export_and_reload(tmp_path):
    """The whole detector, post-processing included: per-class score thresholds (NonZero), top
    candidates (TopK of a data-decided k), batched NMS behind an If on whether any box is left,
    and labels expanded to each class's data-decided count; exported to one library and run in
    a fresh process. Detections whose scores nearly tie may come in another order, so each of
    Kiln's detections is matched to one of PyTorch's."""
    torch = pytest.importorskip("torch")
    torchvision = pytest.importorskip("torchvision")
    model = detection.ssdlite_with_calibrated_statistics(torch, torchvision)
    onnx_path, library = str(tmp_path / "ssdlite.onnx"), str(tmp_path / "ssdlite.so")
    detection.export_ssdlite(torch, model, onnx_path)
    kiln.build(kiln.frontend.from_onnx(onnx_path)).export_library(library)
    torch.manual_seed(1)
    images = [torch.rand(3, 320, 320) for _ in range(3)]
    inputs, outputs = str(tmp_path / "images.npz"), str(tmp_path / "detections.npz")
    np.savez(inputs, *[image.numpy() for image in images])
    script = (
        "import numpy as np, kiln\n"
        f"ex = kiln.load_module({library!r})\n"
        f"data = np.load({inputs!r})\n"
        "found = [ex.run(images=data[f'arr_{i}']) for i in range(len(data.files))]\n"
        f"np.savez({outputs!r}, *[t for detections in found for t in detections])\n")
    subprocess.run([sys.executable, "-c", script], env=dict(os.environ), check=True)
    found = np.load(outputs)
    for i, image in enumerate(images):
        with torch.no_grad():
            expected = model([image])[0]
        boxes, scores, labels = (found[f"arr_{3 * i + k}"] for k in range(3))
        ref_boxes, ref_scores = expected["boxes"].numpy(), expected["scores"].numpy()
        ref_labels = expected["labels"].numpy()
        assert boxes.shape == ref_boxes.shape and scores.shape == ref_scores.shape
        np.testing.assert_allclose(np.sort(scores), np.sort(ref_scores), atol=1e-4)
        cutoff = ref_scores.min() + 1e-4  # the last places may go to nearly tied candidates
        for box, score, label in zip(boxes, scores, labels):
            same = ((ref_labels == label) & (np.abs(ref_scores - score) < 1e-4)
                    & (np.abs(ref_boxes - box).max(axis=1) < 1e-2))
            assert same.any() or score < cutoff, (box, score, label)

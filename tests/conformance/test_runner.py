"""Tests of the conformance runner's own logic, on synthetic cases written to a tmp folder.

The comparison, the classification and the worker pool are what decide every status in
docs/conformance.md, so they are tested here against known answers: a case with correct outputs
passes, one with outputs off by a known amount fails with that error, an op Kiln lacks is
unsupported, a worker that segfaults, aborts or hangs is one failing case and the run goes on.
"""

import json
import os
import signal
import textwrap

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import case_eval
import report
import run_conformance

# ---------------------------------------------------------------------------------------------
# Helpers


def write_case(root, suite, name, model, inputs, outputs, data_json=None, more_sets=()):
    """A case folder as libonnx-testdata lays it out, with test_data_set_0 holding ``inputs``
    and ``outputs`` and one more data set per (inputs, outputs) in ``more_sets``; returns its
    path."""
    case_dir = os.path.join(root, suite, name)
    os.makedirs(case_dir)
    onnx.save(model, os.path.join(case_dir, "model.onnx"))
    for index, (set_inputs, set_outputs) in enumerate([(inputs, outputs)] + list(more_sets)):
        data_dir = os.path.join(case_dir, f"test_data_set_{index}")
        os.makedirs(data_dir)
        for prefix, arrays in (("input", set_inputs), ("output", set_outputs)):
            for k, array in enumerate(arrays):
                with open(os.path.join(data_dir, f"{prefix}_{k}.pb"), "wb") as f:
                    f.write(numpy_helper.from_array(array).SerializeToString())
    if data_json is not None:
        with open(os.path.join(case_dir, "data.json"), "w") as f:
            json.dump(data_json, f)
    return case_dir


def add_model():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])
    graph = helper.make_graph([helper.make_node("Add", ["x", "y"], ["z"])], "add", [x, y], [z])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def add_inputs():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    return [x, np.full((2, 3), 0.5, dtype=np.float32)]


def unknown_op_model():
    """A model whose only node is an op of a domain no importer knows."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    node = helper.make_node("Frobnicate", ["x"], ["y"], domain="com.example.conformance")
    graph = helper.make_graph([node], "frob", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                   helper.make_opsetid("com.example.conformance",
                                                                       1)])


def dropout_by_input_model():
    """Dropout(x, ratio, training) with both as graph inputs: Kiln needs them as constants (it
    draws no random mask, so it must know that training drops nothing), training first."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    ratio = helper.make_tensor_value_info("ratio", TensorProto.FLOAT, [])
    training = helper.make_tensor_value_info("training", TensorProto.BOOL, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    graph = helper.make_graph([helper.make_node("Dropout", ["x", "ratio", "training"], ["y"])],
                              "dropout", [x, ratio, training], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def kiln_frontend():
    """kiln.frontend; a failure, not a skip, without it: ctest always provides it."""
    try:
        import kiln.frontend
    except ImportError as exc:
        pytest.fail(f"cannot import kiln.frontend (PYTHONPATH=<build>/python): {exc}")
    return kiln.frontend


def needs_build():
    import kiln

    if not hasattr(kiln, "build"):
        pytest.skip("this Kiln has no kiln.build yet")


# ---------------------------------------------------------------------------------------------
# Comparison at ONNX's tolerances


def test_compare_within_tolerance_passes_and_reports_the_max_errors():
    expected = np.array([1.0, 2.0, 4.0], dtype=np.float32)
    actual = np.array([1.0, 2.0005, 4.0], dtype=np.float32)
    abs_err, rel_err = case_eval.compare_outputs([expected], [actual], 1e-3, 1e-7)
    assert abs_err == pytest.approx(0.0005, rel=1e-3)
    assert rel_err == pytest.approx(0.00025, rel=1e-3)


def test_compare_beyond_rtol_fails_with_the_max_errors():
    expected = np.array([1.0, 2.0, 4.0], dtype=np.float32)
    actual = np.array([1.0, 2.01, 4.0], dtype=np.float32)
    with pytest.raises(case_eval.CaseFailure) as info:
        case_eval.compare_outputs([expected], [actual], 1e-3, 1e-7)
    assert info.value.max_abs_err == pytest.approx(0.01, rel=1e-4)
    assert info.value.max_rel_err == pytest.approx(0.005, rel=1e-4)
    assert "1/3 elements differ" in str(info.value)


def test_compare_uses_atol_near_zero():
    expected = np.zeros(2, dtype=np.float32)
    case_eval.compare_outputs([expected], [np.array([0, 5e-8], np.float32)], 1e-3, 1e-7)
    with pytest.raises(case_eval.CaseFailure) as info:
        case_eval.compare_outputs([expected], [np.array([0, 2e-7], np.float32)], 1e-3, 1e-7)
    assert info.value.max_rel_err == float("inf")


def test_compare_nans_and_infinities_in_the_same_places_are_equal():
    expected = np.array([np.nan, np.inf, -np.inf, 1.0], dtype=np.float32)
    assert case_eval.compare_outputs([expected], [expected.copy()], 1e-3, 1e-7) == (0.0, 0.0)
    with pytest.raises(case_eval.CaseFailure):
        case_eval.compare_outputs([expected], [np.array([1.0, np.inf, -np.inf, 1.0],
                                                        np.float32)], 1e-3, 1e-7)
    with pytest.raises(case_eval.CaseFailure):
        case_eval.compare_outputs([expected], [np.array([np.nan, -np.inf, -np.inf, 1.0],
                                                        np.float32)], 1e-3, 1e-7)


def test_compare_dtype_shape_and_count_must_match():
    expected = np.ones((2, 3), dtype=np.float32)
    with pytest.raises(case_eval.CaseFailure, match="dtype float64, expected float32"):
        case_eval.compare_outputs([expected], [expected.astype(np.float64)], 1e-3, 1e-7)
    with pytest.raises(case_eval.CaseFailure, match=r"shape \[3, 2\], expected \[2, 3\]"):
        case_eval.compare_outputs([expected], [expected.reshape(3, 2)], 1e-3, 1e-7)
    with pytest.raises(case_eval.CaseFailure, match="2 outputs, expected 1"):
        case_eval.compare_outputs([expected], [expected, expected], 1e-3, 1e-7)


def test_compare_integers_and_booleans():
    ints = np.array([3, -7], dtype=np.int64)
    case_eval.compare_outputs([ints], [ints.copy()], 1e-3, 1e-7)
    with pytest.raises(case_eval.CaseFailure) as info:
        case_eval.compare_outputs([ints], [np.array([3, -9], np.int64)], 1e-3, 1e-7)
    assert info.value.max_abs_err == 2.0
    flags = np.array([True, False])
    with pytest.raises(case_eval.CaseFailure):
        case_eval.compare_outputs([flags], [np.array([True, True])], 1e-3, 1e-7)


def test_tolerances_default_to_onnx_and_follow_data_json(tmp_path):
    assert case_eval.tolerances(str(tmp_path)) == (1e-3, 1e-7)
    (tmp_path / "data.json").write_text(json.dumps({"rtol": 1e-2, "atol": 1e-5}))
    assert case_eval.tolerances(str(tmp_path)) == (1e-2, 1e-5)


# ---------------------------------------------------------------------------------------------
# Classification before Kiln


def test_sequence_input_is_unsupported_with_the_reason(tmp_path):
    seq = helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None)
    y = helper.make_tensor_value_info("y", TensorProto.INT64, [])
    graph = helper.make_graph([helper.make_node("SequenceLength", ["s"], ["y"])], "g", [seq],
                              [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    case_dir = write_case(str(tmp_path), "node", "seq", model, [], [np.array(2, np.int64)])
    result = case_eval.evaluate_case(case_dir)
    assert result["status"] == "unsupported"
    assert result["detail"] == "non-tensor graph input 's' (sequence)"


def test_string_input_and_training_op_are_unsupported():
    x = helper.make_tensor_value_info("x", TensorProto.STRING, [2])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g", [x],
                              [helper.make_tensor_value_info("y", TensorProto.STRING, [2])])
    with pytest.raises(case_eval.Unsupported, match="string tensor graph input 'x'"):
        case_eval.check_supported_data(helper.make_model(graph))
    f = helper.make_tensor_value_info("f", TensorProto.FLOAT, [2])
    node = helper.make_node("Adam", ["f"], ["g"], domain=case_eval.TRAINING_DOMAIN)
    graph = helper.make_graph([node], "g", [f], [helper.make_tensor_value_info(
        "g", TensorProto.FLOAT, [2])])
    with pytest.raises(case_eval.Unsupported, match=r"training op\(s\): Adam"):
        case_eval.check_supported_data(helper.make_model(graph))


# ---------------------------------------------------------------------------------------------
# Whole cases through Kiln


def test_unknown_op_is_unsupported_naming_it(tmp_path):
    kiln_frontend()
    case_dir = write_case(str(tmp_path), "node", "frob", unknown_op_model(),
                          [np.ones(2, np.float32)], [np.ones(2, np.float32)])
    result = case_eval.evaluate_case(case_dir)
    assert result["status"] == "unsupported", result
    assert "Frobnicate" in result["detail"]
    assert len(result["unsupported_ops"]) == 1 and "Frobnicate (opset 1)" in \
        result["unsupported_ops"][0]


def test_add_with_correct_outputs_passes(tmp_path):
    kiln_frontend()
    needs_build()
    x, y = add_inputs()
    result = case_eval.evaluate_case(write_case(str(tmp_path), "node", "add", add_model(),
                                                [x, y], [x + y]))
    assert result["status"] == "pass", result
    assert result["max_abs_err"] == 0.0 and result["bound_inputs"] == []


def test_add_with_wrong_outputs_fails_with_the_max_error(tmp_path):
    kiln_frontend()
    needs_build()
    x, y = add_inputs()
    wrong = x + y
    wrong[1, 2] += 0.25  # 5.5 -> 5.75: abs 0.25, rel 0.25 / 5.75
    result = case_eval.evaluate_case(write_case(str(tmp_path), "node", "add", add_model(),
                                                [x, y], [wrong]))
    assert result["status"] == "fail"
    assert result["max_abs_err"] == pytest.approx(0.25)
    assert result["max_rel_err"] == pytest.approx(0.25 / 5.75)
    assert "1/6 elements differ" in result["detail"]


def test_wrong_dtype_of_stored_output_fails(tmp_path):
    kiln_frontend()
    needs_build()
    x, y = add_inputs()
    result = case_eval.evaluate_case(write_case(str(tmp_path), "node", "add", add_model(),
                                                [x, y], [(x + y).astype(np.float64)]))
    assert result["status"] == "fail"
    assert result["detail"] == "output 0: dtype float32, expected float64"


def test_inputs_kiln_needs_as_constants_are_bound_one_after_another(tmp_path):
    kiln_frontend()
    needs_build()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    case_dir = write_case(str(tmp_path), "node", "dropout", dropout_by_input_model(),
                          [x, np.array(0.0, np.float32), np.array(True)], [x])
    result = case_eval.evaluate_case(case_dir)
    assert result["status"] == "pass", result
    assert result["bound_inputs"] == ["training", "ratio"]


def test_shape_deciding_inputs_are_fed_at_run_time(tmp_path):
    kiln_frontend()
    needs_build()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])], "reshape",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["rows", "columns"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    second_set = ([x, np.array([6, 1], np.int64)], [x.reshape(6, 1)])
    case_dir = write_case(str(tmp_path), "node", "reshape", model,
                          [x, np.array([3, 2], np.int64)], [x.reshape(3, 2)],
                          more_sets=[second_set])
    result = case_eval.evaluate_case(case_dir)
    assert result["status"] == "pass", result
    assert result["bound_inputs"] == []


def test_inputs_a_needed_value_is_computed_from_are_bound(tmp_path):
    kiln_frontend()
    needs_build()
    # Dropout's training_mode is Cast(Mul(n, 2)) of a float input: ONNX's data propagation stops
    # at the Mul of floats, so the importer names the Cast's output, which is no graph input.
    graph = helper.make_graph(
        [helper.make_node("Mul", ["n", "two"], ["m"]),
         helper.make_node("Cast", ["m"], ["training"], to=TensorProto.BOOL),
         helper.make_node("Dropout", ["x", "", "training"], ["y"])],
        "computed_training",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("n", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        initializer=[numpy_helper.from_array(np.array(2.0, np.float32), "two")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    case_dir = write_case(str(tmp_path), "node", "computed_training", model,
                          [x, np.array(0.0, np.float32)], [x])
    result = case_eval.evaluate_case(case_dir)
    assert result["status"] == "pass", result
    assert result["bound_inputs"] == ["n"]


def test_bound_inputs_are_rebound_for_each_data_set(tmp_path):
    kiln_frontend()
    needs_build()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    model = dropout_by_input_model()  # training differs between the data sets
    first = [x, np.array(0.5, np.float32), np.array(False)]
    second_set = ([x, np.array(0.0, np.float32), np.array(True)], [x])
    case_dir = write_case(str(tmp_path), "node", "dropout", model, first, [x],
                          more_sets=[second_set])
    result = case_eval.evaluate_case(case_dir)
    assert result["status"] == "pass", result
    wrong_set = ([x, np.array(0.0, np.float32), np.array(True)], [x + 1])
    case_dir = write_case(str(tmp_path), "node", "dropout_wrong", model, first, [x],
                          more_sets=[wrong_set])
    result = case_eval.evaluate_case(case_dir)
    assert result["status"] == "fail"
    assert result["detail"].startswith("test_data_set_1: output 0:"), result["detail"]
    # The second set, in training mode, needs the ratio bound too: bound again for it.
    assert result["bound_inputs"] == ["training", "ratio"]


def test_symbolic_input_dimension_runs_without_binding(tmp_path):
    kiln_frontend()
    needs_build()
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    data = np.array([[-1, 2, -3], [4, -5, 6]], dtype=np.float32)
    result = case_eval.evaluate_case(write_case(str(tmp_path), "node", "relu", model, [data],
                                                [np.maximum(data, 0)]))
    assert result["status"] == "pass", result
    assert result["bound_shapes"] == [] and result["bound_inputs"] == []


# ---------------------------------------------------------------------------------------------
# The worker pool: crashes and hangs are one failing case each


EVALUATOR = textwrap.dedent("""
    import os, signal, time

    def evaluate(case_dir):
        name = os.path.basename(case_dir)
        if name == "segfault":
            os.kill(os.getpid(), signal.SIGSEGV)
        if name == "abort":
            import sys
            sys.stderr.write("terminate called after throwing an instance of 'Boom'\\n")
            sys.stderr.flush()
            os.abort()
        if name == "hang":
            time.sleep(600)
        if name == "raise":
            raise RuntimeError("evaluator bug")
        print("noise on stdout must not break the protocol")
        return {"status": "pass", "detail": "", "max_abs_err": 0.0, "max_rel_err": 0.0,
                "bound_inputs": [], "bound_shapes": [], "unsupported_ops": []}
""")


def fake_suite(tmp_path, names):
    root = tmp_path / "data"
    for name in names:
        (root / "fake" / name).mkdir(parents=True)
        (root / "fake" / name / "model.onnx").write_bytes(b"")
    evaluator = tmp_path / "evaluator.py"
    evaluator.write_text(EVALUATOR)
    return str(root), f"{evaluator}:evaluate"


def run_fake(tmp_path, names, *extra):
    root, evaluator = fake_suite(tmp_path, names)
    results_path = tmp_path / "results.json"
    code = run_conformance.main(["--data", root, "--suites", "fake", "--evaluator", evaluator,
                                 "--jobs", "2", "--timeout", "3", "--results",
                                 str(results_path), "--expected",
                                 str(tmp_path / "expected.txt")] + list(extra))
    cases = json.loads(results_path.read_text())["cases"]
    return code, {c["name"]: c for c in cases}


def test_crashes_and_hangs_fail_one_case_each_and_the_run_goes_on(tmp_path):
    names = ["a_ok", "abort", "b_ok", "hang", "c_ok", "raise", "segfault", "z_ok"]
    code, cases = run_fake(tmp_path, names, "--max-tasks-per-worker", "2")
    assert code == 0
    assert sorted(cases) == sorted(names)
    for name in ("a_ok", "b_ok", "c_ok", "z_ok"):
        assert cases[name]["status"] == "pass"
    assert cases["segfault"]["status"] == "fail"
    assert cases["segfault"]["detail"] == f"crashed (signal {int(signal.SIGSEGV)}, SIGSEGV)"
    assert cases["abort"]["status"] == "fail"
    assert cases["abort"]["detail"] == (f"crashed (signal {int(signal.SIGABRT)}, SIGABRT): "
                                        "terminate called after throwing an instance of 'Boom'")
    assert cases["hang"]["status"] == "fail"
    assert cases["hang"]["detail"] == "timeout (over 3 s)"
    assert 3 <= cases["hang"]["seconds"] < 20
    assert cases["raise"]["status"] == "error"
    assert cases["raise"]["detail"] == "runner: RuntimeError: evaluator bug"


# ---------------------------------------------------------------------------------------------
# The regression list


def test_check_names_each_listed_case_that_does_not_pass(tmp_path, capsys):
    (tmp_path / "expected.txt").write_text("# comment\nfake/a_ok\nfake/segfault\nfake/gone\n")
    code, _ = run_fake(tmp_path, ["a_ok", "segfault"], "--check")
    out = capsys.readouterr().out
    assert code == 1
    assert "fake/segfault: fail: crashed (signal 11, SIGSEGV)" in out
    assert "fake/gone: no such case in the test data" in out
    assert "fake/a_ok:" not in out


def test_check_ignores_cases_filtered_out_by_k(tmp_path):
    (tmp_path / "expected.txt").write_text("fake/a_ok\nfake/segfault\n")
    code, cases = run_fake(tmp_path, ["a_ok", "segfault"], "--check", "-k", "a_ok")
    assert code == 0 and list(cases) == ["a_ok"]


def test_update_expected_adds_new_passes_and_never_removes(tmp_path, capsys):
    (tmp_path / "expected.txt").write_text("fake/segfault\nother/kept\n")
    code, _ = run_fake(tmp_path, ["b_ok", "a_ok", "segfault"], "--update-expected")
    assert code == 0
    assert "2 passing case(s) not in" in capsys.readouterr().out
    lines = (tmp_path / "expected.txt").read_text().splitlines()
    assert lines[0].startswith("#") and "only ever grows" in "\n".join(lines)
    assert [line for line in lines if not line.startswith("#")] == [
        "fake/a_ok", "fake/b_ok", "fake/segfault", "other/kept"]


def test_missing_test_data_exits_with_the_skip_code(tmp_path, capsys):
    assert run_conformance.main(["--data", str(tmp_path / "none")]) == run_conformance.SKIP_EXIT
    assert "SKIP" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------
# Reports


def result(suite, name, status, detail="", ops=(), bound=()):
    return {"suite": suite, "name": name, "status": status, "detail": detail,
            "unsupported_ops": list(ops), "bound_inputs": list(bound)}


def sample_results():
    rows = [result("node", "a", "pass"), result("node", "b", "pass", bound=["shape"]),
            result("node", "c", "fail", "output 0: 2/6 elements differ (max abs err 1)"),
            result("node", "d", "fail", "test_data_set_1: output 0: 1/4 elements differ (x)"),
            result("node", "e", "unsupported", "Acos (opset 13)", ["Acos (opset 13)"]),
            result("simple", "f", "unsupported", "Acos (opset 7), Cosh (opset 9)",
                   ["Acos (opset 7)", "Cosh (opset 9)"]),
            result("simple", "g", "error", "ValueError: input 'x' has no shape")]
    return {f"{r['suite']}/{r['name']}": r for r in rows}


def test_summary_counts_each_status_per_suite_and_in_total():
    counts = report.counts_by_suite(sample_results(), ["node", "simple"])
    assert dict(counts["node"]) == {"pass": 2, "fail": 2, "unsupported": 1}
    assert dict(counts["simple"]) == {"unsupported": 1, "error": 1}
    assert sum(counts["total"].values()) == 7
    table = report.summary_table(sample_results(), ["node", "simple"])
    # The last two columns: passes with no input bound, which "b" is not.
    assert table.splitlines()[2].split() == ["node", "5", "2", "2", "1", "0", "40.0", "1", "20.0"]
    assert table.splitlines()[-1].split() == ["total", "7", "2", "2", "2", "1", "28.6", "1",
                                              "14.3"]


def test_inference_pass_rate_leaves_out_training_and_string_cases():
    results = sample_results()
    for name, detail in [("t", "training op(s): Adam"), ("s", "string tensor graph input 'x'"),
                         ("dr", "NotImplementedError: Dropout ...: training_mode with a ratio")]:
        results[f"node/{name}"] = result("node", name, "unsupported", detail)
    # Of a, b, c, d, e: only "a" passes with nothing bound.
    assert report.inference_pass_rate(results) == (1, 5)
    assert "Of the 5 node cases that need neither training ops nor string tensors, **1 (20.0%)" \
        in report.markdown(results, ["node"], "CMD")


def test_top_unsupported_ops_and_reasons_group_cases():
    results = sample_results()
    assert report.top_unsupported_ops(results) == [("Acos", 2, "7, 13"), ("Cosh", 1, "9")]
    assert report.top_reasons(results, "fail") == [("wrong values (beyond rtol/atol)", 2)]
    assert report.reason_of("ValueError: input 'x' has no shape; got [1, 2] at 3") == \
        "ValueError: input '…' has no shape; got […] at N"


def test_markdown_has_the_table_command_ops_and_failing_cases(tmp_path):
    path = tmp_path / "conformance.md"
    report.write_markdown(str(path), sample_results(), ["node", "simple"], "CMD --x")
    text = path.read_text()
    assert "| node | 5 | 2 | 2 | 1 | 0 | 40.0 | 1 | 20.0 |" in text
    assert "```sh\nCMD --x\n```" in text
    assert "| Acos | 2 | 7, 13 |" in text
    assert "| node/c | output 0: 2/6 elements differ (max abs err 1) |" in text
    assert "| simple/g | ValueError: input 'x' has no shape |" in text

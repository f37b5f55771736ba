"""Tests of the pure parts of bench/models/run.py's report: the peak program's output and its
parsing, the tables (ratios, % of peak, footprint, start-up) and the chart. ctest runs it as
bench.models_report, with KILN_PEAK_FLOPS naming the built kiln_peak_flops."""

import os
import subprocess
import sys
import types

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "common"))

import chart  # noqa: E402
import footprint  # noqa: E402
import peak  # noqa: E402
import report  # noqa: E402
import run  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
PEAK_LINES = (
    '{"threads": 1, "cpus": [0], "isa": "AVX-512 FMA", "vector_bits": 512, "gflops": 225.5}\n'
    '{"threads": 2, "cpus": [0, 1], "isa": "AVX-512 FMA", "vector_bits": 512, "gflops": 450}\n')
PEAKS = peak.parse(PEAK_LINES)
DNNL = report.plugin_variant("dnnl")
KILNS = [report.KILN, DNNL]


# ---- peak -----------------------------------------------------------------------------------


def test_parse_reads_every_thread_count():
    assert PEAKS == {1: {"gflops": 225.5, "isa": "AVX-512 FMA", "vector_bits": 512, "cpus": [0]},
                     2: {"gflops": 450.0, "isa": "AVX-512 FMA", "vector_bits": 512,
                         "cpus": [0, 1]}}


@pytest.mark.parametrize("output, quoted", [
    ("peak: 450 GFLOP/s\n", "peak: 450 GFLOP/s"),
    ('{"threads": 1, "isa": "x"}\n', '"isa": "x"'),
])
def test_parse_rejects_a_line_that_is_not_a_record(output, quoted):
    with pytest.raises(ValueError, match="kiln_peak_flops printed") as error:
        peak.parse(output)
    assert quoted in str(error.value)


def test_parse_rejects_no_output():
    with pytest.raises(ValueError, match="no peak record"):
        peak.parse("\n")


def test_share_is_against_the_peak_of_the_same_thread_count():
    assert peak.share(45.0, PEAKS, 2) == "10%"
    assert peak.share(45.0, PEAKS, 1) == "20%"
    assert peak.share(45.0, PEAKS, 4) == "—"
    assert peak.share(45.0, {}, 1) == "—"


def test_describe_names_each_thread_count_and_the_isa():
    text = peak.describe(PEAKS)
    assert text.startswith("226 GFLOP/s on 1 thread, 450 on 2 (AVX-512 FMA, 512-bit vectors")
    assert peak.describe({}) == "not measured"


def test_binary_missing_says_what_to_build(tmp_path):
    with pytest.raises(FileNotFoundError, match="build the target kiln_peak_flops"):
        peak.binary(str(tmp_path))


@pytest.fixture
def peak_flops():
    path = os.environ.get("KILN_PEAK_FLOPS")
    if not path:
        pytest.skip("KILN_PEAK_FLOPS (the built kiln_peak_flops) not given; ctest gives it")
    return path


def test_peak_program_output_parses(peak_flops):
    peaks = peak.parse(subprocess.run([peak_flops, "--seconds", "0.01", "1", "1"], check=True,
                                      stdout=subprocess.PIPE, text=True).stdout)
    assert list(peaks) == [1]  # a thread count given twice is measured once
    assert peaks[1]["gflops"] > 0
    assert peaks[1]["vector_bits"] in (128, 256, 512)
    assert len(peaks[1]["cpus"]) == 1


def test_peak_program_rejects_a_bad_thread_count(peak_flops):
    proc = subprocess.run([peak_flops, "two"], stderr=subprocess.PIPE, text=True)
    assert proc.returncode == 2
    assert '"two"' in proc.stderr


# ---- tables ---------------------------------------------------------------------------------


def timing_result(medians):
    """A worker result whose variants all took `medians[v]` ms in every round."""
    return {"times_ms": {v: [ms] * 3 for v, ms in medians.items()}, "errors": {}, "how": {},
            "compile_s": {report.KILN: 1.25, DNNL: 0.5}}


def test_ratios_are_against_the_fastest_pytorch_variant():
    result = timing_result({report.KILN: 30.0, DNNL: 5.0, "eager": 20.0, "jit_freeze": 12.0,
                            "optimize_for_inference": 10.0})
    assert report.kiln_ratios(result, KILNS) == {report.KILN: 3.0, DNNL: 0.5}


def test_ratios_to_onnx_runtime_are_none_where_it_failed():
    result = timing_result({report.KILN: 30.0, DNNL: 5.0, report.ORT: 20.0})
    assert report.ratios_to(result, KILNS, report.ORT) == {report.KILN: 1.5, DNNL: 0.25}
    failed = timing_result({report.KILN: 30.0})
    assert report.ratios_to(failed, KILNS, report.ORT) == {report.KILN: None, DNNL: None}


def test_ratios_to_torch_compile_and_to_the_best_pytorch_variant():
    result = timing_result({report.KILN: 30.0, DNNL: 5.0, "eager": 20.0,
                            report.TORCH_COMPILE: 15.0, report.TVM: 600.0})
    assert report.peer_ratios(result, KILNS, report.TORCH_COMPILE) == {report.KILN: 2.0,
                                                                       DNNL: 5.0 / 15.0}
    assert report.peer_ratios(result, KILNS, report.BEST_PYTORCH) == {report.KILN: 2.0,
                                                                      DNNL: 5.0 / 15.0}
    assert report.peer_ratios(result, KILNS, report.TVM) == {report.KILN: 0.05,
                                                             DNNL: 5.0 / 600.0}


def row_cells(table):
    """{column title: cell} of a one-row results table."""
    header, separator, row = table.splitlines()
    titles = [c.strip() for c in header.strip("|").split("|")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert len(titles) == len(cells) == len(separator.strip("|").split("|"))
    return dict(zip(titles, cells))


def test_results_row_gives_gflops_and_share_of_peak_at_its_thread_count():
    # 2 GFLOP in 10 ms: 200 GFLOP/s, 44% of the 2-thread peak of 450.
    result = timing_result({report.KILN: 10.0, report.ORT: 8.0, "eager": 20.0,
                            "optimize_for_inference": 40.0})
    cells = row_cells(report.results_table({("resnet18", 2): result}, {"resnet18": 2e9}, KILNS,
                                           PEAKS))
    assert cells["Model"] == "resnet18" and cells["Threads"] == "2"
    assert cells["Kiln + dnnl"] == "failed"  # never timed
    assert cells["Kiln / ONNX Runtime"] == "1.25×" and cells["Kiln + dnnl / ONNX Runtime"] == "—"
    assert cells["Kiln / best PyTorch"] == "0.50×" and cells["best PyTorch"] == "PyTorch eager"
    assert cells["TVM (untuned)"] == "failed" and cells["Kiln / TVM (untuned)"] == "—"
    assert cells["Kiln / `torch.compile`"] == "—"
    assert cells["Kiln GFLOP/s (% of peak)"] == "200.0 (44%)"
    assert cells["ONNX Runtime GFLOP/s (% of peak)"] == "250.0 (56%)"
    assert cells["best PyTorch GFLOP/s (% of peak)"] == "100.0 (22%)"


def test_each_variant_is_reported_from_its_faster_placement_and_marked_when_bound():
    unbound = timing_result({report.KILN: 10.0, "eager": 20.0, "optimize_for_inference": 40.0})
    bound = timing_result({report.KILN: 12.0, "eager": 15.0})  # ofi failed when bound
    merged = report.merge_placements(unbound, bound)
    assert merged["bound_variants"] == ["eager"]
    assert {v: t[0] for v, t in merged["times_ms"].items()} == {
        report.KILN: 10.0, "eager": 15.0, "optimize_for_inference": 40.0}
    cells = row_cells(report.results_table({("resnet18", 2): merged}, {"resnet18": 2e9}, KILNS,
                                           PEAKS))
    assert cells["Kiln"] == "10.00 (10.00–10.00)"
    assert cells["PyTorch eager"] == "15.00 (15.00–15.00) †"
    assert cells["best PyTorch"] == "PyTorch eager"


def test_goals_take_the_faster_kiln_variant_per_model_and_geometric_means():
    results = {
        # Kiln's best is dnnl's (8 ms): 0.8 of ORT, 2.0 of torch.compile; its own path 2.0, 5.0.
        ("resnet18", 1): timing_result({report.KILN: 20.0, DNNL: 8.0, report.ORT: 10.0,
                                        report.TORCH_COMPILE: 4.0}),
        # Its own path is the faster (5 ms): 1.25 of ORT, 0.5 of torch.compile.
        ("vit_b_32", 1): timing_result({report.KILN: 5.0, DNNL: 50.0, report.ORT: 4.0,
                                        report.TORCH_COMPILE: 10.0}),
        # torch.compile failed: the model counts against ORT only.
        ("bert_hf", 1): timing_result({report.KILN: 9.0, report.ORT: 9.0}),
        ("resnet18", 2): timing_result({report.KILN: 10.0, report.ORT: 5.0}),
    }
    rows = report.goals_table(results, KILNS).splitlines()[2:]
    assert [c.strip() for c in rows[0].strip("|").split("|")] == [
        "1", "2 of 3", f"{(0.8 * 1.25 * 1.0) ** (1 / 3):.2f}×", "1.00×",
        f"{(2.0 * 1.25 * 1.0) ** (1 / 3):.2f}×", f"{(5.0 * 0.5) ** 0.5:.2f}×"]
    assert [c.strip() for c in rows[1].strip("|").split("|")] == [
        "2", "0 of 1", "2.00×", "—", "2.00×", "—"]


def test_a_capped_variant_is_warmed_once_and_timed_in_the_first_rounds_only():
    calls = {"fast": 0, "slow": 0}

    def counter(name):
        def call():
            calls[name] += 1
        return call

    times = run.time_round_robin({"fast": counter("fast"), "slow": counter("slow")}, runs=5,
                                 warmup=3, capped={"slow": 2})
    assert {name: len(t) for name, t in times.items()} == {"fast": 5, "slow": 2}
    assert calls == {"fast": 3 + 5, "slow": 1 + 2}


def test_placement_notes_keep_the_summary_and_the_measured_costs_of_regions():
    text = ("placement of 302 op calls among [dnnl] (host: Kiln's CPU path)\n"
            "  host      302 op calls\n"
            "per op:\n"
            "  host      add x101\n"
            "regions by cost (per run: the compiler's, then Kiln's CPU path's):\n"
            "  kiln_dnnl_0 (dnnl): 78.051 ms vs 17.198 ms (measured), returned to the host\n")
    result = dict(timing_result({}), placement={DNNL: text})
    assert report.placement_notes({("regnet_y_400mf", 1): result}).splitlines()[-1] == (
        "- regnet_y_400mf, Kiln + dnnl: host      302 op calls; kiln_dnnl_0 (dnnl): 78.051 ms "
        "vs 17.198 ms (measured), returned to the host")


def test_footprint_table_gives_total_and_over_each_variants_baseline():
    footprints = {"resnet18": {
        report.KILN: {"compile_rss_mib": 210.0, "infer_rss_mib": 120.0, "artifact_mib": 45.04},
        DNNL: {"error": "compile child failed: boom"}}}
    footprints["resnet18"][report.ORT] = {"infer_rss_mib": 150.0}
    baselines = {report.KILN: 60.0, DNNL: 60.0, report.ORT: 70.0}
    table = footprint.footprint_table(footprints, {"resnet18": {report.KILN: 1.34}}, KILNS,
                                      [report.ORT], report.VARIANT_TITLES, baselines)
    header, _, row, *notes = table.splitlines()
    assert header.count("Kiln + dnnl") == 4 and header.count("ONNX Runtime") == 1
    assert notes == ["", "Failed:", "", "- resnet18, Kiln + dnnl: compile child failed: boom"]
    assert [c.strip() for c in row.strip("|").split("|")] == [
        "resnet18", "1.3", "—", "210 (+150)", "failed", "120 (+60)", "failed", "150 (+80)",
        "45.0", "failed"]


def test_startup_table_judges_import_with_discovery_against_100_ms():
    table = footprint.startup_table({"import_ms": 60.0, "discovery_ms": 130.0,
                                     "process_ms": 180.0})
    rows = table.splitlines()[2:]
    assert rows[0].endswith("| 60 | met |")
    assert rows[1].endswith("| 130 | **missed** (the goal) |")
    assert "| 180 |" in rows[2]


# ---- chart ----------------------------------------------------------------------------------


def test_chart_is_a_png_and_survives_a_failed_variant(tmp_path):
    pytest.importorskip("matplotlib", reason="Debian: python3-matplotlib")
    models = ["resnet18", "resnet50", "mobilenet_v2", "squeezenet1_1", "bert_encoder"]
    ratios = {(m, t): {report.KILN: 1.0 + i / 2 + t / 10, DNNL: 0.6 + i / 10}
              for i, m in enumerate(models) for t in (1, 2)}
    ratios[("resnet50", 2)][DNNL] = None
    path = tmp_path / report.CHART
    chart.write_chart(str(path), ratios, models, KILNS, [1, 2], report.VARIANT_TITLES,
                      "ONNX Runtime", subtitle="test")
    with open(path, "rb") as f:
        assert f.read(8) == PNG_MAGIC


def test_without_matplotlib_the_doc_says_which_package(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(chart, "available", lambda: False)
    args = types.SimpleNamespace(output=str(tmp_path / "benchmarks.md"), models=["resnet18"],
                                 threads=[1], plugins=[])
    note = run.draw_chart({}, args)
    assert "python3-matplotlib" in note
    assert "apt-get install -y python3-matplotlib" in capsys.readouterr().out
    assert not (tmp_path / report.CHART).exists()
    assert report.chart_line(note) == f"No chart: {note}."
    assert f"]({report.CHART})" in report.chart_line(None)

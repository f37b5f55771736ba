"""Cost-aware placement (kiln.build(..., placement="measured")): a plugin keeps a region only
where it is cheaper than Kiln's CPU path, by the plugin's estimate or a cached measurement;
the report shows the costs. The ccompiler plugin plays the external compiler. Which way a
*measured* region goes depends on this machine, so those tests check the mechanism (costs
measured, cached, reported, results right), and the estimate decides where a test needs one
outcome."""

import json

import numpy as np
import pytest

import kiln
from conftest import load_built_plugin

ESTIMATE = "kiln.ext.ccompiler.estimate_seconds"
RNG = np.random.default_rng(5)

# Two regions for ccompiler, split by a softmax it does not take.
TWO_REGIONS = """def @main(%x: Tensor[(16, 32), float32], %y: Tensor[(16, 32), float32]) {
  %0 = add(%x, %y);
  %1 = nn.softmax(%0, axis=-1);
  tanh(multiply(%1, %x))
}"""


def reference(x, y):
    s = x + y
    e = np.exp(s - s.max(1, keepdims=True))
    return np.tanh(e / e.sum(1, keepdims=True) * x)


@pytest.fixture(autouse=True)
def setup(tmp_path, monkeypatch):
    load_built_plugin("ccompiler")
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "cache"))
    yield
    # No estimate again: the plugin has none of its own.
    kiln.register_func(ESTIMATE, lambda func: None, override=True)


def build(report_lines=None, **options):
    executable = kiln.build(kiln.ir.ParseModule(TWO_REGIONS, []), plugins=["ccompiler"],
                            placement="measured", report=True, **options)
    x = RNG.standard_normal((16, 32)).astype("float32")
    y = RNG.standard_normal((16, 32)).astype("float32")
    np.testing.assert_allclose(executable.run(x=x, y=y)[0], reference(x, y), rtol=1e-5,
                               atol=1e-6)
    return executable.placement_report


def region_lines(report):
    return [line for line in report.splitlines() if line.startswith("  kiln_ccompiler_")]


def targets(report):
    """{op: target} from the report's per-op section."""
    section = report.split("per op:\n")[1].split("regions by cost")[0]
    return {line.split()[1]: line.split()[0] for line in section.splitlines()}


def test_the_estimate_decides_region_by_region(tmp_path):
    # The region with tanh is "slow" on ccompiler, the other one free.
    kiln.register_func(ESTIMATE, lambda func: 10.0 if "tanh" in str(func) else 0.0,
                       override=True)
    report = build()
    assert targets(report) == {"add": "ccompiler", "multiply": "host", "tanh": "host",
                               "nn.softmax": "host"}, report
    lines = region_lines(report)
    assert len(lines) == 2, report
    assert any("0.000 ms vs" in line and "(estimate), kept by ccompiler" in line for line in lines)
    assert any("10000.000 ms vs" in line and "returned to the host" in line for line in lines)
    assert "would take it (unless its region was returned by cost, above)" in report
    # Estimated costs are not measurements: nothing is cached.
    assert not (tmp_path / "cache" / "placement_costs.json").exists()


def test_measured_costs_are_cached_and_reported(tmp_path):
    first = region_lines(build())
    assert len(first) == 2 and all("(measured)" in line for line in first), first
    cache = json.loads((tmp_path / "cache" / "placement_costs.json").read_text())
    assert len(cache) == 2
    for key, (compiler_seconds, host_seconds) in cache.items():
        assert "|ccompiler|" in key
        assert 0 < compiler_seconds < 1 and 0 < host_seconds < 1
    # A second build reads the costs back instead of measuring: the same decisions.
    second = region_lines(build())
    assert [line.replace("(measured)", "(cached)") for line in first] == second


def test_a_damaged_cache_is_measured_again_and_rewritten(tmp_path):
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "placement_costs.json").write_text("{not json")
    assert all("(measured)" in line for line in region_lines(build()))
    assert len(json.loads((tmp_path / "cache" / "placement_costs.json").read_text())) == 2


def test_a_region_that_cannot_be_costed_stays_with_its_compiler_and_says_why():
    def broken(func):
        raise RuntimeError("estimator exploded")

    kiln.register_func(ESTIMATE, broken, override=True)
    report = build()
    lines = region_lines(report)
    assert len(lines) == 2 and all("not measured:" in line and "estimator exploded" in line
                                   and "kept by ccompiler" in line for line in lines), report
    assert targets(report)["tanh"] == "ccompiler"


def test_greedy_placement_is_unchanged_and_unknown_ones_are_errors():
    mod = kiln.ir.ParseModule(TWO_REGIONS, [])
    greedy = kiln.build(mod, plugins=["ccompiler"], report=True).placement_report
    assert "regions by cost" not in greedy and targets(greedy)["tanh"] == "ccompiler"
    with pytest.raises(kiln.ValueError, match=r"unknown placement 'fastest' \(known: greedy, "
                                              r"measured\)"):
        kiln.build(mod, plugins=["ccompiler"], placement="fastest")

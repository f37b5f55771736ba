"""The reference models (tests/models/make_reference_models.py) compiled with the dnnl plugin:
``kiln.build(mod, plugins=["dnnl"])`` matches PyTorch at the tolerance of
test_reference_models.py, the placement report puts every convolution and dense layer on dnnl,
and the exported library, read back, computes the same thing.

Run through ctest (``ctest --test-dir build -L models``), which sets KILN_DNNL_PLUGIN and
KILN_MODELS_DIR, or:

    KILN_DNNL_PLUGIN=build/lib/kiln/plugins/libkiln_dnnl.so PYTHONPATH=build/python \\
        /usr/bin/python3 -m pytest tests/python/test_dnnl_models.py
"""

import re

import pytest

import kiln
import kiln.frontend
from conftest import load_built_plugin
# The generated models, their references and the comparison are the reference-model test's.
from test_reference_models import (ATOL, OPSETS, RTOL, _load_reference, _max_abs_error,
                                   _within_tolerance, generator,
                                   models_dir)  # noqa: F401  (models_dir is a fixture)

# Where PyTorch's own float32 output misses the float64 reference at RTOL/ATOL (resnet50: a few
# logits near zero), test_reference_models.py asks Kiln's CPU path to be at least as close as
# PyTorch float32. oneDNN sums its float32 products in yet another order (blocked layouts, its
# own GEMM kernels), so its error there is of the same size but not always below PyTorch's: it
# may be up to this many times PyTorch float32's largest error.
FLOAT32_ERROR_FACTOR = 2.0


def _assert_matches_pytorch(outputs, reference, what):
    assert isinstance(outputs, list) and len(outputs) == 1, f"{what}: {outputs!r}"
    actual = outputs[0]
    assert (actual.shape, actual.dtype) == (reference.output.shape, reference.output.dtype)
    if _within_tolerance(actual, reference.output):
        return
    assert not _within_tolerance(reference.output_float32, reference.output), (
        f"{what} differs from PyTorch by {_max_abs_error(actual, reference.output):.1e} "
        f"(rtol={RTOL}, atol={ATOL})")
    dnnl_error, torch_error = (_max_abs_error(a, reference.output)
                               for a in (actual, reference.output_float32))
    assert dnnl_error <= FLOAT32_ERROR_FACTOR * torch_error, (
        f"{what}: max abs error {dnnl_error:.1e}, more than {FLOAT32_ERROR_FACTOR} x PyTorch "
        f"float32's {torch_error:.1e} on a model where float32 cannot meet the tolerance")


@pytest.fixture(scope="module", autouse=True)
def dnnl():
    load_built_plugin("dnnl")


def placements(report):
    """{(target, op): count} from the report's per-op lines."""
    found = {}
    for target, op, count in re.findall(r"^  (\S+)\s+(\S+) x(\d+)", report, re.M):
        found[(target, op)] = found.get((target, op), 0) + int(count)
    return found


# Module scope: one model compiled at a time, each once, at the newest opset.
@pytest.fixture(scope="module", params=list(generator.MODELS))
def compiled(request, models_dir):  # noqa: F811  (the imported fixture)
    model = request.param
    mod = kiln.frontend.from_onnx(generator.onnx_path(models_dir, model, OPSETS[-1]))
    built = kiln.build(mod, plugins=["dnnl"], report=True)
    return model, built, _load_reference(models_dir, model)


def test_dnnl_build_matches_pytorch(compiled):
    model, built, reference = compiled
    outputs = built.run(**{generator.INPUT_NAME: reference.input})
    _assert_matches_pytorch(outputs, reference, f"{model} built with plugins=['dnnl']")


def test_every_convolution_and_dense_layer_is_on_dnnl(compiled):
    model, built, _ = compiled
    found = placements(built.placement_report)
    on_host = {op: n for (target, op), n in found.items()
               if target == "host" and op in ("nn.conv2d", "nn.dense")}
    assert not on_host, f"{model}:\n{built.placement_report}"
    assert found.get(("dnnl", "nn.conv2d"), 0) + found.get(("dnnl", "nn.dense"), 0) > 0


def test_resnet50_places_all_53_convolutions_and_its_classifier_on_dnnl(models_dir):  # noqa: F811
    mod = kiln.frontend.from_onnx(generator.onnx_path(models_dir, "resnet50", OPSETS[-1]))
    optimize = kiln.get_global_func("driver.Optimize")
    report = kiln.get_global_func("driver.PlacementReport")
    found = placements(report(optimize(mod, {"compilers": ["dnnl"]}), ["dnnl"]))
    assert found.get(("dnnl", "nn.conv2d")) == 53, found
    assert found.get(("dnnl", "nn.dense")) == 1, found
    assert ("host", "nn.conv2d") not in found and ("host", "nn.dense") not in found, found


def test_exported_library_computes_the_same(compiled, tmp_path):
    model, built, reference = compiled
    path = tmp_path / "m.so"
    built.export_library(path)
    outputs = kiln.load_module(path).run(**{generator.INPUT_NAME: reference.input})
    _assert_matches_pytorch(outputs, reference, f"{model} with dnnl, read back")

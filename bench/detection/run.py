#!/usr/bin/python3
"""Detection end to end: torchvision's SSDlite, post-processing included, Kiln next to ONNX
Runtime.

    /usr/bin/python3 bench/detection/run.py [--runs 20] [--quick] [--build-dir build]

1. Re-executes itself with the python of <build-dir>/bench-venv (onnxruntime from PyPI beside
   Debian's packages: bench/common/peer_venv.py) and imports kiln from <build-dir>/python.
2. Exports SSDlite (tests/models/detection.py: MobileNetV3-Large backbone, 320x320, 5 classes,
   random weights with batch-norm statistics calibrated on random images, so that scores
   differ) with torch.onnx at opset 13 into <build-dir>/bench-detection/, unless up to date.
   Its post-processing is per-class score thresholds (NonZero), TopK of a data-decided k,
   batched NMS behind an If, and at most 300 detections.
3. Kiln compiles the file (the default CPU path, and with the dnnl plugin when it is built,
   placed by measured costs: a region goes to dnnl only where it ran faster there);
   one ONNX Runtime session (all graph optimizations, intra-op threads = the cores, idle
   spinning off). Before timing, each variant's detections must agree with ORT's (the sorted
   scores within 1e-4: nearly tied detections may come in another order).
4. The variants take turns run by run (order reversed every run), --runs times each after one
   untimed call, on one random image; the figures are medians, the ratios Kiln / ORT.
5. Refuses a busy machine (bench/common/harness.py). --quick only warns and writes no file
   unless --output is given. Replaces the "Detection: SSDlite end to end" section of
   docs/benchmarks.md.
"""

import argparse
import os
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "models"))
import harness  # noqa: E402  (bench/common/harness.py: idle checks, doc sections)
import ort_peer  # noqa: E402  (bench/common/ort_peer.py: the peer and its venv)
from harness import log  # noqa: E402

harness.set_name("detection")

SECTION = "Detection: SSDlite end to end"
OPSET = 13


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    return harness.parse_benchmark_args(parser, argv, runs=20, quick_runs=3)


def export(directory):
    """The model's ONNX file, exported unless up to date."""
    import torch
    import torchvision

    import detection  # tests/models/detection.py

    path = os.path.join(directory, "ssdlite.onnx")
    stamp = (f"{torch.__version__} {torchvision.__version__} {os.path.getmtime(__file__)} "
             f"{os.path.getmtime(detection.__file__)}")
    if os.path.exists(path) and os.path.exists(path + ".stamp"):
        with open(path + ".stamp") as f:
            if f.read() == stamp:
                return path
    os.makedirs(directory, exist_ok=True)
    log("exporting SSDlite")
    model = detection.ssdlite_with_calibrated_statistics(torch, torchvision)
    detection.export_ssdlite(torch, model, path, OPSET)
    with open(path + ".stamp", "w") as f:
        f.write(stamp)
    return path


def variants(path, build_dir):
    """({name: image -> (boxes, scores, labels)}: ORT first, then Kiln's builds; the dnnl
    variant's placement summary, or None without the plugin)."""
    import contextlib
    import io
    import shutil

    import onnxruntime as ort

    import kiln
    import kiln.frontend

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = os.cpu_count()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    calls = {"ONNX Runtime": lambda image: session.run(None, {"images": image})}
    kiln_default = kiln.build(kiln.frontend.from_onnx(path))
    calls["Kiln"] = lambda image: kiln_default.run(images=image)
    # Measured placement (docs/design.md §26), decided afresh in every run of the benchmark: a
    # region goes to dnnl only where it ran faster there at build time.
    placement_cache = os.path.join(build_dir, "bench-detection", "placement-cache")
    shutil.rmtree(placement_cache, ignore_errors=True)
    os.environ["KILN_CACHE_DIR"] = placement_cache
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            kiln_dnnl = kiln.build(kiln.frontend.from_onnx(path), plugins=["dnnl"], report=True,
                                   placement="measured")
        calls["Kiln + dnnl"] = lambda image: kiln_dnnl.run(images=image)
    except kiln.KilnError as error:  # the plugin is not built here
        log(f"no Kiln + dnnl variant: {str(error).splitlines()[0]}")
        return calls, None
    return calls, harness.placement_summary(printed.getvalue())


def check_agree(calls, image):
    """Fails unless every variant finds as many detections as ORT, with the same scores."""
    import numpy as np

    _, expected, _ = calls["ONNX Runtime"](image)
    for name, call in calls.items():
        _, scores, _ = call(image)
        if scores.shape != expected.shape or not np.allclose(np.sort(scores), np.sort(expected),
                                                             atol=1e-4):
            harness.fail(f"{name} disagrees with ONNX Runtime: nothing is timed")
    return len(expected)


def render(medians, detections, placement, args, command):
    import onnxruntime
    import torch
    import torchvision

    lines = [f"## {SECTION}", "", f"Command: `{command}`", "",
             f"Machine: {harness.cpu_model()}, {os.cpu_count()} cores; Kiln "
             f"{harness.build_type(args.build_dir)} ({os.cpu_count()} threads in its pool), ONNX "
             f"Runtime {onnxruntime.__version__} ({os.cpu_count()} intra-op threads, spinning "
             f"off), torch {torch.__version__} and torchvision {torchvision.__version__} "
             f"(export, opset {OPSET}).", "",
             "torchvision's `ssdlite320_mobilenet_v3_large` (5 classes, random weights, batch-norm "
             "statistics calibrated on random images: tests/models/detection.py), one 320x320 "
             f"image, {detections} detections; post-processing included (NonZero, TopK, batched "
             "NMS behind an If). Milliseconds are medians of interleaved runs "
             f"({args.runs} each) after one untimed call each.", "",
             "| variant | ms | / ONNX Runtime |", "|---|---:|---:|"]
    reference = medians["ONNX Runtime"]
    for name, seconds in medians.items():
        lines.append(f"| {name} | {seconds * 1e3:.2f} | {seconds / reference:.3f} |")
    if placement is not None:
        lines += ["", "Kiln + dnnl is `kiln.build(..., plugins=[\"dnnl\"], placement=\"measured\")`: "
                  "a region goes to dnnl only where it ran faster there, measured at build time "
                  f"(docs/design.md §26). Its placement report: {placement}."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    import numpy as np

    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    harness.use_build_plugins(args.build_dir)
    ort_peer.enter_venv(args.build_dir, __file__, argv)
    path = export(os.path.join(args.build_dir, "bench-detection"))
    calls, placement = variants(path, args.build_dir)
    image = np.random.default_rng(0).random((3, 320, 320), dtype=np.float32)
    detections = check_agree(calls, image)
    medians = harness.timed_phase("SSDlite", lambda: harness.interleaved(calls, image, args.runs),
                                  in_process=True)
    command = " ".join(["/usr/bin/python3", "bench/detection/run.py"] +
                       [shlex.quote(a) for a in argv])
    harness.publish_section(args.output, render(medians, detections, placement, args, command), SECTION)
    return 0


if __name__ == "__main__":
    sys.exit(main())

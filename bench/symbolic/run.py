#!/usr/bin/python3
"""Symbolic shapes: what compiling once for any batch costs, next to compiling for one shape.

    /usr/bin/python3 bench/symbolic/run.py [--models resnet18 resnet50] [--batches 1 4]
                                           [--runs 30] [--quick] [--build-dir build]

1. Re-executes itself with the python of <build-dir>/bench-venv (onnxruntime from PyPI beside
   Debian's packages: bench/common/peer_venv.py) and imports kiln from <build-dir>/python.
2. Exports each torchvision model (random weights, nothing downloaded) with torch.onnx, opset
   17, its batch axis dynamic ("batch"), into <build-dir>/bench-symbolic/ (kept while torch and
   this file are unchanged).
3. Per model: compiles it once with its batch symbolic (Kiln, symbolic) and, per batch, once
   specialized with shapes= (Kiln, static), and opens one ONNX Runtime session on the same file.
   Each must agree with ORT on one input (rtol 1e-3) before anything is timed.
4. Per (model, batch), the variants take turns run by run (order reversed every run), --runs
   times each, after a first call each that is not timed (the symbolic model plans that
   shape then); the figures are medians, the ratio is symbolic / static.
5. Planning: a fresh symbolic executable of each model is called at batches 1..8, each new;
   the executor's own clock (memory_plan()["planning_seconds"]) gives what each first call at
   a new shape spent evaluating shapes and planning memory.
6. Refuses a busy machine (bench/common/harness.py: waits until other processes use under 15%
   of a core; a phase during which they used more is timed again). --quick only warns and
   writes no file unless --output is given. Replaces the "Symbolic shapes" section of
   docs/benchmarks.md.
"""

import argparse
import os
import shlex
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
import harness  # noqa: E402  (bench/common/harness.py: idle checks, doc sections)
import peer_venv  # noqa: E402  (bench/common/peer_venv.py: onnxruntime beside Debian's numpy)
from harness import REPO, log  # noqa: E402

harness.set_name("symbolic")

SECTION = "Symbolic shapes: compile once, run any batch"
OPSET = 17
RTOL, ATOL = 1e-3, 1e-4
ORT_PACKAGES = ["onnxruntime==1.32.0", "flatbuffers"]
ORT_PROBE = ("import numpy, onnx, torch, onnxruntime; "
             "assert numpy.__file__.startswith('/usr/lib/python3/'), numpy.__file__; "
             "print(onnxruntime.__version__, numpy.__version__)")
MODELS = ("resnet18", "resnet50")
PLANNING_BATCHES = range(1, 9)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 4])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    parser.add_argument("--quick", action="store_true",
                        help="5 runs, warn on a busy machine, write no file")
    parser.add_argument("--output", default=None)
    args = parser.parse_args(argv)
    args.build_dir = os.path.abspath(args.build_dir)
    if args.quick:
        args.runs = min(args.runs, 5)
    elif args.output is None:
        args.output = os.path.join(REPO, "docs", "benchmarks.md")
    return args


def export(model_name, directory):
    """The model's ONNX file with a dynamic batch, exported unless up to date."""
    import torch
    import torchvision

    path = os.path.join(directory, f"{model_name}_dynamic_batch.onnx")
    stamp = f"{torch.__version__} {os.path.getmtime(__file__)}"
    stamp_path = path + ".stamp"
    if os.path.exists(path) and os.path.exists(stamp_path):
        with open(stamp_path) as f:
            if f.read() == stamp:
                return path
    os.makedirs(directory, exist_ok=True)
    torch.manual_seed(0)
    model = getattr(torchvision.models, model_name)().eval()
    log(f"exporting {model_name} with a dynamic batch")
    torch.onnx.export(model, torch.randn(1, 3, 224, 224), path, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
                      opset_version=OPSET)
    with open(stamp_path, "w") as f:
        f.write(stamp)
    return path


def ort_call(path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = os.cpu_count()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return lambda x: session.run(None, {"x": x})[0]


def kiln_call(executable):
    return lambda x: executable.run(x=x)[0]


def interleaved(calls, x, runs):
    """{variant: median seconds}: the variants take turns, order reversed every run."""
    times = {name: [] for name in calls}
    names = list(calls)
    for name in names:
        calls[name](x)  # untimed first call: plans the shape, warms caches
    for run in range(runs):
        for name in (names if run % 2 == 0 else names[::-1]):
            start = time.perf_counter()
            calls[name](x)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def check_agree(calls, x):
    import numpy as np

    reference = calls["ONNX Runtime"](x)
    for name, call in calls.items():
        if not np.allclose(call(x), reference, rtol=RTOL, atol=ATOL):
            harness.fail(f"{name} disagrees with ONNX Runtime: nothing is timed")


def measure(model_name, path, args):
    import numpy as np

    import kiln
    import kiln.frontend

    symbolic = kiln.build(kiln.frontend.from_onnx(path))
    rows = []
    for batch in args.batches:
        static = kiln.build(kiln.frontend.from_onnx(path, shapes={"x": [batch, 3, 224, 224]}))
        calls = {"Kiln, symbolic": kiln_call(symbolic), "Kiln, static": kiln_call(static),
                 "ONNX Runtime": ort_call(path)}
        x = np.random.default_rng(batch).standard_normal((batch, 3, 224, 224)).astype("float32")
        check_agree(calls, x)
        medians = harness.timed_phase(f"{model_name} at batch {batch}",
                                      lambda: interleaved(calls, x, args.runs))
        rows.append((batch, medians))
    return rows


def measure_planning(model_name, path):
    """Milliseconds per first call at a new batch, from the executor's own clock."""
    import numpy as np

    import kiln
    import kiln.frontend

    executable = kiln.build(kiln.frontend.from_onnx(path))

    def run():
        for batch in PLANNING_BATCHES:
            executable.run(x=np.zeros((batch, 3, 224, 224), "float32"))
        return executable.memory_plan

    plan = harness.timed_phase(f"{model_name} planning", run)
    return plan["planning_seconds"] / plan["plans_made"] * 1e3, plan["plans_made"]


def render(results, planning, args, command):
    import onnxruntime
    import torch

    lines = [f"## {SECTION}", "",
             f"Command: `{command}`", "",
             f"Machine: {harness.cpu_model()}, {os.cpu_count()} cores; Kiln "
             f"{harness.build_type(args.build_dir)}, ONNX Runtime {onnxruntime.__version__}, "
             f"torch {torch.__version__} (export, opset {OPSET}).", "",
             "Each torchvision model (random weights) is exported once with a dynamic batch. "
             "*Kiln, symbolic* compiles that file once and runs every batch; *Kiln, static* is "
             "compiled per batch with `shapes=`. Milliseconds are medians of interleaved runs "
             f"({args.runs} each) after one untimed call per variant.", "",
             "| model | batch | Kiln, symbolic (ms) | Kiln, static (ms) | symbolic / static "
             "| ONNX Runtime (ms) |",
             "|---|---:|---:|---:|---:|---:|"]
    for model, rows in results.items():
        for batch, medians in rows:
            sym = medians["Kiln, symbolic"] * 1e3
            sta = medians["Kiln, static"] * 1e3
            ort = medians["ONNX Runtime"] * 1e3
            lines.append(f"| {model} | {batch} | {sym:.2f} | {sta:.2f} | {sym / sta:.3f} | "
                         f"{ort:.2f} |")
    lines += ["", "First call at a new batch: the time the executor spent evaluating every "
              "tensor's shape and planning its memory (its own clock, "
              "`memory_plan()[\"planning_seconds\"]`), per new shape, over batches "
              f"{PLANNING_BATCHES.start}-{PLANNING_BATCHES.stop - 1}:", "",
              "| model | plans | planning per new shape (ms) |", "|---|---:|---:|"]
    for model, (per_plan_ms, plans) in planning.items():
        lines.append(f"| {model} | {plans} | {per_plan_ms:.3f} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    kiln_python = os.path.join(args.build_dir, "python")
    if not os.path.isdir(os.path.join(kiln_python, "kiln")):
        harness.fail(f"no kiln package in {kiln_python}: build Kiln there first")
    venv = os.path.join(args.build_dir, "bench-venv")
    if not peer_venv.running_in(venv):
        python, found = peer_venv.ensure(venv, ORT_PACKAGES, ORT_PROBE, log)
        log(f"onnxruntime and numpy in {venv}: {found}")
        os.execv(python, [python, os.path.abspath(__file__), *argv])
    sys.path.insert(0, kiln_python)
    if args.quick:
        harness.timed_phase = lambda phase, run, attempts=3: run()
    directory = os.path.join(args.build_dir, "bench-symbolic")
    paths = {model: export(model, directory) for model in args.models}
    results = {model: measure(model, paths[model], args) for model in args.models}
    planning = {model: measure_planning(model, paths[model]) for model in args.models}
    command = " ".join(["/usr/bin/python3", "bench/symbolic/run.py"] +
                       [shlex.quote(a) for a in argv])
    harness.publish_section(args.output, render(results, planning, args, command), SECTION)
    return 0


if __name__ == "__main__":
    sys.exit(main())

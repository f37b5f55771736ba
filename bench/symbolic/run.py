#!/usr/bin/python3
"""Symbolic shapes: what compiling once for any batch costs, next to compiling for one shape.

    /usr/bin/python3 bench/symbolic/run.py [--models resnet18 resnet50] [--batches 1 4]
                                           [--seqs 16 32 64 128 256 512] [--runs 30]
                                           [--quick] [--build-dir build]

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
5. Sequence sweep: the reference encoder of tests/models (bert_encoder: 4 post-norm layers,
   d_model 256) exported with its batch and sequence axes dynamic, compiled once, timed at each
   --seqs length (batch 1) interleaved with the same model specialized to that length and with
   ONNX Runtime; the table and a chart (docs/benchmarks_symbolic_seq.png) give each one's
   median.
6. Planning: a fresh symbolic executable of each model is called at batches 1..8, each new;
   the executor's own clock (memory_plan()["planning_seconds"]) gives what each first call at
   a new shape spent evaluating shapes and planning memory.
7. Refuses a busy machine (bench/common/harness.py: waits until other processes use under 15%
   of a core; a phase during which they used more is timed again). --quick only warns and
   writes no file unless --output is given. Replaces the "Symbolic shapes" section of
   docs/benchmarks.md.
"""

import argparse
import os
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
import harness  # noqa: E402  (bench/common/harness.py: idle checks, doc sections)
import ort_peer  # noqa: E402  (bench/common/ort_peer.py: the peer and its venv)
from harness import log  # noqa: E402

harness.set_name("symbolic")

SECTION = "Symbolic shapes: compile once, run any batch"
OPSET = 17
RTOL, ATOL = 1e-3, 1e-4
MODELS = ("resnet18", "resnet50")
ENCODER = "bert_encoder"
CHART = "benchmarks_symbolic_seq.png"
PLANNING_BATCHES = range(1, 9)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 4])
    parser.add_argument("--seqs", nargs="+", type=int, default=[16, 32, 64, 128, 256, 512])
    return harness.parse_benchmark_args(parser, argv, runs=30, quick_runs=5)


def export(model_name, directory):
    """The model's ONNX file with its batch axis dynamic (and the encoder's sequence axis),
    exported unless up to date. Input "x", output "y"."""
    import torch

    path = os.path.join(directory, f"{model_name}_dynamic.onnx")
    stamp = f"{torch.__version__} {os.path.getmtime(__file__)}"
    stamp_path = path + ".stamp"
    if os.path.exists(path) and os.path.exists(stamp_path):
        with open(stamp_path) as f:
            if f.read() == stamp:
                return path
    os.makedirs(directory, exist_ok=True)
    model = harness.load_model_generator().build_model(model_name)
    encoder = model_name == ENCODER
    example = torch.randn(1, 128, 256) if encoder else torch.randn(1, 3, 224, 224)
    axes = {0: "batch", 1: "seq"} if encoder else {0: "batch"}
    log(f"exporting {model_name} with dynamic axes {axes}")
    torch.onnx.export(model, example, path, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": axes, "y": axes}, opset_version=OPSET)
    with open(stamp_path, "w") as f:
        f.write(stamp)
    return path


def kiln_call(executable):
    return lambda x: executable.run(x=x)[0]


def measure(model_name, path, shapes, runs):
    """[(shape, {variant: median seconds})]: the model compiled once with its symbolic shape,
    and once per shape specialized to it, next to ONNX Runtime."""
    import numpy as np

    import kiln
    import kiln.frontend

    symbolic = kiln.build(kiln.frontend.from_onnx(path))
    ort = ort_peer.call(path)
    rows = []
    for shape in shapes:
        static = kiln.build(kiln.frontend.from_onnx(path, shapes={"x": list(shape)}))
        calls = {"Kiln, symbolic": kiln_call(symbolic), "Kiln, static": kiln_call(static),
                 "ONNX Runtime": ort}
        x = np.random.default_rng(sum(shape)).standard_normal(shape).astype("float32")
        harness.check_agree(calls, x, rtol=RTOL, atol=ATOL)
        medians = harness.timed_phase(f"{model_name} at {shape}",
                                      lambda: harness.interleaved(calls, x, runs),
                                      in_process=True)
        rows.append((shape, medians))
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

    plan = harness.timed_phase(f"{model_name} planning", run, in_process=True)
    return plan["planning_seconds"] / plan["plans_made"] * 1e3, plan["plans_made"]


def write_chart(path, sweep):
    """Median milliseconds per sequence length, one line per variant (log-log axes); said and
    skipped when matplotlib is missing (Debian: python3-matplotlib)."""
    try:
        import matplotlib
    except ImportError:
        log(f"matplotlib is not installed (apt-get install python3-matplotlib): no {CHART}")
        return

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.2))
    seqs = [shape[1] for shape, _ in sweep]
    for variant in ("Kiln, symbolic", "Kiln, static", "ONNX Runtime"):
        axes.plot(seqs, [medians[variant] * 1e3 for _, medians in sweep], marker="o",
                  label=variant)
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xticks(seqs, [str(seq) for seq in seqs])
    axes.set_xlabel("sequence length (batch 1)")
    axes.set_ylabel("median ms per run (lower is faster)")
    axes.set_title(f"{ENCODER}: compiled once for any length vs per length vs ONNX Runtime",
                   fontsize=10)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(figure)
    log(f"wrote {CHART}")


def render(results, sweep, planning, args, command):
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
        for shape, medians in rows:
            lines.append(f"| {model} | {shape[0]} | " + _cells(medians))
    if sweep:
        lines += ["", f"Sequence sweep: {ENCODER} (tests/models: 4 post-norm layers, d_model "
                  "256, 4 heads) exported with dynamic batch and sequence axes, at batch 1; "
                  "*Kiln, static* is compiled per length.", "",
                  "| sequence length | Kiln, symbolic (ms) | Kiln, static (ms) | "
                  "symbolic / static | ONNX Runtime (ms) | Kiln, symbolic / ONNX Runtime |",
                  "|---:|---:|---:|---:|---:|---:|"]
        for shape, medians in sweep:
            ratio = medians["Kiln, symbolic"] / medians["ONNX Runtime"]
            lines.append(f"| {shape[1]} | " + _cells(medians).rstrip() + f" {ratio:.3f} |")
        lines += ["", f"![{ENCODER} by sequence length]({CHART})"]
    lines += ["", "First call at a new batch: the time the executor spent evaluating every "
              "tensor's shape and planning its memory (its own clock, "
              "`memory_plan()[\"planning_seconds\"]`), per new shape, over batches "
              f"{PLANNING_BATCHES.start}-{PLANNING_BATCHES.stop - 1}:", "",
              "| model | plans | planning per new shape (ms) |", "|---|---:|---:|"]
    for model, (per_plan_ms, plans) in planning.items():
        lines.append(f"| {model} | {plans} | {per_plan_ms:.3f} |")
    return "\n".join(lines) + "\n"


def _cells(medians):
    """The symbolic, static, ratio and ORT cells of a table row."""
    sym = medians["Kiln, symbolic"] * 1e3
    sta = medians["Kiln, static"] * 1e3
    ort = medians["ONNX Runtime"] * 1e3
    return f"{sym:.2f} | {sta:.2f} | {sym / sta:.3f} | {ort:.2f} |"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    ort_peer.enter_venv(args.build_dir, __file__, argv)
    directory = os.path.join(args.build_dir, "bench-symbolic")
    paths = {model: export(model, directory) for model in args.models}
    results = {model: measure(model, paths[model], [(b, 3, 224, 224) for b in args.batches],
                              args.runs)
               for model in args.models}
    sweep = []
    if args.seqs:
        sweep = measure(ENCODER, export(ENCODER, directory),
                        [(1, seq, 256) for seq in args.seqs], args.runs)
    planning = {model: measure_planning(model, paths[model]) for model in args.models}
    command = " ".join(["/usr/bin/python3", "bench/symbolic/run.py"] +
                       [shlex.quote(a) for a in argv])
    harness.publish_section(args.output, render(results, sweep, planning, args, command),
                            SECTION)
    if sweep and args.output:
        write_chart(os.path.join(os.path.dirname(args.output), CHART), sweep)
    return 0


if __name__ == "__main__":
    sys.exit(main())

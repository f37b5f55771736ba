#!/usr/bin/python3
"""Generated fused kernels against today's path, and against the bandwidth of a plain copy.

    /usr/bin/python3 bench/fused/run.py [--runs 50] [--quick] [--build-dir build]
                                        [--output docs/benchmarks.md]

1. Imports kiln from <build-dir>/python (build it first: scripts/setup.sh or cmake --build).
2. Per workload (memory-bound groups at the shapes of the reference transformer and CNN):
   today's path, the graph as the ONNX importer writes it (nn.softmax, nn.layer_norm and
   nn.gelu are hand-written kernels; add/add/relu one kernel each), built by kiln.build; and
   the same computation written with core elementwise, broadcast and reduction ops, built with
   generated_kernels=True, so FuseOps groups it and each group runs as one generated C
   function. Both must agree (rtol 1e-4) before anything is timed, and the generated build
   must have lowered every group.
3. A plain copy of the workload's bytes (numpy.copyto of its largest tensor, read once and
   written once) gives the bandwidth the same run reaches; a workload's bandwidth is the bytes
   of its inputs and outputs over its median time.
4. The three take turns run by run (order reversed every run), --runs times each after an
   untimed call; figures are medians. Refuses a busy machine (bench/common/harness.py).
   Replaces the "Generated fused kernels" section of docs/benchmarks.md (--quick: 5 runs, only
   a warning on a busy machine, no file unless --output).
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

harness.set_name("fused")

SECTION = "Generated fused kernels"

# (name, shapes of the inputs, today's graph, the graph whose groups are generated)
WORKLOADS = [
    ("softmax, attention scores (12*128, 128)", {"x": (1536, 128)},
     "nn.softmax(%x, axis=-1)",
     "%0 = exp(subtract(%x, max(%x, axis=[1], keepdims=true)));\n"
     "divide(%0, sum(%0, axis=[1], keepdims=true))"),
    ("layer norm (128, 768)", {"x": (128, 768), "g": (768,), "b": (768,)},
     "nn.layer_norm(%x, %g, %b, epsilon=1e-05)",
     "%0 = subtract(%x, mean(%x, axis=[1], keepdims=true));\n"
     "%1 = mean(multiply(%0, %0), axis=[1], keepdims=true);\n"
     "add(multiply(divide(%0, sqrt(add(%1, const(float32, (), [1e-05])))), %g), %b)"),
    ("GELU (128, 3072)", {"x": (128, 3072)}, "nn.gelu(%x)",
     "%0 = erf(multiply(%x, const(float32, (), [0.70710678])));\n"
     "multiply(multiply(%x, const(float32, (), [0.5])), add(%0, const(float32, (), [1])))"),
    ("bias + residual + relu (1, 64, 56, 56)",
     {"x": (1, 64, 56, 56), "bias": (64, 1, 1), "r": (1, 64, 56, 56)},
     "nn.relu(add(add(%x, %bias), %r))", "nn.relu(add(add(%x, %bias), %r))"),
    ("bias + residual + relu (8, 512, 7, 7)",
     {"x": (8, 512, 7, 7), "bias": (512, 1, 1), "r": (8, 512, 7, 7)},
     "nn.relu(add(add(%x, %bias), %r))", "nn.relu(add(add(%x, %bias), %r))"),
]


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    return harness.parse_benchmark_args(parser, argv, runs=50, quick_runs=5)


def module_text(shapes, body):
    params = ", ".join(f"%{name}: Tensor[({', '.join(map(str, shape))}), float32]"
                       for name, shape in shapes.items())
    return f"def @main({params}) {{\n{body}\n}}"


def generated_names(module):
    names = [n for n in (module.functions or []) if n.startswith("tir_")]
    for child in module.imports:
        names += generated_names(child)
    return names


def interleaved(calls, runs):
    """{variant: median seconds}: the variants take turns, order reversed every run."""
    times = {name: [] for name in calls}
    names = list(calls)
    for name in names:
        calls[name]()
    for run in range(runs):
        for name in (names if run % 2 == 0 else names[::-1]):
            start = time.perf_counter()
            calls[name]()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def measure(workload, runs):
    import numpy as np

    import kiln
    import kiln.ir

    name, shapes, today_body, generated_body = workload
    rng = np.random.default_rng(0)
    feed = {k: rng.standard_normal(s).astype("float32") for k, s in shapes.items()}
    today = kiln.build(kiln.ir.ParseModule(module_text(shapes, today_body), []))
    generated = kiln.build(kiln.ir.ParseModule(module_text(shapes, generated_body), []),
                           generated_kernels=True)
    if not generated_names(generated.module):
        harness.fail(f"{name}: no group was generated")
    (want,), (got,) = today.run(**feed), generated.run(**feed)
    if not np.allclose(got, want, rtol=1e-4, atol=1e-5):
        harness.fail(f"{name}: the generated kernels disagree with today's path")
    largest = max(feed.values(), key=lambda a: a.nbytes)
    copy_target = np.empty_like(largest)
    moved = sum(a.nbytes for a in feed.values()) + want.nbytes
    calls = {"today": lambda: today.run(**feed),
             "generated": lambda: generated.run(**feed),
             "copy": lambda: np.copyto(copy_target, largest)}
    medians = harness.timed_phase(name, lambda: interleaved(calls, runs), in_process=True)
    return {"name": name, "today": medians["today"], "generated": medians["generated"],
            "gb_s": moved / medians["generated"] / 1e9,
            "copy_gb_s": 2 * largest.nbytes / medians["copy"] / 1e9}


def section(results, runs):
    command = shlex.join(["/usr/bin/python3", "bench/fused/run.py", *sys.argv[1:]])
    lines = [
        f"## {SECTION}", "",
        f"{harness.cpu_model()} ({os.cpu_count()} cores), {runs} interleaved runs per variant, "
        "medians. Today's path is what the ONNX importer writes (hand-written kernels); "
        "generated is the same computation in core ops built with "
        "`kiln.build(..., generated_kernels=True)`, each fused group one generated C function "
        "(docs/design.md §24). Bandwidth: bytes of the inputs and outputs over the median time; "
        "copy: numpy.copyto of the largest tensor in the same run. Command:", "",
        f"    {command}", "",
        "| workload | today (ms) | generated (ms) | today / generated | generated GB/s | "
        "copy GB/s | % of copy |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['name']} | {r['today'] * 1e3:.3f} | {r['generated'] * 1e3:.3f} | "
            f"{r['today'] / r['generated']:.2f} | {r['gb_s']:.1f} | {r['copy_gb_s']:.1f} | "
            f"{100 * r['gb_s'] / r['copy_gb_s']:.0f}% |")
    return "\n".join(lines) + "\n"


def main(argv):
    args = parse_args(argv)
    sys.path.insert(0, os.path.join(os.path.abspath(args.build_dir), "python"))
    if not args.quick:
        harness.wait_until_idle("the fused-kernel benchmark")
    results = [measure(w, args.runs) for w in WORKLOADS]
    harness.publish_section(args.output, section(results, args.runs), SECTION)


if __name__ == "__main__":
    main(sys.argv[1:])

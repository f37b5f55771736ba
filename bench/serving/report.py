"""The "Serving: one model, many client threads" section of docs/benchmarks.md, from the
results of bench/serving/run.py: {model: {"cells": {(variant, clients): {"rps", "p50", "p99"}},
"contexts", "max_abs_diff": {variant: float}}}."""

import datetime
import os
import platform
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import harness  # noqa: E402  (bench/common/harness.py: cpu_model)
from harness import IDLE_LIMIT_CORES, REPO  # noqa: E402

SECTION = "Serving: one model, many client threads"


def render(results, args, command, opset, rtol, atol):
    """The section's markdown; `opset`, `rtol` and `atol` are the ones run.py used."""
    import kiln
    import numpy as np
    import onnxruntime

    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rows = []
    for model, result in results.items():
        variants = sorted({v for v, _ in result["cells"]}, key=lambda v: (v == "ORT", v))
        for clients in args.clients:
            peer = result["cells"][("ORT", clients)]
            for variant in variants:
                cell = result["cells"][(variant, clients)]
                ratio = "" if variant == "ORT" else f"{cell['rps'] / peer['rps']:.2f}×"
                rows.append(f"| {model} | {clients} | {variant} | {cell['rps']:.1f} | {ratio} | "
                            f"{cell['p50']:.2f} | {cell['p99']:.2f} |")
    contexts = ", ".join(f"{m} {r['contexts']}" for m, r in results.items())
    diffs = "; ".join(f"{m}: " + ", ".join(f"{v} {d:.1e}" for v, d in r["max_abs_diff"].items())
                      for m, r in results.items())
    quick = ("\n- **A --quick smoke run: short cells, one round, and the machine was not "
             "required to be idle. Not for reporting.**" if args.quick else "")
    spin = 1 if args.ort_allow_spinning else 0
    table = "\n".join(rows)
    return f"""## {SECTION}

Throughput and latency of one loaded model serving several client threads at once, each
sending batch-1 requests back to back, in one process: Kiln's `Executable.run` next to ONNX
Runtime's `InferenceSession.run` on one session, both called concurrently on one shared model.

- Machine: {harness.cpu_model()}, {os.cpu_count()} CPUs; Linux {platform.release()}
- Build: Kiln {harness.build_type(args.build_dir)}
  (`{os.path.relpath(args.build_dir, REPO)}`); ONNX Runtime {onnxruntime.__version__} (PyPI, in
  `<build-dir>/bench-venv`); numpy {np.__version__};
  Python {platform.python_version()}; {date}
- Command: `{command}` (source: `bench/serving/`){quick}
- Method: per model and client count C ({", ".join(map(str, args.clients))}), C threads, each
  with its own random input, call `run` back to back on the one loaded model:
  {args.warmup_seconds:g} s untimed, then {args.seconds:g} s timed. req/s: requests finished over
  the wall time until the last thread stopped; p50, p99: latency in ms over all the cell's
  requests. The variants take turns cell by cell (their order reverses every cell),
  {args.rounds} round(s) of all cells; each figure is the median over the rounds. Timing
  starts only when the rest of the machine uses under {IDLE_LIMIT_CORES:.0%} of a core, and a
  cell during which it used more is timed again.
- Kiln: `kiln.build(kiln.frontend.from_onnx(model))` (opset {opset}, the default CPU path;
  Kiln + dnnl: `plugins=["dnnl"]`, whose regions run a call alone on oneDNN's threads, as many
  as Kiln's pool has, and overlapping calls on one thread each, at most one per pool thread at
  once),
  {kiln.runtime.num_threads()} threads in Kiln's pool (a run that finds the pool busy runs its
  parallel regions on its own thread); no `max_concurrent_runs` limit, so each concurrent run
  has an execution context of its own. Execution contexts after the run: {contexts}.
- ONNX Runtime: one `InferenceSession`, `CPUExecutionProvider`, `ORT_ENABLE_ALL`,
  `intra_op_num_threads` = {os.cpu_count()} (the cores), `ORT_SEQUENTIAL` with
  `inter_op_num_threads` = 1, `session.intra_op.allow_spinning` = {spin} (and inter_op);
  concurrent `run` calls share the session's intra-op pool.
- Outputs agree before timing (rtol {rtol}, atol {atol}); max abs difference from ORT's:
  {diffs}.

| model | clients | variant | req/s | req/s / ORT's | p50 (ms) | p99 (ms) |
|---|---:|---|---:|---:|---:|---:|
{table}

req/s / ORT's: above 1, the variant serves more requests than ONNX Runtime with as many client
threads.
"""

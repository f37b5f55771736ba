#!/usr/bin/python3
"""Serving on the CPU: one loaded model, many client threads, Kiln next to ONNX Runtime.

    /usr/bin/python3 bench/serving/run.py [--models M ...] [--clients 1 2 4] [--seconds 4]
                                          [--rounds 3] [--quick] [--build-dir build]

1. Re-executes itself with the python of <build-dir>/bench-venv, a venv that has onnxruntime
   from PyPI next to Debian's packages (made on first use: bench/common/peer_venv.py), and
   imports kiln from <build-dir>/python.
2. Makes the reference models of tests/models/make_reference_models.py (opset 17) in
   <build-dir>/models unless they are up to date, as bench/models does.
3. Per model, in this one process: compiles it once with kiln.build(kiln.frontend.from_onnx())
   (Kiln's default CPU path), again with the dnnl plugin when it is built (Kiln + dnnl; a call
   alone runs on every thread, overlapping calls on one thread each), and opens one ONNX Runtime
   session
   (ort_session() lists every setting; its idle threads sleep,
   `session.intra_op.allow_spinning` = 0, so threads left spinning after an ORT cell do not take
   the cores of the next Kiln cell). Every variant must agree with ORT on one input (rtol 1e-3)
   before anything is timed: a fast wrong answer is no result.
4. A cell is one runtime serving C client threads: each thread has its own random input
   (seeded per thread) and calls run() back to back on the shared model, --warmup-seconds
   untimed (Kiln makes its execution contexts then), then --seconds timing every request.
   Requests/s is the requests finished over the wall time from the common start until the
   last thread stops; p50 and p99 are over all the cell's requests.
5. The variants take turns cell by cell, their order reversing every cell, and --rounds
   rounds repeat all cells, so a slow spell of the machine hits both; each figure reported is
   the median over the rounds; Kiln/ORT is the ratio of the median requests/s.
6. Refuses a busy machine: before each cell it waits (up to 60 s) until other processes use
   under 15% of a core (bench/common/harness.py), and a cell during which they used more is
   timed again (3 attempts). The cells run in this process, so "other" is the machine's busy
   time less this process's CPU time (harness.others_busy_during subtracts children only).
   --quick only warns.
7. Replaces the "Serving: one model, many client threads" section of docs/benchmarks.md
   (harness.write_section). --quick writes no file unless --output is given.
"""

import argparse
import os
import resource
import shlex
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
import harness  # noqa: E402  (bench/common/harness.py: idle checks, doc sections)
import ort_peer  # noqa: E402  (bench/common/ort_peer.py: the peer and its venv)
from harness import IDLE_LIMIT_CORES, REPO, log  # noqa: E402
from report import SECTION, render  # noqa: E402  (bench/serving/report.py: the document)

harness.set_name("serving")

OPSET = 17
SEED = 0
ATTEMPTS = 3
MIN_ROUNDS = 3
RTOL, ATOL = 1e-3, 1e-4
DNNL = "Kiln + dnnl"  # the variant with the dnnl plugin, when it is built
QUICK = {"seconds": 1.0, "warmup_seconds": 0.3, "rounds": 1}


# ---- the two runtimes -----------------------------------------------------------------------


def kiln_model(path, plugins=()):
    """(the Executable, a call taking one input and returning the first output); None when a
    plugin of `plugins` is not built."""
    import kiln
    import kiln.frontend

    try:
        executable = kiln.build(kiln.frontend.from_onnx(path), plugins=list(plugins))
    except kiln.KilnError as error:
        if not plugins or "plugin" not in str(error):
            raise
        log(f"no Kiln + {', '.join(plugins)} variant: {str(error).splitlines()[0]}")
        return None
    return executable, lambda x: executable.run(input=x)[0]


def ort_session(path, threads, allow_spinning):
    """(the session, a call like kiln_model's). Every setting is spelled out, not defaulted, so
    the doc says what was run."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL  # the inter-op pool stays unused
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    spin = "1" if allow_spinning else "0"
    options.add_session_config_entry("session.intra_op.allow_spinning", spin)
    options.add_session_config_entry("session.inter_op.allow_spinning", spin)
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    return session, lambda x: session.run(None, {name: x})[0]


# ---- one cell: C client threads on one model ------------------------------------------------


def serve(call, inputs, seconds):
    """One thread per input calls call(input) back to back for `seconds`, all starting at
    once; returns (requests/s, every request's latency in ms)."""
    import numpy as np

    latencies = [[] for _ in inputs]
    errors = []
    start_line = threading.Barrier(len(inputs) + 1)
    deadline = [0.0]

    def client(x, times):
        try:
            start_line.wait()
            while True:
                begin = time.perf_counter()
                call(x)
                end = time.perf_counter()
                times.append(end - begin)
                if end >= deadline[0]:
                    return
        except Exception as error:  # noqa: BLE001  (re-raised by the main thread)
            errors.append(error)

    threads = [threading.Thread(target=client, args=(x, times))
               for x, times in zip(inputs, latencies)]
    for thread in threads:
        thread.start()
    start = time.perf_counter()
    deadline[0] = start + seconds
    start_line.wait()  # the barrier publishes deadline[0] to the clients
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    if errors:
        raise errors[0]
    every = np.concatenate([np.asarray(t) for t in latencies]) * 1e3
    return every.size / wall, every


def cpu_snapshot():
    """(machine busy jiffies, this process's CPU seconds, wall time)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)  # every thread of this process
    return harness.read_cpu_times()[0], usage.ru_utime + usage.ru_stime, time.monotonic()


def others_busy_cores(begin, end):
    """Cores' worth of CPU that other processes used between two cpu_snapshot()s."""
    others = (end[0] - begin[0]) / os.sysconf("SC_CLK_TCK") - (end[1] - begin[1])
    return max(0.0, others) / max(end[2] - begin[2], 1e-9)


def timed_cell(what, call, inputs, args):
    """{"rps", "p50", "p99"} of one cell, timed while nothing else ran (--quick: warns)."""
    import numpy as np

    for attempt in range(1, ATTEMPTS + 1):
        if not args.quick:
            harness.wait_until_idle(what)
        serve(call, inputs, args.warmup_seconds)
        begin = cpu_snapshot()
        rps, latencies = serve(call, inputs, args.seconds)
        others = others_busy_cores(begin, cpu_snapshot())
        p50, p99 = np.percentile(latencies, [50, 99])
        log(f"{what}: {rps:.1f} req/s, p50 {p50:.2f} ms, p99 {p99:.2f} ms")
        if others <= IDLE_LIMIT_CORES or args.quick:
            if others > IDLE_LIMIT_CORES:
                log(f"WARNING: other processes used {others:.0%} of a core during {what}")
            return {"rps": rps, "p50": p50, "p99": p99}
        log(f"other processes used {others:.0%} of a core during {what} "
            f"(attempt {attempt}/{ATTEMPTS}); timing it again")
    harness.fail(f"refusing to report {what}: the machine never stayed quiet through it "
                 f"({ATTEMPTS} attempts). Run again when no build or test is running.")


def measure_model(model, args, generator):
    """{"cells": {(variant, clients): median figures}, "contexts", "max_abs_diff"}."""
    import numpy as np

    path = generator.onnx_path(args.models_dir, model, OPSET)
    executable, kiln_call = kiln_model(path)
    _, ort_call = ort_session(path, os.cpu_count(), args.ort_allow_spinning)
    calls = {"Kiln": kiln_call, "ORT": ort_call}
    with_dnnl = kiln_model(path, ["dnnl"])
    if with_dnnl is not None:
        calls[DNNL] = with_dnnl[1]
    shape = generator.MODELS[model][1]
    inputs = [np.random.default_rng(SEED + i).standard_normal(shape, dtype=np.float32)
              for i in range(max(args.clients))]
    theirs = ort_call(inputs[0])
    diffs = {}
    for variant, call in calls.items():
        ours = call(inputs[0])
        diffs[variant] = float(np.max(np.abs(ours - theirs)))
        if not np.allclose(ours, theirs, rtol=RTOL, atol=ATOL):
            harness.fail(f"{model}: {variant} and ONNX Runtime disagree (max abs difference "
                         f"{diffs[variant]:.3g}, rtol {RTOL}, atol {ATOL})")
    runs = {}
    order = list(calls)
    for round_index in range(args.rounds):
        for clients in args.clients:
            order.reverse()  # whoever went second goes first in the next cell
            for variant in order:
                what = f"{model}, {variant}, {clients} client(s), round {round_index + 1}"
                runs.setdefault((variant, clients), []).append(
                    timed_cell(what, calls[variant], inputs[:clients], args))
    cells = {key: {figure: float(np.median([r[figure] for r in rounds]))
                   for figure in ("rps", "p50", "p99")}
             for key, rounds in runs.items()}
    return {"cells": cells, "contexts": executable.limits["contexts"],
            "max_abs_diff": {v: d for v, d in diffs.items() if v != "ORT"}}


# ---- command line ---------------------------------------------------------------------------


def parse_args(argv, models):
    parser = argparse.ArgumentParser(
        description="Serve one loaded model to 1, 2 and 4 client threads with Kiln (and Kiln "
                    "+ dnnl) and with "
                    f"ONNX Runtime, interleaved, and write the '{SECTION}' section of "
                    "docs/benchmarks.md.",
        epilog="Run it when no build or test is running: it refuses a busy machine. "
               "Models: " + ", ".join(models))
    parser.add_argument("--models", nargs="+", choices=models, metavar="MODEL",
                        default=["resnet18", "bert_encoder"],
                        help="models to serve (default: resnet18 bert_encoder)")
    parser.add_argument("--clients", nargs="+", type=int, default=[1, 2, 4], metavar="C",
                        help="client thread counts (default: 1 2 4)")
    parser.add_argument("--seconds", type=float, default=4.0, help="timed seconds per cell")
    parser.add_argument("--warmup-seconds", type=float, default=1.0,
                        help="untimed seconds before each cell (default 1)")
    parser.add_argument("--rounds", type=int, default=MIN_ROUNDS,
                        help=f"rounds of all cells, median reported (at least {MIN_ROUNDS})")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: {seconds:g} s cells after {warmup_seconds:g} s, "
                             "{rounds} round; warns instead of refusing a busy machine; writes "
                             "no file unless --output is given".format(**QUICK))
    parser.add_argument("--ort-allow-spinning", action="store_true",
                        help="let ONNX Runtime's idle threads spin (default: they sleep)")
    parser.add_argument("--build-dir", default=os.path.join(REPO, "build"),
                        help="built Kiln tree whose python/ is imported; also holds models/ "
                             "and bench-venv/ (default: build)")
    parser.add_argument("--models-dir", default=None,
                        help="where the reference models are made (default: <build-dir>/models)")
    parser.add_argument("--output", default=None,
                        help="markdown file to update (default: docs/benchmarks.md; none with "
                             "--quick)")
    args = parser.parse_args(argv)
    if args.quick:
        vars(args).update(QUICK)
    elif args.rounds < MIN_ROUNDS:
        parser.error(f"--rounds must be at least {MIN_ROUNDS} (use --quick for a smoke run)")
    if min(args.clients) < 1 or args.seconds <= 0 or args.warmup_seconds < 0:
        parser.error("--clients and --seconds must be positive, --warmup-seconds not negative")
    args.build_dir = os.path.abspath(args.build_dir)
    args.models_dir = os.path.abspath(args.models_dir or os.path.join(args.build_dir, "models"))
    if args.output is None and not args.quick:
        args.output = os.path.join(REPO, "docs", "benchmarks.md")
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    generator = harness.load_model_generator()
    args = parse_args(argv, list(generator.MODELS))
    harness.use_build_plugins(args.build_dir)
    ort_peer.enter_venv(args.build_dir, __file__, argv)

    log(f"reference models in {args.models_dir}")
    subprocess.run([harness.PYTHON, harness.MODEL_GENERATOR, args.models_dir,
                    "--models", *args.models,
                    "--opsets", str(OPSET)], check=True)
    results = {model: measure_model(model, args, generator) for model in args.models}
    command = " ".join(["/usr/bin/python3", "bench/serving/run.py"] +
                       [shlex.quote(a) for a in argv])
    section = render(results, args, command, OPSET, RTOL, ATOL)
    harness.publish_section(args.output, section, SECTION)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Reference models on the CPU: Kiln against ONNX Runtime, PyTorch and TVM, the one command.

    /usr/bin/python3 bench/models/run.py [--models M ...] [--threads 1 2] [--runs 30] [--quick]

1. Makes the reference models of tests/models/make_reference_models.py (random weights, seed 0,
   batch 1; the five the tests run, and its WIDER_MODELS: seven more torchvision CNN families
   and a ViT, an NLP encoder and a decoder from the `transformers` package, which the bench
   venv holds) in <build-dir>/models unless they are up to date, and counts each model's FLOPs
   once: 2 x the multiply-adds of its convolutions, linear layers and attention matmuls, from
   forward hooks (elementwise ops, pooling and normalization are not counted). Both run on
   Debian's PyTorch 1.13, in <build-dir>/bench-venv; everything else runs in
   <build-dir>/bench-venv-peers, the peers' own stack (bench/models/peers.py), which the script
   makes on first use and re-executes itself in.
2. Measures, before any model is timed, the peak fp32 throughput at 1 thread, at each thread
   count and at one thread per core (kiln_peak_flops, bench/common/peak.py), and Kiln's
   start-up: `import kiln`, then plugin and backend discovery (bench/models/footprint.py).
3. For each thread count, and each model, starts one worker process. Kiln reads
   KILN_NUM_THREADS once, when its thread pool first starts (src/runtime/thread_pool.cc), so a
   process cannot switch thread counts; the worker gets KILN_NUM_THREADS=N in its environment
   and calls torch.set_num_threads(N), and checks that both took effect.
4. The worker compiles the ONNX model (--opset) with kiln.build twice: the default CPU path,
   and with each BYOC plugin of --plugins (default: dnnl, when the build has it), placed by
   --placement (default measured: a region goes to the plugin only where it ran faster there
   when measured at build time, docs/design.md §26; the costs are measured afresh in each run
   of the script, cached in <build-dir>/bench-placement-cache; its placement report is kept
   in the notes), opens the same file in ONNX Runtime (bench/common/ort_peer.py,
   the pinned onnxruntime from PyPI) and in TVM (compiled without tuning), and prepares, with
   PyTorch 2.x from PyPI, eager (under no_grad), torch.jit.freeze(torch.jit.script(model)),
   torch.jit.optimize_for_inference(torch.jit.script(model)) (torch.jit.trace where scripting
   fails) and torch.compile(model); checks every variant's output against the stored reference
   (PyTorch in float64); warms each up; then times them interleaved round-robin (the starting
   variant rotates each round), so a slow spell of the machine hits all of them alike. TVM,
   whose untuned kernels take seconds, joins the first peers.TVM_ROUNDS rounds only.
5. Refuses a busy machine: before each worker (and the peak, and the start-up) it waits (up to
   60 s) until other processes use under 15% of a core (/proc/stat); a worker whose timed
   rounds overlapped more than that from other processes is run again (3 attempts), never
   reported. --quick only warns.
6. Measures each model's footprint in fresh processes: peak RSS of compile and of inference,
   artifact size (bench/models/footprint.py); memory needs no idle machine.
7. Replaces the "Reference models: Kiln vs ONNX Runtime, PyTorch and TVM on the CPU" section of
   docs/benchmarks.md (other sections are kept; bench/models/report.py writes it) and draws the
   ratios in docs/benchmarks_models.png (bench/models/chart.py, with the peers' venv's
   matplotlib). --quick writes no file unless --output is given.
"""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
import harness  # noqa: E402  (bench/common/harness.py: idle checks, build, doc sections)
import ort_peer  # noqa: E402  (bench/common/ort_peer.py: the ONNX Runtime session)
import peak  # noqa: E402  (bench/common/peak.py: measured peak fp32 throughput)
from harness import IDLE_LIMIT_CORES, REPO, log  # noqa: E402

import chart  # noqa: E402  (bench/models/chart.py: the ratios' PNG)
import footprint  # noqa: E402  (bench/models/footprint.py: memory, artifact size, start-up)
import peers  # noqa: E402  (bench/models/peers.py: PyTorch 2.x and TVM, in their venv)
from report import (  # noqa: E402  (bench/models/report.py: the document)
    CHART, KILN, ORT, SECTION, TVM, VARIANT_TITLES, kiln_variants, merge_placements,
    plugin_variant, ratios_to, render)

harness.set_name("models")

RESULT_PREFIX = "RESULT "
MIN_RUNS = 30
QUICK_RUNS, QUICK_WARMUP = 3, 1
ATTEMPTS = 3


# ---- FLOPs ----------------------------------------------------------------------------------


def count_flops(model, x):
    """2 x multiply-adds of Conv2d, Linear (and transformers' Conv1D, GPT-2's linear layer) and
    MultiheadAttention in one forward pass. The attention products of transformers' models are
    functions, not modules, and go uncounted.

    Runs with gradients enabled: under no_grad, TransformerEncoder's fused fast path bypasses
    the modules whose hooks count. MultiheadAttention calls its output projection functionally,
    so it is counted by the attention hook, never twice."""
    import torch

    macs = [0]

    def conv(module, inputs, output):
        macs[0] += output.numel() * module.weight[0].numel()

    def linear(module, inputs, output):
        macs[0] += output.numel() * module.in_features

    def conv1d(module, inputs, output):  # transformers' Conv1D: weight (in, out)
        macs[0] += output.numel() * module.weight.shape[0]

    def attention(module, inputs, output):
        # A hook sees positional arguments only; torchvision's ViT passes query=x, key=x,
        # value=x by keyword, self-attention, whose query and key are shaped as the output.
        query, key = (inputs[0], inputs[1]) if len(inputs) >= 2 else (output[0], output[0])
        if not module.batch_first:
            query, key = query.transpose(0, 1), key.transpose(0, 1)
        batch, target, embed = query.shape
        source = key.shape[1]
        projections = 4 * batch * target * embed * embed  # q, k, v in; out
        macs[0] += projections + 2 * batch * target * source * embed  # Q K^T and A V

    hooks = []
    for module in model.modules():
        for kind, hook in ((torch.nn.Conv2d, conv), (torch.nn.Linear, linear),
                           (torch.nn.MultiheadAttention, attention)):
            if isinstance(module, kind):
                hooks.append(module.register_forward_hook(hook))
        if type(module).__name__ == "Conv1D" and hasattr(module, "nf"):
            hooks.append(module.register_forward_hook(conv1d))
    try:
        with torch.enable_grad():
            model(x)
    finally:
        for hook in hooks:
            hook.remove()
    return 2 * macs[0]


# ---- the worker: one model, one thread count ------------------------------------------------


def make_pytorch_variants(model, example):
    """{variant: (callable, how it was made)} and {variant: error} for those that failed."""
    import torch

    def scripted():
        try:
            return torch.jit.script(model), "script"
        except Exception:  # noqa: BLE001  (any scripting failure: fall back to tracing)
            with torch.no_grad():
                return torch.jit.trace(model, (example,)), "trace"

    makers = {
        "eager": lambda: (model, "eager, no_grad"),
        "jit_freeze": lambda: (lambda s: (torch.jit.freeze(s[0]), s[1]))(scripted()),
        "optimize_for_inference":
            lambda: (lambda s: (torch.jit.optimize_for_inference(s[0]), s[1]))(scripted()),
        "torch_compile":
            lambda: (peers.torch_compiled(model, example), "torch.compile, Inductor"),
    }
    variants, errors = {}, {}
    for name, make in makers.items():
        try:
            module, how = make()
        except Exception as error:  # noqa: BLE001  (reported in the table)
            errors[name] = f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
            continue

        def run(module=module):
            with torch.no_grad():
                return module(example)

        variants[name] = (run, how)
    return variants, errors


def make_kiln_variant(onnx_path, x, plugins=(), placement="greedy"):
    """(callable, compile seconds, placement report) for the model compiled by kiln.build,
    with the BYOC `plugins` when given, placed by `placement` (docs/design.md §26)."""
    import contextlib
    import io

    import kiln
    import kiln.frontend

    start = time.monotonic()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        executable = kiln.build(kiln.frontend.from_onnx(onnx_path), plugins=list(plugins),
                                report=bool(plugins), placement=placement)
    compile_s = time.monotonic() - start
    return (lambda: executable.run(input=x)), compile_s, printed.getvalue()


def others_busy_cores(begin, end):
    """Cores' worth of CPU that processes other than this one used between two snapshots of
    (busy jiffies, own CPU seconds, wall time)."""
    hz = os.sysconf("SC_CLK_TCK")
    wall = max(end[2] - begin[2], 1e-9)
    others = (end[0] - begin[0]) / hz - (end[1] - begin[1])
    return max(0.0, others) / wall


def cpu_snapshot():
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)  # every thread of this process
    return harness.read_cpu_times()[0], usage.ru_utime + usage.ru_stime, time.monotonic()


def time_round_robin(variants, runs, warmup, capped=None):
    """{variant: [ms, ...]}: `warmup` untimed calls each, then `runs` rounds calling every
    variant once, the first of each round rotating. A variant in `capped` ({variant: rounds})
    gets one warm-up call and is timed in that many rounds only, the first ones."""
    capped = capped or {}
    names = list(variants)
    for name in names:
        for _ in range(min(warmup, 1) if name in capped else warmup):
            variants[name]()
    times = {name: [] for name in names}
    for round_index in range(runs):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            if len(times[name]) >= capped.get(name, runs):
                continue
            start = time.perf_counter()
            variants[name]()
            times[name].append((time.perf_counter() - start) * 1e3)
    return times


def output_array(output):
    """The one output of a variant as numpy: Kiln returns a list of arrays, PyTorch a tensor,
    ONNX Runtime an array."""
    if isinstance(output, list):
        return output[0]
    return output if hasattr(output, "dtype") and not hasattr(output, "numpy") else output.numpy()


def worker(spec):
    """Times one model at one thread count; returns a JSON-able dict."""
    import numpy as np
    import torch

    threads = spec["threads"]
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    generator = harness.load_model_generator()
    model = generator.build_model(spec["model"])
    x = generator.make_input(spec["model"])
    example = torch.from_numpy(x)
    result = {"errors": {}, "how": {}}

    import kiln

    kiln_threads = kiln.runtime.num_threads()
    if kiln_threads != threads or torch.get_num_threads() != threads:
        raise RuntimeError(f"asked for {threads} threads, got Kiln {kiln_threads}, "
                           f"PyTorch {torch.get_num_threads()}")
    variants = {}
    result["compile_s"], result["placement"] = {}, {}
    for plugins in [[]] + [[p] for p in spec["plugins"]]:
        name = plugin_variant(plugins[0]) if plugins else KILN
        try:
            variants[name], result["compile_s"][name], report = make_kiln_variant(
                spec["onnx_path"], x, plugins, spec["placement"])
            result["how"][name] = (f"kiln.build(plugins={plugins}, placement="
                                   f"{spec['placement']!r}), ONNX opset {spec['opset']}")
            if report:
                result["placement"][name] = report
        except Exception as error:  # noqa: BLE001  (reported in the table; others still timed)
            result["errors"][name] = f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
    try:
        ort_call = ort_peer.call(spec["onnx_path"], input_name="input", threads=threads)
        variants[ORT] = lambda: ort_call(x)
        result["how"][ORT] = "onnxruntime.InferenceSession, CPUExecutionProvider"
    except Exception as error:  # noqa: BLE001  (reported in the table; others still timed)
        result["errors"][ORT] = f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
    if not spec["omp_bind"]:  # TVM runs its own pool, which OpenMP's binding does not touch
        try:
            variants[TVM] = peers.tvm_call(spec["onnx_path"], x, threads)
            result["how"][TVM] = "tvm.compile of the Relax ONNX frontend's module, untuned"
        except Exception as error:  # noqa: BLE001  (reported in the table; others still timed)
            result["errors"][TVM] = f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
    pytorch, errors = make_pytorch_variants(model, example)
    result["errors"].update(errors)
    for name, (run, how) in pytorch.items():
        variants[name] = run
        result["how"][name] = how

    # A fast wrong answer is no result: every variant's output against the stored reference
    # (PyTorch in float64), reported next to the times.
    with np.load(spec["npz_path"]) as data:
        expected = data["output"]
    result["max_abs_error"] = {
        name: float(np.max(np.abs(np.asarray(output_array(run())) - expected)))
        for name, run in variants.items()}

    begin = cpu_snapshot()
    result["times_ms"] = time_round_robin(variants, spec["runs"], spec["warmup"],
                                          {TVM: min(peers.TVM_ROUNDS, spec["runs"])})
    result["others_cores"] = others_busy_cores(begin, cpu_snapshot())
    return result


def worker_main(spec_json):
    result = worker(json.loads(spec_json))
    print(RESULT_PREFIX + json.dumps(result), flush=True)


# ---- the parent: models, idle checks, workers -----------------------------------------------


def ensure_models(python, models_dir, models, opset):
    """Makes the models with `python` (peers.generator_python: Debian's PyTorch, with
    transformers for bert_hf and gpt2_decoder)."""
    log(f"reference models in {models_dir}")
    subprocess.run([python, harness.MODEL_GENERATOR, models_dir, "--models", *models,
                    "--opsets", str(opset)],
                   check=True)


def flops_per_model(python, models):
    """{model: FLOPs}, counted by `python` (as ensure_models) in a child process, so that the
    parent, which only waits while the workers are timed, never holds PyTorch's threads or a
    model's memory."""
    out = subprocess.run([python, os.path.abspath(__file__), "--count-flops", *models],
                         check=True, stdout=subprocess.PIPE, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def count_flops_main(models):
    import torch

    torch.set_num_threads(1)
    generator = harness.load_model_generator()
    flops = {m: count_flops(generator.build_model(m), torch.from_numpy(generator.make_input(m)))
             for m in models}
    print(json.dumps(flops), flush=True)


def kiln_env(build_dir, threads, omp_wait_policy, omp_bind=False):
    """The environment of every child: the build's kiln and plugins, `threads` threads, and
    OpenMP threads bound one per core when `omp_bind`."""
    env = dict(os.environ)
    env.update({"PYTHONPATH": os.path.join(build_dir, "python"),
                "KILN_PLUGIN_PATH": os.path.join(build_dir, "lib", "kiln", "plugins"),
                "KILN_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads),
                "TVM_NUM_THREADS": str(threads),
                # By default idle OpenMP threads sleep instead of spinning: PyTorch and oneDNN
                # (Kiln + dnnl) both run on OpenMP, next to Kiln's own pool, and a pool spinning
                # after one variant's call steals the cores of the next one in the process.
                "OMP_WAIT_POLICY": omp_wait_policy})
    if omp_bind:
        env.update({"OMP_PROC_BIND": "true", "OMP_PLACES": "cores"})
    else:
        for name in ("OMP_PROC_BIND", "OMP_PLACES"):
            env.pop(name, None)
    return env


def run_worker(spec, build_dir):
    env = kiln_env(build_dir, spec["threads"], spec["omp_wait_policy"], spec["omp_bind"])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # sys.executable: the peers' venv's python (main re-executes there).
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", json.dumps(spec)],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if proc.returncode != 0 or not lines:
        sys.stdout.write(proc.stdout[-8000:])
        harness.fail(f"the worker for {spec['model']} at {spec['threads']} thread(s) failed "
                     f"(exit {proc.returncode})")
    return json.loads(lines[-1][len(RESULT_PREFIX):])


def measure(spec, build_dir, quick):
    """One worker's result, timed on an idle machine (in --quick mode: warns only)."""
    what = (f"{spec['model']} at {spec['threads']} thread(s)" +
            (", OpenMP threads bound" if spec["omp_bind"] else ""))
    for attempt in range(1, ATTEMPTS + 1):
        if quick:
            busy = harness.busy_cores()
            if busy > IDLE_LIMIT_CORES:
                log(f"WARNING: other processes use {busy:.0%} of a core; --quick times anyway")
        else:
            harness.wait_until_idle(what)
        log(f"timing {what} ({spec['runs']} rounds after {spec['warmup']} warm-up call(s))")
        result = run_worker(spec, build_dir)
        others = result["others_cores"]
        if others <= IDLE_LIMIT_CORES:
            return result
        if quick:
            log(f"WARNING: other processes used {others:.0%} of a core while {what} was "
                "timed: these numbers are not worth reporting")
            return result
        log(f"other processes used {others:.0%} of a core while {what} was timed "
            f"(attempt {attempt}/{ATTEMPTS}); timing it again")
    harness.fail(f"refusing to report {what}: the machine never stayed quiet through it "
                 f"({ATTEMPTS} attempts). Run again when no build or test is running.")


# ---- command line ---------------------------------------------------------------------------


def parse_args(argv, models):
    parser = argparse.ArgumentParser(
        description="Time Kiln against ONNX Runtime, PyTorch (eager, jit.freeze, "
                    "optimize_for_inference, torch.compile) and untuned TVM on the reference "
                    "models, interleaved, on an idle machine, and write the "
                    f"'{SECTION}' section of docs/benchmarks.md.",
        epilog="Run it when no build or test is running: it refuses a busy machine. "
               "Models: " + ", ".join(models))
    parser.add_argument("--models", nargs="+", choices=models, default=list(models),
                        metavar="MODEL", help="models to time (default: all)")
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2], metavar="N",
                        help="thread counts, each for Kiln and PyTorch alike (default: 1 2)")
    parser.add_argument("--runs", type=int, default=MIN_RUNS,
                        help=f"timed rounds per model and thread count (at least {MIN_RUNS}; "
                             f"default {MIN_RUNS})")
    parser.add_argument("--warmup", type=int, default=5, help="untimed calls each (default 5)")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke run: {QUICK_RUNS} rounds after {QUICK_WARMUP} warm-up "
                             "call, warns instead of refusing a busy machine, writes no file "
                             "unless --output is given")
    parser.add_argument("--plugins", nargs="*", default=None, metavar="NAME",
                        help="BYOC plugins to time Kiln with, one variant each (default: dnnl "
                             "when the build has libkiln_dnnl.so; none: --plugins)")
    parser.add_argument("--placement", default="measured", choices=["measured", "greedy"],
                        help="how Kiln + <plugin> places regions (default measured: a region "
                             "goes to the plugin only where it runs faster there, measured at "
                             "build time; greedy: the plugin takes every op it can)")
    parser.add_argument("--omp-wait-policy", default="PASSIVE", choices=["PASSIVE", "ACTIVE"],
                        help="OMP_WAIT_POLICY of the workers (default PASSIVE: idle OpenMP "
                             "threads sleep, so one variant's threads do not slow the next)")
    parser.add_argument("--opset", type=int, default=17, choices=[13, 17],
                        help="which ONNX export Kiln compiles (default 17)")
    parser.add_argument("--build-dir", default=os.path.join(REPO, "build-bench"),
                        help="Kiln build tree whose python/ is imported (default: build-bench, "
                             "configured as Release and built if need be)")
    parser.add_argument("--no-build", action="store_true", help="use --build-dir as it is")
    parser.add_argument("--models-dir", default=None,
                        help="where the reference models are made (default: <build-dir>/models)")
    parser.add_argument("--output", default=None,
                        help="markdown file to update (default: docs/benchmarks.md; none with "
                             "--quick)")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.warmup = QUICK_RUNS, QUICK_WARMUP
    elif args.runs < MIN_RUNS:
        parser.error(f"--runs must be at least {MIN_RUNS} for a median worth reporting "
                     "(use --quick for a smoke run)")
    bad = [t for t in args.threads if t < 1]
    if bad:
        parser.error(f"--threads must be positive, not {bad}")
    args.build_dir = os.path.abspath(args.build_dir)
    args.models_dir = os.path.abspath(args.models_dir or os.path.join(args.build_dir, "models"))
    if args.plugins is None:
        built = os.path.join(args.build_dir, "lib", "kiln", "plugins", "libkiln_dnnl.so")
        args.plugins = ["dnnl"] if os.path.exists(built) or not args.no_build else []
    if args.output is None and not args.quick:
        args.output = os.path.join(REPO, "docs", "benchmarks.md")
    return args


def phase(what, run, quick):
    """run() on an idle machine, again if something else ran meanwhile (--quick: warns only)."""
    if not quick:
        return harness.timed_phase(what, run)
    busy = harness.busy_cores()
    if busy > IDLE_LIMIT_CORES:
        log(f"WARNING: other processes use {busy:.0%} of a core; --quick measures {what} anyway")
    return run()


def measure_footprints(args, generator, env):
    """{model: footprint.measure_model(...), with ONNX Runtime's}, and each variant's
    baseline RSS."""
    variants = {KILN: [], **{plugin_variant(p): [p] for p in args.plugins}}
    kiln_baseline = footprint.baseline_rss_mib(env)
    baselines = {**{v: kiln_baseline for v in variants},
                 ORT: footprint.baseline_rss_mib(env, "baseline_ort")}
    footprints = {}
    for model in args.models:
        log(f"{model}: peak memory of compile and inference, artifact size")
        spec = {"model": model, "placement": args.placement,
                "onnx_path": generator.onnx_path(args.models_dir, model, args.opset),
                "npz_path": generator.npz_path(args.models_dir, model)}
        footprints[model] = footprint.measure_model(spec, variants, env, log)
        footprints[model][ORT] = footprint.measure_ort(spec, env, log)
    return footprints, baselines


def draw_chart(results, args):
    """Writes the chart next to --output; None, or why there is no chart."""
    if not args.output:
        return "--quick without --output writes no files"
    if not chart.available():
        log(f"WARNING: {chart.MISSING}")
        return "python3-matplotlib was not installed where this was generated"
    path = os.path.join(os.path.dirname(os.path.abspath(args.output)), CHART)
    kilns = kiln_variants(args)
    chart.write_chart(path, {key: ratios_to(r, kilns, ORT) for key, r in results.items()},
                      args.models, kilns, args.threads, VARIANT_TITLES, VARIANT_TITLES[ORT],
                      subtitle=f"batch 1; {harness.cpu_model()}")
    log(f"wrote {os.path.relpath(path, REPO)}")
    return None


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        return worker_main(argv[1])
    if argv[:1] == ["--count-flops"]:
        return count_flops_main(argv[1:])
    generator = harness.load_model_generator()
    args = parse_args(argv, list(generator.ALL_MODELS))
    if not args.no_build:
        harness.build(args.build_dir, ["all"], what="Kiln")
    peers.enter_venv(args.build_dir, __file__, argv)
    # Measured placement decides afresh in every run of the benchmark, never from costs cached
    # by older kernels; the workers and footprint children of this run share the cache.
    placement_cache = os.path.join(args.build_dir, "bench-placement-cache")
    shutil.rmtree(placement_cache, ignore_errors=True)
    os.environ["KILN_CACHE_DIR"] = placement_cache
    try:
        peak_flops = peak.binary(args.build_dir)
    except FileNotFoundError as error:
        harness.fail(str(error))
    generator_python = peers.generator_python(args.build_dir)
    ensure_models(generator_python, args.models_dir, args.models, args.opset)
    flops = flops_per_model(generator_python, args.models)
    for model in args.models:
        log(f"{model}: {flops[model] / 1e9:.2f} GFLOP per run")

    # The peak and the start-up first, while nothing of ours has warmed or filled the machine.
    peaks = phase("the peak fp32 throughput", lambda: peak.measure(peak_flops, args.threads),
                  args.quick)
    log(f"measured peak fp32: {peak.describe(peaks)}")
    env = kiln_env(args.build_dir, max(args.threads), args.omp_wait_policy)
    startup = phase("start-up", lambda: footprint.measure_startup(env), args.quick)
    log("start-up: `import kiln` {import_ms:.0f} ms, with discovery {discovery_ms:.0f} ms, "
        "whole process {process_ms:.0f} ms".format(**startup))

    results = {}
    for threads in args.threads:
        for model in args.models:
            spec = {"model": model, "threads": threads, "runs": args.runs,
                    "plugins": args.plugins, "omp_wait_policy": args.omp_wait_policy,
                    "warmup": args.warmup, "opset": args.opset, "placement": args.placement,
                    "onnx_path": generator.onnx_path(args.models_dir, model, args.opset),
                    "npz_path": generator.npz_path(args.models_dir, model)}
            results[(model, threads)] = measure(dict(spec, omp_bind=False), args.build_dir,
                                                args.quick)
            if threads > 1:  # see report.py's "Thread placement"
                bound = measure(dict(spec, omp_bind=True), args.build_dir, args.quick)
                results[(model, threads)] = merge_placements(results[(model, threads)], bound)
            for variant, error in results[(model, threads)]["errors"].items():
                log(f"{model}: {VARIANT_TITLES[variant]} failed: {error}")

    footprints, baselines = measure_footprints(args, generator, env)
    report = {"results": results, "flops": flops, "peaks": peaks, "startup": startup,
              "footprints": footprints, "baselines_mib": baselines,
              "chart_note": draw_chart(results, args), "tvm_rounds": peers.TVM_ROUNDS}
    command = " ".join(["/usr/bin/python3", "bench/models/run.py"] +
                       [shlex.quote(a) for a in argv])
    section = render(report, args, command)
    harness.publish_section(args.output, section, SECTION)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The "Reference models: Kiln vs ONNX Runtime, PyTorch and TVM on the CPU" section of
docs/benchmarks.md, written by bench/models/run.py from its measurements: the timing table (with
% of the measured peak), the goals, the chart's link, errors, placement, compile time and
footprint, start-up. Pure functions of the report dict run.py assembles (and what PyTorch runs
on); no timing here.
"""

import datetime
import math
import os
import platform
import statistics

import footprint
import harness
import peak
from harness import IDLE_LIMIT_CORES, REPO

SECTION = "Reference models: Kiln vs ONNX Runtime, PyTorch and TVM on the CPU"
CHART = "benchmarks_models.png"  # next to the output document
KILN = "kiln"
ORT = "ort"
TVM = "tvm"
TORCH_COMPILE = "torch_compile"
PYTORCH_VARIANTS = ("eager", "jit_freeze", "optimize_for_inference", TORCH_COMPILE)
VARIANT_TITLES = {KILN: "Kiln", ORT: "ONNX Runtime", "eager": "PyTorch eager",
                  "jit_freeze": "`jit.freeze`",
                  "optimize_for_inference": "`optimize_for_inference`",
                  TORCH_COMPILE: "`torch.compile`", TVM: "TVM (untuned)"}
TIMED = (ORT, *PYTORCH_VARIANTS, TVM)  # the peers, in the tables' order
BEST_PYTORCH = "best PyTorch"
PLACEMENTS = {  # how "Kiln + <plugin>" was placed (run.py's --placement), as the doc says it
    "measured": "`measured` (a region goes to the plugin only where it ran faster there than on "
                "Kiln's own path when both were measured at build time, docs/design.md §26)",
    "greedy": "`greedy` (the plugin takes every op it can)"}
# The ratio columns: each Kiln variant over these (the best PyTorch variant stands for itself).
RATIO_PEERS = (ORT, TORCH_COMPILE, BEST_PYTORCH, TVM)


def plugin_variant(plugin):
    """The Kiln variant built with one BYOC plugin, e.g. "kiln+dnnl"."""
    VARIANT_TITLES.setdefault(f"{KILN}+{plugin}", f"Kiln + {plugin}")
    return f"{KILN}+{plugin}"



def summarize(times):
    return {"median": statistics.median(times), "min": min(times), "max": max(times)}


def cell(stats, bound=False):
    text = f"{stats['median']:.2f} ({stats['min']:.2f}–{stats['max']:.2f})"
    return text + " †" if bound else text


def merge_placements(unbound, bound):
    """One worker result from two timings of the same model and thread count, OpenMP threads
    unbound and bound: each variant's times from the process where its median was lower
    (listed in "bound_variants" when that is the bound one); the rest from the unbound one."""
    merged = dict(unbound, times_ms={}, bound_variants=[])
    for variant, times in unbound["times_ms"].items():
        other = bound["times_ms"].get(variant)
        if other is not None and statistics.median(other) < statistics.median(times):
            merged["times_ms"][variant] = other
            merged["bound_variants"].append(variant)
        else:
            merged["times_ms"][variant] = times
    return merged


def kiln_variants(args):
    return [KILN] + [plugin_variant(p) for p in args.plugins]


def variant_stats(result, variants):
    return {v: summarize(result["times_ms"][v]) for v in variants if v in result["times_ms"]}


def best_pytorch(stats):
    """The PyTorch variant with the lowest median, or None when all of them failed."""
    pytorch = [v for v in PYTORCH_VARIANTS if v in stats]
    return min(pytorch, key=lambda v: stats[v]["median"]) if pytorch else None


def ratios_to(result, kilns, peer):
    """{Kiln variant: its median / `peer`'s median, or None where either failed}; `peer` None
    (every PyTorch variant failed) gives None throughout."""
    stats = variant_stats(result, [*kilns, *([peer] if peer else [])])
    return {k: stats[k]["median"] / stats[peer]["median"] if k in stats and peer in stats
            else None for k in kilns}


def kiln_ratios(result, kilns):
    """{Kiln variant: its median / best PyTorch's median, or None where either failed}."""
    return ratios_to(result, kilns, best_pytorch(variant_stats(result, PYTORCH_VARIANTS)))


def peer_ratios(result, kilns, peer):
    """ratios_to `peer`, where BEST_PYTORCH stands for the fastest PyTorch variant."""
    return kiln_ratios(result, kilns) if peer == BEST_PYTORCH else ratios_to(result, kilns, peer)


def peer_title(peer):
    return BEST_PYTORCH if peer == BEST_PYTORCH else VARIANT_TITLES[peer]


def result_row(model, threads, result, flops, kilns, peaks):
    variants = [*kilns, *TIMED]
    stats = variant_stats(result, variants)
    bound = result.get("bound_variants", [])
    cells = [cell(stats[v], v in bound) if v in stats else "failed" for v in variants]
    best = best_pytorch(stats)
    ratios = [f"{r:.2f}×" if r is not None else "—"
              for peer in RATIO_PEERS for r in peer_ratios(result, kilns, peer).values()]

    def gflops(variant):
        if variant not in stats:
            return "—"
        achieved = flops / stats[variant]["median"] / 1e6
        return f"{achieved:.1f} ({peak.share(achieved, peaks, threads)})"

    return (f"| {model} | {threads} | " + " | ".join(cells) + " | " + " | ".join(ratios) +
            f" | {VARIANT_TITLES[best] if best else '—'} | " +
            " | ".join(gflops(k) for k in [*kilns, ORT]) +
            f" | {gflops(best) if best else '—'} |")


def results_table(results, flops, kilns, peaks):
    titles = [VARIANT_TITLES[k] for k in kilns]
    header = ["| Model | Threads | " + " | ".join(VARIANT_TITLES[v] for v in [*kilns, *TIMED]) +
              " | " + " | ".join(f"{t} / {peer_title(peer)}" for peer in RATIO_PEERS
                                 for t in titles) + " | best PyTorch | " +
              " | ".join(f"{t} GFLOP/s (% of peak)" for t in [*titles, "ONNX Runtime"]) +
              " | best PyTorch GFLOP/s (% of peak) |",
              "|---|---:|" + "---:|" * (len(kilns) * (2 + len(RATIO_PEERS)) + len(TIMED) + 3)]
    rows = [result_row(m, t, r, flops[m], kilns, peaks) for (m, t), r in results.items()]
    return "\n".join(header + rows)


def geomean(values):
    return math.exp(statistics.fmean(math.log(v) for v in values)) if values else None


def goals_table(results, kilns):
    """Per thread count, issue 20's goals: on how many models Kiln's best variant (the fastest
    of `kilns` there) is no slower than ONNX Runtime, and the geometric means of Kiln's best,
    and of its own path alone, over ONNX Runtime and `torch.compile`."""
    lines = ["| Threads | Kiln's best no slower than ONNX Runtime | geomean: Kiln's best / "
             "ONNX Runtime | Kiln's best / `torch.compile` | Kiln / ONNX Runtime | "
             "Kiln / `torch.compile` |", "|---:|---:|---:|---:|---:|---:|"]
    for threads in sorted({t for _, t in results}):
        ratios = {(who, peer): [] for who in ("best", KILN) for peer in (ORT, TORCH_COMPILE)}
        for (_, t), result in results.items():
            if t != threads:
                continue
            for peer in (ORT, TORCH_COMPILE):
                of_kilns = ratios_to(result, kilns, peer)
                timed = [r for r in of_kilns.values() if r is not None]
                if timed:
                    ratios[("best", peer)].append(min(timed))
                if of_kilns.get(KILN) is not None:
                    ratios[(KILN, peer)].append(of_kilns[KILN])
        met = ratios[("best", ORT)]
        means = [geomean(ratios[key]) for key in (("best", ORT), ("best", TORCH_COMPILE),
                                                   (KILN, ORT), (KILN, TORCH_COMPILE))]
        lines.append(f"| {threads} | {sum(r <= 1 for r in met)} of {len(met)} | " +
                     " | ".join(f"{m:.2f}×" if m is not None else "—" for m in means) + " |")
    return "\n".join(lines)


def models_table(results, flops, kilns):
    variants = [*kilns, *TIMED]
    lines = ["| Model | GFLOP per run | max abs error: " +
             " | ".join(VARIANT_TITLES[v] for v in variants) + " |",
             "|---|---:|" + "---:|" * len(variants)]
    seen = set()
    for (model, _), result in results.items():
        if model in seen:
            continue
        seen.add(model)
        errors = result["max_abs_error"]
        cells = [f"{errors[v]:.1e}" if v in errors else "—" for v in variants]
        lines.append(f"| {model} | {flops[model] / 1e9:.2f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def placement_notes(results):
    """Per model and plugin, the summary lines of the placement report and, with measured
    placement, each region's costs and where it went (first thread count)."""
    notes, seen = [], set()
    for (model, _), result in results.items():
        for variant, report in result.get("placement", {}).items():
            if (model, variant) in seen:
                continue
            seen.add((model, variant))
            notes.append(f"- {model}, {VARIANT_TITLES[variant]}: "
                         + harness.placement_summary(report))
    return ("\n\nWhere the ops ran (placement report):\n\n" + "\n".join(notes)) if notes else ""


def failures(results):
    """The notes under the tables: each failure once, with the thread counts it happened at."""
    threads_of = {}
    for (model, threads), result in results.items():
        for variant, error in result["errors"].items():
            threads_of.setdefault((model, variant, error), []).append(str(threads))
    notes = [f"- {model}, {VARIANT_TITLES[variant]} ({', '.join(threads)} thread(s)): {error}"
             for (model, variant, error), threads in threads_of.items()]
    traced = {m for (m, _), r in results.items()
              if any(h == "trace" for h in r["how"].values())}
    if traced:
        notes.append("- torch.jit.script failed, torch.jit.trace used: " +
                     ", ".join(sorted(traced)))
    return ("\n\nNotes:\n\n" + "\n".join(notes)) if notes else ""


def build_line(build_dir):
    return f"Kiln {harness.build_type(build_dir)} (`{os.path.relpath(build_dir, REPO)}`)"


def pytorch_backends():
    """What PyTorch's CPU speed rests on, from its build configuration: the BLAS library of its
    matrix products and the oneDNN (MKL-DNN) version of its convolutions."""
    import re

    import torch

    config = torch.__config__.show()
    blas = re.search(r"BLAS_INFO=(\w+)", config)
    mkldnn = re.search(r"MKL-DNN (v[\d.]+)", config)
    return (f"BLAS: {blas.group(1) if blas else 'unknown'}, "
            f"MKL-DNN {mkldnn.group(1) if mkldnn else 'absent'}")


def quick_warning(args):
    if not args.quick:
        return ""
    return ("\n- **A --quick smoke run: too few rounds, and the machine was not required to be "
            "idle. Not for reporting.**")


def chart_line(chart_note):
    """The doc's line for the chart: the image, or why there is none."""
    if chart_note is None:
        return (f"![Kiln / ONNX Runtime per model and thread count]({CHART})\n\n"
                f"The chart ([{CHART}]({CHART})) shows the ratio columns over ONNX Runtime: "
                "each Kiln variant's median over ONNX Runtime's, per thread count; below the "
                "dashed line at 1.0 Kiln is faster.")
    return f"No chart: {chart_note}."


def footprint_section(report, args):
    kilns = kiln_variants(args)
    compile_s = {}
    for (model, _), result in report["results"].items():
        compile_s.setdefault(model, result["compile_s"])
    baselines = report["baselines_mib"]
    table = footprint.footprint_table(report["footprints"], compile_s, kilns, [ORT],
                                      VARIANT_TITLES, baselines)
    return f"""### Compile time, memory and artifact size

- Compile time: `kiln.build` of the ONNX model in the timing worker, at
  {args.threads[0]} thread(s), on an idle machine.
- Peak RSS: `ru_maxrss` of a fresh process of its own, at {max(args.threads)} thread(s): compile
  is `kiln.build` (peak taken before `export_library`, whose C compiler is a process of its
  own), inference is `kiln.load_module` of the exported artifact and {footprint.INFER_RUNS}
  runs; ONNX Runtime's is a session of the ONNX file (settings as above, threads: the cores)
  and {footprint.INFER_RUNS} runs. Each cell is the total and, in parentheses, over the
  baseline: a process that only imports kiln and numpy, {baselines[KILN]:.0f} MiB, or, for
  ONNX Runtime, numpy and onnxruntime, {baselines[ORT]:.0f} MiB.
- Artifact: the size of the shared library `export_library` writes.

{table}

### Start-up

Median of {footprint.STARTUP_RUNS} fresh processes (after one untimed, which also leaves
Python's bytecode cache as a user's second start finds it), timed inside the process with
`time.perf_counter`; goal: `import kiln` plus plugin and backend discovery under
{footprint.STARTUP_GOAL_MS} ms. Both are measured explicitly, whether `import kiln` discovers
plugins itself or leaves it to `kiln.discover_plugins()` (then a second call is a no-op).

{footprint.startup_table(report["startup"])}
"""


def render(report, args, command):
    import onnxruntime
    import torch
    import tvm

    results, flops = report["results"], report["flops"]
    tvm_rounds = min(report["tvm_rounds"], args.runs)
    placement_text = PLACEMENTS[args.placement]

    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    software = (f"{build_line(args.build_dir)}; from PyPI, in `<build-dir>/bench-venv-peers`: "
                f"ONNX Runtime {onnxruntime.__version__}, PyTorch {torch.__version__} "
                f"({pytorch_backends()}), TVM {tvm.__version__}; Python "
                f"{platform.python_version()}")
    return f"""## {SECTION}

Latency of one batch-1 inference of each reference model (tests/models/make_reference_models.py:
random weights, seed 0; 3x224x224 images, the encoder (1, 128, 256)) compiled by Kiln, next to
ONNX Runtime and TVM running the same ONNX file and PyTorch 2.x run four ways, with the same
number of threads.

- Machine: {harness.cpu_model()}, {os.cpu_count()} CPUs; Linux {platform.release()};
  measured peak fp32: {peak.describe(report["peaks"])}
- Build: {software}; {date}
- Command: `{command}` (source: `bench/models/run.py`){quick_warning(args)}
- Method: one process per (model, thread count), because Kiln reads `KILN_NUM_THREADS` once;
  PyTorch gets `torch.set_num_threads` with the same count, TVM `TVM_NUM_THREADS`.
  {args.warmup} warm-up call(s) each,
  then {args.runs} rounds calling each Kiln variant, ONNX Runtime and the four PyTorch variants
  once each, round-robin (TVM: one warm-up call and the first {tvm_rounds} rounds only: its
  untuned kernels take up to seconds a run);
  times in ms as median (min–max) of the rounds. Timing starts only when the rest of the
  machine uses under {IDLE_LIMIT_CORES:.0%} of a core, and a model whose rounds overlapped more
  than that is timed again. GFLOP/s is 2 x the multiply-adds of convolutions, linear layers and
  attention matmuls over the median time; its % of peak is against the measured peak at the
  same thread count. Kiln runs the ONNX export at opset {args.opset},
  on its own CPU path and, as "Kiln + <plugin>", with that BYOC plugin, placed {placement_text};
  ONNX Runtime: one `InferenceSession` of the same file, `CPUExecutionProvider`,
  `ORT_ENABLE_ALL`, `intra_op_num_threads` = the thread count, idle spinning off
  (`session.intra_op.allow_spinning` = 0, so its threads do not take the cores from the variant
  timed next);
  `jit.freeze` is `torch.jit.freeze(torch.jit.script(model))`, `optimize_for_inference` is
  `torch.jit.optimize_for_inference(torch.jit.script(model))`, `torch.compile` is
  `torch.compile(model)` (Inductor, default mode, compiled by one call before the warm-up); all
  PyTorch runs under no_grad. PyTorch 2.x builds each model from the same seed as the export
  (by Debian's PyTorch 1.13), and its outputs match the reference (table below).
  TVM: the Relax ONNX frontend's module, `DecomposeOpsForInference`, `tvm.compile` for the
  target `llvm` (TVM's generic x86-64 CPU: naming this machine's made untuned kernels slower)
  with no tuning (MetaSchedule would take hours per model), run by Relax's VirtualMachine.
- Peak: `kiln_peak_flops` (bench/common/peak_flops.cc, built with `-O3 -march=native`), run
  before the models, on the idle machine: {peak.KERNEL}; threads pinned one per physical core.
- `OMP_WAIT_POLICY={args.omp_wait_policy}` for every variant: PyTorch and oneDNN use OpenMP
  and Kiln its own pool, all in one process; with spinning idle threads (`--omp-wait-policy
  ACTIVE`), threads left spinning after one variant's call take the cores of the next one, so
  interleaved times are not comparable at 2 threads. Sleeping idle threads cost the OpenMP
  variants some speed at 2 threads.
- Thread placement, at more than one thread: Kiln pins its workers one per core (its default,
  docs/design.md "Thread pool"). A sleeping OpenMP thread woken by the main thread is often
  left on the main thread's core, which halves the speed of some models and not others, and
  binding OpenMP threads (`OMP_PROC_BIND=true`, `OMP_PLACES=cores`) helps some models and
  hurts others. So each model is timed in two worker processes, OpenMP threads unbound and
  bound, and each variant is reported from the process where its median was lower; † marks
  the bound one. Kiln's own pool pins either way.

{results_table(results, flops, kiln_variants(args), report["peaks"])}

{chart_line(report["chart_note"])}

A ratio above 1 means that Kiln variant is slower than that peer (best PyTorch: the fastest of
the four PyTorch variants).

Issue 20's goals, per thread count: Kiln's best is, per model, the faster of its variants.

{goals_table(results, kiln_variants(args))}

Max abs error: each variant's output against the reference output, PyTorch's in float64
(tests/models), at the first thread count.

{models_table(results, flops, kiln_variants(args))}{placement_notes(results)}{failures(results)}

{footprint_section(report, args)}"""

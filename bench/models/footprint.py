"""Kiln's footprint for bench/models/run.py: peak memory of compiling and of running each model,
the size of its artifact, and the start-up time of `import kiln`.

Every figure comes from a fresh process of its own (this file run as a script, `--child MODE
SPEC`), which prints one "RESULT {json}" line:
- baseline: imports kiln and numpy only; its peak RSS is what every other process starts from.
- compile: kiln.build of the ONNX model (with the spec's plugins); peak RSS right after the
  build, then export_library and the artifact's size.
- infer: kiln.load_module of that artifact and a few runs on the stored input; peak RSS.
- baseline_ort, infer_ort: the same for ONNX Runtime (bench/common/ort_peer.py), whose process
  starts from numpy and onnxruntime imported: a session of the ONNX file and a few runs.
- startup: `import kiln`, then kiln.discover_plugins() and kiln.runtime.backends(), each timed
  in the process (perf_counter).
Peak RSS is the child's own getrusage(RUSAGE_SELF).ru_maxrss (KiB on Linux).
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

RESULT_PREFIX = "RESULT "
INFER_RUNS = 5
STARTUP_RUNS = 20
STARTUP_GOAL_MS = 100


# ---- the children -----------------------------------------------------------------------


def peak_rss_mib():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_baseline(_spec):
    import numpy  # noqa: F401  (the baseline is kiln + numpy, as every other child has)

    import kiln  # noqa: F401

    return {"rss_mib": peak_rss_mib()}


def child_compile(spec):
    import kiln
    import kiln.frontend

    executable = kiln.build(kiln.frontend.from_onnx(spec["onnx_path"]),
                            plugins=list(spec["plugins"]), placement=spec["placement"])
    result = {"rss_mib": peak_rss_mib()}
    executable.export_library(spec["artifact"])
    result["artifact_mib"] = os.path.getsize(spec["artifact"]) / 2**20
    return result


def child_infer(spec):
    import numpy as np

    import kiln

    with np.load(spec["npz_path"]) as data:
        x = data["input"]
    executable = kiln.load_module(spec["artifact"])
    for _ in range(INFER_RUNS):
        executable.run(input=x)
    return {"rss_mib": peak_rss_mib()}


def child_baseline_ort(_spec):
    import numpy  # noqa: F401
    import onnxruntime  # noqa: F401

    return {"rss_mib": peak_rss_mib()}


def child_infer_ort(spec):
    import numpy as np

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
    import ort_peer

    with np.load(spec["npz_path"]) as data:
        x = data["input"]
    run = ort_peer.call(spec["onnx_path"], input_name="input")
    for _ in range(INFER_RUNS):
        run(x)
    return {"rss_mib": peak_rss_mib()}


def child_startup(_spec):
    start = time.perf_counter()
    import kiln

    imported = time.perf_counter()
    kiln.discover_plugins()
    kiln.runtime.backends()
    return {"import_ms": (imported - start) * 1e3,
            "discovery_ms": (time.perf_counter() - start) * 1e3}


CHILDREN = {"baseline": child_baseline, "compile": child_compile, "infer": child_infer,
            "baseline_ort": child_baseline_ort, "infer_ort": child_infer_ort,
            "startup": child_startup}


def child_main(mode, spec_json):
    print(RESULT_PREFIX + json.dumps(CHILDREN[mode](json.loads(spec_json))), flush=True)


# ---- the parent ---------------------------------------------------------------------------


def run_child(mode, spec, env):
    """The child's result dict; RuntimeError with its output tail when it fails."""
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", mode,
                           json.dumps(spec)], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if proc.returncode != 0 or not lines:
        tail = proc.stdout.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        raise RuntimeError(f"{mode} child failed: {tail[0][:300]}")
    return json.loads(lines[-1][len(RESULT_PREFIX):])


def measure_model(spec, variants, env, log):
    """{variant: {compile_rss_mib, artifact_mib, infer_rss_mib} or {error}} for one
    model; `variants` maps each Kiln variant to its plugin list."""
    results = {}
    with tempfile.TemporaryDirectory(prefix="kiln-footprint-") as tmp:
        for variant, plugins in variants.items():
            artifact = os.path.join(tmp, f"{variant}.so")
            try:
                built = run_child("compile", {**spec, "plugins": plugins, "artifact": artifact},
                                  env)
                ran = run_child("infer", {**spec, "artifact": artifact}, env)
            except RuntimeError as error:
                log(f"{spec['model']}, {variant}: {error}")
                results[variant] = {"error": str(error)}
                continue
            results[variant] = {"compile_rss_mib": built["rss_mib"],
                                "artifact_mib": built["artifact_mib"],
                                "infer_rss_mib": ran["rss_mib"]}
    return results


def baseline_rss_mib(env, mode="baseline"):
    return run_child(mode, {}, env)["rss_mib"]


def measure_ort(spec, env, log):
    """{infer_rss_mib} or {error}: ONNX Runtime's peak RSS running the model."""
    try:
        return {"infer_rss_mib": run_child("infer_ort", spec, env)["rss_mib"]}
    except RuntimeError as error:
        log(f"{spec['model']}, ONNX Runtime: {error}")
        return {"error": str(error)}


def measure_startup(env, runs=STARTUP_RUNS):
    """Medians over `runs` fresh processes of import_ms, discovery_ms (import + discovery) and
    process_ms (the interpreter started to exit, as the parent sees it), after one untimed
    process that also leaves the bytecode cache as a user's second start finds it."""
    run_child("startup", {}, env)
    samples = {"import_ms": [], "discovery_ms": [], "process_ms": []}
    for _ in range(runs):
        start = time.perf_counter()
        result = run_child("startup", {}, env)
        samples["process_ms"].append((time.perf_counter() - start) * 1e3)
        for key in ("import_ms", "discovery_ms"):
            samples[key].append(result[key])
    return {key: statistics.median(values) for key, values in samples.items()}


# ---- the document -------------------------------------------------------------------------


def memory_cell(rss_mib, baseline_mib):
    return f"{rss_mib:.0f} (+{rss_mib - baseline_mib:.0f})"


def footprint_table(footprints, compile_s, kilns, peers, titles, baselines):
    """Markdown table, one row per model: compile time (from the timing worker), peak RSS of
    compile and of inference (total, and over the baseline) and artifact size, per Kiln variant;
    peak RSS of inference for each peer too. `baselines` gives each variant's baseline RSS (a
    peer's process starts from other imports)."""
    every = [*kilns, *peers]

    def group(label, members):
        return " | ".join(f"{label}: {titles[v]}" if i == 0 else titles[v]
                          for i, v in enumerate(members))

    lines = [f"| Model | {group('compile (s)', kilns)} | "
             f"{group('compile peak RSS (MiB)', kilns)} | "
             f"{group('inference peak RSS (MiB)', every)} | {group('artifact (MiB)', kilns)} |",
             "|---|" + "---:|" * (3 * len(kilns) + len(every))]
    for model, per_variant in footprints.items():
        cells = [f"{compile_s[model][v]:.1f}" if v in compile_s.get(model, {}) else "—"
                 for v in kilns]
        for key, members, fmt in (("compile_rss_mib", kilns, None),
                                  ("infer_rss_mib", every, None),
                                  ("artifact_mib", kilns, "{:.1f}")):
            for v in members:
                data = per_variant.get(v, {})
                if key not in data:
                    cells.append("failed" if "error" in data else "—")
                elif fmt:
                    cells.append(fmt.format(data[key]))
                else:
                    cells.append(memory_cell(data[key], baselines[v]))
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    failed = [f"- {model}, {titles[v]}: {data['error']}" for model, per_variant in
              footprints.items() for v, data in per_variant.items() if "error" in data]
    return "\n".join(lines) + ("\n\nFailed:\n\n" + "\n".join(failed) if failed else "")


def startup_table(startup):
    """Markdown table of the start-up medians, each against the 100 ms goal."""
    def verdict(ms):
        return "met" if ms < STARTUP_GOAL_MS else "missed"

    rows = [("`import kiln`", startup["import_ms"], verdict(startup["import_ms"])),
            ("`import kiln` + `kiln.discover_plugins()` + `kiln.runtime.backends()`",
             startup["discovery_ms"], f"**{verdict(startup['discovery_ms'])}** (the goal)"),
            ("whole process, as its parent sees it: `python3` started, the above, exit",
             startup["process_ms"], "—")]
    return "\n".join(["| What | median (ms) | < 100 ms |", "|---|---:|---|"] +
                     [f"| {what} | {ms:.0f} | {note} |" for what, ms, note in rows])


if __name__ == "__main__":
    if sys.argv[1:2] != ["--child"] or len(sys.argv) != 4:
        sys.exit("usage: footprint.py --child MODE SPEC_JSON (run by bench/models/run.py)")
    child_main(sys.argv[2], sys.argv[3])

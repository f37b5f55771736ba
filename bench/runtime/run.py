#!/usr/bin/python3
"""Runtime allocation and copy costs, the one command: build, check the machine is idle, time,
write the doc.

    /usr/bin/python3 bench/runtime/run.py [--build-dir DIR] [--output docs/benchmarks.md]

1. Builds a Release tree (build-bench/ unless --build-dir names another): kiln_alloc_bench
   (bench/alloc) and, when the OpenCL backend was built, kiln_opencl_copy_bench
   (bench/opencl_copy).
2. Refuses to time a busy machine: samples /proc/stat for 1 s and waits (up to 60 s) until the
   other processes use less than 15% of a core, before each phase; a phase during which other
   processes used more is timed again (3 attempts), never reported.
3. Runs both Google Benchmark programs (--repetitions repetitions, aggregates only, JSON) and
   takes the median of the repetitions.
4. Replaces the "Runtime: allocation and copies" section of docs/benchmarks.md.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import harness  # noqa: E402  (bench/common/harness.py: idle checks, build, doc sections)
from harness import IDLE_LIMIT_CORES, REPO, cpu_model, log, timed_phase  # noqa: E402

harness.set_name("runtime")

SECTION = "Runtime: allocation and copies"

ALLOC_SIZES = [(64, "64 B"), (4 << 10, "4 KiB"), (1 << 20, "1 MiB"), (64 << 20, "64 MiB")]
ALLOC_CASES = ["BM_KilnEmpty", "BM_Malloc", "BM_AlignedAlloc"]
COPY_SIZES = [(1 << 20, "1 MiB"), (16 << 20, "16 MiB"), (256 << 20, "256 MiB")]
COPY_CASES = [("BM_HostToDevice", "host → device"), ("BM_DeviceToHost", "device → host"),
              ("BM_DeviceToDevice", "device → device")]
TIME_UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def paths_of(build_dir):
    with open(os.path.join(build_dir, "bench", "runtime", "paths.json")) as f:
        return json.load(f)


def build(build_dir):
    # Building kiln_alloc_bench first also regenerates the tree, so paths.json then says
    # whether bench/opencl_copy has a target at all.
    harness.build(build_dir, ["kiln_alloc_bench"], what="the allocation benchmark")
    paths = paths_of(build_dir)
    if paths["opencl_copy_bench"]:
        harness.build(build_dir, ["kiln_opencl_copy_bench"],
                      what="the OpenCL copy benchmark and backend")
    else:
        log("no OpenCL backend in this build: the copy table will say skipped")
    return paths


def run_gbench(binary, repetitions):
    """{run_name: {"median_ns", "cv", "bytes_per_second", "label", "error"}}, and the context."""
    proc = subprocess.run(
        [binary, f"--benchmark_repetitions={repetitions}",
         "--benchmark_report_aggregates_only=true", "--benchmark_format=json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-5000:])
        harness.fail(f"{os.path.basename(binary)} exited with {proc.returncode}")
    report = json.loads(proc.stdout)
    results = {}
    for b in report["benchmarks"]:
        name = b.get("run_name", b["name"])
        entry = results.setdefault(name, {})
        if b.get("error_occurred"):
            entry["error"] = b.get("error_message", "error")
            continue
        if b.get("label"):
            entry["label"] = b["label"]
        if b.get("aggregate_name") == "median":
            entry["median_ns"] = b["real_time"] * TIME_UNIT_NS[b.get("time_unit", "ns")]
            if "bytes_per_second" in b:
                entry["bytes_per_second"] = b["bytes_per_second"]
        elif b.get("aggregate_name") == "cv":
            entry["cv"] = b["real_time"]  # a fraction, whatever the unit
    return results, report["context"]


# ---- the document ---------------------------------------------------------------------------


def fmt_ns(ns):
    if ns < 100:
        return f"{ns:.1f} ns"
    if ns < 100_000:
        return f"{ns:,.0f} ns"
    return f"{ns / 1e3:,.0f} µs"


def alloc_table(results):
    lines = ["| Size | `runtime::Empty` | malloc + free | aligned_alloc + free "
             "| Empty / malloc | Empty / aligned_alloc |",
             "|---|---:|---:|---:|---:|---:|"]
    for size, label in ALLOC_SIZES:
        row = {case: results.get(f"{case}/{size}", {}) for case in ALLOC_CASES}
        ns = {case: r.get("median_ns") for case, r in row.items()}
        cells = []
        for case in ALLOC_CASES:
            if ns[case] is None:
                cells.append("error: " + row[case].get("error", "no result"))
            else:
                cells.append(f"{fmt_ns(ns[case])} (CV {row[case].get('cv', 0):.1%})")
        ratios = []
        for base in ("BM_Malloc", "BM_AlignedAlloc"):
            if ns["BM_KilnEmpty"] is None or not ns[base]:
                ratios.append("—")
            else:
                ratio = ns["BM_KilnEmpty"] / ns[base]
                ratios.append(f"{ratio:.2f}×" if ratio >= 0.1 else f"{ratio:.1e}×")
        lines.append(f"| {label} | " + " | ".join(cells + ratios) + " |")
    return "\n".join(lines)


def alloc_note(results):
    """The one-line interpretation of the allocation table, from its numbers."""
    def ns(case, size):
        return results.get(f"{case}/{size}", {}).get("median_ns")
    empty = [ns("BM_KilnEmpty", size) for size, _ in ALLOC_SIZES]
    malloc_small = ns("BM_Malloc", ALLOC_SIZES[0][0])
    big = ALLOC_SIZES[-1][0]
    if None in empty or malloc_small is None or ns("BM_Malloc", big) is None:
        return "Some cases failed; no interpretation."
    return (
        f"Interpretation: `Empty` hands back a cached block, so its cost hardly depends on size "
        f"({fmt_ns(min(empty))} to {fmt_ns(max(empty))}): a fixed cost made of the cache's "
        f"bookkeeping (a mutex-guarded lookup on alloc and on free) and of creating and "
        f"destroying the `Tensor` object around the block, which this benchmark does not "
        f"separate; below glibc's "
        f"mmap threshold malloc+free is cheaper ({fmt_ns(malloc_small)} at 64 B), while at "
        f"64 MiB each malloc is an mmap+munmap ({fmt_ns(ns('BM_Malloc', big))}) and the cache "
        f"is {ns('BM_Malloc', big) / empty[-1]:,.0f}× faster.")


def copy_table(results, skipped_reason):
    header = ["| Size | " + " | ".join(what for _, what in COPY_CASES) + " |",
              "|---|" + "---:|" * len(COPY_CASES)]
    if skipped_reason:
        return "\n".join(header + [
            "| all | " + " | ".join(f"skipped: {skipped_reason}" for _ in COPY_CASES) + " |"])
    lines = list(header)
    for size, label in COPY_SIZES:
        cells = []
        for case, _ in COPY_CASES:
            r = results.get(f"{case}/{size}/real_time", results.get(f"{case}/{size}", {}))
            if "error" in r:
                cells.append(f"skipped: {r['error']}")
            elif "bytes_per_second" in r:
                cells.append(f"{r['bytes_per_second'] / 2**30:.2f} GiB/s "
                             f"(CV {r.get('cv', 0):.1%})")
            else:
                cells.append("no result")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def device_label(results):
    for r in results.values():
        if r.get("label"):
            return r["label"]
    return None


def render(paths, alloc, copy, copy_skipped, repetitions, command):
    alloc_results, context = alloc
    copy_results = copy[0] if copy else {}
    device = device_label(copy_results) if copy else None
    device_s = f" (device 0: {device})" if device else ""
    date = datetime.date.today().isoformat()
    if copy_skipped:
        copy_note = f"The OpenCL copies were not timed: {copy_skipped}."
    else:
        copy_note = (
            "Interpretation: the OpenCL device here is PoCL's CPU device, whose \"device\" "
            "memory is host memory, so these figures measure memcpy through the OpenCL runtime "
            "(enqueue, PoCL's worker thread, sync) on this CPU, not a bus; sizes that fit in the "
            "CPU's caches can come out faster than 256 MiB.")
    return f"""## {SECTION}

What a tensor allocation costs through the runtime's caching allocator (`runtime::Empty`) next to
plain malloc and aligned_alloc, and how fast the OpenCL device API copies between host and
device memory.

- Machine: {cpu_model()}, {os.cpu_count()} cores; Linux {platform.release()}
- Build: {paths['compiler']}, {paths['build_type']}; {date}
- Command: `{command}` (sources: `bench/alloc/`, `bench/opencl_copy/`)
- Method: Google Benchmark, {repetitions} repetitions, median of the repetitions' wall times;
  CV is the coefficient of variation over the repetitions. Timing starts only when the rest of
  the machine uses under {IDLE_LIMIT_CORES:.0%} of a core.

### Allocation: one alloc + free, nothing touches the memory

{alloc_table(alloc_results)}

Ratios above 1 mean `Empty` is slower. {alloc_note(alloc_results)}

### Copies through the OpenCL device API{device_s}

{copy_table(copy_results, copy_skipped)}

{copy_note}
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", default=os.path.join(REPO, "build-bench"),
                        help="build tree to use or create (default: build-bench, Release)")
    parser.add_argument("--output", default=os.path.join(REPO, "docs", "benchmarks.md"))
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--no-build", action="store_true", help="use --build-dir as it is")
    args = parser.parse_args()
    if args.repetitions < 5:
        harness.fail("--repetitions must be at least 5 for a median worth reporting")

    if shutil.which("cmake") is None and not args.no_build:
        harness.fail("cmake not found: run scripts/setup.sh first")
    build_dir = os.path.abspath(args.build_dir)
    paths = paths_of(build_dir) if args.no_build else build(build_dir)

    log(f"allocation: {paths['alloc_bench']} ({args.repetitions} repetitions)")
    alloc = timed_phase("the allocation benchmark",
                        lambda: run_gbench(paths["alloc_bench"], args.repetitions))

    copy, copy_skipped = None, None
    opencl_bench = paths["opencl_copy_bench"]
    if not opencl_bench:
        copy_skipped = "no OpenCL backend was built (OpenCL headers or ICD loader not found)"
    elif not os.path.exists(opencl_bench):
        copy_skipped = f"{os.path.basename(opencl_bench)} was not built"
    else:
        log(f"copies: {opencl_bench} ({args.repetitions} repetitions)")
        copy = timed_phase("the OpenCL copy benchmark",
                           lambda: run_gbench(opencl_bench, args.repetitions))
        errors = {r["error"] for r in copy[0].values() if "error" in r}
        if errors and all("error" in r for r in copy[0].values()):
            copy_skipped = "; ".join(sorted(errors))
    if copy_skipped:
        log(f"OpenCL copies skipped: {copy_skipped}")

    command = "/usr/bin/python3 bench/runtime/run.py"
    section = render(paths, alloc, copy, copy_skipped, args.repetitions, command)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    harness.write_section(args.output, section)
    print(section)
    log(f"wrote the '{SECTION}' section of {os.path.relpath(args.output, REPO)}")


if __name__ == "__main__":
    main()

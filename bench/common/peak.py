"""Measured peak fp32 throughput, for reporting achieved GFLOP/s as a share of it.

bench/common/peak_flops.cc (target kiln_peak_flops, built by bench/CMakeLists.txt with -O3
-march=native) times independent FMAs on the widest vectors the CPU has, on T threads pinned one
per physical core; measure() runs it and parse() reads its JSON lines.
"""

import json
import os
import subprocess

PATHS_JSON = os.path.join("bench", "models", "paths.json")  # under the build tree
# What the program times, in the doc's words (peak_flops.cc: kAccumulators, kRepetitions).
KERNEL = ("16 independent chains of FMAs per thread on the widest vectors the CPU has,\n"
          "  the best of 5 repetitions of 0.2 s")


def binary(build_dir):
    """Path of kiln_peak_flops in `build_dir`, from the paths.json CMake writes next to it;
    FileNotFoundError naming what to build when it is not there."""
    paths = os.path.join(build_dir, PATHS_JSON)
    try:
        with open(paths) as f:
            path = json.load(f)["peak_flops"]
    except (OSError, ValueError, KeyError):
        path = None
    if not path or not os.path.exists(path):
        raise FileNotFoundError(
            f"kiln_peak_flops is not built in {build_dir} (no {path or paths}): build the "
            "target kiln_peak_flops (bench/CMakeLists.txt, KILN_BUILD_BENCH=ON)")
    return path


def parse(output):
    """{threads: {"gflops", "isa", "vector_bits", "cpus"}} from kiln_peak_flops' stdout (one
    JSON object a line); ValueError quoting the line that is not one."""
    peaks = {}
    for line in output.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            threads = int(record["threads"])
            peaks[threads] = {"gflops": float(record["gflops"]), "isa": str(record["isa"]),
                              "vector_bits": int(record["vector_bits"]),
                              "cpus": [int(c) for c in record["cpus"]]}
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"kiln_peak_flops printed {line!r}, not a peak record "
                             f"({type(error).__name__}: {error})") from error
    if not peaks:
        raise ValueError("kiln_peak_flops printed no peak record")
    return peaks


def measure(path, thread_counts, seconds=0.2):
    """Peaks at 1 thread, at each of `thread_counts` and at one thread per core (parse()'s
    dict); each the best of several repetitions of about `seconds`."""
    counts = [str(t) for t in sorted({1, *thread_counts})] + ["cores"]
    out = subprocess.run([path, "--seconds", str(seconds), *counts], check=True,
                         stdout=subprocess.PIPE, text=True)
    return parse(out.stdout)


def share(gflops, peaks, threads):
    """`gflops` as a percentage of the peak at `threads` threads, e.g. "43%"; "—" without one."""
    peak = peaks.get(threads, {}).get("gflops") if peaks else None
    return f"{100 * gflops / peak:.0f}%" if peak else "—"


def describe(peaks):
    """The machine line's words for the peaks: "225 GFLOP/s on 1 thread, 450 on 2 (AVX-512
    FMA, 512-bit vectors; threads pinned one per core)"."""
    if not peaks:
        return "not measured"
    counts = sorted(peaks)
    first = peaks[counts[0]]
    parts = [f"{peaks[t]['gflops']:.0f} GFLOP/s on {t} thread{'s' if t > 1 else ''}"
             if i == 0 else f"{peaks[t]['gflops']:.0f} on {t}" for i, t in enumerate(counts)]
    return (", ".join(parts) + f" ({first['isa']}, {first['vector_bits']}-bit vectors; "
            "threads pinned one per core)")

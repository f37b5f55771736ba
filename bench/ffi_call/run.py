#!/usr/bin/python3
"""FFI call overhead, the one command: build, check the machine is idle, time, write the doc.

    /usr/bin/python3 bench/ffi_call/run.py [--build-dir DIR] [--output docs/benchmarks.md]

1. Builds a Release tree (build-bench/ unless --build-dir names an existing build with the
   benchmark and the Python package in it).
2. Refuses to time a busy machine: samples /proc/stat for 1 s and waits (up to 60 s) until the
   other processes use less than 15% of a core, before each phase; a phase during which other
   processes used more is timed again (3 attempts), never reported.
3. Runs bench/ffi_call/ffi_call_bench.cc (Google Benchmark, 10 repetitions, medians) and the
   Python timings (timeit, median of 10 repeats) against libkiln_testing.so.
4. Replaces the "FFI call overhead" section of docs/benchmarks.md: each median next to the
   tvm-ffi figure measured on this machine, and their ratio.
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
from harness import IDLE_LIMIT_CORES, PYTHON, REPO, cpu_model, log, timed_phase  # noqa: E402

harness.set_name("ffi_call")

SECTION = "FFI call overhead"

# tvm-ffi, measured on this machine (same CPU) with its own benchmarks: the figures to beat.
ANCHOR_CPP_CALL_NS = 3.8
ANCHOR_C_ABI_CALL_NS = 5.2
ANCHOR_PY_EMPTY_CALL_NS = 78.0
ANCHOR_OBJECT_MAKE_FREE_NS = 11.4
ANCHOR_STRING32_CALL_NS = 28.0

# (benchmark name, what it measures, tvm-ffi anchor in ns or None)
CPP_ROWS = [
    ("BM_TypedCallAdd", "C++ typed call `testing.add(1, 2)` via `kiln::Function`",
     ANCHOR_CPP_CALL_NS),
    ("BM_TypedCallNop", "C++ typed empty call `testing.nop()` via `kiln::Function`",
     ANCHOR_CPP_CALL_NS),
    ("BM_CAbiCallNop", "C ABI empty call: `kiln_function_call` on `testing.nop`",
     ANCHOR_C_ABI_CALL_NS),
    ("BM_TypedCallString32", "C++ call `testing.string_len(s)`, `s` a 32-char `std::string`",
     ANCHOR_STRING32_CALL_NS),
    ("BM_ObjectMakeFree", "`make_object` of a small object + free", ANCHOR_OBJECT_MAKE_FREE_NS),
]
PY_ROWS = [
    ("py_nop", "Python empty call `testing.nop()`", ANCHOR_PY_EMPTY_CALL_NS),
    ("py_add", "Python call `testing.add(1, 2)`", None),
    ("py_string32", "Python call `testing.string_len(s)`, `s` a 32-char `str`", None),
    ("py_lambda", "Reference: Python-to-Python empty call `(lambda: None)()`", None),
]

# ---- build ----------------------------------------------------------------------------------


def build(build_dir):
    harness.build(build_dir, ["kiln_ffi_call_bench", "kiln_python_ffi"],
                  what="the benchmark and the Python package")
    with open(os.path.join(build_dir, "bench", "ffi_call", "paths.json")) as f:
        return json.load(f)


# ---- C++ ------------------------------------------------------------------------------------


def run_cpp(paths, repetitions):
    out = subprocess.run(
        [paths["bench"], f"--benchmark_repetitions={repetitions}",
         "--benchmark_report_aggregates_only=true", "--benchmark_format=json"],
        check=True, stdout=subprocess.PIPE, text=True).stdout
    report = json.loads(out)
    medians = {}
    cvs = {}
    for b in report["benchmarks"]:
        unit = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
        if b.get("aggregate_name") == "median":
            medians[b["run_name"]] = b["real_time"] * unit
        elif b.get("aggregate_name") == "cv":
            cvs[b["run_name"]] = b["real_time"]  # a fraction, whatever the unit
    return medians, cvs, report["context"]


# ---- Python ---------------------------------------------------------------------------------

# Runs in a fresh interpreter with the build's kiln package on PYTHONPATH; prints JSON.
PYTHON_WORKER = r"""
import json, statistics, sys, timeit
import kiln
kiln.load_plugin(sys.argv[1])
repeat, number = int(sys.argv[2]), int(sys.argv[3])
nop = kiln.get_global_func("testing.nop")
add = kiln.get_global_func("testing.add")
string_len = kiln.get_global_func("testing.string_len")
text = "k" * 32
assert add(1, 2) == 3 and string_len(text) == 32
empty = lambda: None
cases = {
    "py_nop": ("nop()", {"nop": nop}),
    "py_add": ("add(1, 2)", {"add": add}),
    "py_string32": ("string_len(text)", {"string_len": string_len, "text": text}),
    "py_lambda": ("empty()", {"empty": empty}),
}
result = {}
for name, (stmt, env) in cases.items():
    times = timeit.repeat(stmt, globals=env, repeat=repeat, number=number)
    per_call = [t / number * 1e9 for t in times]
    median = statistics.median(per_call)
    result[name] = {"median_ns": median, "cv": statistics.pstdev(per_call) / median}
print(json.dumps(result))
"""


def run_python(paths, repetitions, number):
    env = dict(os.environ, PYTHONPATH=paths["python_dir"], PYTHONDONTWRITEBYTECODE="1")
    env.pop("KILN_PLUGIN_PATH", None)  # time exactly what we load
    out = subprocess.run(
        [PYTHON, "-c", PYTHON_WORKER, paths["testing_plugin"], str(repetitions), str(number)],
        check=True, stdout=subprocess.PIPE, text=True, env=env).stdout
    data = json.loads(out)
    return ({k: v["median_ns"] for k, v in data.items()}, {k: v["cv"] for k, v in data.items()})


# ---- the document ---------------------------------------------------------------------------


def fmt_ns(ns):
    return f"{ns:.1f} ns" if ns < 100 else f"{ns:.0f} ns"


def table(rows, medians, cvs):
    lines = ["| What is timed | Kiln (median) | spread (CV) | tvm-ffi | Kiln / tvm-ffi |",
             "|---|---:|---:|---:|---:|"]
    for name, what, anchor in rows:
        kiln_ns = medians[name]
        anchor_s = fmt_ns(anchor) if anchor else "—"
        ratio = f"{kiln_ns / anchor:.2f}×" if anchor else "—"
        spread = f"{cvs.get(name, 0):.1%}"
        lines.append(f"| {what} | {fmt_ns(kiln_ns)} | {spread} | {anchor_s} | {ratio} |")
    return "\n".join(lines)


def render(paths, cpp, py, context, repetitions, number, command):
    cpp_medians, cpp_cvs = cpp
    py_medians, py_cvs = py
    ncpu = os.cpu_count()
    compiler = context.get("kiln_compiler", paths["compiler"])
    build_type = context.get("kiln_build_type", paths["build_type"])
    date = datetime.date.today().isoformat()
    return f"""## {SECTION}

What one call through Kiln's calling convention costs, from C++ and from Python, next to
[tvm-ffi](https://github.com/apache/tvm-ffi)'s figures measured on this same machine. Every call
goes to `libkiln_testing.so`, loaded as a plugin, so it crosses a DSO boundary as calls into any
plugin do.

- Machine: {cpu_model()}, {ncpu} cores; Linux {platform.release()}
- Build: {compiler}, {build_type}; Python {platform.python_version()}; {date}
- Command: `{command}` (source: `bench/ffi_call/`)
- Method: C++ with Google Benchmark, {repetitions} repetitions, median of the repetitions'
  wall times; Python with `timeit`, {repetitions} repeats of {number:,} calls, median per call
  (the `timeit` loop's own few ns included). Spread is the coefficient of variation
  over the repetitions. Timing starts only when the rest of the machine uses under
  {IDLE_LIMIT_CORES:.0%} of a core.

### C++

{table(CPP_ROWS, cpp_medians, cpp_cvs)}

### Python

{table(PY_ROWS, py_medians, py_cvs)}

A ratio above 1 means Kiln is slower than tvm-ffi. The typed C++ calls call the function's entry
directly; the C ABI row goes through the exported `kiln_function_call`, which is what a C host or
another language binding pays. The 32-character string is passed borrowed and the callee builds
its `String` from it, so that row includes one allocation.
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", default=os.path.join(REPO, "build-bench"),
                        help="build tree to use or create (default: build-bench, Release)")
    parser.add_argument("--output", default=os.path.join(REPO, "docs", "benchmarks.md"))
    parser.add_argument("--repetitions", type=int, default=10)
    parser.add_argument("--python-number", type=int, default=200_000,
                        help="calls per Python timing repeat")
    parser.add_argument("--no-build", action="store_true", help="use --build-dir as it is")
    args = parser.parse_args()

    if shutil.which("cmake") is None and not args.no_build:
        sys.exit("[ffi_call] cmake not found: run scripts/setup.sh first")
    build_dir = os.path.abspath(args.build_dir)
    if args.no_build:
        with open(os.path.join(build_dir, "bench", "ffi_call", "paths.json")) as f:
            paths = json.load(f)
    else:
        paths = build(build_dir)

    log(f"C++: {paths['bench']} ({args.repetitions} repetitions)")
    cpp_medians, cpp_cvs, context = timed_phase(
        "the C++ benchmark", lambda: run_cpp(paths, args.repetitions))
    log(f"Python: {args.repetitions} x {args.python_number:,} calls per case")
    py = timed_phase("the Python timings",
                     lambda: run_python(paths, args.repetitions, args.python_number))

    command = "/usr/bin/python3 bench/ffi_call/run.py"
    section = render(paths, (cpp_medians, cpp_cvs), py, context, args.repetitions,
                     args.python_number, command)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    harness.write_section(args.output, section)
    print(section)
    log(f"wrote the '{SECTION}' section of {os.path.relpath(args.output, REPO)}")


if __name__ == "__main__":
    main()

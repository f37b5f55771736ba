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
import re
import resource
import shutil
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECTION = "FFI call overhead"
PYTHON = "/usr/bin/python3"

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

IDLE_LIMIT_CORES = 0.15
IDLE_WAIT_S = 60


def log(message):
    print(f"[ffi_call] {message}", flush=True)


# ---- is the machine idle? -------------------------------------------------------------------


def read_cpu_times():
    """(busy, total) jiffies summed over all CPUs, and the number of CPUs."""
    with open("/proc/stat") as f:
        lines = f.read().splitlines()
    fields = [int(v) for v in lines[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # guest time is already counted in user
    ncpu = sum(1 for line in lines if re.match(r"cpu\d+ ", line))
    return total - idle, total, ncpu


def busy_cores(interval_s=1.0):
    """How many cores' worth of CPU the rest of the machine used over `interval_s`."""
    busy0, total0, ncpu = read_cpu_times()
    time.sleep(interval_s)
    busy1, total1, _ = read_cpu_times()
    if total1 == total0:
        return 0.0
    return (busy1 - busy0) / (total1 - total0) * ncpu


def others_busy_during(run):
    """Calls run() and returns (its result, cores' worth of CPU that processes other than run()'s
    children used meanwhile), so a build that starts mid-benchmark is noticed."""
    hz = os.sysconf("SC_CLK_TCK")
    busy0, _, _ = read_cpu_times()
    child0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall0 = time.monotonic()
    result = run()
    wall = time.monotonic() - wall0
    busy1, _, _ = read_cpu_times()
    child1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    ours = (child1.ru_utime - child0.ru_utime) + (child1.ru_stime - child0.ru_stime)
    others = max(0.0, (busy1 - busy0) / hz - ours) / max(wall, 1e-9)
    return result, others


def timed_phase(phase, run, attempts=3):
    """Runs a timing phase on an idle machine; repeats it if something else ran meanwhile."""
    for attempt in range(1, attempts + 1):
        wait_until_idle(phase)
        result, others = others_busy_during(run)
        if others <= IDLE_LIMIT_CORES:
            return result
        log(f"other processes used {others:.0%} of a core during {phase} "
            f"(attempt {attempt}/{attempts}); timing it again")
    sys.exit(f"[ffi_call] refusing to report {phase}: the machine never stayed quiet "
             f"through it ({attempts} attempts). Run again when no build or test is running.")


def wait_until_idle(phase):
    deadline = time.monotonic() + IDLE_WAIT_S
    while True:
        used = busy_cores()
        if used <= IDLE_LIMIT_CORES:
            log(f"idle before {phase}: other processes use {used:.0%} of a core")
            return
        if time.monotonic() >= deadline:
            sys.exit(
                f"[ffi_call] refusing to time {phase}: other processes use {used:.0%} of a core "
                f"(limit {IDLE_LIMIT_CORES:.0%}) after waiting {IDLE_WAIT_S} s. A build or test is "
                "probably running (see `top`); run again when the machine is quiet."
            )
        log(f"machine busy ({used:.0%} of a core in use), waiting before {phase} ...")
        time.sleep(2)


# ---- build ----------------------------------------------------------------------------------


def build(build_dir):
    paths_file = os.path.join(build_dir, "bench", "ffi_call", "paths.json")
    if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
        log(f"configuring a Release build in {build_dir}")
        subprocess.run(
            ["cmake", "-S", REPO, "-B", build_dir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
             f"-DPython3_EXECUTABLE={PYTHON}"],
            check=True, stdout=subprocess.DEVNULL)
    log(f"building the benchmark and the Python package in {build_dir}")
    targets = ["kiln_ffi_call_bench", "kiln_python_ffi"]
    result = subprocess.run(["cmake", "--build", build_dir, "--target", *targets],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        sys.stdout.write(result.stdout[-20000:])
        sys.exit(f"[ffi_call] build failed in {build_dir} (is libbenchmark-dev installed?)")
    with open(paths_file) as f:
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


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


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


def write_section(path, section_text):
    header = (
        "# Benchmarks\n\n"
        "Generated by the scripts under `bench/`; each section is rewritten by the command it\n"
        "names. Do not edit by hand.\n\n"
    )
    text = open(path).read() if os.path.exists(path) else header
    pattern = re.compile(rf"^## {re.escape(SECTION)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _: section_text + "\n", text)
    else:
        text = text.rstrip("\n") + "\n\n" + section_text
    with open(path, "w") as f:
        f.write(text.rstrip("\n") + "\n")


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
    write_section(args.output, section)
    print(section)
    log(f"wrote the '{SECTION}' section of {os.path.relpath(args.output, REPO)}")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""FFI call overhead, the one command: build Kiln's and tvm-ffi's benchmarks, check the machine
is idle, time both in turn, write the doc.

    /usr/bin/python3 bench/ffi_call/run.py [--build-dir DIR] [--output docs/benchmarks.md]
    /usr/bin/python3 bench/ffi_call/run.py --quick      # smoke run, prints the tables only

1. Builds a Release tree (build-bench/ unless --build-dir names an existing build with the
   benchmark and the Python package in it).
2. Gets tvm-ffi, the peer, in the same run (bench/ffi_call/peer.py): the apache-tvm-ffi wheel
   from PyPI in a venv cached under the build folder, and tvm_ffi_peer/, a CMake project of its
   own built against the wheel's headers and libtvm_ffi.so with the Kiln tree's compiler.
3. Refuses to time a busy machine: samples /proc/stat for 1 s and waits (up to 60 s) until the
   other processes use less than 15% of a core, before each phase; a phase during which other
   processes used more is timed again (3 attempts), never reported. --quick only warns.
4. C++: Kiln's ffi_call_bench.cc and tvm-ffi's tvm_ffi_peer/tvm_ffi_call_bench.cc (Google
   Benchmark), one repetition of each in turn, 10 rounds, medians. Python: python_calls.py times
   both sides' calls with timeit in one process, one repeat of each in turn, 10 repeats, medians.
5. Replaces the "FFI call overhead" section of docs/benchmarks.md: each Kiln median next to
   tvm-ffi's from the same run, and their ratio (--quick writes no file unless --output is given).
"""

import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
import harness  # noqa: E402  (bench/common/harness.py: idle checks, build, doc sections)
from harness import IDLE_LIMIT_CORES, PYTHON, REPO, cpu_model, log, timed_phase  # noqa: E402

import peer  # noqa: E402  (bench/ffi_call/peer.py: tvm-ffi from PyPI, its benchmark built)

harness.set_name("ffi_call")

SECTION = "FFI call overhead"
PYTHON_CALLS = os.path.join(HERE, "python_calls.py")
QUICK = {"repetitions": 3, "python_number": 50_000, "min_time": 0.1}

# (benchmark name, what is timed: Kiln's call / tvm-ffi's call, or None without a counterpart).
# The two C++ programs use the same benchmark names; tvm-ffi's functions are registered as
# bench.* (tvm_ffi_peer/peer_functions.cc) with the bodies of Kiln's testing.*.
CPP_ROWS = [
    ("BM_TypedCallAdd", "Typed call `add(1, 2)`",
     "`testing.add` via `kiln::Function`", "`bench.add` via `tvm::ffi::Function`"),
    ("BM_TypedCallNop", "Typed empty call `nop()`",
     "`testing.nop` via `kiln::Function`", "`bench.nop` via `tvm::ffi::Function`"),
    ("BM_CAbiCallNop", "C ABI empty call",
     "`kiln_function_call` on `testing.nop`", "`TVMFFIFunctionCall` on `bench.nop`"),
    ("BM_TypedCallString32", "Typed call `string_len(s)`, `s` a 32-char `std::string`",
     "`testing.string_len`", "`bench.string_len`"),
    ("BM_ObjectMakeFree", "`make_object` of a small object + free",
     "`kiln::make_object`", "`tvm::ffi::make_object`"),
]
PY_ROWS = [
    ("py_nop", "Empty call `nop()`", "`testing.nop`", "`bench.nop`"),
    ("py_add", "Call `add(1, 2)`", "`testing.add`", "`bench.add`"),
    ("py_string32", "Call `string_len(s)`, `s` a 32-char `str`",
     "`testing.string_len`", "`bench.string_len`"),
    ("py_lambda", "Reference: Python-to-Python empty call `(lambda: None)()`", None, None),
]

# ---- build ----------------------------------------------------------------------------------


def kiln_paths(build_dir):
    with open(os.path.join(build_dir, "bench", "ffi_call", "paths.json")) as f:
        return json.load(f)


def cxx_compiler_of(build_dir):
    """The C++ compiler Kiln's tree was configured with, so that tvm-ffi's benchmark uses it too."""
    with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith("CMAKE_CXX_COMPILER:"):
                return line.split("=", 1)[1].strip()
    return "c++"


def build(build_dir, no_build):
    """(Kiln's paths.json, the tvm-ffi venv's python, the peer's paths.json)."""
    if not no_build:
        harness.build(build_dir, ["kiln_ffi_call_bench", "kiln_python_ffi"],
                      what="the benchmark and the Python package")
    paths = kiln_paths(build_dir)
    python, peer_paths = peer.ensure(build_dir, cxx_compiler_of(build_dir), paths["build_type"],
                                     log)
    return paths, python, peer_paths


# ---- timing phases --------------------------------------------------------------------------


def phase(name, run, quick):
    """timed_phase(); with --quick, times at once and only warns when the machine was busy."""
    if not quick:
        return timed_phase(name, run)
    result, others = harness.others_busy_during(run)
    if others > IDLE_LIMIT_CORES:
        log(f"warning: other processes used {others:.0%} of a core during {name} "
            f"(--quick times a busy machine anyway)")
    return result


def run_gbench(program, min_time):
    """{benchmark name: wall ns per iteration} from one repetition of `program`, and its
    Google Benchmark context."""
    command = [program, "--benchmark_repetitions=1", "--benchmark_format=json"]
    if min_time:
        command.append(f"--benchmark_min_time={min_time}")
    report = json.loads(subprocess.run(command, check=True, stdout=subprocess.PIPE,
                                       text=True).stdout)
    times = {}
    for b in report["benchmarks"]:
        if b.get("run_type", "iteration") == "iteration":
            unit = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
            times[b["run_name"]] = b["real_time"] * unit
    return times, report["context"]


def run_cpp(programs, rounds, min_time):
    """Alternates one repetition of each side's program for `rounds` rounds (the side that goes
    first alternates too); returns {side: {benchmark: [ns, one per round]}} and Kiln's context."""
    samples = {side: {} for side in programs}
    context = {}
    order = list(programs)
    for r in range(rounds):
        for side in order if r % 2 == 0 else order[::-1]:
            times, ctx = run_gbench(programs[side], min_time)
            for name, ns in times.items():
                samples[side].setdefault(name, []).append(ns)
            if side == "kiln":
                context = ctx
    return samples, context


def run_python(paths, python, peer_paths, repeat, number):
    """{side: {case: [ns per call, one per repeat]}, "info": {...}} from python_calls.py."""
    env = dict(os.environ, PYTHONPATH=paths["python_dir"], PYTHONDONTWRITEBYTECODE="1", **peer.ENV)
    env.pop("KILN_PLUGIN_PATH", None)  # time exactly what we load
    out = subprocess.run(
        [python, PYTHON_CALLS, paths["testing_plugin"], peer_paths["functions_library"],
         str(repeat), str(number)],
        check=True, stdout=subprocess.PIPE, text=True, env=env).stdout
    return json.loads(out)


def summarize(samples):
    """{side: {name: (median, coefficient of variation)}} over the repetitions."""
    return {side: {name: (statistics.median(v), statistics.pstdev(v) / statistics.median(v))
                   for name, v in cases.items()}
            for side, cases in samples.items() if side != "info"}


# ---- the document ---------------------------------------------------------------------------


def fmt_ns(ns):
    return f"{ns:.1f} ns" if ns < 100 else f"{ns:.0f} ns"


def table(rows, stats):
    lines = ["| What is timed | Kiln calls | tvm-ffi calls | Kiln (median, CV) "
             "| tvm-ffi (median, CV) | Kiln / tvm-ffi |",
             "|---|---|---|---:|---:|---:|"]
    for name, what, kiln_call, peer_call in rows:
        kiln_ns, kiln_cv = stats["kiln"][name]
        kiln_s = f"{fmt_ns(kiln_ns)} ({kiln_cv:.1%})"
        if peer_call and name in stats["tvm_ffi"]:
            peer_ns, peer_cv = stats["tvm_ffi"][name]
            peer_s, ratio = f"{fmt_ns(peer_ns)} ({peer_cv:.1%})", f"{kiln_ns / peer_ns:.2f}×"
        else:
            peer_s = ratio = "—"
        lines.append(f"| {what} | {kiln_call or '—'} | {peer_call or '—'} | {kiln_s} | {peer_s} "
                     f"| {ratio} |")
    return "\n".join(lines)


def bullet(text):
    """A markdown list item wrapped at 100 columns."""
    return textwrap.fill(text, width=100, initial_indent="- ", subsequent_indent="  ",
                         break_long_words=False, break_on_hyphens=False)


def render(paths, peer_paths, cpp_stats, py_stats, py_info, context, args, command):
    compiler = context.get("kiln_compiler", paths["compiler"])
    build_type = context.get("kiln_build_type", paths["build_type"])
    version = peer_paths["version"]
    gil = ("both sides release the GIL around every call (Kiln always; tvm-ffi by default, "
           "`Function.release_gil`)" if py_info.get("tvm_ffi_release_gil") else
           "Kiln releases the GIL around every call, tvm-ffi's functions here do not")
    bullets = [
        f"Machine: {cpu_model()}, {os.cpu_count()} cores; Linux {platform.release()}",
        f"Kiln: {compiler}, {build_type}; Python {platform.python_version()}; "
        f"{datetime.date.today().isoformat()}",
        f"tvm-ffi: the `apache-tvm-ffi=={version}` wheel from PyPI, in a venv under the build "
        "folder; `libtvm_ffi.so` (its registry and C ABI) and its Python module as the wheel "
        "ships them; the benchmark and its functions built here with "
        f"{peer_paths['compiler']}, {peer_paths['build_type']}",
        f"Command: `{command}` (source: `bench/ffi_call/`)",
        f"Method: C++ with Google Benchmark, {args.repetitions} rounds, each one repetition of "
        "Kiln's program and one of tvm-ffi's (which goes first alternates from round to round); "
        "median of the rounds' wall times. Python with `timeit`, both sides in one process: "
        f"{args.repetitions} repeats of {args.python_number:,} calls per case, Kiln's and "
        "tvm-ffi's repeats alternating; median per call (the `timeit` loop's own few ns "
        f"included); {gil}. CV is the coefficient of variation over the rounds or repeats. "
        f"Timing starts only when the rest of the machine uses under {IDLE_LIMIT_CORES:.0%} "
        "of a core.",
    ]
    if args.quick:
        bullets.append(
            f"**Quick run** (`--quick`): {args.repetitions} rounds, Google Benchmark's minimum "
            f"time {args.min_time} s per benchmark, {args.python_number:,} calls per Python "
            "repeat, and the machine was not required to be idle: a smoke test, not a result.")
    bullet_text = "\n".join(bullet(b) for b in bullets)
    return f"""## {SECTION}

What one call through Kiln's calling convention costs, from C++ and from Python, next to
[tvm-ffi](https://github.com/apache/tvm-ffi) {version} doing the same in the same run. Every Kiln
call goes to `libkiln_testing.so`, loaded as a plugin; every tvm-ffi call goes to a library of
functions with the same signatures and bodies, registered in tvm-ffi's global registry with
`Function::FromTyped` (`bench/ffi_call/tvm_ffi_peer/peer_functions.cc`) and loaded with `dlopen`.
So on both sides a call crosses a DSO boundary, as calls into any plugin do.

{bullet_text}

### C++

{table(CPP_ROWS, cpp_stats)}

### Python

{table(PY_ROWS, py_stats)}

A ratio above 1 means Kiln is slower than tvm-ffi. The typed C++ calls call the function's entry
directly on both sides; the C ABI row goes through the exported C function (`kiln_function_call`,
`TVMFFIFunctionCall`), which is what a C host or another language binding pays. The
32-character string is passed borrowed on both sides (a C string) and the callee builds its
`String` from it, so that row includes one allocation. What differs: Kiln's libraries and
Python extension are built here, while tvm-ffi's `libtvm_ffi.so` and Cython module come
prebuilt in the wheel; Python loads Kiln's functions with `kiln.load_plugin` and tvm-ffi's with
`ctypes.CDLL`, and both look them up with `get_global_func`.
"""


# ---- main -----------------------------------------------------------------------------------


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", default=os.path.join(REPO, "build-bench"),
                        help="build tree to use or create (default: build-bench, Release); also "
                             "holds bench-venv-tvm-ffi/ and tvm_ffi_peer/")
    parser.add_argument("--output", default=None,
                        help="markdown file to update (default: docs/benchmarks.md; none with "
                             "--quick)")
    parser.add_argument("--repetitions", type=int, default=10,
                        help="rounds of both C++ programs, and Python repeats per case")
    parser.add_argument("--python-number", type=int, default=200_000,
                        help="calls per Python timing repeat")
    parser.add_argument("--no-build", action="store_true",
                        help="use --build-dir as it is (tvm-ffi's benchmark is still checked)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: {repetitions} rounds, {python_number:,} calls per Python "
                             "repeat, {min_time} s per benchmark; warns instead of refusing a busy "
                             "machine; writes no file unless --output is given".format(**QUICK))
    args = parser.parse_args(argv)
    args.min_time = None
    if args.quick:
        vars(args).update(QUICK)
    if args.repetitions < 1 or args.python_number < 1:
        parser.error("--repetitions and --python-number must be positive")
    if args.output is None and not args.quick:
        args.output = os.path.join(REPO, "docs", "benchmarks.md")
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if shutil.which("cmake") is None:
        harness.fail("cmake not found: run scripts/setup.sh first")
    build_dir = os.path.abspath(args.build_dir)
    paths, python, peer_paths = build(build_dir, args.no_build)

    programs = {"kiln": paths["bench"], "tvm_ffi": peer_paths["bench"]}
    log(f"C++: {args.repetitions} rounds of {programs['kiln']} and {programs['tvm_ffi']}")
    cpp, context = phase("the C++ benchmarks",
                         lambda: run_cpp(programs, args.repetitions, args.min_time), args.quick)
    log(f"Python: {args.repetitions} x {args.python_number:,} calls per case and side")
    py = phase("the Python timings",
               lambda: run_python(paths, python, peer_paths, args.repetitions,
                                  args.python_number), args.quick)

    command = " ".join([PYTHON, "bench/ffi_call/run.py"] + [shlex.quote(a) for a in argv])
    section = render(paths, peer_paths, summarize(cpp), summarize(py), py.get("info", {}),
                     context, args, command)
    print(section)
    if args.output:
        os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
        harness.write_section(args.output, section)
        log(f"wrote the '{SECTION}' section of {os.path.relpath(args.output, REPO)}")
    else:
        log("--quick: no file written (give --output to write one)")


if __name__ == "__main__":
    main()

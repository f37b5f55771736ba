"""Shared machinery for the benchmark scripts under bench/ (each bench/<name>/run.py).

A run.py imports it with

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
    import harness
    harness.set_name("<name>")   # the [<name>] prefix of its log lines and error messages

and gets: log(); the /proc/stat idle checks (read_cpu_times, busy_cores, others_busy_during,
timed_phase, wait_until_idle); interleaved() runs of variants and check_agree() of their outputs;
build() of a Release tree; cpu_model(); and write_section(), which rewrites one "## " section of
docs/benchmarks.md.
"""

import os
import platform
import re
import resource
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON = "/usr/bin/python3"
# The reference models of bench/models and bench/serving (random weights, nothing downloaded).
MODEL_GENERATOR = os.path.join(REPO, "tests", "models", "make_reference_models.py")

IDLE_LIMIT_CORES = 0.15
IDLE_WAIT_S = 60

_name = "bench"


def set_name(name):
    """Sets the prefix of log lines and error messages: `[name] ...`."""
    global _name
    _name = name


def log(message):
    print(f"[{_name}] {message}", flush=True)


def fail(message):
    """Exits with `[name] message`."""
    sys.exit(f"[{_name}] {message}")


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


def _cpu_seconds(who):
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def others_busy_during(run, in_process=False):
    """Calls run() and returns (its result, cores' worth of CPU that processes other than run()'s
    children used meanwhile), so a build that starts mid-benchmark is noticed. `in_process`:
    run() times work in this process's own threads, whose CPU is not "other" either."""
    hz = os.sysconf("SC_CLK_TCK")
    who = [resource.RUSAGE_CHILDREN] + ([resource.RUSAGE_SELF] if in_process else [])
    busy0, _, _ = read_cpu_times()
    ours0 = sum(_cpu_seconds(w) for w in who)
    wall0 = time.monotonic()
    result = run()
    wall = time.monotonic() - wall0
    busy1, _, _ = read_cpu_times()
    ours = sum(_cpu_seconds(w) for w in who) - ours0
    # /proc/stat counts whole clock ticks (10 ms), so each reading may lag by a tick per core:
    # a phase of a few ticks would otherwise see a tick of the kernel's housekeeping as a busy
    # neighbour.
    tick_error = 2 * os.cpu_count() / hz
    others = max(0.0, (busy1 - busy0) / hz - ours - tick_error) / max(wall, 1e-9)
    return result, others


def timed_phase(phase, run, attempts=3, in_process=False):
    """Runs a timing phase on an idle machine; repeats it if something else ran meanwhile
    (`in_process`: as others_busy_during)."""
    for attempt in range(1, attempts + 1):
        wait_until_idle(phase)
        result, others = others_busy_during(run, in_process)
        if others <= IDLE_LIMIT_CORES:
            return result
        log(f"other processes used {others:.0%} of a core during {phase} "
            f"(attempt {attempt}/{attempts}); timing it again")
    fail(f"refusing to report {phase}: the machine never stayed quiet "
         f"through it ({attempts} attempts). Run again when no build or test is running.")


def interleaved(calls, x, runs):
    """{variant: median seconds} of calls[variant](x): one untimed call each (plans the shape,
    warms caches), then the variants take turns, their order reversed every run."""
    import statistics

    times = {name: [] for name in calls}
    names = list(calls)
    for name in names:
        calls[name](x)
    for run in range(runs):
        for name in (names if run % 2 == 0 else names[::-1]):
            start = time.perf_counter()
            calls[name](x)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def parse_benchmark_args(parser, argv, runs, quick_runs):
    """Adds the options every side-by-side benchmark takes to `parser` (--runs, --build-dir,
    --quick, --output), parses `argv`, and settles --quick (settle_quick)."""
    parser.add_argument("--runs", type=int, default=runs)
    parser.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    parser.add_argument("--quick", action="store_true",
                        help=f"{quick_runs} runs, warn on a busy machine, write no file")
    parser.add_argument("--output", default=None)
    args = parser.parse_args(argv)
    args.build_dir = os.path.abspath(args.build_dir)
    return settle_quick(args, quick_runs)


def settle_quick(args, quick_runs):
    """--quick: at most `quick_runs` runs, the idle checks only warn (timed_phase runs the phase
    as it is), and no file unless --output names one; otherwise the table goes to
    docs/benchmarks.md unless --output names another file."""
    global timed_phase
    if args.quick:
        args.runs = min(args.runs, quick_runs)
        timed_phase = lambda phase, run, attempts=3, in_process=False: run()  # noqa: E731
    elif args.output is None:
        args.output = os.path.join(REPO, "docs", "benchmarks.md")
    return args


def check_agree(calls, x, reference="ONNX Runtime", rtol=1e-3, atol=1e-4):
    """Fails unless every variant's output on x is close to calls[reference]'s: a fast wrong
    answer is no result, so nothing is timed then."""
    import numpy as np

    expected = calls[reference](x)
    for name, call in calls.items():
        if not np.allclose(call(x), expected, rtol=rtol, atol=atol):
            fail(f"{name} disagrees with {reference}: nothing is timed")


def wait_until_idle(phase):
    deadline = time.monotonic() + IDLE_WAIT_S
    while True:
        used = busy_cores()
        if used <= IDLE_LIMIT_CORES:
            log(f"idle before {phase}: other processes use {used:.0%} of a core")
            return
        if time.monotonic() >= deadline:
            fail(
                f"refusing to time {phase}: other processes use {used:.0%} of a core "
                f"(limit {IDLE_LIMIT_CORES:.0%}) after waiting {IDLE_WAIT_S} s. A build or test is "
                "probably running (see `top`); run again when the machine is quiet."
            )
        log(f"machine busy ({used:.0%} of a core in use), waiting before {phase} ...")
        time.sleep(2)


# ---- build ----------------------------------------------------------------------------------


def build(build_dir, targets, what="the benchmark"):
    """Configures `build_dir` as a Release tree (Ninja) if it has no CMakeCache.txt, then builds
    `targets`; exits with the build's output tail if that fails."""
    if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
        log(f"configuring a Release build in {build_dir}")
        subprocess.run(
            ["cmake", "-S", REPO, "-B", build_dir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
             f"-DPython3_EXECUTABLE={PYTHON}"],
            check=True, stdout=subprocess.DEVNULL)
    log(f"building {what} in {build_dir}")
    result = subprocess.run(["cmake", "--build", build_dir, "--target", *targets],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        sys.stdout.write(result.stdout[-20000:])
        fail(f"build failed in {build_dir} (is libbenchmark-dev installed?)")


# ---- the document ---------------------------------------------------------------------------


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def load_model_generator():
    """tests/models/make_reference_models.py as a module (model list, builders, file names)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_reference_models", MODEL_GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_type(build_dir):
    """CMAKE_BUILD_TYPE of the CMake tree `build_dir`, as the docs print it."""
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("CMAKE_BUILD_TYPE:"):
                    return line.split("=", 1)[1].strip() or "no build type"
    except OSError:
        pass
    return "unknown build type"


def use_build_plugins(build_dir):
    """Makes the build's plugins loadable by name (the "Kiln + dnnl" variants), and OpenMP
    threads (oneDNN's) sleep when idle instead of spinning through the next variant's turn, as
    bench/models runs them. Call before ort_peer.enter_venv, which re-executes with this
    environment."""
    os.environ.setdefault("KILN_PLUGIN_PATH", os.path.join(build_dir, "lib", "kiln", "plugins"))
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")


def placement_summary(report):
    """The lines of a kiln.build placement report (report=True) that say how many op calls went
    where and, with measured placement, each region's two costs and where it went; joined by
    "; "."""
    return "; ".join(line.strip() for line in report.splitlines()[1:]
                     if line.startswith("  ") and ("op calls" in line or " ms vs " in line))


def publish_section(output, section_text, section):
    """Prints the section and writes it into `output` (None: --quick, nothing written)."""
    print(section_text)
    if output:
        write_section(output, section_text)
        log(f"wrote the '{section}' section of {os.path.relpath(output, REPO)}")
    else:
        log("--quick: no file written (give --output to write one)")


def write_section(path, section_text):
    """Replaces the section of `path` whose "## Title" line begins `section_text` (everything up
    to the next "## " heading), or appends it; creates the file with its header if need be."""
    title = section_text.splitlines()[0]
    if not title.startswith("## "):
        raise ValueError(f"section text must start with a '## ' heading, not {title!r}")
    header = (
        "# Benchmarks\n\n"
        "Generated by the scripts under `bench/`; each section is rewritten by the command it\n"
        "names. Do not edit by hand.\n\n"
    )
    text = open(path).read() if os.path.exists(path) else header
    pattern = re.compile(rf"^{re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _: section_text + "\n", text)
    else:
        text = text.rstrip("\n") + "\n\n" + section_text
    with open(path, "w") as f:
        f.write(text.rstrip("\n") + "\n")

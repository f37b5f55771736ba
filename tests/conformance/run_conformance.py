#!/usr/bin/python3
"""ONNX backend conformance for Kiln: every case of ONNX's backend test data, through
kiln.frontend.from_onnx, kiln.build and Executable.run, compared with ONNX's stored outputs.

Why a runner of our own rather than onnx.backend.test: we want one status per case that says
what to fix (an op to add, an import error, a wrong kernel, a crash), crash isolation so a
segfault in one kernel does not hide the other thousand results, and a list of cases that must
keep passing (expected_passes.txt).

    PYTHONPATH=build/python /usr/bin/python3 tests/conformance/run_conformance.py \\
        --jobs 2 --results /tmp/conformance.json --markdown docs/conformance.md

Exit status: 0; 1 when --check finds a listed case that does not pass; 2 when Kiln cannot be
imported; 77 (ctest's skip code in tests/conformance/CMakeLists.txt) when the test data
(Debian's libonnx-testdata) is missing.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time

import report
import worker_pool

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DATA = "/usr/share/libonnx-testdata/data"
SUITES = ("node", "pytorch-converted", "pytorch-operator", "simple")
EXPECTED_PASSES = os.path.join(HERE, "expected_passes.txt")
SKIP_EXIT = 77


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="A case is pass, fail (wrong output, build/run error, crash, timeout), "
               "unsupported (Kiln says it lacks an op or a feature) or error (any other import "
               "error). Tolerances are ONNX's: rtol=1e-3, atol=1e-7, NaNs equal; dtype and "
               "shape must match exactly.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--data", default=DEFAULT_DATA,
                        help="root of ONNX's backend test data (one folder per suite)")
    parser.add_argument("--suites", default=",".join(SUITES),
                        help="comma-separated suites to run")
    parser.add_argument("-k", dest="substring", default="",
                        help="run only cases whose 'suite/case' name contains this")
    parser.add_argument("--jobs", "-j", type=int, default=min(2, os.cpu_count() or 1),
                        help="worker processes")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds per case (import, build and every data set) before "
                             "its worker is killed and the case fails with 'timeout'")
    parser.add_argument("--max-tasks-per-worker", type=int, default=50,
                        help="cases a worker runs before it is replaced by a fresh one")
    parser.add_argument("--progress-every", type=int, default=50, metavar="N",
                        help="print a progress line to stderr every N cases")
    parser.add_argument("--results", metavar="PATH", help="write per-case results as JSON")
    parser.add_argument("--markdown", metavar="PATH",
                        help="write the report (docs/conformance.md) to PATH")
    parser.add_argument("--expected", default=EXPECTED_PASSES, metavar="PATH",
                        help="the cases that must pass (one 'suite/case' a line)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if a case listed in --expected does not pass")
    parser.add_argument("--update-expected", action="store_true",
                        help="add newly passing cases to --expected (never removes any)")
    parser.add_argument("--evaluator", default=worker_pool.DEFAULT_EVALUATOR,
                        help=argparse.SUPPRESS)  # tests swap in evaluators that crash or hang
    return parser.parse_args(argv)


def discover(data_root, suites, substring):
    """[(suite/case, case folder)] sorted, of the folders that hold a model.onnx."""
    cases = []
    for suite in suites:
        folder = os.path.join(data_root, suite)
        if not os.path.isdir(folder):
            raise SystemExit(f"run_conformance: no suite '{suite}' in {data_root}")
        for name in sorted(os.listdir(folder)):
            key = f"{suite}/{name}"
            case_dir = os.path.join(folder, name)
            if substring in key and os.path.exists(os.path.join(case_dir, "model.onnx")):
                cases.append((key, case_dir))
    return cases


def check_kiln_importable():
    """Exits 2 when the workers could not import Kiln: every case would be an 'error' that
    says nothing about conformance."""
    probe = subprocess.run([sys.executable, "-c", "import kiln.frontend"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        lines = probe.stderr.strip().splitlines()
        sys.stderr.write("run_conformance: cannot import kiln.frontend (set PYTHONPATH="
                         f"<build>/python): {lines[-1] if lines else probe.returncode}\n")
        raise SystemExit(2)


class Progress:
    """Counts results and prints a line to stderr every ``every`` cases and at the end."""

    def __init__(self, total, every):
        self.total, self.every = total, max(1, every)
        self.counts = dict.fromkeys(report.STATUSES, 0)
        self.done, self.start = 0, time.monotonic()

    def add(self, status):
        self.counts[status] = self.counts.get(status, 0) + 1
        self.done += 1
        if self.done % self.every == 0 or self.done == self.total:
            counts = " ".join(f"{s} {self.counts[s]}" for s in report.STATUSES)
            sys.stderr.write(f"[{self.done:>5}/{self.total}] {counts} "
                             f"({time.monotonic() - self.start:.0f} s)\n")
            sys.stderr.flush()


def run_cases(cases, args):
    """{key: result} with suite and name filled in, from the worker pool."""
    results = {}
    progress = Progress(len(cases), args.progress_every)

    def on_result(key, result):
        suite, name = key.split("/", 1)
        result.update(suite=suite, name=name)
        results[key] = result
        progress.add(result["status"])

    pool = worker_pool.Pool(args.jobs, args.timeout, args.evaluator, args.max_tasks_per_worker)
    pool.run(cases, on_result)
    return results


def json_safe(value):
    """Infinite or NaN errors as strings: strict JSON has no Infinity."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def write_results(path, results):
    fields = ("suite", "name", "status", "detail", "max_abs_err", "max_rel_err",
              "bound_inputs", "bound_shapes", "unsupported_ops", "seconds")
    rows = [{f: json_safe(results[key].get(f)) for f in fields} for key in sorted(results)]
    with open(path, "w") as f:
        json.dump({"cases": rows}, f, indent=1)
        f.write("\n")


def read_expected(path):
    """The listed 'suite/case' names (comments and blank lines skipped); empty if no file."""
    if not os.path.exists(path):
        return set()
    with open(path) as f:
        lines = (line.strip() for line in f)
        return {line for line in lines if line and not line.startswith("#")}


EXPECTED_HEADER = """\
# ONNX backend-test cases that Kiln passes (tests/conformance/run_conformance.py --check).
# One 'suite/case' a line, sorted. This list only ever grows: --update-expected adds the cases
# that newly pass and never removes one. A case that stops passing is a regression to fix; to
# drop a case anyway, delete its line by hand and say why in the commit message.
"""


def update_expected(path, current, passing):
    """Writes the union of the listed and the passing cases; returns how many were added."""
    added = sorted(passing - current)
    with open(path, "w") as f:
        f.write(EXPECTED_HEADER)
        for key in sorted(current | passing):
            f.write(key + "\n")
    return len(added)


def check_expected(expected, results, suites, substring):
    """'suite/case: why' for each listed case this run selected (its suite, its -k) that did
    not pass, including listed cases missing from the test data."""
    problems = []
    for key in sorted(expected):
        if key.split("/", 1)[0] not in suites or substring not in key:
            continue
        result = results.get(key)
        if result is None:
            problems.append(f"{key}: no such case in the test data")
        elif result["status"] != "pass":
            problems.append(f"{key}: {result['status']}: {result['detail']}")
    return problems


def command_line(argv):
    """The command that produced a report, runnable from the repository root."""
    script = os.path.relpath(os.path.abspath(__file__), os.path.dirname(os.path.dirname(HERE)))
    return " ".join(["PYTHONPATH=build/python", "/usr/bin/python3", script] + list(argv))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if not os.path.isdir(args.data):
        print(f"run_conformance: SKIP: no ONNX backend test data at {args.data} "
              "(install Debian's libonnx-testdata)")
        return SKIP_EXIT
    suites = [s for s in args.suites.split(",") if s]
    cases = discover(args.data, suites, args.substring)
    if args.evaluator == worker_pool.DEFAULT_EVALUATOR:
        check_kiln_importable()
    results = run_cases(cases, args)

    print(report.summary_table(results, suites))
    if "node" in suites:
        passed, cases = report.inference_pass_rate(results)
        print(f"node cases needing no training ops or strings: {passed} of {cases} pass with "
              f"nothing bound")
    if args.results:
        write_results(args.results, results)
    if args.markdown:
        report.write_markdown(args.markdown, results, suites, command_line(argv))

    expected = read_expected(args.expected)
    passing = {key for key, r in results.items() if r["status"] == "pass"}
    new = sorted(passing - expected)
    if new:
        print(f"\n{len(new)} passing case(s) not in {os.path.relpath(args.expected)}:")
        print("\n".join("  " + key for key in new))
    if args.update_expected and new:
        update_expected(args.expected, expected, passing)
        print(f"added them to {os.path.relpath(args.expected)}")
    if args.check:
        return report_check(check_expected(expected, results, suites, args.substring))
    return 0


def report_check(problems):
    if not problems:
        print("\n--check: every listed case passes")
        return 0
    print(f"\n--check: {len(problems)} listed case(s) do not pass:")
    print("\n".join("  " + p for p in problems))
    return 1


if __name__ == "__main__":
    sys.exit(main())

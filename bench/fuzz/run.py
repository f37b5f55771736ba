#!/usr/bin/python3
"""Fuzzing campaign: every libFuzzer target of tests/fuzz for hours, outside CI.

    /usr/bin/python3 bench/fuzz/run.py [--seconds-per-target 3600] [--runs-per-target -1]
        [--targets ir_text,onnx] [--jobs 1] [--update-corpus] [--no-build] [--no-doc]

1. Builds the fuzzers in build-asan/, configured exactly as the asan stage of scripts/test.sh
   (clang-14, Debug, -DKILN_SANITIZE=address,undefined, -DKILN_BUILD_FUZZERS=ON), so it reuses
   that tree. The targets are read from tests/fuzz/CMakeLists.txt: each
   `kiln_add_fuzzer(kiln_<target>_fuzzer ...)`.
2. Runs each target (--jobs at a time) until --seconds-per-target or --runs-per-target, from a
   random seed (-seed=0, so each campaign explores new inputs, unlike CI's fixed seed). The
   working corpus build-asan/fuzz-campaign/<target>/ grows from one campaign to the next; it is
   seeded from tests/fuzz/corpus/<target>/ (and, where CMake builds kiln_<target>_fuzz_seeds,
   from the seeds that program writes). tests/fuzz/<target>.dict is used when it exists.
   Crashes, leaks, timeouts (-timeout=10) and out-of-memory inputs land in
   build-asan/fuzz-campaign/crashes/<target>/; each target's full log is
   build-asan/fuzz-campaign/<target>.log.
3. Reads libFuzzer's final statistics (-print_final_stats=1) and its last status line, and
   replaces the rows of the targets it ran in the table between the markers of
   docs/reliability.md ("Fuzzing"): date, budget, executions, executions over all campaigns of
   the working corpus, exec/s, edges (cov), features (ft), corpus, new units and crashes. Other
   targets keep the rows of their latest campaign, so a long campaign can be run one target at a
   time, and continued in a later session: libFuzzer keeps no state but its corpus, so campaigns
   that continue one working corpus without a crash add up to one long campaign.
   Ctrl-C (or SIGTERM) stops every fuzzer as libFuzzer stops on Ctrl-C, printing its final
   statistics, and the stopped campaigns are recorded as such.
4. With --update-corpus, merges (-merge=1) each grown corpus into tests/fuzz/corpus/<target>/:
   only inputs that add coverage the committed corpus lacks are copied, named by their SHA-1.
   The committed corpora are kept small (CORPUS_BUDGET_BYTES each); the sizes are printed.

Exits non-zero when any target crashed, after printing the command that reproduces each crash.
"""

import argparse
import concurrent.futures
import datetime
import os
import platform
import re
import shlex
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import harness  # noqa: E402  (bench/common/harness.py: logging, machine description)
from harness import REPO, cpu_model, fail, log  # noqa: E402

harness.set_name("fuzz")

BUILD_DIR = os.path.join(REPO, "build-asan")
FUZZ_BIN_DIR = os.path.join(BUILD_DIR, "tests", "fuzz")
CAMPAIGN_DIR = os.path.join(BUILD_DIR, "fuzz-campaign")
CORPUS_DIR = os.path.join(REPO, "tests", "fuzz", "corpus")
FUZZ_CMAKE = os.path.join(REPO, "tests", "fuzz", "CMakeLists.txt")
DOC = os.path.join(REPO, "docs", "reliability.md")
DOC_BEGIN = "<!-- bench/fuzz/run.py: campaign table begins; rewritten by the script -->"
DOC_END = "<!-- bench/fuzz/run.py: campaign table ends -->"

# The sanitizer settings of scripts/test.sh's fuzz stage: leaks count as crashes, and UBSan stops
# at its first report so that libFuzzer saves the input.
SANITIZER_ENV = {"ASAN_OPTIONS": "detect_leaks=1",
                 "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}
GOAL_EXECUTIONS = 10_000_000  # per target, what a campaign is meant to reach
CORPUS_BUDGET_BYTES = 256 << 10  # per committed corpus: CI replays all of it on every commit
INPUT_TIMEOUT_S = 10
LIBFUZZER_INTERRUPTED_EXIT = 72  # libFuzzer's exit status after SIGINT (-interrupted_exitcode)
# Flags of one target only. size_expr: the expressions of shapes are short, and products of
# hundreds of factors (2 KB) take 200 ms each under the sanitizers, which held a campaign to 273
# inputs/s; 256 bytes still reach every construct of the grammar several levels deep.
TARGET_FLAGS = {"size_expr": ["-max_len=256"]}


# ---- targets and build ----------------------------------------------------------------------


def discover_targets():
    """{target: has a seed writer} from tests/fuzz/CMakeLists.txt, in the file's order."""
    text = open(FUZZ_CMAKE).read()
    names = re.findall(r"^\s*kiln_add_fuzzer\(\s*kiln_(\w+)_fuzzer\b", text, re.M)
    seed_writers = set(re.findall(r"^\s*add_executable\(\s*kiln_(\w+)_fuzz_seeds\b", text, re.M))
    return {name: name in seed_writers for name in names}


def build(targets):
    """Configures build-asan/ as scripts/test.sh's asan stage does (keep the two in step) and
    builds the fuzzers and their seed writers only."""
    log(f"configuring {BUILD_DIR} (clang-14, Debug, address+undefined, fuzzers on)")
    subprocess.run(
        ["cmake", "-S", REPO, "-B", BUILD_DIR, "-G", "Ninja",
         "-DCMAKE_C_COMPILER=clang-14", "-DCMAKE_CXX_COMPILER=clang++-14",
         "-DCMAKE_BUILD_TYPE=Debug", "-DKILN_SANITIZE=address,undefined",
         "-DKILN_BUILD_FUZZERS=ON", "-DKILN_BUILD_PYTHON=OFF", "-DKILN_BUILD_BENCH=OFF"],
        check=True, stdout=subprocess.DEVNULL)
    names = [f"kiln_{t}_fuzzer" for t in targets]
    names += [f"kiln_{t}_fuzz_seeds" for t, has_seeds in targets.items() if has_seeds]
    jobs = os.environ.get("KILN_JOBS", str(os.cpu_count() or 1))
    log(f"building {len(names)} target(s) with -j{jobs}")
    result = subprocess.run(["cmake", "--build", BUILD_DIR, "-j", jobs, "--target", *names])
    if result.returncode != 0:
        fail(f"the build of the fuzzers in {BUILD_DIR} failed")


def fuzzer_path(target):
    return os.path.join(FUZZ_BIN_DIR, f"kiln_{target}_fuzzer")


# ---- one target -----------------------------------------------------------------------------


def fuzz_command(target, work_dir, crash_dir, seconds, runs):
    command = [fuzzer_path(target), "-seed=0", f"-max_total_time={seconds}", f"-runs={runs}",
               f"-timeout={INPUT_TIMEOUT_S}", "-print_final_stats=1",
               f"-artifact_prefix={crash_dir}/", *TARGET_FLAGS.get(target, [])]
    dictionary = os.path.join(REPO, "tests", "fuzz", f"{target}.dict")
    if os.path.exists(dictionary):
        command.append(f"-dict={dictionary}")
    # libFuzzer writes new inputs into the first folder only; the committed one is read-only.
    return command + [work_dir, os.path.join(CORPUS_DIR, target)]


class Fuzzers:
    """The running fuzzer processes, so that a stop request reaches each of them."""

    def __init__(self):
        self.running = set()
        self.stopping = False

    def stop(self, *_):
        self.stopping = True
        for process in list(self.running):
            process.send_signal(signal.SIGINT)


FUZZERS = Fuzzers()


def run_target(target, has_seed_writer, seconds, runs):
    """Fuzzes one target; returns its parsed statistics, with its log path and crash inputs."""
    work_dir = os.path.join(CAMPAIGN_DIR, target)
    crash_dir = os.path.join(CAMPAIGN_DIR, "crashes", target)
    os.makedirs(work_dir, exist_ok=True)
    os.makedirs(crash_dir, exist_ok=True)
    if has_seed_writer:
        subprocess.run([os.path.join(FUZZ_BIN_DIR, f"kiln_{target}_fuzz_seeds"), work_dir],
                       check=True)
    log_path = os.path.join(CAMPAIGN_DIR, f"{target}.log")
    command = fuzz_command(target, work_dir, crash_dir, seconds, runs)
    log(f"{target}: started (log: {os.path.relpath(log_path, REPO)})")
    with open(log_path, "w") as out:
        out.write(shlex.join(command) + "\n")
        out.flush()
        # libFuzzer stops itself at -max_total_time; the margin covers start-up, the corpus load
        # and one slow last input.
        limit = None if seconds <= 0 else seconds + 600
        if FUZZERS.stopping:
            return None
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                   env={**os.environ, **SANITIZER_ENV})
        FUZZERS.running.add(process)
        try:
            rc = process.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            rc = "killed after %d s" % limit
        FUZZERS.running.discard(process)
    stats = parse_log(open(log_path, errors="replace").read())
    stopped = FUZZERS.stopping and rc == LIBFUZZER_INTERRUPTED_EXIT
    stats.update(target=target, rc=rc, log=log_path, stopped=stopped)
    if rc != 0 and not stopped and not stats["crashes"]:
        stats["crashes"] = ["(no input saved: see the log)"]
    log(f"{target}: {stats['executions']} executions, cov {stats['cov']}, ft {stats['ft']}, "
        f"{len(stats['crashes'])} crash(es)")
    return stats


STATUS_LINE = re.compile(
    r"^#(\d+)\s+(?:INITED|NEW|REDUCE|pulse|DONE|RELOAD)\s+cov: (\d+) ft: (\d+) corp: (\d+)/(\S+)",
    re.M)


def parse_log(text):
    """libFuzzer's numbers: the final stats (stat::name: value) and the last status line
    (`#N DONE cov: C ft: F corp: U/SIZE ...`, or the last one before a crash)."""
    stat = dict(re.findall(r"^stat::(\w+):\s*(\d+)", text, re.M))
    status = STATUS_LINE.findall(text)
    last = status[-1] if status else (None, None, None, None, None)
    executions = stat.get("number_of_executed_units", last[0])
    return {
        "executions": int(executions) if executions is not None else 0,
        "exec_per_s": int(stat.get("average_exec_per_sec", 0)),
        "new_units": int(stat.get("new_units_added", 0)),
        "peak_rss_mb": int(stat.get("peak_rss_mb", 0)),
        "cov": f"{int(last[1]):,}" if last[1] else "?",
        "ft": f"{int(last[2]):,}" if last[2] else "?",
        "corpus": f"{last[3]} / {last[4]}" if last[3] else "?",
        # Every saved input but a slow one (libFuzzer notes those too, prefixed slow-unit-).
        "crashes": [path for path in re.findall(r"Test unit written to (\S+)", text)
                    if not os.path.basename(path).startswith("slow-unit-")],
    }


# ---- corpus ---------------------------------------------------------------------------------


def corpus_size(path):
    files = [os.path.join(path, f) for f in os.listdir(path)]
    files = [f for f in files if os.path.isfile(f) and not f.endswith(".md")]
    return len(files), sum(os.path.getsize(f) for f in files)


def update_corpus(target):
    """Copies into tests/fuzz/corpus/<target>/ the grown corpus's inputs that add coverage."""
    committed = os.path.join(CORPUS_DIR, target)
    before = corpus_size(committed)
    result = subprocess.run(
        [fuzzer_path(target), "-merge=1", f"-timeout={INPUT_TIMEOUT_S}", committed,
         os.path.join(CAMPAIGN_DIR, target)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **SANITIZER_ENV})
    if result.returncode != 0:
        fail(f"{target}: -merge=1 failed (exit status {result.returncode})")
    after = corpus_size(committed)
    log(f"{target}: committed corpus {before[0]} -> {after[0]} files, "
        f"{before[1] // 1024} -> {after[1] // 1024} KiB")
    if after[1] > CORPUS_BUDGET_BYTES:
        log(f"{target}: above the budget of {CORPUS_BUDGET_BYTES >> 10} KiB; CI replays every "
            f"file on each commit: review `git status {os.path.relpath(committed, REPO)}`")


# ---- the document ---------------------------------------------------------------------------


TABLE_HEADER = ["| target | campaign | budget | executions | all campaigns | exec/s | edges (cov) "
                "| features (ft) | corpus (inputs / size) | new inputs | crashes |",
                "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
ROW_TARGET = re.compile(r"^\| `(\w+)` \|")
EXECUTIONS_COLUMN = 4  # of a row split at "|"
TOTAL_COLUMN = 5
CRASHES_COLUMN = -2


def cell_number(row, column):
    return int(row.split("|")[column].strip().replace(",", ""))


def total_executions(row):
    """A row's executions over all campaigns (a row from before that column: its own)."""
    has_total = row.count("|") == TABLE_HEADER[0].count("|")
    return cell_number(row, TOTAL_COLUMN if has_total else EXECUTIONS_COLUMN)


def rows_in_doc():
    """{target: its row} of the table now in docs/reliability.md: a campaign over some targets
    keeps the others' rows, so 10 million executions per target can be reached one target at a
    time, across sessions."""
    doc = open(DOC).read()
    begin, end = doc.find(DOC_BEGIN), doc.find(DOC_END)
    rows = {}
    for line in doc[begin:end].splitlines() if 0 <= begin < end else []:
        match = ROW_TARGET.match(line)
        # Rows from before the "all campaigns" column have one cell fewer.
        if match and line.count("|") in (TABLE_HEADER[0].count("|"),
                                         TABLE_HEADER[0].count("|") - 1):
            rows[match.group(1)] = line
    return rows


def table(results, known, seconds, runs, jobs, others_cores):
    command = shlex.join(["/usr/bin/python3", "bench/fuzz/run.py", *sys.argv[1:]])
    budget = []
    if seconds > 0:
        budget.append(f"{seconds} s")
    if runs >= 0:
        budget.append(f"{runs:,} runs")
    today = datetime.date.today().isoformat()
    rows = rows_in_doc()
    for r in results:
        previous = rows.get(r["target"])
        # A crash ends the count: the next campaign starts after the fix, from zero.
        continued = previous is not None and cell_number(previous, CRASHES_COLUMN) == 0
        total = r["executions"] + (total_executions(previous) if continued else 0)
        stopped = " (stopped)" if r["stopped"] else ""
        rows[r["target"]] = (
            f"| `{r['target']}` | {today} | {' or '.join(budget) or 'none'}{stopped} | "
            f"{r['executions']:,} | {total:,} | {r['exec_per_s']:,} | {r['cov']} | {r['ft']} "
            f"| {r['corpus']} | {r['new_units']:,} | {len(r['crashes'])} |")
    for target, row in rows.items():
        if row.count("|") < TABLE_HEADER[0].count("|"):  # add the column to an old row
            cells = row.split("|")
            rows[target] = "|".join(cells[:TOTAL_COLUMN] + [cells[EXECUTIONS_COLUMN]]
                                    + cells[TOTAL_COLUMN:])
    lines = [
        f"Each row is its target's latest campaign; *all campaigns* adds the earlier campaigns of "
        f"its working corpus since its last crash. The latest: {today}, {cpu_model()} "
        f"({os.cpu_count()} cores, {platform.system()} {platform.release()}), "
        f"{jobs} target(s) at a time; other processes used {others_cores:.1f} cores on average "
        f"meanwhile. Command:",
        "",
        f"    {command}",
        "",
    ]
    short = [t for t in known if t not in rows or total_executions(rows[t]) < GOAL_EXECUTIONS]
    if short:
        lines += [f"**Below the goal** of {GOAL_EXECUTIONS:,} executions over the campaigns of "
                  f"one corpus: {', '.join(short)}.", ""]
    lines += TABLE_HEADER + [rows[t] for t in known if t in rows]
    return "\n".join(lines)


def write_table(text):
    """Replaces what lies between DOC_BEGIN and DOC_END in docs/reliability.md."""
    doc = open(DOC).read()
    begin, end = doc.find(DOC_BEGIN), doc.find(DOC_END)
    if begin < 0 or end < begin:
        fail(f"{DOC} lacks the markers {DOC_BEGIN!r} ... {DOC_END!r}")
    doc = doc[:begin + len(DOC_BEGIN)] + "\n" + text + "\n" + doc[end:]
    with open(DOC, "w") as f:
        f.write(doc)
    log(f"wrote the table into {os.path.relpath(DOC, REPO)}")


# ---- main -----------------------------------------------------------------------------------


def report_crashes(results):
    env = " ".join(f"{k}={v}" for k, v in SANITIZER_ENV.items())
    crashed = [r for r in results if r["crashes"]]
    for r in crashed:
        log(f"{r['target']}: crashed (exit status {r['rc']}); log {r['log']}; reproduce with:")
        for path in r["crashes"]:
            print(f"  {env} {fuzzer_path(r['target'])} {path}")
    return bool(crashed)


def parse_args(known):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds-per-target", type=int, default=3600,
                        help="libFuzzer's -max_total_time per target (0: no time limit)")
    parser.add_argument("--runs-per-target", type=int, default=-1,
                        help="libFuzzer's -runs per target (-1: no limit)")
    parser.add_argument("--targets", default=",".join(known),
                        help=f"comma-separated, of: {', '.join(known)}")
    parser.add_argument("--jobs", type=int, default=1, help="targets fuzzed at the same time")
    parser.add_argument("--update-corpus", action="store_true",
                        help="merge the grown corpora into tests/fuzz/corpus/<target>/")
    parser.add_argument("--no-build", action="store_true", help="use build-asan/ as it is")
    parser.add_argument("--no-doc", action="store_true", help="do not rewrite docs/reliability.md")
    args = parser.parse_args()
    args.targets = [t for t in args.targets.split(",") if t]
    unknown = [t for t in args.targets if t not in known]
    if unknown:
        parser.error(f"unknown target(s) {', '.join(unknown)}; known: {', '.join(known)}")
    if args.seconds_per_target <= 0 and args.runs_per_target < 0:
        parser.error("give --seconds-per-target or --runs-per-target a limit")
    return args


def main():
    known = discover_targets()
    args = parse_args(known)
    targets = {t: known[t] for t in args.targets}
    if not args.no_build:
        build(targets)
    missing = [fuzzer_path(t) for t in targets if not os.access(fuzzer_path(t), os.X_OK)]
    if missing:
        fail(f"not built: {', '.join(missing)} (run without --no-build)")

    def fuzz_all():
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = [pool.submit(run_target, t, has_seeds, args.seconds_per_target,
                                   args.runs_per_target) for t, has_seeds in targets.items()]
            return [f.result() for f in futures]

    signal.signal(signal.SIGINT, FUZZERS.stop)
    signal.signal(signal.SIGTERM, FUZZERS.stop)
    results, others_cores = harness.others_busy_during(fuzz_all)
    results = [r for r in results if r is not None]  # None: not started before a stop
    if not args.no_doc:
        write_table(table(results, list(known), args.seconds_per_target, args.runs_per_target, args.jobs,
                          others_cores))
    if report_crashes(results):
        sys.exit(1)
    if args.update_corpus:
        for target in targets:
            update_corpus(target)


if __name__ == "__main__":
    main()

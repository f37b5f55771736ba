"""Runs conformance cases in worker processes, so that one case cannot take the runner down.

A segfault or abort inside Kiln kills only its worker: the case is reported as
``fail: crashed (signal N)`` and a fresh worker takes the next case. A case that runs past its
timeout gets its worker killed (``fail: timeout``). Workers are recycled after a number of cases,
as multiprocessing's maxtasksperchild does, so leaks and corrupted state stay bounded.

Why not concurrent.futures: a dead worker breaks a ProcessPoolExecutor as a whole
(BrokenProcessPool) without saying which task killed it, and it has no per-task timeout.

Protocol: the parent writes one JSON task per line to the worker's stdin ({"case_dir": ...});
the worker answers one JSON result per line on a private copy of its stdout (its fd 1 is then
pointed at stderr, so anything Kiln prints cannot corrupt the protocol). The worker's stderr
goes to a file whose new text is quoted when the worker dies.

Run as a script, this file is the worker: ``worker_pool.py EVALUATOR`` where EVALUATOR is
``module:function`` (found beside this file) or ``path/to/file.py:function``; the function takes
a case folder and returns a result dict.
"""

import collections
import importlib
import importlib.util
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time

DEFAULT_EVALUATOR = "case_eval:evaluate_case"


def load_evaluator(spec):
    """The function named by ``module:function`` or ``file.py:function``."""
    where, _, name = spec.rpartition(":")
    if where.endswith(".py"):
        module_spec = importlib.util.spec_from_file_location("conformance_evaluator", where)
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    return getattr(module, name)


def worker_main(spec):
    """Answers tasks from stdin until it closes. An exception escaping the evaluator is a bug
    of the runner rather than of Kiln; it is reported as an error, and the worker goes on."""
    results = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    evaluate = load_evaluator(spec)
    for line in sys.stdin:
        task = json.loads(line)
        try:
            result = evaluate(task["case_dir"])
        except Exception as exc:  # noqa: BLE001
            result = {"status": "error", "detail": f"runner: {type(exc).__name__}: {exc}"}
        results.write(json.dumps(result) + "\n")
        results.flush()


def signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown"


class Worker:
    """One worker process and the case it is running (None when idle)."""

    def __init__(self, evaluator, stderr_path):
        self.stderr_path = stderr_path
        self.stderr = open(stderr_path, "ab")
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), evaluator],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr)
        self.buffer = b""
        self.task = None
        self.started = 0.0
        self.stderr_offset = 0
        self.tasks_done = 0

    def assign(self, task):
        """Sends ``task`` (key, case folder) to the worker."""
        self.task, self.started = task, time.monotonic()
        self.stderr_offset = os.path.getsize(self.stderr_path)
        try:
            self.proc.stdin.write((json.dumps({"case_dir": task[1]}) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # it died idle: its stdout's end of file reports this task as crashed

    def read(self):
        """The result dict if a whole line has arrived, None if not yet; raises EOFError when
        the worker has closed its end (it died)."""
        data = os.read(self.proc.stdout.fileno(), 1 << 16)
        if not data:
            raise EOFError
        self.buffer += data
        if b"\n" not in self.buffer:
            return None
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def stderr_tail(self):
        """The last line the worker wrote to stderr during the current task ("" if none)."""
        self.stderr.flush()
        with open(self.stderr_path, "rb") as f:
            f.seek(self.stderr_offset)
            lines = f.read().decode(errors="replace").strip().splitlines()
        return lines[-1].strip()[:300] if lines else ""

    def death_detail(self):
        """Why the worker died: 'crashed (signal N)' or 'worker exited with status N', with
        the last line it wrote to stderr (an abort's message)."""
        code = self.proc.wait()
        if code < 0:
            detail = f"crashed (signal {-code}, {signal_name(-code)})"
        else:
            detail = f"worker exited with status {code}"
        tail = self.stderr_tail()
        return f"{detail}: {tail}" if tail else detail

    def stop(self):
        """Ends the process (killed when busy) and closes its files."""
        if self.proc.poll() is None:
            if self.task is None:
                self.proc.stdin.close()
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
            else:
                self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.stderr):
            try:
                stream.close()
            except OSError:
                pass


class Pool:
    """Up to ``jobs`` workers running ``tasks`` [(key, case folder)]; calls ``on_result(key,
    result)`` as each finishes, with result["seconds"] the wall time the parent measured."""

    def __init__(self, jobs, timeout, evaluator=DEFAULT_EVALUATOR, max_tasks_per_worker=50):
        self.jobs, self.timeout = max(1, jobs), timeout
        self.evaluator, self.max_tasks = evaluator, max(1, max_tasks_per_worker)
        self.selector = selectors.DefaultSelector()
        self.workers = []
        self.started = 0

    def _new_worker(self, folder):
        self.started += 1
        worker = Worker(self.evaluator, os.path.join(folder, f"worker{self.started}.stderr"))
        self.selector.register(worker.proc.stdout, selectors.EVENT_READ, worker)
        self.workers.append(worker)
        return worker

    def _retire(self, worker):
        self.selector.unregister(worker.proc.stdout)
        self.workers.remove(worker)
        worker.stop()

    def _idle_worker(self, folder):
        """An idle worker with tasks left before recycling; starts one if there is room."""
        for worker in list(self.workers):
            if worker.task is None and worker.tasks_done >= self.max_tasks:
                self._retire(worker)
        for worker in self.workers:
            if worker.task is None:
                return worker
        return self._new_worker(folder) if len(self.workers) < self.jobs else None

    def _finish(self, worker, result, on_result):
        key = worker.task[0]
        result["seconds"] = round(time.monotonic() - worker.started, 3)
        worker.task, worker.tasks_done = None, worker.tasks_done + 1
        on_result(key, result)

    def _collect(self, on_result):
        """Waits for results, deaths and timeouts of busy workers, up to the nearest
        deadline."""
        busy = [w for w in self.workers if w.task is not None]
        now = time.monotonic()
        wait = max(0.0, min((w.started + self.timeout for w in busy), default=now) - now)
        for key, _ in self.selector.select(wait):
            worker = key.data
            if worker.task is None:  # an idle worker has nothing to say: it died
                self._retire(worker)
                continue
            try:
                result = worker.read()
            except EOFError:
                detail = worker.death_detail()
                self._finish(worker, {"status": "fail", "detail": detail}, on_result)
                self._retire(worker)
                continue
            if result is not None:
                self._finish(worker, result, on_result)
        now = time.monotonic()
        for worker in [w for w in self.workers if w.task is not None]:
            if now - worker.started > self.timeout:
                worker.proc.kill()
                detail = f"timeout (over {self.timeout:g} s)"
                self._finish(worker, {"status": "fail", "detail": detail}, on_result)
                self._retire(worker)

    def run(self, tasks, on_result):
        pending = collections.deque(tasks)
        with tempfile.TemporaryDirectory(prefix="kiln-conformance-") as folder:
            try:
                while pending or any(w.task is not None for w in self.workers):
                    while pending:
                        worker = self._idle_worker(folder)
                        if worker is None:
                            break
                        worker.assign(pending.popleft())
                    self._collect(on_result)
            finally:
                for worker in list(self.workers):
                    self._retire(worker)


if __name__ == "__main__":
    worker_main(sys.argv[1])

"""Helpers shared by the pytest files (importable: pytest puts this folder on sys.path)."""

import gc
import sys
import threading
import tracemalloc


def run_threads(worker, count):
    """Runs ``worker(n)`` for n in range(count) on threads that switch as often as Python
    allows, so callbacks and error slots of different threads interleave."""
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(count)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)


def traced_growth(exercise, warmup=200, repeats=2000):
    """Bytes of Python memory still held after ``repeats`` calls of ``exercise``, measured after
    ``warmup`` calls have filled caches. One leaked object per call would show as > 100 kB."""
    for _ in range(warmup):
        exercise()
    gc.collect()
    tracemalloc.start()
    try:
        start, _ = tracemalloc.get_traced_memory()
        for _ in range(repeats):
            exercise()
        gc.collect()
        end, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return end - start

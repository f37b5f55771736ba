"""kiln.runtime: backends, threads, allocator counters, modules, export_library/load_module."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import kiln

# Functions in Kiln's calling convention (include/kiln/ffi/c_api.h), compiled by export_library.
ADD_ONE = r"""
#include <kiln/ffi/c_api.h>
int add_one(void* self, const KilnAny* args, int32_t num_args, KilnAny* result) {
  if (num_args != 1 || args[0].type_index != kKilnTypeInt) {
    return kiln_error_set_raised_from_cstr("TypeError", "add_one takes one int");
  }
  result->type_index = kKilnTypeInt;
  result->v_int64 = args[0].v_int64 + 1;
  return 0;
}
"""

# scale(tensor, factor): multiplies a compact float32 CPU tensor in place, returns its size.
SCALE = r"""
#include <kiln/ffi/c_api.h>
int scale(void* self, const KilnAny* args, int32_t num_args, KilnAny* result) {
  if (num_args != 2 || args[0].type_index != kKilnTypeTensor ||
      args[1].type_index != kKilnTypeFloat) {
    return kiln_error_set_raised_from_cstr("TypeError", "scale(tensor, float)");
  }
  DLTensor* t = &((KilnTensorObject*)args[0].v_obj)->dl_tensor;
  if (t->device.device_type != kDLCPU || t->dtype.code != kDLFloat || t->dtype.bits != 32) {
    return kiln_error_set_raised_from_cstr("ValueError", "scale needs a float32 cpu tensor");
  }
  int64_t count = 1;
  for (int32_t i = t->ndim - 1; i >= 0; --i) {
    if (t->strides != NULL && t->shape[i] != 1 && t->strides[i] != count) {
      return kiln_error_set_raised_from_cstr("ValueError", "scale needs a compact tensor");
    }
    count *= t->shape[i];
  }
  float* data = (float*)((char*)t->data + t->byte_offset);
  for (int64_t i = 0; i < count; ++i) data[i] *= (float)args[1].v_float64;
  result->type_index = kKilnTypeInt;
  result->v_int64 = count;
  return 0;
}
"""


def c_module(code, functions):
    return kiln.runtime.CSourceModuleCreate(code, functions)


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    """An artifact with add_one and, in an imported module, scale."""
    root = c_module(ADD_ONE, ["add_one"])
    root.import_module(c_module(SCALE, ["scale"]))
    path = tmp_path_factory.mktemp("artifact") / "ops.so"
    root.export_library(path)
    return path


# ---- backends, threads, memory ----

def test_backends_list_the_builtin_cpu():
    entries = kiln.runtime.backends()
    assert isinstance(entries, list) and all(isinstance(e, dict) for e in entries)
    cpu = [e for e in entries if e["name"] == "cpu"]
    assert len(cpu) == 1 and cpu[0]["status"] == "builtin"
    assert cpu[0]["path"].endswith("libkiln_runtime.so")
    for entry in entries:
        assert set(entry) >= {"name", "path", "version", "status", "reason"}
        assert entry["status"] in ("builtin", "loaded", "failed", "shadowed")
        assert (entry["reason"] != "") == (entry["status"] in ("failed", "shadowed"))
    assert kiln.runtime.backends() == entries  # discovery runs once


def test_a_broken_backend_is_listed_with_its_reason(tmp_path):
    (tmp_path / "libkiln_runtime_broken.so").write_text("not a library")
    script = ("import json, kiln; print(json.dumps([b for b in kiln.runtime.backends() "
              "if b['name'] == 'broken']))")
    env = dict(os.environ, KILN_RUNTIME_PATH=str(tmp_path))
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    (entry,) = json.loads(result.stdout)
    assert entry["status"] == "failed" and entry["reason"]


def test_num_threads():
    assert isinstance(kiln.runtime.num_threads(), int) and kiln.runtime.num_threads() >= 1
    env = dict(os.environ, KILN_NUM_THREADS="3")
    script = "import kiln; print(kiln.runtime.num_threads())"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "3"


# The pool reports its workers' thread ids once every worker has started, so the affinities
# read here never depend on how fast the workers got going.
_WORKER_AFFINITY_SCRIPT = """
import json, os
import kiln
workers = kiln.get_global_func("runtime.ThreadPoolWorkerThreadIds")()
print(json.dumps([sorted(os.sched_getaffinity(tid)) for tid in workers]))
"""


def _worker_affinities(**env):
    result = subprocess.run([sys.executable, "-c", _WORKER_AFFINITY_SCRIPT], capture_output=True,
                            text=True, env=dict(os.environ, **env), timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs at least 2 CPUs")
def test_workers_are_pinned_one_per_cpu_when_the_pool_spans_every_cpu():
    cpus = sorted(os.sched_getaffinity(0))
    workers = _worker_affinities(KILN_NUM_THREADS=str(len(cpus)))
    assert len(workers) == len(cpus) - 1
    assert all(len(allowed) == 1 and allowed[0] in cpus for allowed in workers)
    assert len({allowed[0] for allowed in workers}) == len(workers)  # each on its own CPU


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs at least 2 CPUs")
def test_workers_float_when_asked_or_when_the_pool_does_not_span_every_cpu():
    cpus = sorted(os.sched_getaffinity(0))
    unbound = _worker_affinities(KILN_NUM_THREADS=str(len(cpus)), KILN_BIND_THREADS="0")
    oversubscribed = _worker_affinities(KILN_NUM_THREADS=str(len(cpus) + 1))
    assert len(unbound) == len(cpus) - 1 and len(oversubscribed) == len(cpus)
    assert all(allowed == cpus for allowed in unbound + oversubscribed)


def test_allocator_stats_count_cpu_allocations():
    keys = {"bytes_in_use", "bytes_cached", "peak_bytes_in_use", "allocations", "cache_hits"}
    before = kiln.runtime.allocator_stats()
    assert set(before) == keys
    t = kiln.empty((1 << 16,), "uint8")
    after = kiln.runtime.allocator_stats("cpu")
    assert after["bytes_in_use"] >= before["bytes_in_use"] + (1 << 16)
    assert after["allocations"] == before["allocations"] + 1
    del t
    kiln.runtime.release_cached_memory()
    assert kiln.runtime.allocator_stats(kiln.cpu())["bytes_cached"] == 0


def test_other_runtime_globals_resolve_by_name():
    assert kiln.runtime.NumThreads() == kiln.runtime.num_threads()
    assert "NumThreads" in dir(kiln.runtime) and "load_module" in dir(kiln.runtime)
    with pytest.raises(AttributeError) as info:
        kiln.runtime.NumThread
    assert "'runtime.NumThreads'" in str(info.value)


# ---- modules and artifacts ----

def test_c_source_module_before_export():
    module = c_module(ADD_ONE, ["add_one"])
    assert isinstance(module, kiln.runtime.Module) and module.kind == "c_source"
    assert module.imports == []
    # Callable before export: the module compiles its code into a temporary library.
    assert module["add_one"](41) == 42 and "scale" not in module


def test_exported_artifact_loads_and_runs(artifact):
    module = kiln.load_module(artifact)
    assert kiln.load_module is kiln.runtime.load_module
    assert module.kind == "host_library"
    assert module["add_one"](41) == 42
    assert module.get_function("add_one")(1) == 2
    assert "add_one" in module and "scale" in module
    (child,) = module.imports
    assert child.kind == "host_library" and "scale" in child and "add_one" not in child
    assert repr(module).startswith("kiln.runtime.Module(kind='host_library'")


def test_compiled_code_writes_into_numpy_memory(artifact):
    scale = kiln.load_module(str(artifact))["scale"]
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert scale(array, 2.0) == 6  # the array is passed as a Tensor over its memory
    np.testing.assert_array_equal(array, np.arange(6, dtype=np.float32).reshape(2, 3) * 2)
    t = kiln.empty((4,), "float32")
    t.numpy()[:] = 1.5
    scale(t, 2.0)
    assert t.numpy().tolist() == [3.0] * 4
    with pytest.raises(kiln.ValueError) as info:
        scale(np.zeros(3, np.float64), 2.0)
    assert "float32" in str(info.value)


def test_errors_of_compiled_functions_are_raised(artifact):
    module = kiln.load_module(artifact)
    with pytest.raises(kiln.TypeError) as info:
        module["add_one"]("x")
    assert "add_one takes one int" in str(info.value)


def test_missing_functions_are_clear_errors(artifact):
    module = kiln.load_module(artifact)
    with pytest.raises(kiln.KeyError) as info:
        module["add_two"]
    assert isinstance(info.value, KeyError)
    assert "'add_two'" in str(info.value) and "host_library" in str(info.value)
    with pytest.raises(kiln.AttributeError) as info:
        module.get_function("scale", query_imports=False)
    assert "'scale'" in str(info.value)
    assert module.get_function("add_two", allow_missing=True) is None
    with pytest.raises(TypeError):
        module[3]
    if module.functions is not None:  # when the runtime can list them, errors name them
        assert module.functions == ["add_one"]
        with pytest.raises(kiln.KeyError) as info:
            module["add_on"]
        assert "add_one" in str(info.value) and "scale" in str(info.value)


def test_import_module_at_run_time(artifact, tmp_path):
    c_module(SCALE, ["scale"]).export_library(tmp_path / "scale.so")
    plain = c_module(ADD_ONE, ["add_one"])
    plain.export_library(tmp_path / "add.so")
    root = kiln.load_module(tmp_path / "add.so")
    assert "scale" not in root
    root.import_module(kiln.load_module(tmp_path / "scale.so"))
    assert "scale" in root and len(root.imports) == 1
    with pytest.raises(kiln.ValueError):
        root.import_module(root)
    with pytest.raises(TypeError):
        root.import_module("scale.so")


def test_load_module_of_a_missing_file(tmp_path):
    missing = tmp_path / "nothing.so"
    with pytest.raises(kiln.KilnError) as info:
        kiln.load_module(missing)
    assert str(missing) in str(info.value) and "does not exist" in str(info.value)


def test_load_module_of_files_that_are_not_artifacts(tmp_path):
    text = tmp_path / "text.so"
    text.write_text("not an artifact")
    with pytest.raises(kiln.KilnError) as info:
        kiln.load_module(text)
    assert str(text) in str(info.value) and "ELF" in str(info.value)
    library = pathlib.Path(kiln._ffi.library_path())  # a shared library, not an artifact
    with pytest.raises(kiln.KilnError) as info:
        kiln.load_module(library)
    assert "not a Kiln artifact" in str(info.value)


def test_load_module_of_a_truncated_artifact(artifact, tmp_path):
    data = artifact.read_bytes()
    truncated = tmp_path / "truncated.so"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(kiln.KilnError) as info:
        kiln.load_module(truncated)
    assert "truncated" in str(info.value)


def test_export_library_errors(tmp_path):
    with pytest.raises(kiln.KilnError) as info:
        c_module("this is not C", ["f"]).export_library(tmp_path / "bad.so")
    assert "failed" in str(info.value)
    assert not (tmp_path / "bad.so").exists()
    with pytest.raises(kiln.KilnError):
        c_module(ADD_ONE, ["add_one"]).export_library(tmp_path / "no" / "such" / "dir.so")

"""One artifact holding a host library, an OpenCL module and a testing module: exported here,
reloaded and run in a fresh interpreter that has only the runtime (and the testing plugin that
implements the testing module's kind)."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import kiln

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

VECTOR_ADD = """
__kernel void vadd(__global const float* a, __global const float* b, __global float* c) {
  int i = get_global_id(0);
  c[i] = a[i] + b[i];
}
"""

RELOAD_AND_RUN = textwrap.dedent(
    """
    import sys
    import numpy as np
    import kiln

    kiln.load_plugin(sys.argv[2])
    module = kiln.load_module(sys.argv[1])
    print(module.kind, sorted(child.kind for child in module.imports))
    print(module["add_one"](41), module["get"]())
    a = np.arange(64, dtype="float32")
    b = np.full(64, 0.5, dtype="float32")
    gpu = kiln.opencl(0)
    c = kiln.empty((64,), "float32", gpu)
    module["vadd"](kiln.tensor(a, device=gpu), kiln.tensor(b, device=gpu), c, 64)
    print(bool(np.array_equal(c.numpy(), a + b)))
    """
)


@pytest.mark.skipif(not kiln.opencl(0).exist, reason="no OpenCL device (pocl-opencl-icd)")
def test_mixed_artifact_runs_in_a_fresh_process(tmp_path):
    testing_plugin = os.environ["KILN_TESTING_PLUGIN"]
    kiln.load_plugin(testing_plugin)
    root = kiln.runtime.CSourceModuleCreate(ADD_ONE, ["add_one"])
    root.import_module(kiln.runtime.opencl.ModuleCreate(VECTOR_ADD, ["vadd"]))
    root.import_module(kiln.testing.BlobModuleCreate("hello"))
    artifact = tmp_path / "mixed.so"
    root.export_library(str(artifact))

    script = tmp_path / "reload.py"
    script.write_text(RELOAD_AND_RUN)
    run = subprocess.run(
        [sys.executable, str(script), str(artifact), testing_plugin],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "host_library ['opencl', 'testing_blob']"
    assert lines[1] == "42 hello"
    assert lines[2] == "True"


CHECK_WITHOUT_OPENCL = textwrap.dedent(
    """
    import sys
    import kiln

    print(kiln.opencl(0).exist)
    print(sorted(b["name"] for b in kiln.runtime.backends() if b["status"] != "shadowed"))
    try:
        kiln.load_module(sys.argv[1])
    except kiln.KilnError as error:
        print("libkiln_runtime_opencl.so" in str(error))
    print(kiln.load_module(sys.argv[2])["add_one"](1))
    """
)


@pytest.mark.skipif(not kiln.opencl(0).exist, reason="no OpenCL device (pocl-opencl-icd)")
def test_deleting_the_opencl_backend_leaves_the_rest_working(tmp_path):
    """The runtime's folder copied without libkiln_runtime_opencl.so: OpenCL is gone, with an
    error naming the library to install; host code still runs."""
    with_opencl = kiln.runtime.CSourceModuleCreate(ADD_ONE, ["add_one"])
    with_opencl.import_module(kiln.runtime.opencl.ModuleCreate(VECTOR_ADD, ["vadd"]))
    with_opencl.export_library(str(tmp_path / "needs_opencl.so"))
    kiln.runtime.CSourceModuleCreate(ADD_ONE, ["add_one"]).export_library(
        str(tmp_path / "host_only.so")
    )

    lib_dir = os.path.dirname(os.environ["KILN_FFI_LIBRARY"])
    copy = tmp_path / "lib"
    copy.mkdir()
    for name in os.listdir(lib_dir):
        if name.startswith("libkiln") and name.endswith(".so"):
            if name != "libkiln_runtime_opencl.so":
                shutil.copy(os.path.join(lib_dir, name), copy / name)
    script = tmp_path / "check.py"
    script.write_text(CHECK_WITHOUT_OPENCL)
    # LD_LIBRARY_PATH is searched before the RUNPATH that points at the build tree.
    env = dict(os.environ, LD_LIBRARY_PATH=str(copy))
    run = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "needs_opencl.so"),
         str(tmp_path / "host_only.so")],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert run.returncode == 0, run.stderr
    others = sorted(
        b["name"] for b in kiln.runtime.backends()
        if b["status"] != "shadowed" and b["name"] != "opencl"
    )
    assert run.stdout.splitlines() == ["False", str(others), "True", "2"]

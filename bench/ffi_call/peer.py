"""tvm-ffi, the peer bench/ffi_call times Kiln against, obtained and built in the same run.

    python, peer_paths = peer.ensure(build_dir, cxx_compiler, build_type, log)

1. The apache-tvm-ffi wheel from PyPI, pinned, in a virtual environment cached under the build
   folder (<build-dir>/bench-venv-tvm-ffi), made by bench/common/peer_venv.py as bench/serving
   makes bench-venv: from /usr/bin/python3 with --system-site-packages (so the build's kiln
   package and Debian's numpy import in it too) and `pip install --no-deps`. A venv of
   its own because tvm-ffi needs a typing-extensions newer than Debian's, which must not shadow
   Debian's for the torch and onnx that bench-venv's users import.
2. The CMake project in tvm_ffi_peer/, configured against the wheel's own CMake package
   (`tvm_ffi.libinfo.find_cmake_path()`: headers, libtvm_ffi.so) with the compiler and build
   type of the Kiln tree, and built into <build-dir>/tvm_ffi_peer.
"""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
import peer_venv  # noqa: E402  (bench/common/peer_venv.py: a venv beside Debian's packages)
# Pinned, so that every run measures the same peer. apache-tvm-ffi's one requirement is
# typing-extensions>=4.13 (Debian 12 has 4.4).
PACKAGES = ["apache-tvm-ffi==0.1.15.post2", "typing-extensions==4.15.0"]
# tvm_ffi tries to JIT-compile a PyTorch DLPack extension when torch imports; neither side here
# uses torch, so the worker and the probe switch that off.
ENV = {"TVM_FFI_DISABLE_TORCH_C_DLPACK": "1"}
PROBE = ("import json, tvm_ffi, tvm_ffi.libinfo as info; "
         f"assert tvm_ffi.__version__ == {PACKAGES[0].split('==')[1]!r}, tvm_ffi.__version__; "
         "print(json.dumps({'version': tvm_ffi.__version__, "
         "'cmake_dir': info.find_cmake_path(), 'libtvm_ffi': info.find_libtvm_ffi()}))")


def ensure_venv(venv_dir, log):
    """(the venv's python, {"version", "cmake_dir", "libtvm_ffi"} of its tvm_ffi)."""
    python, found = peer_venv.ensure(venv_dir, PACKAGES, PROBE, log, env=ENV)
    info = json.loads(found)
    log(f"tvm-ffi {info['version']} in the venv: {info['libtvm_ffi']}")
    return python, info


def build(build_dir, python, info, cxx_compiler, build_type, log):
    """Configures (once) and builds tvm_ffi_peer/ in `build_dir`; returns its paths.json."""
    if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
        log(f"configuring tvm-ffi's benchmark in {build_dir} ({build_type}, {cxx_compiler})")
        subprocess.run(
            ["cmake", "-S", os.path.join(HERE, "tvm_ffi_peer"), "-B", build_dir, "-G", "Ninja",
             f"-DCMAKE_BUILD_TYPE={build_type}", f"-DCMAKE_CXX_COMPILER={cxx_compiler}",
             f"-DPython_EXECUTABLE={python}", f"-Dtvm_ffi_DIR={info['cmake_dir']}"],
            check=True, stdout=subprocess.DEVNULL, env=dict(os.environ, **ENV))
    log(f"building tvm-ffi's benchmark in {build_dir}")
    result = subprocess.run(["cmake", "--build", build_dir], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        sys.stdout.write(result.stdout[-20000:])
        sys.exit(f"tvm-ffi's benchmark failed to build in {build_dir}")
    with open(os.path.join(build_dir, "paths.json")) as f:
        paths = json.load(f)
    paths["version"] = info["version"]
    return paths


def ensure(kiln_build_dir, cxx_compiler, build_type, log=print):
    """(the venv's python, the peer's paths.json plus "version"), made or reused under
    `kiln_build_dir`."""
    python, info = ensure_venv(os.path.join(kiln_build_dir, "bench-venv-tvm-ffi"), log)
    paths = build(os.path.join(kiln_build_dir, "tvm_ffi_peer"), python, info, cxx_compiler,
                  build_type, log)
    return python, paths

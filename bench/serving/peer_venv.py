"""A virtual environment for peer runtimes from PyPI, next to Debian's Python packages.

    python = peer_venv.ensure(os.path.join(build_dir, "bench-venv"), log)

The venv is made from /usr/bin/python3 with --system-site-packages, so Debian's numpy, onnx and
torch stay the ones imported, and the peers go in with `pip install --no-deps`: pip never
replaces Debian's numpy (the system's PyTorch and Kiln's tests are built against it), and
nothing is installed into the system. It is made once and reused while the probe below passes;
a venv that fails it (an interrupted install, another Python) is made again from scratch.
"""

import os
import shutil
import subprocess
import sys

SYSTEM_PYTHON = "/usr/bin/python3"
# onnxruntime's own requirements are flatbuffers, numpy, packaging and protobuf; Debian gives
# the last three. Pinned, so that every run of the benchmark measures the same peer.
PACKAGES = ["onnxruntime==1.32.0", "flatbuffers"]
# What must hold once the venv is ready: ORT imports next to torch, and numpy is still Debian's.
PROBE = ("import numpy, onnx, torch, onnxruntime; "
         "assert numpy.__file__.startswith('/usr/lib/python3/'), numpy.__file__; "
         "assert 'CPUExecutionProvider' in onnxruntime.get_available_providers(); "
         "print(onnxruntime.__version__, numpy.__version__)")


def python_of(venv_dir):
    return os.path.join(venv_dir, "bin", "python")


def probe(venv_dir):
    """The probe's output ("<onnxruntime version> <numpy version>"), or None if it fails."""
    python = python_of(venv_dir)
    if not os.path.exists(python):
        return None
    result = subprocess.run([python, "-c", PROBE], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    return result.stdout.strip() if result.returncode == 0 else None


def ensure(venv_dir, log=print):
    """The venv's python, after making the venv and installing PACKAGES if the probe fails."""
    found = probe(venv_dir)
    if found:
        return python_of(venv_dir)
    log(f"making the peers' virtual environment {venv_dir} ({', '.join(PACKAGES)})")
    shutil.rmtree(venv_dir, ignore_errors=True)
    subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--system-site-packages", venv_dir], check=True)
    subprocess.run([python_of(venv_dir), "-m", "pip", "install", "--quiet", "--no-deps",
                    "--disable-pip-version-check", *PACKAGES], check=True)
    found = probe(venv_dir)
    if not found:
        subprocess.run([python_of(venv_dir), "-c", PROBE])  # shows why
        sys.exit(f"{venv_dir}: onnxruntime does not import next to Debian's numpy and torch")
    log(f"onnxruntime and numpy in the venv: {found}")
    return python_of(venv_dir)


def running_in(venv_dir):
    """Whether this process is the venv's python."""
    return os.path.realpath(sys.prefix) == os.path.realpath(venv_dir)

"""Virtual environments for peers from PyPI (onnxruntime, tvm-ffi), next to Debian's packages.

    python, found = peer_venv.ensure(venv_dir, ["onnxruntime==1.32.0", "flatbuffers"], PROBE, log)

A venv is made from /usr/bin/python3 with --system-site-packages, so Debian's numpy, onnx and
torch stay the ones imported (and the build's kiln imports too), and the peers go in with
`pip install --no-deps`: pip never replaces Debian's numpy (the system's PyTorch and Kiln's
tests are built against it), and nothing is installed into the system. A venv whose peers
bring their own stack (PyTorch 2.x, whose wheels need a newer numpy and sympy than Debian's)
is made with `resolve=True`: pip installs their requirements too, into the venv, where they
shadow Debian's for that venv's python only. A venv is made once and reused while its probe
(Python code run in it, which must exit 0) passes; a venv that fails the probe (an interrupted
install, another Python, another pinned version) is made again from scratch.
"""

import os
import shutil
import subprocess
import sys

SYSTEM_PYTHON = "/usr/bin/python3"


def python_of(venv_dir):
    return os.path.join(venv_dir, "bin", "python")


def run_probe(venv_dir, probe, env=None):
    """What `probe` prints in the venv, or None when the venv is missing or the probe fails."""
    python = python_of(venv_dir)
    if not os.path.exists(python):
        return None
    result = subprocess.run([python, "-c", probe], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True,
                            env=dict(os.environ, **(env or {})))
    return result.stdout.strip() if result.returncode == 0 else None


def ensure(venv_dir, packages, probe, log=print, env=None, resolve=False):
    """(the venv's python, what the probe printed), after making the venv and installing
    `packages` (pinned requirement strings; with their requirements when `resolve`) when the
    probe fails. `env` is added to the probe's environment."""
    found = run_probe(venv_dir, probe, env)
    if found is not None:
        return python_of(venv_dir), found
    log(f"making the virtual environment {venv_dir} ({', '.join(packages)})")
    shutil.rmtree(venv_dir, ignore_errors=True)
    subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--system-site-packages", venv_dir], check=True)
    subprocess.run([python_of(venv_dir), "-m", "pip", "install", "--quiet",
                    *([] if resolve else ["--no-deps"]), "--disable-pip-version-check",
                    *packages], check=True)
    found = run_probe(venv_dir, probe, env)
    if found is None:
        subprocess.run([python_of(venv_dir), "-c", probe], env=dict(os.environ, **(env or {})))
        sys.exit(f"{venv_dir}: {', '.join(packages)} do not import next to Debian's packages "
                 "(see above)")
    return python_of(venv_dir), found


def running_in(venv_dir):
    """Whether this process is the venv's python."""
    return os.path.realpath(sys.prefix) == os.path.realpath(venv_dir)


def reexec_in(venv_dir, packages, probe, script, argv, log=print, resolve=False):
    """Re-executes `script` with `argv` under the venv's python (made with `packages` when its
    probe fails), unless this process already is it."""
    if running_in(venv_dir):
        return
    python, found = ensure(venv_dir, packages, probe, log, resolve=resolve)
    log(f"{', '.join(packages)} in {venv_dir}: {found}")
    os.execv(python, [python, os.path.abspath(script), *argv])

"""ONNX Runtime as the peer of a benchmark: the pinned package, the bench venv it runs in, and a
session with every setting spelled out (so each table says what was run).

    ort_peer.enter_venv(args.build_dir, __file__, argv)   # re-executes in <build-dir>/bench-venv
    call = ort_peer.call(path)                             # x -> the first output
"""

import os
import sys

import harness
import peer_venv

# onnxruntime's own requirements are flatbuffers, numpy, packaging and protobuf; Debian gives
# the last three. Pinned, so that every run of a benchmark measures the same peer. transformers
# (with the requirements Debian does not give) builds bench/models' NLP models from their
# configs; 4.44 is the last line that runs on Debian's torch 1.13.
PACKAGES = ["onnxruntime==1.32.0", "flatbuffers", "transformers==4.44.2",
            "huggingface-hub==0.36.2", "tokenizers==0.19.1", "safetensors==0.8.0",
            "regex==2026.11.19", "tqdm==4.70.1", "fsspec==2026.9.0", "filelock==4.3.1"]
# What must hold in the venv: ORT and transformers import next to torch, and numpy is still
# Debian's.
PROBE = ("import numpy, onnx, torch, onnxruntime, transformers; "
         "assert numpy.__file__.startswith('/usr/lib/python3/'), numpy.__file__; "
         "assert 'CPUExecutionProvider' in onnxruntime.get_available_providers(); "
         "print(onnxruntime.__version__, numpy.__version__)")


def enter_venv(build_dir, script, argv, venv="bench-venv", packages=None, probe=PROBE,
               resolve=False):
    """Re-executes `script` with `argv` in <build_dir>/<venv> (made on first use with
    `packages`, by default PACKAGES; see peer_venv for `resolve`) unless it runs there already,
    then makes <build_dir>/python's kiln importable; fails when Kiln is not built there."""
    kiln_python = os.path.join(build_dir, "python")
    if not os.path.isdir(os.path.join(kiln_python, "kiln")):
        harness.fail(f"no kiln package in {kiln_python}: build Kiln there first "
                     "(cmake --build <build-dir>)")
    peer_venv.reexec_in(os.path.join(build_dir, venv), packages or PACKAGES, probe, script, argv,
                        harness.log, resolve=resolve)
    sys.path.insert(0, kiln_python)


def call(path, input_name="x", threads=None):
    """x -> the session's first output: all graph optimizations, `threads` intra-op threads
    (the machine's cores by default), idle spinning off so that ORT's threads do not take the
    cores from the variant timed next."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads or os.cpu_count()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    output = session.get_outputs()[0].name
    return lambda x: session.run([output], {input_name: x})[0]

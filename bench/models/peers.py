"""The peers of bench/models that need their own Python stack: PyTorch 2.x (eager, TorchScript
and `torch.compile`) and TVM, both from PyPI, in <build-dir>/bench-venv-peers beside ONNX
Runtime and Kiln.

    peers.enter_venv(build_dir, script, argv)  # re-executes in bench-venv-peers
    python = peers.generator_python(build_dir)  # bench-venv: Debian's torch 1.13, which exports
    call = peers.tvm_call(onnx_path, x, threads)

Debian's PyTorch is 1.13, before `torch.compile`. The PyPI wheels of PyTorch 2.x need a newer
numpy and sympy than Debian's, so they go into a venv of their own, installed with their
requirements (peer_venv's `resolve`); numpy there is the wheel's, which the build's kiln
imports as well. The reference models are still made, and their FLOPs counted, by Debian's
PyTorch in <build-dir>/bench-venv, so the ONNX files Kiln compiles do not change with the peers'
versions; PyTorch 2.x builds the same modules from the same seed, and the worker checks every
variant's output against the stored reference. The venv takes about 3 GB of downloads (PyPI's
PyTorch wheels bring the CUDA libraries they link, unused here) and 7 GB of disk, once.
"""

import os

import harness
import ort_peer
import peer_venv

VENV = "bench-venv-peers"
# Pinned, so that every run measures the same peers. torchvision matches torch; transformers
# 4.44 builds the NLP models exactly as in bench-venv; onnx is the one TVM's ONNX frontend
# needs (Debian's 1.12 is older); matplotlib draws the chart.
PACKAGES = ["torch==2.9.1", "torchvision==0.24.1", "apache-tvm==0.27.0.post1", "onnx==1.19.1",
            "onnxruntime==1.32.0", "transformers==4.44.2", "matplotlib==3.10.7"]
PROBE = ("import torch, torchvision, tvm, onnxruntime, transformers, matplotlib; "
         "from tvm.relax.frontend.onnx import from_onnx; "
         "assert torch.__version__.startswith('2.9.1'), torch.__version__; "
         "print(torch.__version__, tvm.__version__, onnxruntime.__version__)")
# Untuned TVM takes seconds per run of a large model: it is timed in this many rounds (after one
# warm-up call), interleaved with the others' first rounds.
TVM_ROUNDS = 3


def enter_venv(build_dir, script, argv):
    """Re-executes `script` with `argv` in <build_dir>/bench-venv-peers (made on first use)
    unless it runs there already, then makes <build_dir>/python's kiln importable."""
    ort_peer.enter_venv(build_dir, script, argv, VENV, PACKAGES, PROBE, resolve=True)


def generator_python(build_dir):
    """The python that makes the reference models and counts their FLOPs: <build-dir>/bench-venv,
    Debian's PyTorch 1.13 with transformers (made on first use)."""
    python, _ = peer_venv.ensure(os.path.join(build_dir, "bench-venv"), ort_peer.PACKAGES,
                                 ort_peer.PROBE, harness.log)
    return python


def tvm_target(threads):
    """TVM's default LLVM target (its generic x86-64 CPU) with `threads` cores. Naming this
    machine's CPU (`codegen.llvm_get_system_cpu()`, emeraldrapids here) made the untuned
    kernels slower: squeezenet1_1 at 1 thread took 351 ms against 182 (a one-off comparison,
    both compiled in one process and alternated; design §38)."""
    import tvm

    return tvm.target.Target({"kind": "llvm", "num-cores": threads})


def tvm_call(onnx_path, x, threads):
    """x -> the model's output as numpy, compiled by TVM without tuning: the Relax ONNX frontend,
    inference-only decompositions, `tvm.compile` for tvm_target(threads), run by Relax's
    VirtualMachine. TVM's thread pool reads TVM_NUM_THREADS when it starts."""
    import onnx
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    module = from_onnx(onnx.load(onnx_path), shape_dict={"input": list(x.shape)},
                       keep_params_in_input=False)
    module = relax.transform.DecomposeOpsForInference()(module)
    machine = relax.VirtualMachine(tvm.compile(module, target=tvm_target(threads)), tvm.cpu())
    main = machine["main"]
    tensor = tvm.runtime.tensor(x)

    def run():
        output = main(tensor)
        return (output if hasattr(output, "numpy") else output[0]).numpy()

    return run


def torch_compiled(model, example):
    """`torch.compile(model)` (Inductor, default mode), compiled by one call under no_grad, so
    that a model it cannot compile fails here, where the worker reports it."""
    import torch

    compiled = torch.compile(model)
    with torch.no_grad():
        compiled(example)
    return compiled

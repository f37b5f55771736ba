#!/usr/bin/python3
"""Recurrent layers: an LSTM over sequence lengths 16 to 256 at batch 1 and 8, Kiln next to
ONNX Runtime.

    /usr/bin/python3 bench/recurrent/run.py [--models lstm bilstm2] [--batches 1 8]
                                            [--seqs 16 64 256] [--runs 20] [--quick]
                                            [--build-dir build]

1. Re-executes itself with the python of <build-dir>/bench-venv (onnxruntime from PyPI beside
   Debian's packages: bench/common/peer_venv.py) and imports kiln from <build-dir>/python.
2. Exports each model with torch.onnx (opset 14, random weights, nothing downloaded), its
   sequence and batch axes dynamic, into <build-dir>/bench-recurrent/: `lstm` is one LSTM
   layer (input 128, hidden 256), `bilstm2` two bidirectional layers (input 128, hidden 128).
   Each is one ONNX LSTM node per layer, which Kiln runs as nn.lstm.
3. Per model: Kiln compiles the file once (its sizes symbolic) and runs every shape; one ONNX
   Runtime session (all graph optimizations, intra-op threads = the machine's cores, idle
   spinning off). Each must agree with ORT on every shape (rtol 1e-3) before it is timed.
4. Per (model, batch, length), the two take turns run by run (order reversed every run), --runs
   times each after one untimed call; the figures are medians, the ratio is Kiln / ORT.
5. Refuses a busy machine (bench/common/harness.py: waits until other processes use under 15%
   of a core; a phase during which they used more is timed again). --quick only warns and
   writes no file unless --output is given. Replaces the "Recurrent layers" section of
   docs/benchmarks.md.
"""

import argparse
import os
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
import harness  # noqa: E402  (bench/common/harness.py: idle checks, doc sections)
import ort_peer  # noqa: E402  (bench/common/ort_peer.py: the peer and its venv)
from harness import log  # noqa: E402

harness.set_name("recurrent")

SECTION = "Recurrent layers: LSTM by sequence length"
OPSET = 14
INPUT = 128
# name: (hidden size, layers, bidirectional)
MODELS = {"lstm": (256, 1, False), "bilstm2": (128, 2, True)}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=sorted(MODELS), default=sorted(MODELS))
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 8])
    parser.add_argument("--seqs", nargs="+", type=int, default=[16, 64, 256])
    return harness.parse_benchmark_args(parser, argv, runs=20, quick_runs=3)


def export(name, directory):
    """The model's ONNX file, input "x" (seq, batch, 128) and output "y", exported unless up to
    date."""
    import torch

    path = os.path.join(directory, f"{name}.onnx")
    stamp = f"{torch.__version__} {os.path.getmtime(__file__)}"
    if os.path.exists(path) and os.path.exists(path + ".stamp"):
        with open(path + ".stamp") as f:
            if f.read() == stamp:
                return path
    os.makedirs(directory, exist_ok=True)
    hidden, layers, bidirectional = MODELS[name]
    torch.manual_seed(0)
    model = torch.nn.LSTM(INPUT, hidden, num_layers=layers, bidirectional=bidirectional).eval()
    axes = {0: "seq", 1: "batch"}
    log(f"exporting {name}")
    torch.onnx.export(model, torch.randn(16, 2, INPUT), path, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": axes, "y": axes},
                      opset_version=OPSET)
    with open(path + ".stamp", "w") as f:
        f.write(stamp)
    return path


def measure(name, path, args):
    """[(batch, seq, {variant: median seconds})]."""
    import numpy as np

    import kiln
    import kiln.frontend

    executable = kiln.build(kiln.frontend.from_onnx(path))
    calls = {"Kiln": lambda x: executable.run(x=x)[0], "ONNX Runtime": ort_peer.call(path)}
    rows = []
    for batch in args.batches:
        for seq in args.seqs:
            x = np.random.default_rng(seq + batch).standard_normal((seq, batch, INPUT))
            x = x.astype("float32")
            harness.check_agree(calls, x)
            medians = harness.timed_phase(f"{name} at batch {batch}, length {seq}",
                                          lambda: harness.interleaved(calls, x, args.runs),
                                          in_process=True)
            rows.append((batch, seq, medians))
    return rows


def render(results, args, command):
    import onnxruntime
    import torch

    lines = [f"## {SECTION}", "", f"Command: `{command}`", "",
             f"Machine: {harness.cpu_model()}, {os.cpu_count()} cores; Kiln "
             f"{harness.build_type(args.build_dir)}, ONNX Runtime {onnxruntime.__version__} "
             f"({os.cpu_count()} intra-op threads, spinning off), torch {torch.__version__} "
             f"(export, opset {OPSET}).", "",
             "torch.nn.LSTM with random weights, exported once with dynamic sequence and batch "
             "axes; Kiln compiles the file once (`nn.lstm`: per lane of batch entries, the input "
             "projections one GEMM per chunk of steps, then one GEMM per step; at batch 1 and 2 "
             "the hidden units split among the threads, one barrier per step). Milliseconds are "
             f"medians of interleaved runs ({args.runs} each) after one untimed call each.", "",
             "| model | batch | length | Kiln (ms) | ONNX Runtime (ms) | Kiln / ORT |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, rows in results.items():
        hidden, layers, bidirectional = MODELS[name]
        label = f"{name} ({layers} layer(s), hidden {hidden}{', bidirectional' if bidirectional else ''})"
        for batch, seq, medians in rows:
            kiln_ms = medians["Kiln"] * 1e3
            ort_ms = medians["ONNX Runtime"] * 1e3
            lines.append(f"| {label} | {batch} | {seq} | {kiln_ms:.3f} | {ort_ms:.3f} | "
                         f"{kiln_ms / ort_ms:.3f} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    ort_peer.enter_venv(args.build_dir, __file__, argv)
    directory = os.path.join(args.build_dir, "bench-recurrent")
    results = {name: measure(name, export(name, directory), args) for name in args.models}
    command = " ".join(["/usr/bin/python3", "bench/recurrent/run.py"] +
                       [shlex.quote(a) for a in argv])
    harness.publish_section(args.output, render(results, args, command), SECTION)
    return 0


if __name__ == "__main__":
    sys.exit(main())

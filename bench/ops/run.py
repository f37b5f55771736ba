#!/usr/bin/python3
"""Single operators: Kiln next to ONNX Runtime on one-node ONNX models, the kernels a profile of
the wider model set pointed at (3-D convolution and pooling, grouped and large-kernel depthwise
convolution, resize) and the convolutions of the reference CNNs.

    /usr/bin/python3 bench/ops/run.py [--ops conv3d resize_linear ...] [--runs 30] [--quick]
                                      [--build-dir build]
    KILN_NUM_THREADS=1 /usr/bin/python3 bench/ops/run.py --output docs/benchmarks.md

1. Re-executes itself with the python of <build-dir>/bench-venv (onnxruntime from PyPI beside
   Debian's packages: bench/common/peer_venv.py) and imports kiln from <build-dir>/python.
2. Per operator: a model of one ONNX node (opset 17, random weights, seed 0) that Kiln compiles
   with kiln.build and ONNX Runtime opens in one session (all graph optimizations, as many
   intra-op threads as Kiln's pool has, idle spinning off). Both must agree (rtol 1e-3) before
   they are timed.
3. The two take turns run by run (order reversed every run), --runs times each after one
   untimed call; the figures are medians, the ratio is Kiln / ORT.
4. Refuses a busy machine (bench/common/harness.py: waits until other processes use under 15%
   of a core; a phase during which they used more is timed again). --quick only warns and writes
   no file unless --output is given. Replaces the section of the thread count it ran at in
   docs/benchmarks.md ("Single operators ... at N thread(s)"), so runs at 1 and 2 threads keep
   a section each.
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

harness.set_name("ops")

OPSET = 17

# name: (ONNX op, input shape, attributes, weight shape or None, extra constant inputs)
OPS = {
    "conv3d": ("Conv", (1, 64, 16, 28, 28), {"pads": [1] * 6}, (64, 64, 3, 3, 3), {}),
    "conv2d_resnet_3x3_56": ("Conv", (1, 64, 56, 56), {"pads": [1] * 4}, (64, 64, 3, 3), {}),
    "conv2d_resnet_3x3_7": ("Conv", (1, 512, 7, 7), {"pads": [1] * 4}, (512, 512, 3, 3), {}),
    "grouped_conv_3x3": ("Conv", (1, 128, 28, 28), {"pads": [1] * 4, "group": 32},
                         (128, 4, 3, 3), {}),
    # DenseNet's bottleneck (a 1x1 conv of the concatenated features) and its growth conv.
    "conv2d_densenet_1x1_28": ("Conv", (1, 512, 28, 28), {}, (128, 512, 1, 1), {}),
    "conv2d_densenet_3x3_28": ("Conv", (1, 128, 28, 28), {"pads": [1] * 4}, (32, 128, 3, 3), {}),
    # RegNetY-400MF's grouped 3x3 (groups of 8 channels).
    "grouped_conv_3x3_g8_14": ("Conv", (1, 208, 14, 14), {"pads": [1] * 4, "group": 26},
                               (208, 8, 3, 3), {}),
    # 1x1 convolutions over the small planes of mobile networks' last stages (EfficientNet-B0's
    # expansions), where a plane's 49 or 196 pixels do not fill whole vectors.
    "conv2d_1x1_7": ("Conv", (1, 192, 7, 7), {}, (1152, 192, 1, 1), {}),
    "conv2d_1x1_14": ("Conv", (1, 112, 14, 14), {}, (672, 112, 1, 1), {}),
    # The stems of MobileNetV2, EfficientNet and SqueezeNet: three input channels, stride 2.
    "conv2d_stem_3x3_s2": ("Conv", (1, 3, 224, 224), {"pads": [1] * 4, "strides": [2, 2]},
                           (32, 3, 3, 3), {}),
    "depthwise_7x7_56": ("Conv", (1, 128, 56, 56), {"pads": [3] * 4, "group": 128},
                         (128, 1, 7, 7), {}),
    "depthwise_7x7_14": ("Conv", (1, 384, 14, 14), {"pads": [3] * 4, "group": 384},
                         (384, 1, 7, 7), {}),
    # MobileNetV2's and EfficientNet's depthwise convolutions (planes over 32 columns wide).
    "depthwise_3x3_56": ("Conv", (1, 144, 56, 56), {"pads": [1] * 4, "group": 144},
                         (144, 1, 3, 3), {}),
    "depthwise_5x5_56": ("Conv", (1, 144, 56, 56), {"pads": [2] * 4, "group": 144},
                         (144, 1, 5, 5), {}),
    "depthwise_3x3_28": ("Conv", (1, 192, 28, 28), {"pads": [1] * 4, "group": 192},
                         (192, 1, 3, 3), {}),
    "depthwise_5x5_28_s2": ("Conv", (1, 240, 28, 28),
                            {"pads": [2] * 4, "group": 240, "strides": [2, 2]}, (240, 1, 5, 5), {}),
    "depthwise_3x3_7": ("Conv", (1, 960, 7, 7), {"pads": [1] * 4, "group": 960},
                        (960, 1, 3, 3), {}),
    "depthwise_3x3_112_s2": ("Conv", (1, 96, 112, 112),
                             {"pads": [1] * 4, "group": 96, "strides": [2, 2]},
                             (96, 1, 3, 3), {}),
    "max_pool3d": ("MaxPool", (1, 64, 16, 56, 56), {"kernel_shape": [2, 2, 2],
                                                    "strides": [2, 2, 2]}, None, {}),
    "max_pool2d_resnet": ("MaxPool", (1, 64, 112, 112), {"kernel_shape": [3, 3],
                                                         "strides": [2, 2], "pads": [1] * 4},
                          None, {}),
    # SqueezeNet's pools: no padding, the last window cut short (ceil_mode).
    "max_pool2d_ceil": ("MaxPool", (1, 64, 111, 111), {"kernel_shape": [3, 3],
                                                       "strides": [2, 2], "ceil_mode": 1},
                        None, {}),
    "avg_pool2d_3x3": ("AveragePool", (1, 64, 56, 56), {"kernel_shape": [3, 3],
                                                        "strides": [1, 1], "pads": [1] * 4},
                       None, {}),
    "resize_nearest_x2": ("Resize", (1, 64, 56, 56), {"mode": "nearest"}, None,
                          {"scales": [1.0, 1.0, 2.0, 2.0]}),
    "resize_linear_x2": ("Resize", (1, 64, 56, 56), {"mode": "linear"}, None,
                         {"scales": [1.0, 1.0, 2.0, 2.0]}),
}


def make_model(name):
    """The one-node ONNX model of OPS[name], input "x", output "y"."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    op, shape, attrs, weight, extra = OPS[name]
    rng = np.random.default_rng(0)
    inputs, initializers = ["x"], []
    if weight is not None:
        w = (rng.standard_normal(weight) * 0.1).astype("float32")
        initializers.append(numpy_helper.from_array(w, "w"))
        inputs.append("w")
    if "scales" in extra:  # Resize(x, roi, scales)
        initializers.append(numpy_helper.from_array(np.array(extra["scales"], "float32"), "s"))
        inputs += ["", "s"]
    graph = helper.make_graph(
        [helper.make_node(op, inputs, ["y"], **attrs)], name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        # Every operator here keeps the rank; the extents are left to shape inference.
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * len(shape))],
        initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def measure(name, args, threads):
    """{variant: median seconds} of the operator."""
    import numpy as np

    import kiln
    import kiln.frontend

    model = make_model(name)
    path = os.path.join(args.build_dir, "bench-ops", f"{name}.onnx")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    executable = kiln.build(kiln.frontend.from_onnx(path))
    calls = {"Kiln": lambda x: executable.run(x=x)[0],
             "ONNX Runtime": ort_peer.call(path, threads=threads)}
    x = np.random.default_rng(1).standard_normal(OPS[name][1]).astype("float32")
    harness.check_agree(calls, x)
    return harness.timed_phase(name, lambda: harness.interleaved(calls, x, args.runs),
                               in_process=True)


def section_title(threads):
    return f"Single operators: Kiln vs ONNX Runtime at {threads} thread(s)"


def describe(name):
    op, shape, attrs, weight, extra = OPS[name]
    details = [f"{k}={v}" for k, v in attrs.items() if k != "pads"]
    if weight is not None:
        details.insert(0, f"weight {'x'.join(map(str, weight))}")
    if "scales" in extra:
        details.append(f"scales {extra['scales']}")
    return f"{op} of {'x'.join(map(str, shape))}" + (f" ({', '.join(details)})" if details else "")


def render(results, args, threads, command):
    import onnxruntime

    lines = [f"## {section_title(threads)}", "", f"Command: `{command}`", "",
             f"Machine: {harness.cpu_model()}, {os.cpu_count()} cores; Kiln "
             f"{harness.build_type(args.build_dir)} ({threads} thread(s) in its pool), ONNX "
             f"Runtime {onnxruntime.__version__} ({threads} intra-op thread(s), spinning off).",
             "",
             f"One ONNX node per model (opset {OPSET}, random weights), compiled by Kiln and "
             "opened by ONNX Runtime; milliseconds are medians of interleaved runs "
             f"({args.runs} each) after one untimed call each.", "",
             "| operator | shape | Kiln (ms) | ONNX Runtime (ms) | Kiln / ORT |",
             "|---|---|---:|---:|---:|"]
    for name, medians in results.items():
        kiln_ms, ort_ms = medians["Kiln"] * 1e3, medians["ONNX Runtime"] * 1e3
        lines.append(f"| {name} | {describe(name)} | {kiln_ms:.3f} | {ort_ms:.3f} | "
                     f"{kiln_ms / ort_ms:.2f} |")
    return "\n".join(lines) + "\n"


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", nargs="+", choices=list(OPS), default=list(OPS))
    return harness.parse_benchmark_args(parser, argv, runs=30, quick_runs=3)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    ort_peer.enter_venv(args.build_dir, __file__, argv)
    import kiln

    threads = kiln.runtime.num_threads()
    log(f"{threads} thread(s) (KILN_NUM_THREADS sets them)")
    results = {name: measure(name, args, threads) for name in args.ops}
    command = " ".join(([f"KILN_NUM_THREADS={os.environ['KILN_NUM_THREADS']}"]
                        if "KILN_NUM_THREADS" in os.environ else []) +
                       ["/usr/bin/python3", "bench/ops/run.py"] + [shlex.quote(a) for a in argv])
    harness.publish_section(args.output, render(results, args, threads, command),
                            section_title(threads))
    return 0


if __name__ == "__main__":
    sys.exit(main())

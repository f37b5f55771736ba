"""Writes the demo model: a small image classifier (Conv, BatchNormalization, Relu, MaxPool,
Conv, Relu, GlobalAveragePool, Flatten, Gemm, Softmax) with seeded random weights, built with
the onnx package alone (no download), and a seeded input image as .npy.

    python3 examples/onnx_demo/make_model.py OUT_DIR    # OUT_DIR/demo.onnx, OUT_DIR/input.npy
"""

import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def weights(rng):
    def normal(*shape, scale=0.2):
        return (rng.standard_normal(shape) * scale).astype("float32")

    return {
        "conv1.w": normal(16, 3, 3, 3),
        "conv1.b": normal(16),
        "bn.scale": (1 + normal(16, scale=0.1)),
        "bn.bias": normal(16, scale=0.1),
        "bn.mean": normal(16, scale=0.1),
        "bn.var": (1 + np.abs(normal(16, scale=0.1))),
        "conv2.w": normal(32, 16, 3, 3),
        "conv2.b": normal(32),
        "fc.w": normal(10, 32),
        "fc.b": normal(10),
    }


def make_model(rng):
    nodes = [
        helper.make_node("Conv", ["input", "conv1.w", "conv1.b"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "bn.scale", "bn.bias", "bn.mean", "bn.var"], ["b1"]),
        helper.make_node("Relu", ["b1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2.w", "conv2.b"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "kiln_demo",
        [helper.make_tensor_value_info("input", onnx.TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("probabilities", onnx.TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(value, name) for name, value in weights(rng).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    return model


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(2026)
    onnx.save(make_model(rng), os.path.join(out_dir, "demo.onnx"))
    np.save(os.path.join(out_dir, "input.npy"), rng.standard_normal((1, 3, 32, 32)).astype("float32"))
    print(f"wrote {out_dir}/demo.onnx and {out_dir}/input.npy")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Kiln's CPU conv2d and dense kernels against PyTorch on the same shapes, in one process.

    PYTHONPATH=build/python /usr/bin/python3 bench/kernels/run.py [--threads N] [--runs R]

For each shape (ResNet-50 and MobileNet-v2 convolutions, BERT-style dense layers, relu over
vectors of two sizes) it runs
`kernel.cpu.<op>`, with its weights prepacked as a kernel program does it (the op's
`kernel_prepack.cpu.<op>` hook, attribute `__packed_1`) and torch.nn.functional's op,
alternating one call of each, and prints the medians of the wall and CPU (process) times, the
ratio Kiln / PyTorch on both, and Kiln's GFLOP/s on the median wall time. CPU time is less
disturbed than wall time when other processes share the cores. The prepack hook gets the
output shape as a kernel program gives it, so each conv2d takes the algorithm it takes in a
model (Winograd for resnet's 3x3s, design §42).

Then it times the 3x3 convolutions of design §42's table both ways, Winograd against the GEMM
(the weights packed without the output shape, as for a symbolic plane), alternating. Writes
nothing.
"""

import argparse
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

import kiln
from kiln._lib import load_kiln_library

# name, (N, C, H, W), (O, KH, KW), stride, padding, groups
CONVS = [
    ("resnet50 layer1 3x3", (1, 64, 56, 56), (64, 3, 3), 1, 1, 1),
    ("resnet50 layer1 1x1 expand", (1, 64, 56, 56), (256, 1, 1), 1, 0, 1),
    ("resnet50 layer3 3x3", (1, 256, 14, 14), (256, 3, 3), 1, 1, 1),
    ("resnet50 layer4 1x1", (1, 2048, 7, 7), (512, 1, 1), 1, 0, 1),
    ("mobilenet_v2 depthwise s1", (1, 144, 56, 56), (144, 3, 3), 1, 1, 144),
    ("mobilenet_v2 depthwise s2", (1, 96, 112, 112), (96, 3, 3), 2, 1, 96),
    ("mobilenet_v2 depthwise 7x7", (1, 960, 7, 7), (960, 3, 3), 1, 1, 960),
]
# name, (N, C, H, W), O: 3x3 at unit stride, padding 1, the shapes of design §42's table
WINOGRAD_CONVS = [
    ("resnet 64 -> 64, 56 x 56", (1, 64, 56, 56), 64),
    ("resnet 128 -> 128, 28 x 28", (1, 128, 28, 28), 128),
    ("resnet 256 -> 256, 14 x 14", (1, 256, 14, 14), 256),
    ("squeezenet 64 -> 256, 13 x 13", (1, 64, 13, 13), 256),
]
# name, M, K, N
DENSES = [("bert qkv", 128, 256, 768), ("bert ffn up", 128, 256, 1024),
          ("bert ffn down", 128, 1024, 256)]
# name, elements: around the size from which cheap elementwise work splits between threads
# (kElementGrain in src/kernels/cpu/kernel_util.h)
RELUS = [("relu 32K", 1 << 15), ("relu 128K", 1 << 17)]


def time_pair(first, second, runs):
    """Medians (wall, CPU) of `first` and of `second`, one call of each in turn."""
    for _ in range(3):
        first()
        second()
    times = ([], []), ([], [])
    for _ in range(runs):
        for fn, (walls, cpus) in zip((first, second), times):
            cpu, wall = time.process_time(), time.perf_counter()
            fn()
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
    return tuple((float(np.median(w)), float(np.median(c))) for w, c in times)


def prepacked(op, weight, attrs, output_shape=None):
    """`attrs` with the weight packed by the op's prepack hook, which finds the step's output
    shape where a kernel program gives it (attribute __prepack_output_shape, for the hook only)."""
    hook_attrs = attrs if output_shape is None else {**attrs,
                                                     "__prepack_output_shape": output_shape}
    packed = kiln.get_global_func("kernel_prepack.cpu." + op)(1, kiln.tensor(weight), hook_attrs)
    return {**attrs, "__packed_1": packed} if packed is not None else attrs


def conv_case(shape, kernel, stride, padding, groups, output_shape_known=True):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape, dtype=np.float32)
    o, kh, kw = kernel
    w = rng.standard_normal((o, shape[1] // groups, kh, kw), dtype=np.float32)
    oh = (shape[2] + 2 * padding - kh) // stride + 1
    ow = (shape[3] + 2 * padding - kw) // stride + 1
    attrs = {"strides": [stride, stride], "padding": [padding] * 4, "dilation": [1, 1],
             "groups": groups}
    kernel_fn = kiln.get_global_func("kernel.cpu.nn.conv2d")
    args, out = [kiln.tensor(x), kiln.tensor(w)], [kiln.empty([1, o, oh, ow], "float32")]
    attrs = prepacked("nn.conv2d", w, attrs, [1, o, oh, ow] if output_shape_known else None)
    xt, wt = torch.from_numpy(x), torch.from_numpy(w)
    flops = 2 * o * oh * ow * (shape[1] // groups) * kh * kw
    return (lambda: kernel_fn(args, out, attrs),
            lambda: F.conv2d(xt, wt, stride=stride, padding=padding, groups=groups), flops)


def dense_case(m, k, n):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((m, k), dtype=np.float32)
    w = rng.standard_normal((n, k), dtype=np.float32)
    kernel_fn = kiln.get_global_func("kernel.cpu.nn.dense")
    args, out = [kiln.tensor(x), kiln.tensor(w)], [kiln.empty([m, n], "float32")]
    attrs = prepacked("nn.dense", w, {})
    xt, wt = torch.from_numpy(x), torch.from_numpy(w)
    return lambda: kernel_fn(args, out, attrs), lambda: F.linear(xt, wt), 2 * m * n * k


def relu_case(n):
    x = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    kernel_fn = kiln.get_global_func("kernel.cpu.nn.relu")
    args, out = [kiln.tensor(x)], [kiln.empty([n], "float32")]
    xt = torch.from_numpy(x)
    return lambda: kernel_fn(args, out, {}), lambda: torch.relu(xt), n


def winograd_case(shape, o):
    """(Winograd, GEMM) calls of one 3x3 conv2d, and its FLOPs."""
    winograd, _, flops = conv_case(shape, (o, 3, 3), 1, 1, 1)
    gemm, _, _ = conv_case(shape, (o, 3, 3), 1, 1, 1, output_shape_known=False)
    return winograd, gemm, flops


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    if os.environ.get("KILN_NUM_THREADS") != str(args.threads):
        raise SystemExit(f"set KILN_NUM_THREADS={args.threads} (the pool reads it once)")
    torch.set_num_threads(args.threads)
    error = load_kiln_library("kiln_kernels_cpu")
    if error:
        raise SystemExit(f"libkiln_kernels_cpu.so did not load: {error}")
    cases = [(name, *conv_case(*spec)) for name, *spec in CONVS]
    cases += [(name, *dense_case(*spec)) for name, *spec in DENSES]
    cases += [(name, *relu_case(n)) for name, n in RELUS]
    print(f"threads {args.threads}, {args.runs} interleaved runs; medians in µs")
    print(f"{'case':30} {'kiln wall':>9} {'torch wall':>10} {'ratio':>6} {'kiln cpu':>9} "
          f"{'torch cpu':>9} {'ratio':>6} {'kiln GFLOP/s':>12}")
    for name, kiln_fn, torch_fn, flops in cases:
        (kw, kc), (tw, tc) = time_pair(kiln_fn, torch_fn, args.runs)
        print(f"{name:30} {kw * 1e6:9.1f} {tw * 1e6:10.1f} {kw / tw:6.2f} {kc * 1e6:9.1f} "
              f"{tc * 1e6:9.1f} {kc / tc:6.2f} {flops / kw / 1e9:12.1f}")
    print(f"\n{'3x3 conv2d':30} {'Winograd':>9} {'GEMM':>10} {'ratio':>6}")
    for name, shape, o in WINOGRAD_CONVS:
        winograd, gemm, _ = winograd_case(shape, o)
        (ww, _), (gw, _) = time_pair(winograd, gemm, args.runs)
        print(f"{name:30} {ww * 1e6:9.1f} {gw * 1e6:10.1f} {ww / gw:6.2f}")


if __name__ == "__main__":
    main()

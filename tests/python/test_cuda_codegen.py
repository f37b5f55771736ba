"""CUDA from the tensor-level IR: the core elementwise, broadcast, injective and reduction
groups lowered, bound to GPU blocks and threads (the pass bind_gpu), written as CUDA C++ and
compiled by NVRTC into PTX. Compiling needs the CUDA backend and the toolkit's NVRTC, not a GPU;
running the kernels needs a GPU, and that test says why it skips without one."""

import numpy as np
import pytest

import kiln
from kiln import tir

from test_generated_kernels import fused_calls, parse

GROUPS = {
    "exp": "def @main(%x: Tensor[(n, 37), float32]) { exp(%x) }",
    "gelu_of_bias": "def @main(%x: Tensor[(n, 37), float32], %b: Tensor[(37), float32]) "
                    "{ nn.gelu(add(%x, %b)) }",
    "where": "def @main(%c: Tensor[(n, 1), bool], %x: Tensor[(n, 37), float32]) "
             "{ where(%c, %x, negative(%x)) }",
    "transpose": "def @main(%x: Tensor[(5, 37), float32]) { transpose(%x) }",
    "sum_rows": "def @main(%x: Tensor[(n, 37), float32]) { sum(%x, axis=[1]) }",
    "max_columns": "def @main(%x: Tensor[(n, 37), float32]) "
                   "{ max(%x, axis=[0], keepdims=true) }",
    "mean_all_int_cast": "def @main(%x: Tensor[(6, 7), int32]) "
                         "{ mean(cast(%x, dtype=\"float32\")) }",
}


def cuda_backend():
    """Skips the test, saying why, unless the CUDA backend is loaded."""
    for backend in kiln.runtime.backends():
        if backend["name"] == "cuda":
            if backend["status"] != "loaded":
                pytest.skip(f"the CUDA backend did not load: {backend['reason']}")
            return
    pytest.skip("the CUDA backend (libkiln_runtime_cuda.so) was not built here")


def gpu_functions(text):
    return [kiln.get_global_func("tir.RunPasses")(tir.lower_fused_group(c.op, c.args, f"f{i}"),
                                                  "bind_gpu")
            for i, c in enumerate(fused_calls(parse(text)))]


@pytest.mark.parametrize("name", sorted(GROUPS))
def test_the_cuda_source_of_core_groups_compiles_with_nvrtc(name):
    cuda_backend()
    for func in gpu_functions(GROUPS[name]):
        source = tir.generate_cuda(func)
        assert f'extern "C" __global__ void {func.name}(' in source
        assert "blockIdx.x" in source and "threadIdx.x" in source
        ptx = kiln.get_global_func("runtime.cuda.CompileToPtx")(
            source, ["--gpu-architecture=compute_75"])
        assert f".entry {func.name}(" in bytes(ptx).decode(), source


def test_nvrtc_errors_show_the_compilers_log():
    cuda_backend()
    with pytest.raises(kiln.RuntimeError, match="(?s)NVRTC could not compile the generated CUDA "
                                                "source.*undefined_name"):
        kiln.get_global_func("runtime.cuda.CompileToPtx")(
            'extern "C" __global__ void k(float* x) { x[0] = undefined_name; }', [])


def test_host_code_refuses_gpu_bound_loops_and_cuda_refuses_parallel_ones():
    (func,) = gpu_functions(GROUPS["exp"])
    with pytest.raises(kiln.NotImplementedError, match="is bound to block_x; only CUDA code "
                                                       "binds loops to GPU indices"):
        tir.generate_c(func)
    (host,) = [tir.lower_fused_group(c.op, c.args, "f")
               for c in fused_calls(parse(GROUPS["exp"]))]
    with pytest.raises(kiln.NotImplementedError, match="is parallel; bind it to blocks or "
                                                       "threads"):
        tir.generate_cuda(host)


def test_generated_cuda_kernels_run_on_a_gpu():
    cuda_backend()
    gpu = kiln.device("cuda", 0)
    if not gpu.exist:
        pytest.skip("no CUDA GPU here: " + kiln.get_global_func("runtime.cuda.Status")())
    (func,) = gpu_functions(GROUPS["gelu_of_bias"])
    module = tir.build_cuda(func)
    rows = 300  # more rows than one block's threads, and not a multiple
    x = np.linspace(-3, 3, rows * 37, dtype=np.float32).reshape(rows, 37)
    b = np.linspace(1, -1, 37, dtype=np.float32)
    out = kiln.empty([rows, 37], "float32", device=gpu)
    threads = 256
    blocks = (rows * 37 + threads - 1) // threads
    assert tir.cuda_size_params(func) == ["n"]
    module[func.name](kiln.tensor(x, device=gpu), kiln.tensor(b, device=gpu), out, rows,
                      blocks, 1, 1, threads, 1, 1)
    gpu.synchronize()
    from math import erf
    want = np.vectorize(lambda v: 0.5 * v * (1 + erf(v / np.sqrt(2))))(x + b)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)

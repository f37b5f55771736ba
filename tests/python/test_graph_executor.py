"""kiln.runtime.GraphExecutor over a lib of C kernels compiled by export_library."""

import json

import numpy as np
import pytest

import kiln

# Node functions receive one DLTensor* per entry: inputs, then outputs (graph_executor.h).
KERNELS = r"""
#include <kiln/ffi/c_api.h>
static int64_t count(const DLTensor* t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}
static float* floats(const DLTensor* t) { return (float*)((char*)t->data + t->byte_offset); }
static int tensors(const KilnAny* args, int32_t n, int32_t expected) {
  if (n != expected) return 0;
  for (int32_t i = 0; i < n; ++i) {
    if (args[i].type_index != kKilnTypeDLTensorPtr) return 0;
  }
  return 1;
}
int add(void* self, const KilnAny* args, int32_t n, KilnAny* result) {
  if (!tensors(args, n, 3)) return kiln_error_set_raised_from_cstr("TypeError", "add(a, b, out)");
  const DLTensor *a = args[0].v_ptr, *b = args[1].v_ptr, *out = args[2].v_ptr;
  for (int64_t i = 0; i < count(out); ++i) floats(out)[i] = floats(a)[i] + floats(b)[i];
  return 0;
}
int relu(void* self, const KilnAny* args, int32_t n, KilnAny* result) {
  if (!tensors(args, n, 2)) return kiln_error_set_raised_from_cstr("TypeError", "relu(a, out)");
  const DLTensor *a = args[0].v_ptr, *out = args[1].v_ptr;
  for (int64_t i = 0; i < count(out); ++i) floats(out)[i] = floats(a)[i] > 0 ? floats(a)[i] : 0;
  return 0;
}
"""

# out = relu(x + y) + x
GRAPH = {
    "version": 1,
    "storages": [{"bytes": 24}, {"bytes": 24}, {"bytes": 48}],
    "entries": [
        {"storage": 0, "offset": 0, "shape": [2, 3], "dtype": "float32"},
        {"storage": 1, "offset": 0, "shape": [2, 3], "dtype": "float32"},
        {"storage": 2, "offset": 0, "shape": [2, 3], "dtype": "float32"},
        {"storage": 2, "offset": 24, "shape": [2, 3], "dtype": "float32"},
        {"storage": 2, "offset": 0, "shape": [2, 3], "dtype": "float32"},
    ],
    "inputs": [{"name": "x", "entry": 0}, {"name": "y", "entry": 1}],
    "nodes": [
        {"name": "add0", "func": "add", "inputs": [0, 1], "outputs": [2]},
        {"name": "relu0", "func": "relu", "inputs": [2], "outputs": [3]},
        {"name": "add1", "func": "add", "inputs": [3, 0], "outputs": [4]},
    ],
    "outputs": [4],
}

X = np.array([[-3.0, -1.0, 0.0], [1.0, 2.0, 3.5]], dtype=np.float32)
Y = np.array([[1.0, -2.0, 0.5], [-4.0, 1.0, 0.25]], dtype=np.float32)


def expected(x, y):
    return np.maximum(x + y, 0) + x


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    path = tmp_path_factory.mktemp("kernels") / "kernels.so"
    kiln.runtime.CSourceModuleCreate(KERNELS, ["add", "relu"]).export_library(path)
    return kiln.load_module(path)


@pytest.fixture
def executor(lib):
    return kiln.runtime.GraphExecutor.create(json.dumps(GRAPH), lib, kiln.cpu())


def test_runs_the_graph(executor):
    executor.set_input("x", X)
    executor.set_input(1, Y)
    executor.run()
    np.testing.assert_allclose(executor.get_output(0).numpy(), expected(X, Y))
    executor.run(x=Y, y=X)  # inputs by keyword
    np.testing.assert_allclose(executor.get_output(0).numpy(), expected(Y, X))


def test_describes_its_inputs_outputs_and_memory(executor):
    assert executor.module.kind == "graph_executor"
    assert (executor.num_inputs, executor.num_outputs) == (2, 1)
    assert executor.get_input_index("y") == 1 and executor.get_input_index("z") == -1
    info = executor.input_info
    assert info["names"] == ["x", "y"] and info["shapes"] == [(2, 3), (2, 3)]
    assert info["dtypes"] == ["float32", "float32"]
    assert executor.output_info == {"shapes": [(2, 3)], "symbolic_shapes": ["(2, 3)"],
                                    "dtypes": ["float32"]}
    plan = executor.memory_plan
    assert plan["total_bytes"] == 96 and plan["bytes_without_sharing"] > plan["total_bytes"]
    assert repr(executor) == "kiln.runtime.GraphExecutor(2 inputs, 1 outputs)"


def test_zero_copy_input_reads_the_callers_memory(executor):
    x = X.copy()
    executor.set_input_zero_copy("x", x)
    executor.set_input("y", Y)
    executor.run()
    np.testing.assert_allclose(executor.get_output(0).numpy(), expected(X, Y))
    x[:] = 1.0  # the executor reads the array itself
    executor.run()
    np.testing.assert_allclose(executor.get_output(0).numpy(), expected(x, Y))


def test_output_copied_into_a_tensor(executor):
    executor.run(x=X, y=Y)
    out = kiln.empty((2, 3), "float32")
    assert executor.get_output(0, out=out) is out
    executor.run(x=Y, y=Y)  # the copy keeps the first result
    np.testing.assert_allclose(out.numpy(), expected(X, Y))


def test_input_errors_name_the_input(executor):
    with pytest.raises(kiln.KeyError) as info:
        executor.set_input("z", X)
    assert "'z'" in str(info.value) and "x, y" in str(info.value)
    with pytest.raises(kiln.ValueError) as info:
        executor.set_input("x", np.zeros((3, 2), np.float32))
    assert "'x'" in str(info.value)
    with pytest.raises(kiln.IndexError):
        executor.set_input(5, X)


def test_missing_node_function_is_named(lib):
    graph = json.loads(json.dumps(GRAPH))
    graph["nodes"][1]["func"] = "relu6"
    with pytest.raises(kiln.ValueError) as info:
        kiln.runtime.GraphExecutor.create(json.dumps(graph), lib)
    assert "relu6" in str(info.value)


def test_exported_with_its_lib_and_loaded_back(tmp_path):
    lib = kiln.runtime.CSourceModuleCreate(KERNELS, ["add", "relu"])
    graph = kiln.runtime.GraphExecutorCreate(json.dumps(GRAPH), lib, kiln.cpu())
    graph.export_library(tmp_path / "model.so")
    executor = kiln.runtime.GraphExecutor(kiln.load_module(tmp_path / "model.so"))
    executor.run(x=X, y=Y)
    np.testing.assert_allclose(executor.get_output(0).numpy(), expected(X, Y))


def test_wraps_only_graph_executor_modules(lib):
    with pytest.raises(TypeError):
        kiln.runtime.GraphExecutor(lib)


def test_outputs_at_an_offset_of_their_storage(lib):
    graph = json.loads(json.dumps(GRAPH))
    graph["outputs"] = [4, 3]  # entry 3 sits 24 bytes into storage 2
    executor = kiln.runtime.GraphExecutor.create(json.dumps(graph), lib)
    executor.run(x=X, y=Y)
    relu = executor.get_output(1)
    np.testing.assert_allclose(relu.numpy(), np.maximum(X + Y, 0))
    total = executor.get_output(0)
    assert relu.data_ptr - total.data_ptr == 24

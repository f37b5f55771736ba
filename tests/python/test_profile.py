"""Executable.profile: every graph node of a run, in order, with its shapes and median time."""

import numpy as np
import pytest

import kiln
import kiln.frontend

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402


def conv_then_softmax():
    """Two graph nodes: a convolution with its relu, and a softmax that cannot fuse with it."""
    weight = helper.make_tensor("w", TensorProto.FLOAT, [4, 3, 3, 3],
                                np.random.default_rng(0).random(108).astype(np.float32))
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Softmax", ["r"], ["y"], axis=1)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        initializer=[weight])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def ex():
    return kiln.build(kiln.frontend.from_onnx(conv_then_softmax()))


X = np.random.default_rng(1).random((1, 3, 8, 8), dtype=np.float32)


def test_profile_lists_every_node_in_order_with_its_shapes(ex):
    profile = ex.profile(x=X, repeat=3)
    assert isinstance(profile, kiln.Profile)
    assert profile.repeat == 3
    assert [node.func for node in profile.nodes] == ["fused_nn_conv2d_nn_relu_0",
                                                      "fused_nn_softmax_0"]
    assert [node.shapes for node in profile.nodes] == ["1x3x8x8 -> 1x4x8x8",
                                                        "1x4x8x8 -> 1x4x8x8"]
    assert all(node.ms >= 0 for node in profile.nodes) and profile.run_ms > 0


def test_profile_prints_the_slowest_nodes_and_the_time_per_kind(ex):
    text = str(ex.profile(x=X, repeat=2))
    assert text.startswith("median run ") and "over 2 runs; its 2 nodes take" in text
    assert "fused_nn_conv2d_nn_relu_0  (1x3x8x8 -> 1x4x8x8)" in text
    assert "fused_nn_softmax (1)" in text and "fused_nn_conv2d_nn_relu (1)" in text
    profile = ex.profile(x=X, repeat=1)
    assert "1 more nodes" in profile.table(top=1)
    for top in (0, -1):  # no node listed, none lost
        assert "2 more nodes" in profile.table(top=top)


def test_profile_leaves_the_results_of_runs_unchanged(ex):
    before = ex.run(x=X)[0]
    ex.profile(x=X, repeat=2)
    np.testing.assert_array_equal(ex.run(x=X)[0], before)


def test_profile_refuses_bad_arguments_naming_them(ex):
    with pytest.raises(kiln.ValueError, match="repeat must be at least 1, got 0"):
        ex.profile(x=X, repeat=0)
    with pytest.raises(kiln.ValueError, match="profile: input 'x' not given"):
        ex.profile(repeat=1)

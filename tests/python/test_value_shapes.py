"""Shapes that tensor values decide (docs/design.md §22): ONNX ops whose result's shape depends
on an input fed at run time (Reshape's shape, Slice's starts, TopK's k, ...) or on the data
(NonZero, Compress). Each model is compiled once and run with several values, checked against
numpy; bad values are errors that name them."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import kiln  # noqa: E402
import kiln.frontend  # noqa: E402

from test_symbolic_shapes import run_in_fresh_process  # noqa: E402

FLOAT, INT64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def compile_node(op, inputs, outputs=(("y", FLOAT, 3),), opset=17, **attrs):
    """Compiles a one-node model; `inputs` is [(name, element type, shape)], `outputs`
    [(name, element type, rank)] (the extents are unknown)."""
    node = helper.make_node(op, [name for name, _, _ in inputs], [o[0] for o in outputs], **attrs)
    graph = helper.make_graph(
        [node], op, [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, [None] * rank) for n, t, rank in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return kiln.build(kiln.frontend.from_onnx(model))


def ints(*values):
    return np.array(values, dtype=np.int64)


X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 11.5


def test_reshape_to_a_shape_fed_at_run_time():
    ex = compile_node("Reshape", [("x", FLOAT, [2, 3, 4]), ("shape", INT64, [3])])
    for shape, expected in [((4, 3, 2), (4, 3, 2)), ((0, -1, 2), (2, 6, 2)), ((24, 1, 1), None)]:
        (y,) = ex.run(x=X, shape=ints(*shape))
        np.testing.assert_array_equal(y, X.reshape(expected or shape))


def test_reshape_errors_name_the_shape_fed():
    ex = compile_node("Reshape", [("x", FLOAT, [2, 3, 4]), ("shape", INT64, [3])])
    with pytest.raises(ValueError, match=r"the shape \[5, 5, 1\] has 25 elements"):
        ex.run(x=X, shape=ints(5, 5, 1))
    with pytest.raises(ValueError, match="more than one -1"):
        ex.run(x=X, shape=ints(-1, -1, 2))
    with pytest.raises(ValueError, match="invalid extent -3"):
        ex.run(x=X, shape=ints(-3, 4, 2))


def test_squeeze_and_unsqueeze_with_axes_fed_at_run_time():
    x = X.reshape(2, 1, 3, 4)
    squeeze = compile_node("Squeeze", [("x", FLOAT, [2, 1, 3, 4]), ("axes", INT64, [1])])
    np.testing.assert_array_equal(squeeze.run(x=x, axes=ints(1))[0], X)
    np.testing.assert_array_equal(squeeze.run(x=x, axes=ints(-3))[0], X)
    with pytest.raises(ValueError, match="cannot squeeze axis 0 of extent 2"):
        squeeze.run(x=x, axes=ints(0))
    unsqueeze = compile_node("Unsqueeze", [("x", FLOAT, [2, 3, 4]), ("axes", INT64, [2])],
                             outputs=(("y", FLOAT, 5),))
    for axes in [(0, 4), (1, 2), (-1, 0)]:
        (y,) = unsqueeze.run(x=X, axes=ints(*axes))
        np.testing.assert_array_equal(y, np.expand_dims(X, tuple(np.array(axes) % 5)))


def test_expand_and_tile_with_shapes_fed_at_run_time():
    row = np.array([[1.5, -2.0, 3.0]], dtype=np.float32)
    expand = compile_node("Expand", [("x", FLOAT, [1, 3]), ("shape", INT64, [2])],
                          outputs=(("y", FLOAT, 2),))
    for shape in [(4, 3), (2, 1), (1, 3)]:
        np.testing.assert_array_equal(expand.run(x=row, shape=ints(*shape))[0],
                                      row * np.ones(shape, np.float32))
    with pytest.raises(ValueError, match="does not broadcast"):
        expand.run(x=row, shape=ints(2, 2))
    tile = compile_node("Tile", [("x", FLOAT, [1, 3]), ("repeats", INT64, [2])],
                        outputs=(("y", FLOAT, 2),))
    for repeats in [(2, 1), (3, 2), (1, 0)]:
        np.testing.assert_array_equal(tile.run(x=row, repeats=ints(*repeats))[0],
                                      np.tile(row, repeats))


def test_constant_of_shape_and_range_from_values_fed_at_run_time():
    value = helper.make_tensor("value", FLOAT, [1], [2.5])
    fill = compile_node("ConstantOfShape", [("shape", INT64, [2])], outputs=(("y", FLOAT, 2),),
                        value=value)
    np.testing.assert_array_equal(fill.run(shape=ints(2, 3))[0], np.full((2, 3), 2.5, np.float32))
    np.testing.assert_array_equal(fill.run(shape=ints(0, 3))[0], np.zeros((0, 3), np.float32))
    with pytest.raises(ValueError, match="cannot be negative"):
        fill.run(shape=ints(2, -1))
    node = helper.make_node("Range", ["start", "limit", "delta"], ["y"])
    graph = helper.make_graph([node], "range",
                              [helper.make_tensor_value_info(n, INT64, []) for n in
                               ("start", "limit", "delta")],
                              [helper.make_tensor_value_info("y", INT64, [None])])
    ex = kiln.build(kiln.frontend.from_onnx(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])))
    for start, limit, delta in [(0, 5, 1), (10, 1, -3), (4, 4, 1), (-7, 20, 6)]:
        scalars = {k: np.array(v, np.int64) for k, v in
                   zip(("start", "limit", "delta"), (start, limit, delta))}
        np.testing.assert_array_equal(ex.run(**scalars)[0], np.arange(start, limit, delta))


def test_topk_with_k_fed_at_run_time():
    data = np.random.default_rng(0).standard_normal((3, 7)).astype(np.float32)
    ex = compile_node("TopK", [("x", FLOAT, [3, 7]), ("k", INT64, [1])],
                      outputs=(("values", FLOAT, 2), ("indices", INT64, 2)))
    for k in (1, 4, 7):
        values, indices = ex.run(x=data, k=ints(k))
        order = np.argsort(-data, axis=1, kind="stable")[:, :k]
        np.testing.assert_array_equal(indices, order)
        np.testing.assert_array_equal(values, np.take_along_axis(data, order, 1))
    with pytest.raises(ValueError):
        ex.run(x=data, k=ints(8))


def test_nonzero_and_compress_size_their_results_by_the_data():
    node = helper.make_node("NonZero", ["x"], ["y"])
    graph = helper.make_graph([node], "nonzero", [helper.make_tensor_value_info("x", FLOAT, [3, 4])],
                              [helper.make_tensor_value_info("y", INT64, [2, None])])
    ex = kiln.build(kiln.frontend.from_onnx(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])))
    rng = np.random.default_rng(1)
    for density in (0.0, 0.3, 1.0):
        x = (rng.random((3, 4)) < density).astype(np.float32) * rng.standard_normal((3, 4),
                                                                                     np.float32)
        x[0, 0] = -0.0  # zero, whatever its sign
        np.testing.assert_array_equal(ex.run(x=x)[0], np.array(np.nonzero(x)))
    compress = compile_node("Compress", [("x", FLOAT, [3, 4]), ("condition", BOOL, [4])],
                            outputs=(("y", FLOAT, 2),), axis=1)
    data = X.reshape(6, 4)[:3]
    for condition in ([True, False, True, True], [False] * 4):
        condition = np.array(condition)
        np.testing.assert_array_equal(compress.run(x=data, condition=condition)[0],
                                      np.compress(condition, data, axis=1))


def test_slice_with_bounds_fed_at_run_time():
    ex = compile_node("Slice", [("x", FLOAT, [2, 3, 4]), ("starts", INT64, [2]),
                                ("ends", INT64, [2]), ("axes", INT64, [2]), ("steps", INT64, [2])])
    cases = [((0, 1), (2, 3), (0, 2), (1, 1)), ((-1, 3), (-100, 0), (2, 1), (-1, -2)),
             ((1, 0), (9, 99), (1, 2), (1, 3)), ((2, 0), (2, 4), (1, 2), (1, 1))]
    for starts, ends, axes, steps in cases:
        index = [slice(None)] * 3
        for s, e, a, st in zip(starts, ends, axes, steps):
            index[a] = slice(s, e, st)
        (y,) = ex.run(x=X, starts=ints(*starts), ends=ints(*ends), axes=ints(*axes),
                      steps=ints(*steps))
        np.testing.assert_array_equal(y, X[tuple(index)])
    with pytest.raises(ValueError, match="step cannot be 0"):
        ex.run(x=X, starts=ints(0, 0), ends=ints(1, 1), axes=ints(0, 1), steps=ints(1, 0))


def test_trilu_and_onehot_with_values_fed_at_run_time():
    square = X[0, :, :3]
    trilu = compile_node("Trilu", [("x", FLOAT, [3, 3]), ("k", INT64, [])],
                         outputs=(("y", FLOAT, 2),), upper=0)
    for k in (-1, 0, 2):
        np.testing.assert_array_equal(trilu.run(x=square, k=np.array(k, np.int64))[0],
                                      np.tril(square, k))
    onehot = compile_node("OneHot", [("indices", INT64, [4]), ("depth", FLOAT, [1]),
                                     ("values", FLOAT, [2])], outputs=(("y", FLOAT, 2),),
                         axis=0)
    indices = ints(0, 2, -1, 1)
    for depth in (3.0, 5.0):
        (y,) = onehot.run(indices=indices, depth=np.array([depth], np.float32),
                          values=np.array([0.5, 2.0], np.float32))
        expected = np.where(np.arange(int(depth))[:, None] == indices % int(depth), 2.0, 0.5)
        np.testing.assert_array_equal(y, expected.astype(np.float32))


def test_value_shaped_model_exports_and_runs_in_a_fresh_process(tmp_path):
    ex = compile_node("Reshape", [("x", FLOAT, [2, 3, 4]), ("shape", INT64, [2])],
                      outputs=(("y", FLOAT, 2),))
    library = tmp_path / "reshape.so"
    ex.export_library(str(library))
    feeds = {"a": {"x": X, "shape": ints(6, -1)}, "b": {"x": X, "shape": ints(1, 24)}}
    outputs, _ = run_in_fresh_process(library, feeds, tmp_path)
    np.testing.assert_array_equal(outputs["a"], X.reshape(6, 4))
    np.testing.assert_array_equal(outputs["b"], X.reshape(1, 24))


def test_split_and_reduce_sum_with_values_fed_at_run_time():
    split = compile_node("Split", [("x", FLOAT, [2, 6]), ("split", INT64, [2])],
                         outputs=(("a", FLOAT, 2), ("b", FLOAT, 2)), axis=1)
    data = X.reshape(2, 12)[:, :6]
    for sections in ((1, 5), (6, 0), (3, 3)):
        a, b = split.run(x=data, split=ints(*sections))
        np.testing.assert_array_equal(a, data[:, :sections[0]])
        np.testing.assert_array_equal(b, data[:, sections[0]:])
    with pytest.raises(ValueError, match="adding up to 6"):
        split.run(x=data, split=ints(2, 3))
    for keepdims in (0, 1):
        reduce = compile_node("ReduceSum", [("x", FLOAT, [2, 3, 4]), ("axes", INT64, [2])],
                              outputs=(("y", FLOAT, 3 if keepdims else 1),), keepdims=keepdims)
        for axes in ((0, 2), (-1, 1)):
            np.testing.assert_allclose(reduce.run(x=X, axes=ints(*axes))[0],
                                       X.sum(axis=axes, keepdims=bool(keepdims)), rtol=1e-6)


def test_cumsum_axis_and_window_size_fed_at_run_time():
    cumsum = compile_node("CumSum", [("x", FLOAT, [2, 3, 4]), ("axis", INT64, [])],
                          outputs=(("y", FLOAT, 3),), reverse=1)
    for axis in (0, 1, -1):
        np.testing.assert_allclose(cumsum.run(x=X, axis=np.array(axis, np.int64))[0],
                                   np.flip(np.flip(X, axis).cumsum(axis), axis), rtol=1e-6)
    hann = compile_node("HannWindow", [("size", INT64, [])], outputs=(("y", FLOAT, 1),),
                        periodic=0)
    for size in (5, 16):
        n = np.arange(size)
        expected = 0.5 - 0.5 * np.cos(2 * np.pi * n / (size - 1))
        np.testing.assert_allclose(hann.run(size=np.array(size, np.int64))[0], expected,
                                   rtol=1e-6, atol=1e-7)


def test_resize_with_scales_or_sizes_fed_at_run_time():
    image = np.random.default_rng(2).standard_normal((1, 2, 4, 6)).astype(np.float32)
    by_scales = compile_node("Resize", [("x", FLOAT, [1, 2, 4, 6]), ("roi", FLOAT, [0]),
                                        ("scales", FLOAT, [4])], outputs=(("y", FLOAT, 4),),
                             mode="nearest", coordinate_transformation_mode="asymmetric",
                             nearest_mode="floor")
    empty = np.zeros(0, np.float32)
    for scale_h, scale_w in ((2.0, 0.5), (1.5, 1.0)):
        (y,) = by_scales.run(x=image, roi=empty,
                             scales=np.array([1, 1, scale_h, scale_w], np.float32))
        rows = np.floor(np.arange(int(4 * scale_h)) / scale_h).astype(int)
        cols = np.floor(np.arange(int(6 * scale_w)) / scale_w).astype(int)
        np.testing.assert_array_equal(y, image[:, :, rows][:, :, :, cols])
    with pytest.raises(ValueError, match="changes the batch or channel dimension"):
        by_scales.run(x=image, roi=empty, scales=np.array([2, 1, 1, 1], np.float32))
    by_sizes = compile_node("Resize", [("x", FLOAT, [1, 2, 4, 6]), ("roi", FLOAT, [0]),
                                       ("scales", FLOAT, [0]), ("sizes", INT64, [4])],
                            outputs=(("y", FLOAT, 4),), mode="nearest",
                            coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    (y,) = by_sizes.run(x=image, roi=empty, scales=empty, sizes=ints(1, 2, 8, 3))
    np.testing.assert_array_equal(y, image[:, :, np.arange(8) // 2][:, :, :, np.arange(3) * 2])


def test_pad_with_pads_and_value_fed_at_run_time():
    pad = compile_node("Pad", [("x", FLOAT, [2, 3]), ("pads", INT64, [4]), ("value", FLOAT, [])],
                       outputs=(("y", FLOAT, 2),))
    data = X.reshape(4, 6)[:2, :3]
    for pads, value in (((1, 0, 0, 2), 9.5), ((0, -1, 1, 0), -1.0)):
        begin, end = pads[:2], pads[2:]
        expected = np.pad(data, [(max(b, 0), max(e, 0)) for b, e in zip(begin, end)],
                          constant_values=value)
        expected = expected[max(-begin[0], 0):expected.shape[0] - max(-end[0], 0),
                            max(-begin[1], 0):expected.shape[1] - max(-end[1], 0)]
        (y,) = pad.run(x=data, pads=ints(*pads), value=np.array(value, np.float32))
        np.testing.assert_array_equal(y, expected)
    reflect = compile_node("Pad", [("x", FLOAT, [2, 3]), ("pads", INT64, [4])],
                           outputs=(("y", FLOAT, 2),), mode="reflect")
    np.testing.assert_array_equal(reflect.run(x=data, pads=ints(1, 2, 0, 1))[0],
                                  np.pad(data, ((1, 0), (2, 1)), mode="reflect"))
    with pytest.raises(ValueError, match="more than its extent - 1"):
        reflect.run(x=data, pads=ints(0, 3, 0, 0))
    with pytest.raises(ValueError, match="crop dimension 1 below 0"):
        pad.run(x=data, pads=ints(0, -2, 0, -2), value=np.array(0, np.float32))


def test_reverse_sequence_and_maxunpool_with_values_fed_at_run_time():
    reverse = compile_node("ReverseSequence", [("x", FLOAT, [4, 3]), ("lens", INT64, [3])],
                           outputs=(("y", FLOAT, 2),), batch_axis=1, time_axis=0)
    data = X.reshape(8, 3)[:4]
    for lengths in ((4, 1, 2), (0, 9, 3)):
        expected = data.copy()
        for b, length in enumerate(lengths):
            length = min(length, 4)
            expected[:length, b] = data[:length, b][::-1]
        np.testing.assert_array_equal(reverse.run(x=data, lens=ints(*lengths))[0], expected)
    unpool = compile_node("MaxUnpool", [("x", FLOAT, [1, 1, 2, 2]), ("i", INT64, [1, 1, 2, 2]),
                                        ("shape", INT64, [4])], outputs=(("y", FLOAT, 4),),
                          kernel_shape=[2, 2], strides=[2, 2])
    values = np.array([[[[5, 6], [7, 8]]]], np.float32)
    where = np.array([[[[0, 3], [9, 15]]]], np.int64)  # flat positions in the (4, 4) plane
    for height, width in ((4, 4), (5, 6)):
        (y,) = unpool.run(x=values, i=where, shape=ints(1, 1, height, width))
        expected = np.zeros((1, 1, height, width), np.float32)
        for value, flat in zip(values.ravel(), where.ravel()):
            expected[0, 0, flat // 4, flat % 4] = value
        np.testing.assert_array_equal(y, expected)


def test_nonzero_counts_negative_zero_as_zero_in_every_float_type():
    for elem, data in ((TensorProto.FLOAT, np.array([-0.0, 1.0, 0.0], np.float32)),
                       (TensorProto.FLOAT16, np.array([-0.0, 1.0, 0.0], np.float16)),
                       # bfloat16 goes in as its bit patterns: -0.0, 1.0, 0.0
                       (TensorProto.BFLOAT16, np.array([0x8000, 0x3F80, 0], np.uint16))):
        node = helper.make_node("NonZero", ["x"], ["y"])
        graph = helper.make_graph([node], "nonzero", [helper.make_tensor_value_info("x", elem, [3])],
                                  [helper.make_tensor_value_info("y", INT64, [1, None])])
        ex = kiln.build(kiln.frontend.from_onnx(
            helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])))
        np.testing.assert_array_equal(ex.run(x=data)[0], [[1]])


def test_a_size_the_data_decides_becomes_a_tensor_where_a_model_computes_with_it():
    """TopK's k as min(3, how many elements are nonzero), as detection models compute it:
    the count is a size NonZero's result carries, read back from that result's shape."""
    nodes = [
        helper.make_node("NonZero", ["x"], ["where"]),
        helper.make_node("Shape", ["where"], ["where_shape"]),
        helper.make_node("Gather", ["where_shape", "one"], ["count"], axis=0),
        helper.make_node("Concat", ["three", "count"], ["candidates"], axis=0),
        helper.make_node("ReduceMin", ["candidates"], ["k"], keepdims=1),
        helper.make_node("TopK", ["x", "k"], ["top", "top_indices"]),
    ]
    initializers = [helper.make_tensor("one", INT64, [1], [1]),
                    helper.make_tensor("three", INT64, [1], [3])]
    graph = helper.make_graph(
        nodes, "k_from_data", [helper.make_tensor_value_info("x", FLOAT, [6])],
        [helper.make_tensor_value_info("k", INT64, [1]),
         helper.make_tensor_value_info("top", FLOAT, [None])], initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    ex = kiln.build(kiln.frontend.from_onnx(model))
    for x in ([1, -2, 3, 4, 5, -6], [0, 0, 3, 0, -5, 0], [0, 0, 2, 0, 0, 0], [0] * 6):
        x = np.array(x, dtype=np.float32)
        k, top = ex.run(x=x)
        expected_k = min(3, int((x != 0).sum()))
        assert k.tolist() == [expected_k]
        np.testing.assert_array_equal(top, np.sort(x)[::-1][:expected_k])


def test_a_fused_group_whose_temporaries_alone_use_a_size_gets_the_size_from_another_value():
    """Shape -> ConstantOfShape -> ReduceSum: the fused expand-and-sum takes only a constant and
    gives a scalar, so none of its own tensors has extent n; the graph input x does."""
    ones = helper.make_tensor("one", FLOAT, [1], [1.0])
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("ConstantOfShape", ["shape"], ["ones"], value=ones),
             helper.make_node("ReduceSum", ["ones"], ["count"], keepdims=0)]
    graph = helper.make_graph(nodes, "count", [helper.make_tensor_value_info("x", FLOAT, ["n"])],
                              [helper.make_tensor_value_info("count", FLOAT, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    ex = kiln.build(kiln.frontend.from_onnx(model))
    for n in (1, 5, 9):
        (count,) = ex.run(x=np.zeros(n, dtype=np.float32))
        assert float(count) == n


def test_an_extent_that_sums_sizes_does_not_give_them_one_by_one():
    """The fused add reads only the softmax of the concatenation, of extent n + m, but sums a
    tensor of extent n: the kernel program needs a tensor of extent n itself (here a)."""
    text = """
def @main(%a: Tensor[(n), float32], %b: Tensor[(m), float32]) {
  %0 = concatenate((%a, %b));
  %1 = nn.softmax(%0);
  %2 = expand(const(float32, (), [1]), shape=[n]);
  %3 = sum(%2, keepdims=false);
  add(%1, %3)
}
"""
    ex = kiln.build(kiln.ir.ParseModule(text, []))
    for n, m in ((2, 3), (4, 1)):
        a, b = np.zeros(n, dtype=np.float32), np.ones(m, dtype=np.float32)
        (y,) = ex.run(a=a, b=b)
        joined = np.concatenate([a, b])
        softmax = np.exp(joined - joined.max()) / np.exp(joined - joined.max()).sum()
        np.testing.assert_allclose(y, softmax + n, rtol=1e-5)


def test_values_sized_by_a_data_decided_size_come_after_the_node_that_decides_it():
    """Detection heads label each class's top boxes: per class, k = min(2, how many scores pass
    the threshold), TopK of k, and Expand(class, Shape(top)); the labels are concatenated. The
    expands read no value TopK computes, only its size k, and the labels are the last output,
    which lowering meets first: the size still orders them after each TopK's size is defined."""
    nodes, labels, tops = [], [], []
    for c in (1, 2):
        nodes += [
            helper.make_node("Greater", [f"x{c}", "threshold"], [f"keep{c}"]),
            helper.make_node("NonZero", [f"keep{c}"], [f"where{c}"]),
            helper.make_node("Shape", [f"where{c}"], [f"where_shape{c}"]),
            helper.make_node("Gather", [f"where_shape{c}", "one"], [f"count{c}"], axis=0),
            helper.make_node("Concat", ["two", f"count{c}"], [f"candidates{c}"], axis=0),
            helper.make_node("ReduceMin", [f"candidates{c}"], [f"k{c}"], keepdims=1),
            helper.make_node("TopK", [f"x{c}", f"k{c}"], [f"top{c}", f"top_indices{c}"]),
            helper.make_node("Shape", [f"top{c}"], [f"top_shape{c}"]),
            helper.make_node("Expand", [f"class{c}", f"top_shape{c}"], [f"labels{c}"]),
        ]
        labels.append(f"labels{c}")
        tops.append(f"top{c}")
    # NonZero fuses with nothing: the group of the expands then reads no tensor at all.
    nodes += [helper.make_node("Concat", labels, ["concatenated"], axis=0),
              helper.make_node("Greater", ["concatenated", "zero"], ["positive"]),
              helper.make_node("NonZero", ["positive"], ["labels"])]
    initializers = [helper.make_tensor("one", INT64, [1], [1]),
                    helper.make_tensor("two", INT64, [1], [2]),
                    helper.make_tensor("threshold", FLOAT, [], [0.5]),
                    helper.make_tensor("zero", INT64, [], [0]),
                    helper.make_tensor("class1", INT64, [], [-1]),
                    helper.make_tensor("class2", INT64, [], [2])]
    graph = helper.make_graph(
        nodes, "labels", [helper.make_tensor_value_info(f"x{c}", FLOAT, [5]) for c in (1, 2)],
        [helper.make_tensor_value_info(top, FLOAT, [None]) for top in tops]
        + [helper.make_tensor_value_info("labels", INT64, [1, None])], initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    ex = kiln.build(kiln.frontend.from_onnx(model))
    rng = np.random.default_rng(3)
    for _ in range(4):
        x1, x2 = rng.random(5, dtype=np.float32), rng.random(5, dtype=np.float32)
        top1, top2, got = ex.run(x1=x1, x2=x2)
        k1, k2 = min(2, int((x1 > 0.5).sum())), min(2, int((x2 > 0.5).sum()))
        np.testing.assert_array_equal(top1, np.sort(x1)[::-1][:k1])
        np.testing.assert_array_equal(top2, np.sort(x2)[::-1][:k2])
        # Class 1 is labelled -1 and class 2 is labelled 2: the positive ones are class 2's.
        assert got.tolist() == [list(range(k1, k1 + k2))]

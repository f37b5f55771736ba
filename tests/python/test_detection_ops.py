"""ONNX NonMaxSuppression and Unique with every input fed at run time: how many boxes are
selected and how many distinct values there are is known once the data is (docs/design.md §22).
Each model is compiled once and run with several inputs, checked against the numpy references
below; bad values are errors that name them."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import kiln  # noqa: E402
import kiln.frontend  # noqa: E402

FLOAT, INT64 = TensorProto.FLOAT, TensorProto.INT64

# NonMaxSuppression's inputs in order: (name, element type, shape).
BOXES, SCORES = ("boxes", FLOAT, [2, 8, 4]), ("scores", FLOAT, [2, 3, 8])
LIMITS = [("max_output_boxes_per_class", INT64, [1]), ("iou_threshold", FLOAT, [1]),
          ("score_threshold", FLOAT, [1])]


def compile_node(op, inputs, outputs, **attrs):
    """Compiles a one-node opset-11 model whose inputs are all graph inputs; `inputs` is
    [(name, element type, shape)], `outputs` [(name, element type, rank)]."""
    node = helper.make_node(op, [name for name, _, _ in inputs], [o[0] for o in outputs], **attrs)
    graph = helper.make_graph(
        [node], op, [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, [None] * rank) for n, t, rank in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    return kiln.build(kiln.frontend.from_onnx(model))


def compile_nms(inputs=(BOXES, SCORES, *LIMITS), **attrs):
    return compile_node("NonMaxSuppression", list(inputs), [("selected_indices", INT64, 2)],
                        **attrs)


def corners(box, center_point_box):
    """(y_min, x_min, y_max, x_max) of one box in either ONNX format, in float32."""
    box = box.astype(np.float32)
    if center_point_box:
        x, y, w, h = box
        half_w, half_h = w / np.float32(2), h / np.float32(2)
        return y - half_h, x - half_w, y + half_h, x + half_w
    y1, x1, y2, x2 = box
    return min(y1, y2), min(x1, x2), max(y1, y2), max(x1, x2)


def iou(a, b):
    """Intersection over union of two corner boxes; 0 when either has no area."""
    height = min(a[2], b[2]) - max(a[0], b[0])
    width = min(a[3], b[3]) - max(a[1], b[1])
    area_a = (a[2] - a[0]) * (a[3] - a[1])
    area_b = (b[2] - b[0]) * (b[3] - b[1])
    if height <= 0 or width <= 0 or area_a <= 0 or area_b <= 0:
        return np.float32(0)
    intersection = height * width
    return intersection / (area_a + area_b - intersection)


def nms_reference(boxes, scores, max_per_class=0, iou_threshold=0.0, score_threshold=None,
                  center_point_box=0):
    """ONNX NonMaxSuppression: per batch and class, greedily keep the best-scoring boxes that
    overlap no kept one by more than `iou_threshold`."""
    selected = []
    for b in range(boxes.shape[0]):
        box_corners = [corners(box, center_point_box) for box in boxes[b]]
        for c in range(scores.shape[1]):
            s = scores[b, c]
            order = sorted(range(len(s)), key=lambda i: (-s[i], i))
            if score_threshold is not None:
                order = [i for i in order if s[i] > np.float32(score_threshold)]
            kept = []
            for i in order:
                if len(kept) >= max_per_class:
                    break
                if all(iou(box_corners[i], box_corners[k]) <= np.float32(iou_threshold)
                       for k in kept):
                    kept.append(i)
                    selected.append((b, c, i))
    return np.array(selected, dtype=np.int64).reshape(-1, 3)


def limits(max_per_class, iou_threshold, score_threshold):
    return {"max_output_boxes_per_class": np.array([max_per_class], np.int64),
            "iou_threshold": np.array([iou_threshold], np.float32),
            "score_threshold": np.array([score_threshold], np.float32)}


def random_boxes(rng, center_point_box):
    """Boxes on a 10x10 field that overlap often; corner boxes with their corners in any order."""
    if center_point_box:
        return np.concatenate([rng.uniform(0, 10, (2, 8, 2)), rng.uniform(1, 5, (2, 8, 2))],
                              axis=2).astype(np.float32)
    return rng.uniform(0, 10, (2, 8, 4)).astype(np.float32)


@pytest.mark.parametrize("center_point_box", [0, 1])
def test_nms_selects_as_the_reference_in_both_box_formats(center_point_box):
    ex = compile_nms(center_point_box=center_point_box)
    rng = np.random.default_rng(center_point_box)
    boxes = random_boxes(rng, center_point_box)
    scores = rng.random((2, 3, 8)).astype(np.float32)
    scores[0, 1, 3] = scores[0, 1, 5]  # a tie goes to the lower box index
    for max_per_class, iou_threshold, score_threshold in [
            (3, 0.5, 0.2), (100, 0.0, 0.0), (2, 1.0, 0.5), (8, 0.3, -1.0)]:
        (selected,) = ex.run(boxes=boxes, scores=scores,
                             **limits(max_per_class, iou_threshold, score_threshold))
        np.testing.assert_array_equal(
            selected, nms_reference(boxes, scores, max_per_class, iou_threshold,
                                    score_threshold, center_point_box))


def test_nms_may_select_nothing():
    ex = compile_nms()
    rng = np.random.default_rng(2)
    boxes, scores = random_boxes(rng, 0), rng.random((2, 3, 8)).astype(np.float32)
    for no_box in [limits(0, 0.5, 0.0), limits(-4, 0.5, 0.0), limits(5, 0.5, 1.0)]:
        (selected,) = ex.run(boxes=boxes, scores=scores, **no_box)
        assert selected.shape == (0, 3) and selected.dtype == np.int64
    # Identical boxes: all but the best one of each class are suppressed.
    same = np.tile(np.array([0, 0, 1, 1], np.float32), (2, 8, 1))
    (selected,) = ex.run(boxes=same, scores=scores, **limits(8, 0.9, 0.0))
    np.testing.assert_array_equal(selected, nms_reference(same, scores, 8, 0.9, 0.0))
    assert len(selected) == 6


def test_nms_omitted_inputs_take_onnx_defaults():
    rng = np.random.default_rng(3)
    boxes, scores = random_boxes(rng, 0), rng.random((2, 3, 8)).astype(np.float32)
    scores[1, 2, 4] = -np.inf  # no score threshold, so even this box is a candidate
    # No max_output_boxes_per_class: no box is selected.
    (selected,) = compile_nms([BOXES, SCORES]).run(boxes=boxes, scores=scores)
    assert selected.shape == (0, 3)
    # No thresholds: every box is a candidate, and any overlap suppresses.
    ex = compile_nms([BOXES, SCORES, LIMITS[0]])
    (selected,) = ex.run(boxes=boxes, scores=scores,
                         max_output_boxes_per_class=np.array([8], np.int64))
    np.testing.assert_array_equal(selected, nms_reference(boxes, scores, 8))


def test_nms_with_a_number_of_boxes_known_at_run_time():
    ex = compile_nms([("boxes", FLOAT, [1, "n", 4]), ("scores", FLOAT, [1, 2, "n"]), *LIMITS])
    rng = np.random.default_rng(4)
    for n in (1, 5, 30):
        boxes = rng.uniform(0, 10, (1, n, 4)).astype(np.float32)
        scores = rng.random((1, 2, n)).astype(np.float32)
        (selected,) = ex.run(boxes=boxes, scores=scores, **limits(10, 0.4, 0.1))
        np.testing.assert_array_equal(selected, nms_reference(boxes, scores, 10, 0.4, 0.1))


def test_nms_errors_name_the_bad_input():
    ex = compile_nms()
    rng = np.random.default_rng(5)
    boxes, scores = random_boxes(rng, 0), rng.random((2, 3, 8)).astype(np.float32)
    with pytest.raises(ValueError, match=r"'iou_threshold' must lie in \[0, 1\], got 1.5"):
        ex.run(boxes=boxes, scores=scores, **limits(3, 1.5, 0.0))
    # A NaN score has no place in the order; a score threshold would drop it (NaN > t is false).
    scores[1, 0, 6] = np.nan
    without_thresholds = compile_nms([BOXES, SCORES, LIMITS[0]])
    with pytest.raises(ValueError, match="'scores' is NaN at batch 1, class 0, box 6"):
        without_thresholds.run(boxes=boxes, scores=scores,
                               max_output_boxes_per_class=np.array([3], np.int64))
    (selected,) = ex.run(boxes=boxes, scores=scores, **limits(3, 0.5, -np.inf))
    np.testing.assert_array_equal(selected, nms_reference(boxes, scores, 3, 0.5, -np.inf))


def unique_reference(x, axis, sorted_):
    """numpy.unique's four outputs, reordered by first occurrence unless `sorted_`."""
    values, indices, inverse, counts = np.unique(x, True, True, True, axis=axis)
    inverse = inverse.reshape(-1)
    if not sorted_:
        order = np.argsort(indices, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        values = np.take(x.reshape(-1) if axis is None else x, indices[order],
                         axis=0 if axis is None else axis)
        indices, inverse, counts = indices[order], rank[inverse], counts[order]
    return values, indices.astype(np.int64), inverse.astype(np.int64), counts.astype(np.int64)


UNIQUE_OUTPUTS = [("y", FLOAT, 1), ("indices", INT64, 1), ("inverse_indices", INT64, 1),
                  ("counts", INT64, 1)]


def expect_unique(ex, x, axis, sorted_):
    got = ex.run(x=x)
    for name, actual, expected in zip(["y", "indices", "inverse_indices", "counts"], got,
                                      unique_reference(x, axis, sorted_)):
        np.testing.assert_array_equal(actual, expected, err_msg=name)


@pytest.mark.parametrize("sorted_", [0, 1])
def test_unique_of_the_flattened_input(sorted_):
    ex = compile_node("Unique", [("x", FLOAT, [3, 4])], UNIQUE_OUTPUTS, sorted=sorted_)
    rng = np.random.default_rng(6)
    for x in (rng.integers(-3, 4, (3, 4)).astype(np.float32), np.full((3, 4), 2.5, np.float32),
              np.arange(12, 0, -1, dtype=np.float32).reshape(3, 4)):
        expect_unique(ex, x, None, sorted_)


@pytest.mark.parametrize("axis,sorted_", [(0, 1), (1, 1), (-1, 1), (1, 0)])
def test_unique_slices_along_an_axis(axis, sorted_):
    outputs = [("y", INT64, 3), *UNIQUE_OUTPUTS[1:]]
    ex = compile_node("Unique", [("x", INT64, [4, 5, 3])], outputs, axis=axis, sorted=sorted_)
    rng = np.random.default_rng(7)
    for _ in range(3):
        # Slices drawn from those of a random tensor, so that some repeat.
        x = rng.integers(0, 3, (4, 5, 3))
        extent = x.shape[axis]
        expect_unique(ex, np.take(x, rng.integers(0, extent, extent), axis=axis), axis, sorted_)
    expect_unique(ex, np.zeros((4, 5, 3), np.int64), axis, sorted_)


def test_unique_of_a_length_known_at_run_time():
    ex = compile_node("Unique", [("x", FLOAT, ["n"])], UNIQUE_OUTPUTS, sorted=0)
    rng = np.random.default_rng(8)
    for n in (1, 7, 100):
        expect_unique(ex, rng.integers(0, 10, n).astype(np.float32), None, 0)


def test_only_the_unique_values_may_be_asked_for():
    ex = compile_node("Unique", [("x", FLOAT, [6])], [("y", FLOAT, 1)])
    x = np.array([2.0, 1.0, 1.0, 3.0, 4.0, 3.0], np.float32)
    (y,) = ex.run(x=x)
    np.testing.assert_array_equal(y, np.array([1.0, 2.0, 3.0, 4.0], np.float32))


def test_empty_inputs_give_empty_results():
    ex = compile_nms([("boxes", FLOAT, [1, 0, 4]), ("scores", FLOAT, [1, 2, 0]), *LIMITS])
    (selected,) = ex.run(boxes=np.zeros((1, 0, 4), np.float32),
                         scores=np.zeros((1, 2, 0), np.float32), **limits(3, 0.5, 0.0))
    assert selected.shape == (0, 3)
    unique = compile_node("Unique", [("x", FLOAT, [0])], UNIQUE_OUTPUTS)
    expect_unique(unique, np.zeros(0, np.float32), None, 1)

// non_max_suppression_count and non_max_suppression (ONNX NonMaxSuppression): both run the same
// selection, the first to count the selected boxes (the size of the second's output), the second
// to write them. The selection follows ONNX's reference: per batch and class, the boxes whose
// score exceeds score_threshold (all boxes when it is absent) in descending score order (ties
// to the lower box index); each is kept unless its IoU with a box kept before it exceeds
// iou_threshold, until max_output_boxes_per_class are kept. Arithmetic is in float32, as ONNX's.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "kernel_util.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

/// A box as its extents along the two axes, whichever format it came in.
struct Corners {
  float x_min;
  float x_max;
  float y_min;
  float y_max;

  float Area() const { return (x_max - x_min) * (y_max - y_min); }
};

/// `box` as [y1, x1, y2, x2] (any two diagonal corners) or, with center_point_box, as
/// [x_center, y_center, width, height].
Corners ToCorners(const float* box, bool center_point_box) {
  if (center_point_box) {
    const float half_width = box[2] / 2;
    const float half_height = box[3] / 2;
    return {box[0] - half_width, box[0] + half_width, box[1] - half_height, box[1] + half_height};
  }
  return {std::min(box[1], box[3]), std::max(box[1], box[3]), std::min(box[0], box[2]),
          std::max(box[0], box[2])};
}

/// The boxes kept so far, field by field, so that a candidate is compared with many at once.
class KeptBoxes {
 public:
  void Clear() {
    for (std::vector<float>* field : {&x_min_, &x_max_, &y_min_, &y_max_, &area_}) field->clear();
  }
  void Add(const Corners& box) {
    x_min_.push_back(box.x_min);
    x_max_.push_back(box.x_max);
    y_min_.push_back(box.y_min);
    y_max_.push_back(box.y_max);
    area_.push_back(box.Area());
  }
  int64_t size() const { return static_cast<int64_t>(area_.size()); }

  /// Whether `box` overlaps one of them by more than `iou_threshold`; boxes without area never
  /// do. The scan goes by blocks, each compared branch-free so that it vectorizes, and stops at
  /// the first block holding an overlap.
  bool AnyOverlaps(const Corners& box, float iou_threshold) const {
    constexpr int64_t kBlock = 64;
    if (!(box.Area() > 0)) return false;
    for (int64_t begin = 0; begin < size(); begin += kBlock) {
      const int64_t count = std::min(size() - begin, kBlock);
      if (BlockOverlaps(box, iou_threshold, x_min_.data() + begin, x_max_.data() + begin,
                        y_min_.data() + begin, y_max_.data() + begin, area_.data() + begin,
                        count)) {
        return true;
      }
    }
    return false;
  }

 private:
  KILN_CPU_CLONES static bool BlockOverlaps(const Corners& box, float iou_threshold,
                                            const float* __restrict__ x_min,
                                            const float* __restrict__ x_max,
                                            const float* __restrict__ y_min,
                                            const float* __restrict__ y_max,
                                            const float* __restrict__ area, int64_t count) {
    const float box_area = box.Area();
    int any = 0;
    for (int64_t k = 0; k < count; ++k) {
      const float width = std::min(box.x_max, x_max[k]) - std::max(box.x_min, x_min[k]);
      const float height = std::min(box.y_max, y_max[k]) - std::max(box.y_min, y_min[k]);
      const float intersection = width * height;
      const float union_area = box_area + area[k] - intersection;
      const bool overlaps = width > 0 && height > 0 && intersection > 0 && area[k] > 0 &&
                            union_area > 0 && intersection / union_area > iou_threshold;
      any |= overlaps ? 1 : 0;
    }
    return any != 0;
  }

  std::vector<float> x_min_, x_max_, y_min_, y_max_, area_;
};

/// The one value of scalar input `index`, or nullopt when it has no elements (the ONNX node
/// omits it).
template <typename T>
std::optional<T> OptionalScalar(const KernelCall& call, size_t index, const char* name) {
  const Tensor tensor = call.input(index);
  const int64_t elements = NumElements(tensor.dl_tensor());
  KILN_CHECK(elements <= 1, ValueError)
      << call.Prefix() << "'" << name << "' must hold one value, got " << elements;
  if (elements == 0) return std::nullopt;
  return *Data<const T>(tensor);
}

/// The checked inputs of one call.
struct Problem {
  const float* boxes = nullptr;
  const float* scores = nullptr;
  int64_t batches = 0;
  int64_t classes = 0;
  int64_t boxes_per_batch = 0;
  int64_t max_per_class = 0;
  float iou_threshold = 0;
  std::optional<float> score_threshold;
  bool center_point_box = false;
};

Problem ReadProblem(const KernelCall& call) {
  const Tensor boxes = call.input(0);
  const Tensor scores = call.input(1);
  const std::vector<int64_t> box_shape = ShapeOf(boxes);
  const std::vector<int64_t> score_shape = ShapeOf(scores);
  // The type relation checks these (extents known only at run time by a deferred check); the
  // selection would read past the data if they did not hold.
  KILN_CHECK(box_shape.size() == 3 && box_shape[2] == 4 && score_shape.size() == 3 &&
                 score_shape[0] == box_shape[0] && score_shape[2] == box_shape[1],
             ValueError)
      << call.Prefix()
      << "'boxes' (batches, boxes, 4) and 'scores' (batches, classes, boxes) do not match";
  Problem problem;
  problem.boxes = Data<const float>(boxes);
  problem.scores = Data<const float>(scores);
  problem.batches = box_shape[0];
  problem.classes = score_shape[1];
  problem.boxes_per_batch = box_shape[1];
  // ONNX's reference selects no box for a negative maximum, as for an absent one.
  problem.max_per_class = std::max<int64_t>(
      OptionalScalar<int64_t>(call, 2, "max_output_boxes_per_class").value_or(0), 0);
  problem.iou_threshold = OptionalScalar<float>(call, 3, "iou_threshold").value_or(0.0F);
  KILN_CHECK(problem.iou_threshold >= 0 && problem.iou_threshold <= 1, ValueError)
      << call.Prefix() << "'iou_threshold' must lie in [0, 1], got " << problem.iou_threshold;
  problem.score_threshold = OptionalScalar<float>(call, 4, "score_threshold");
  problem.center_point_box = call.Int("center_point_box") == 1;
  return problem;
}

/// Calls select(batch, class, box) for each selected box, by batch, then class, then
/// descending score.
template <typename Select>
void SelectBoxes(const KernelCall& call, const Select& select) {
  const Problem p = ReadProblem(call);
  std::vector<Corners> corners(p.boxes_per_batch);
  std::vector<int64_t> candidates;
  KeptBoxes kept;
  for (int64_t batch = 0; batch < p.batches; ++batch) {
    for (int64_t box = 0; box < p.boxes_per_batch; ++box) {
      corners[box] = ToCorners(p.boxes + (batch * p.boxes_per_batch + box) * 4, p.center_point_box);
    }
    for (int64_t cls = 0; cls < p.classes; ++cls) {
      const float* scores = p.scores + (batch * p.classes + cls) * p.boxes_per_batch;
      candidates.clear();
      for (int64_t box = 0; box < p.boxes_per_batch; ++box) {
        if (p.score_threshold && !(scores[box] > *p.score_threshold)) continue;
        // NaN has no place in the score order (and would break the sort).
        KILN_CHECK(!std::isnan(scores[box]), ValueError)
            << call.Prefix() << "'scores' is NaN at batch " << batch << ", class " << cls
            << ", box " << box;
        candidates.push_back(box);
      }
      std::sort(candidates.begin(), candidates.end(), [&](int64_t a, int64_t b) {
        return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
      });
      kept.Clear();
      for (int64_t box : candidates) {
        if (kept.size() >= p.max_per_class) break;
        if (kept.AnyOverlaps(corners[box], p.iou_threshold)) continue;
        kept.Add(corners[box]);
        select(batch, cls, box);
      }
    }
  }
}

void NonMaxSuppressionCount(const KernelCall& call) {
  int64_t count = 0;
  SelectBoxes(call, [&](int64_t, int64_t, int64_t) { ++count; });
  *Data<int64_t>(call.output(0)) = count;
}
KILN_CPU_KERNEL("non_max_suppression_count", NonMaxSuppressionCount);

/// Row j of the (count, 3) output is the j-th selected (batch, class, box).
void NonMaxSuppression(const KernelCall& call) {
  const Tensor out = call.output(0);
  const int64_t count = out.shape(0);
  auto* rows = Data<int64_t>(out);
  int64_t found = 0;
  SelectBoxes(call, [&](int64_t batch, int64_t cls, int64_t box) {
    KILN_CHECK(found < count, ValueError)
        << call.Prefix() << "the output holds " << count << " boxes, more are selected";
    rows[found * 3] = batch;
    rows[found * 3 + 1] = cls;
    rows[found * 3 + 2] = box;
    ++found;
  });
  KILN_CHECK(found == count, ValueError)
      << call.Prefix() << "the output holds " << count << " boxes, " << found << " are selected";
}
KILN_CPU_KERNEL("non_max_suppression", NonMaxSuppression);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln

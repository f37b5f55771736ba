// nn.lstm, nn.gru and nn.rnn (float32), as ONNX defines them (src/ops/nn/recurrent.cc has the
// layouts). Per lane (a direction's run of batch entries that one thread takes through every
// step alone), the input projections are one GEMM per chunk of steps, the bias in its epilogue;
// then each step is one GEMM of the hidden state by the recurrence weights and an elementwise
// pass over the gates. Batch entries with a
// shorter sequence_lens stop early (a reverse direction starts at their own last step), and
// their outputs past it are zero, as ONNX's.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <kiln/runtime/fast_math.h>
#include <kiln/runtime/thread_pool.h>

#include "gemm.h"
#include "kernel_util.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

/// One of ONNX's recurrent activation functions with its alpha and beta.
struct Activation {
  enum class Kind {
    kSigmoid,
    kTanh,
    kRelu,
    kAffine,
    kLeakyRelu,
    kThresholdedRelu,
    kScaledTanh,
    kHardSigmoid,
    kElu,
    kSoftsign,
    kSoftplus
  };
  Kind kind;
  float alpha = 0.F;
  float beta = 0.F;

  float operator()(float x) const {
    switch (kind) {
      case Kind::kSigmoid: return 1.F / (1.F + std::exp(-x));
      case Kind::kTanh: return std::tanh(x);
      case Kind::kRelu: return std::max(x, 0.F);
      case Kind::kAffine: return alpha * x + beta;
      case Kind::kLeakyRelu: return x >= 0.F ? x : alpha * x;
      case Kind::kThresholdedRelu: return x > alpha ? x : 0.F;
      case Kind::kScaledTanh: return alpha * std::tanh(beta * x);
      case Kind::kHardSigmoid: return std::clamp(alpha * x + beta, 0.F, 1.F);
      case Kind::kElu: return x >= 0.F ? x : alpha * (std::exp(x) - 1.F);
      case Kind::kSoftsign: return x / (1.F + std::fabs(x));
      case Kind::kSoftplus: return std::log1p(std::exp(x));
    }
    return x;
  }
};

/// v[j] = activation(clamp(v[j], -clip, clip)) for j in [0, n). One loop per function, so the
/// common ones (Sigmoid and Tanh, through kiln/runtime/fast_math.h) vectorize.
KILN_CPU_CLONES void Activate(const Activation& activation, float clip, float* __restrict__ v,
                              int64_t n) {
  switch (activation.kind) {
    case Activation::Kind::kSigmoid:
      for (int64_t j = 0; j < n; ++j) {
        v[j] = 1.F / (1.F + kiln_fast_expf(-std::clamp(v[j], -clip, clip)));
      }
      return;
    case Activation::Kind::kTanh:
      for (int64_t j = 0; j < n; ++j) v[j] = kiln_fast_tanhf(std::clamp(v[j], -clip, clip));
      return;
    default:
      for (int64_t j = 0; j < n; ++j) v[j] = activation(std::clamp(v[j], -clip, clip));
  }
}

/// The activations of every direction: `per_direction` functions each, from the comma-separated
/// `activations` attribute or the op's defaults; each parametric one takes the next alpha (and
/// beta) in order, or ONNX's default for it.
std::vector<Activation> ReadActivations(const KernelCall& call,
                                        const std::vector<std::string>& defaults,
                                        int64_t directions) {
  std::vector<std::string> names;
  std::stringstream text(call.Str("activations"));
  for (std::string name; std::getline(text, name, ',');) names.push_back(name);
  if (names.empty()) {
    for (int64_t d = 0; d < directions; ++d)
      names.insert(names.end(), defaults.begin(), defaults.end());
  }
  KILN_CHECK(names.size() == defaults.size() * static_cast<size_t>(directions), ValueError)
      << call.Prefix() << "activations lists " << names.size() << " functions; " << defaults.size()
      << " per direction are needed for " << directions << " direction(s)";
  const std::vector<double> alphas = call.Floats("activation_alpha");
  const std::vector<double> betas = call.Floats("activation_beta");
  size_t next_alpha = 0;
  size_t next_beta = 0;
  auto take = [](const std::vector<double>& values, size_t* next, double fallback) {
    return static_cast<float>(*next < values.size() ? values[(*next)++] : fallback);
  };
  struct Defaults {
    const char* name;
    Activation::Kind kind;
    double alpha;  // NaN: takes none
    double beta;
  };
  using K = Activation::Kind;
  static const Defaults kKnown[] = {{"Sigmoid", K::kSigmoid, NAN, NAN},
                                    {"Tanh", K::kTanh, NAN, NAN},
                                    {"Relu", K::kRelu, NAN, NAN},
                                    {"Affine", K::kAffine, 1.0, 0.0},
                                    {"LeakyRelu", K::kLeakyRelu, 0.01, NAN},
                                    {"ThresholdedRelu", K::kThresholdedRelu, 1.0, NAN},
                                    {"ScaledTanh", K::kScaledTanh, 1.0, 1.0},
                                    {"HardSigmoid", K::kHardSigmoid, 0.2, 0.5},
                                    {"Elu", K::kElu, 1.0, NAN},
                                    {"Softsign", K::kSoftsign, NAN, NAN},
                                    {"Softplus", K::kSoftplus, NAN, NAN}};
  std::vector<Activation> result;
  for (const std::string& name : names) {
    const auto* known = std::find_if(std::begin(kKnown), std::end(kKnown),
                                     [&](const Defaults& d) { return name == d.name; });
    KILN_CHECK(known != std::end(kKnown), ValueError)
        << call.Prefix() << "unknown activation '" << name
        << "' (ONNX's: Sigmoid, Tanh, Relu, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, "
           "HardSigmoid, Elu, Softsign, Softplus)";
    Activation activation{known->kind};
    if (!std::isnan(known->alpha)) activation.alpha = take(alphas, &next_alpha, known->alpha);
    if (!std::isnan(known->beta)) activation.beta = take(betas, &next_beta, known->beta);
    result.push_back(activation);
  }
  return result;
}

/// What all three ops share: shapes, optional inputs, and where each row lives.
struct Sequence {
  int64_t seq, batch, input, hidden, directions, gates, layout;
  std::vector<int64_t> lengths;  // per batch entry
  float clip;

  Sequence(const KernelCall& call, int64_t gate_count)
      : gates(gate_count), layout(call.Int("layout")) {
    for (size_t i = 0; i < call.num_inputs(); ++i) {
      const DLDataType dtype = call.input(i).dtype();
      if (i != 4 && Present(call, i) && DTypeBit(dtype) != kF32) call.UnsupportedDType(dtype);
    }
    const Tensor data = call.input(0);
    seq = data.shape(layout == 0 ? 0 : 1);
    batch = data.shape(layout == 0 ? 1 : 0);
    input = data.shape(2);
    hidden = call.Int("hidden_size");
    directions = call.input(1).shape(0);
    const double limit = call.Float("clip");
    clip = limit > 0 ? static_cast<float>(limit) : INFINITY;
    lengths.assign(static_cast<size_t>(batch), seq);
    if (Present(call, 4)) {
      const Tensor lens = call.input(4);
      KILN_CHECK(lens.dtype().code == kDLInt && lens.dtype().bits == 32, TypeError)
          << call.Prefix() << "sequence_lens must be int32";
      const auto* values = Data<const int32_t>(lens);
      for (int64_t b = 0; b < batch; ++b) {
        KILN_CHECK(values[b] >= 0 && values[b] <= seq, ValueError)
            << call.Prefix() << "sequence_lens[" << b << "] = " << values[b] << " lies outside [0, "
            << seq << "], the sequence's length";
        lengths[static_cast<size_t>(b)] = values[b];
      }
    }
  }

  static bool Present(const KernelCall& call, size_t i) {
    return i < call.num_inputs() && !(call.input(i).ndim() == 1 && call.input(i).shape(0) == 0);
  }
  /// Row of data (and of the projection) holding step t of batch entry b.
  int64_t Row(int64_t t, int64_t b) const { return layout == 0 ? t * batch + b : b * seq + t; }
  /// Offset of Y[t, d, b, :] (layout 0) or Y[b, t, d, :] (layout 1).
  int64_t YOffset(int64_t t, int64_t d, int64_t b) const {
    return (layout == 0 ? (t * directions + d) * batch + b : (b * seq + t) * directions + d) *
           hidden;
  }
  /// Offset of a state's [d, b, :] (layout 0) or [b, d, :] (layout 1).
  int64_t StateOffset(int64_t d, int64_t b) const {
    return (layout == 0 ? d * batch + b : b * directions + d) * hidden;
  }
  /// The step batch entry b is at after `s` steps (of a reverse direction when `reverse`), or
  /// -1 when it is done.
  int64_t Step(int64_t s, int64_t b, bool reverse) const {
    const int64_t length = lengths[static_cast<size_t>(b)];
    if (s >= length) return -1;
    return reverse ? length - 1 - s : s;
  }
};

/// A direction and the batch entries [first, first + count) that one thread takes through every
/// step alone. Entries and directions never read each other's state, so lanes run in parallel
/// with no synchronization between steps; within a lane, a step's product can still use the
/// pool (when there is only one lane).
struct Lane {
  int64_t direction, first, count;
};

/// Each direction's entries split into lanes: one per thread where each keeps at least
/// kMinLaneEntries entries (a GEMM of fewer rows leaves its tiles' rows empty, and
/// matrix-vector products are better split by rows, inside a step); one lane per direction
/// otherwise (design §36: at batch 8 on 2 threads, two lanes of 4 beat one lane of 8 split
/// inside each step).
std::vector<Lane> PlanLanes(const Sequence& sq) {
  constexpr int64_t kMinLaneEntries = 4;
  const int64_t threads = runtime::NumThreads();
  const int64_t per_direction =
      std::max<int64_t>(1, std::min(threads / sq.directions, sq.batch / kMinLaneEntries));
  std::vector<Lane> lanes;
  for (int64_t d = 0; d < sq.directions; ++d) {
    for (int64_t g = 0; g < per_direction; ++g) {
      const int64_t first = sq.batch * g / per_direction;
      lanes.push_back({d, first, sq.batch * (g + 1) / per_direction - first});
    }
  }
  return lanes;
}

/// Runs body(lane) for every lane: each on one thread when there are several, so that whatever
/// they call runs serially; a single lane on the calling thread, so that its products use the
/// pool.
void ForEachLane(const std::vector<Lane>& lanes, const std::function<void(const Lane&)>& body) {
  if (lanes.size() == 1) {
    body(lanes.front());
    return;
  }
  runtime::ParallelFor(0, static_cast<int64_t>(lanes.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) body(lanes[static_cast<size_t>(i)]);
  });
}

/// The state tensor `index` of the lane's entries (count x hidden), from the input or zeros.
std::vector<float> InitialState(const KernelCall& call, size_t index, const Sequence& sq,
                                const Lane& lane) {
  std::vector<float> state(static_cast<size_t>(lane.count * sq.hidden), 0.F);
  if (!Sequence::Present(call, index)) return state;
  const auto* given = Data<const float>(call.input(index));
  for (int64_t i = 0; i < lane.count; ++i) {
    std::copy_n(given + sq.StateOffset(lane.direction, lane.first + i), sq.hidden,
                state.data() + i * sq.hidden);
  }
  return state;
}

/// Gates [first, first + count) of a direction's rows of W or R (gates * hidden rows): what one
/// GEMM multiplies by.
struct GateRange {
  int64_t first, count;
};

/// The ranges of R each op's steps multiply by: every gate at once, but GRU's update and reset
/// gates apart from its hidden gate, whose product reads the reset state. W is one range.
const std::vector<GateRange> kLstmRecurrence = {{0, 4}};
const std::vector<GateRange> kGruRecurrence = {{0, 2}, {2, 1}};
const std::vector<GateRange> kRnnRecurrence = {{0, 1}};

/// The floats PrepackWeights takes per direction for weights of k columns.
int64_t PackedDirectionSize(int64_t k, int64_t hidden, const std::vector<GateRange>& ranges) {
  int64_t size = 0;
  for (const GateRange& range : ranges) size += PackedGemmBSize(k, range.count * hidden);
  return size;
}

/// Where range `which` of direction d starts in weights packed by PrepackWeights.
int64_t PackedRangeOffset(int64_t k, int64_t hidden, const std::vector<GateRange>& ranges,
                          int64_t d, size_t which) {
  int64_t offset = d * PackedDirectionSize(k, hidden, ranges);
  for (size_t i = 0; i < which; ++i) offset += PackedGemmBSize(k, ranges[i].count * hidden);
  return offset;
}

/// Range `which` of direction d in `packed` (call.Prepacked), or nullptr when that is.
const float* PackedRange(const float* packed, int64_t k, int64_t hidden,
                         const std::vector<GateRange>& ranges, int64_t d, size_t which) {
  return packed == nullptr ? nullptr : packed + PackedRangeOffset(k, hidden, ranges, d, which);
}

/// A constant W (input 1) or R (input 2) of an op with `gates` gates, packed for the GEMM once
/// when its program loads: per direction, W's one range or R's `recurrence` ranges, one after
/// another. Otherwise each call packs them again (a megabyte for an LSTM of hidden 256, as much
/// as 16 of its steps read).
std::optional<Tensor> PrepackWeights(size_t index, const Tensor& weight, const KernelCall& call,
                                     int64_t gates, const std::vector<GateRange>& recurrence) {
  const int64_t hidden = call.Int("hidden_size");
  if ((index != 1 && index != 2) || weight.dtype().code != kDLFloat || weight.dtype().bits != 32 ||
      weight.ndim() != 3 || hidden <= 0 || weight.shape(1) != gates * hidden) {
    return std::nullopt;
  }
  const std::vector<GateRange> ranges =
      index == 1 ? std::vector<GateRange>{{0, gates}} : recurrence;
  const int64_t k = weight.shape(2);
  Tensor packed = NewPackedTensor(weight.shape(0) * PackedDirectionSize(k, hidden, ranges));
  for (int64_t d = 0; d < weight.shape(0); ++d) {
    for (size_t i = 0; i < ranges.size(); ++i) {
      const float* rows = Data<const float>(weight) + (d * gates + ranges[i].first) * hidden * k;
      PackGemmB(k, ranges[i].count * hidden, MatrixView{rows, 1, k},
                Data<float>(packed) + PackedRangeOffset(k, hidden, ranges, d, i));
    }
  }
  return packed;
}

/// Wb[d] (+ Rb[d] for the gates `with_rb` marks), per gate: the bias an input projection adds
/// (gates * hidden floats), or empty when the op has no B.
std::vector<float> InputBias(const KernelCall& call, const Sequence& sq, int64_t d,
                             const std::vector<bool>& with_rb) {
  if (!Sequence::Present(call, 3)) return {};
  const int64_t width = sq.gates * sq.hidden;
  const float* bias = Data<const float>(call.input(3)) + d * 2 * width;
  std::vector<float> total(bias, bias + width);
  for (int64_t g = 0; g < sq.gates; ++g) {
    if (!with_rb[static_cast<size_t>(g)]) continue;
    for (int64_t j = 0; j < sq.hidden; ++j)
      total[g * sq.hidden + j] += bias[width + g * sq.hidden + j];
  }
  return total;
}

/// Hidden units [first, first + count) of a direction: all of them, or the share of one thread
/// of a lane split by units (UnitBlocks).
struct Units {
  int64_t first, count;
};

/// A lane's input projections, data * W[d]^T plus InputBias, for hidden units `units` of each
/// gate (one after another, `units.count` floats a gate), computed a chunk of steps ahead: each
/// chunk one GEMM of about kChunkRows rows (the lane's entries at each of its next steps), or one
/// per gate for some of the units. A chunk stays in cache until its steps read it, where the
/// whole sequence's projection (8 MB for an LSTM of hidden 256 over 256 steps at batch 8) went
/// out to memory and back, and is the only activation memory the projections take.
class LaneInputs {
 public:
  LaneInputs(const KernelCall& call, const Sequence& sq, const Lane& lane, bool reverse,
             const std::vector<bool>& with_rb, Units units)
      : sq_(sq),
        lane_(lane),
        reverse_(reverse),
        units_(units),
        width_(sq.gates * units.count),
        steps_per_chunk_(std::max<int64_t>(1, CeilDiv(kChunkRows, lane.count))),
        bias_(InputBias(call, sq, lane.direction, with_rb)),
        data_(Data<const float>(call.input(0))),
        w_(Data<const float>(call.input(1)) + lane.direction * sq.gates * sq.hidden * sq.input),
        packed_w_(units.count == sq.hidden ? PackedRange(call.Prepacked(1), sq.input, sq.hidden,
                                                         {{0, sq.gates}}, lane.direction, 0)
                                           : nullptr),
        rows_(static_cast<size_t>(steps_per_chunk_ * lane.count * sq.input)),
        projected_(NewPackedTensor(steps_per_chunk_ * lane.count * width_)) {}

  /// The projection (gates * units.count floats) of the lane's entry i at step s, which runs
  /// (sq.Step >= 0); steps are asked for in order.
  const float* Row(int64_t s, int64_t i) {
    if (s < first_step_ || s >= first_step_ + chunk_steps_) Project(s);
    return Data<const float>(projected_) + ((s - first_step_) * lane_.count + i) * width_;
  }

 private:
  static constexpr int64_t kChunkRows = 64;

  /// The chunk of steps from `first`: each running entry's row of data gathered (zeros for one
  /// that is done), then the GEMMs with the bias in their epilogue.
  void Project(int64_t first) {
    first_step_ = first;
    chunk_steps_ = std::min(steps_per_chunk_, sq_.seq - first);
    const int64_t rows = chunk_steps_ * lane_.count;
    for (int64_t s = 0; s < chunk_steps_; ++s) {
      for (int64_t i = 0; i < lane_.count; ++i) {
        const int64_t b = lane_.first + i;
        const int64_t t = sq_.Step(first + s, b, reverse_);
        float* row = rows_.data() + (s * lane_.count + i) * sq_.input;
        if (t < 0) {
          std::fill_n(row, sq_.input, 0.F);
        } else {
          std::copy_n(data_ + sq_.Row(t, b) * sq_.input, sq_.input, row);
        }
      }
    }
    // All units: the gates are contiguous rows of W, one GEMM. Some: a GEMM per gate.
    const bool all_units = units_.count == sq_.hidden;
    for (int64_t g = 0; g < (all_units ? 1 : sq_.gates); ++g) {
      const int64_t unit0 = g * sq_.hidden + units_.first;  // first row of W, column of bias
      GemmEpilogue epilogue;
      epilogue.col_bias = bias_.empty() ? nullptr : bias_.data() + unit0;
      Gemm(rows, all_units ? width_ : units_.count, sq_.input,
           GemmOperand(MatrixView{rows_.data(), sq_.input, 1}),
           GemmOperand(MatrixView{w_ + unit0 * sq_.input, 1, sq_.input}, packed_w_),
           Data<float>(projected_) + g * units_.count, width_, epilogue);
    }
  }

  const Sequence& sq_;
  const Lane lane_;
  const bool reverse_;
  const Units units_;
  const int64_t width_;
  const int64_t steps_per_chunk_;
  const std::vector<float> bias_;
  const float* data_;
  const float* w_;           ///< W[d] (gates * hidden rows of `input`)
  const float* packed_w_;    ///< W[d] packed when the program loaded, for all units only
  std::vector<float> rows_;  ///< a chunk's rows of data
  Tensor projected_;         ///< a chunk's projections
  int64_t first_step_ = 0;
  int64_t chunk_steps_ = 0;  ///< steps from first_step_ projected (none before the first call)
};

/// out[b * ldo + j] = dot(w + j * k, h + b * k) for j in [0, rows) and b in [0, batch): four
/// weight rows at a time, read once for every entry while they are in cache, each dot product in
/// 16 lanes so that it vectorizes (a float sum may not be reordered otherwise). The four rows'
/// sums are independent, so no addition waits on the one before it.
KILN_CPU_CLONES void RowDots(const float* __restrict__ w, const float* __restrict__ h,
                             int64_t batch, int64_t rows, int64_t k, float* __restrict__ out,
                             int64_t ldo) {
  constexpr int64_t kLanes = 16;
  for (int64_t j = 0; j < rows; j += 4) {
    // A last group of fewer rows reads its last row again in their place, and drops those sums.
    const int64_t count = std::min<int64_t>(4, rows - j);
    const float* __restrict__ w0 = w + j * k;
    const float* __restrict__ w1 = w + (j + std::min<int64_t>(1, count - 1)) * k;
    const float* __restrict__ w2 = w + (j + std::min<int64_t>(2, count - 1)) * k;
    const float* __restrict__ w3 = w + (j + count - 1) * k;
    for (int64_t b = 0; b < batch; ++b) {
      const float* __restrict__ x = h + b * k;
      float lanes[4][kLanes] = {};
      int64_t i = 0;
      for (; i + kLanes <= k; i += kLanes) {
        for (int64_t l = 0; l < kLanes; ++l) {
          lanes[0][l] += w0[i + l] * x[i + l];
          lanes[1][l] += w1[i + l] * x[i + l];
          lanes[2][l] += w2[i + l] * x[i + l];
          lanes[3][l] += w3[i + l] * x[i + l];
        }
      }
      // The lanes summed pairwise, halves at a time: a chain of 16 scalar additions per row
      // would take longer than the row's multiply-adds.
      for (int64_t half = kLanes / 2; half > 0; half /= 2) {
        for (auto& row_lanes : lanes) {
          for (int64_t l = 0; l < half; ++l) row_lanes[l] += row_lanes[l + half];
        }
      }
      const float* __restrict__ row[4] = {w0, w1, w2, w3};
      for (int64_t r = 0; r < count; ++r) {
        float sum = lanes[r][0];
        for (int64_t tail = i; tail < k; ++tail) sum += row[r][tail] * x[tail];
        out[b * ldo + j + r] = sum;
      }
    }
  }
}

/// Up to this many entries, a lane multiplies its state by the recurrence weights with
/// matrix-vector products (RowDots) rather than the GEMM.
constexpr int64_t kMatrixVectorBatch = 2;

/// Gates `range` of direction d's recurrence weights, as the GEMM's B: prepacked when the program
/// loaded, or packed once per call when a lane has more than kMatrixVectorBatch entries
/// (`max_rows`). Every step multiplies the state by them. A lane of one or two entries takes
/// matrix-vector products instead, reading the weights' rows as they lie: the GEMM's tiles would
/// compute mostly padding (measured on one LSTM layer, hidden 256, 64 steps: the products are
/// faster at batch 1 and 2, the GEMM from batch 4).
class Recurrence {
 public:
  Recurrence(const KernelCall& call, const Sequence& sq, int64_t d,
             const std::vector<GateRange>& ranges, size_t which, int64_t max_rows)
      : hidden_(sq.hidden),
        count_(ranges[which].count * sq.hidden),
        view_{Data<const float>(call.input(2)) +
                  (d * sq.gates + ranges[which].first) * sq.hidden * sq.hidden,
              1, sq.hidden},
        packed_(PackedRange(call.Prepacked(2), sq.hidden, sq.hidden, ranges, d, which)) {
    if (packed_ == nullptr && max_rows > kMatrixVectorBatch) {
      own_packed_ = NewPackedTensor(PackedGemmBSize(sq.hidden, count_));
      PackGemmB(sq.hidden, count_, view_, Data<float>(own_packed_));
      packed_ = Data<const float>(own_packed_);
    }
  }

  /// out (rows x count) = h (rows x hidden) * R^T.
  void Apply(const float* h, int64_t rows, float* out) const {
    if (rows > kMatrixVectorBatch) {
      Gemm(rows, count_, hidden_, GemmOperand(MatrixView{h, hidden_, 1}),
           GemmOperand(view_, packed_), out, count_);
      return;
    }
    // Chunks of about 32K multiply-adds, so a small layer does not pay for the thread pool.
    const int64_t grain =
        std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(hidden_ * rows, 1));
    runtime::ParallelFor(0, count_, grain, [&](int64_t begin, int64_t end) {
      RowDots(view_.data + begin * hidden_, h, rows, end - begin, hidden_, out + begin, count_);
    });
  }

 private:
  int64_t hidden_, count_;
  MatrixView view_;  ///< the weights (count x hidden, row-major) as the GEMM's B^T
  const float* packed_;
  Tensor own_packed_;
};

/// Each direction's recurrence by gates `ranges[which]`, for lanes of up to `lanes`' largest size.
std::vector<Recurrence> Recurrences(const KernelCall& call, const Sequence& sq,
                                    const std::vector<Lane>& lanes,
                                    const std::vector<GateRange>& ranges, size_t which) {
  int64_t max_rows = 0;
  for (const Lane& lane : lanes) max_rows = std::max(max_rows, lane.count);
  std::vector<Recurrence> result;
  for (int64_t d = 0; d < sq.directions; ++d) {
    result.emplace_back(call, sq, d, ranges, which, max_rows);
  }
  return result;
}

/// Calls body(i, b, t, x) for each entry of `lane` still running after `s` steps of its
/// direction (`reverse` or not): i is its row in the lane's state, b its batch index, t its step
/// and x its input projection (`inputs`).
template <typename Body>
void ForEachRunning(const Sequence& sq, const Lane& lane, int64_t s, bool reverse,
                    LaneInputs& inputs, const Body& body) {
  for (int64_t i = 0; i < lane.count; ++i) {
    const int64_t b = lane.first + i;
    const int64_t t = sq.Step(s, b, reverse);
    if (t >= 0) body(i, b, t, inputs.Row(s, i));
  }
}

/// Y (zeroed first when an entry is shorter than the sequence, so its later steps stay 0) and
/// the final states an op writes.
struct Outputs {
  float* y;
  std::vector<float*> finals;
};

Outputs StartOutputs(const KernelCall& call, const Sequence& sq, size_t states) {
  Outputs out{Data<float>(call.output(0)), {}};
  // Every step of every entry is written when all run the whole sequence.
  const bool all_full = std::all_of(sq.lengths.begin(), sq.lengths.end(),
                                    [&sq](int64_t length) { return length == sq.seq; });
  if (!all_full) std::fill_n(out.y, call.output(0).NumElements(), 0.F);
  for (size_t s = 0; s < states; ++s) {
    if (s + 1 < call.num_outputs()) out.finals.push_back(Data<float>(call.output(s + 1)));
  }
  return out;
}

void WriteStep(const Sequence& sq, const Outputs& out, int64_t t, int64_t d, int64_t b,
               const float* h) {
  std::copy_n(h, sq.hidden, out.y + sq.YOffset(t, d, b));
}

void WriteFinal(const Sequence& sq, const Outputs& out, size_t which, const Lane& lane,
                const std::vector<float>& state) {
  if (which >= out.finals.size()) return;
  for (int64_t i = 0; i < lane.count; ++i) {
    std::copy_n(state.data() + i * sq.hidden, sq.hidden,
                out.finals[which] + sq.StateOffset(lane.direction, lane.first + i));
  }
}

bool IsReverse(const KernelCall& call, int64_t d) {
  const std::string direction = call.Str("direction");
  return direction == "reverse" || (direction == "bidirectional" && d == 1);
}

/// What an LSTM's gates apply: ONNX's f, g and h, the clip on the gates' inputs, and whether
/// the forget gate is 1 - input.
struct LstmCell {
  Activation f, g, h;
  float clip;
  bool input_forget;
};

/// One step of an LSTM for one batch entry. `gates` holds its recurrent products (ONNX's order:
/// input, output, forget, cell) and is overwritten; `x` its input projections, `peep` the
/// peepholes (input, output, forget); each of them `hidden` floats per gate. Updates the cell
/// state `c` and writes the hidden state to `h`. Compiled for AVX-512 as well, unlike a lambda of
/// the kernel.
KILN_CPU_CLONES void LstmStep(const LstmCell& cell, const float* __restrict__ x,
                              const float* __restrict__ peep, int64_t hidden,
                              float* __restrict__ gates, float* __restrict__ c,
                              float* __restrict__ h) {
  float* i = gates;
  float* o = gates + hidden;
  float* forget = gates + 2 * hidden;
  float* candidate = gates + 3 * hidden;
  for (int64_t j = 0; j < 4 * hidden; ++j) gates[j] += x[j];
  for (int64_t j = 0; j < hidden; ++j) {
    i[j] += peep[j] * c[j];
    forget[j] += peep[2 * hidden + j] * c[j];
  }
  Activate(cell.f, cell.clip, i, hidden);
  Activate(cell.g, cell.clip, candidate, hidden);
  if (cell.input_forget) {
    for (int64_t j = 0; j < hidden; ++j) forget[j] = 1.F - i[j];
  } else {
    Activate(cell.f, cell.clip, forget, hidden);
  }
  for (int64_t j = 0; j < hidden; ++j) {
    c[j] = forget[j] * c[j] + i[j] * candidate[j];
    o[j] += peep[hidden + j] * c[j];
    h[j] = c[j];
  }
  Activate(cell.f, cell.clip, o, hidden);
  Activate(cell.h, INFINITY, h, hidden);  // the clip bounds the gates' inputs, not the cell
  for (int64_t j = 0; j < hidden; ++j) h[j] *= o[j];
}

/// The units a block takes when `hidden` units are cut into `blocks` blocks: an equal share,
/// rounded up to whole vectors of 16 floats.
int64_t UnitShare(int64_t hidden, int64_t blocks) {
  constexpr int64_t kVector = 16;
  return CeilDiv(CeilDiv(hidden, blocks), kVector) * kVector;
}

/// How many blocks of hidden units each lane is cut into: 1 (each lane runs on one thread) unless
/// the lanes are fewer than the threads and take matrix-vector products. Then a thread takes the
/// same units of a lane at every step and reads their rows of R from its own core's cache
/// (design §43: one LSTM layer of hidden 256 at batch 1 took 0.67-0.81 of the time of its
/// products split among the threads anew at each step). Blocks are at least kMinUnits wide.
int64_t UnitBlocksPerLane(const Sequence& sq, const std::vector<Lane>& lanes) {
  constexpr int64_t kMinUnits = 32;
  const bool matrix_vector = std::all_of(lanes.begin(), lanes.end(), [](const Lane& lane) {
    return lane.count <= kMatrixVectorBatch;
  });
  const int64_t spare = runtime::NumThreads() / static_cast<int64_t>(lanes.size());
  const int64_t blocks = std::min(spare, sq.hidden / kMinUnits);
  if (!matrix_vector || blocks < 2) return 1;
  return CeilDiv(sq.hidden, UnitShare(sq.hidden, blocks));
}

/// The units of block q when `hidden` units are cut into `blocks`: equal shares, each a multiple
/// of 16 floats (whole vectors) but the last.
Units UnitBlock(int64_t hidden, int64_t blocks, int64_t q) {
  const int64_t share = UnitShare(hidden, blocks);
  const int64_t first = std::min(hidden, q * share);
  return {first, std::min(hidden, first + share) - first};
}

/// out (count x gates * units.count, `units.count` floats a gate) = h (count x hidden) times the
/// rows of gates [first_gate, first_gate + gates) of direction d's R (rows of `hidden`) that
/// `units` of each gate take.
void UnitProducts(const float* r, int64_t hidden, Units units, int64_t first_gate, int64_t gates,
                  const float* h, int64_t count, float* out) {
  for (int64_t g = 0; g < gates; ++g) {
    RowDots(r + ((first_gate + g) * hidden + units.first) * hidden, h, count, units.count, hidden,
            out + g * units.count, gates * units.count);
  }
}

/// The state of a lane stepped by blocks of hidden units: the hidden state kept twice (step s
/// reads h[s % 2] while its blocks write h[(s + 1) % 2]), and `cells`, a second state of every
/// unit where the op has one (an LSTM's cell state, a GRU's reset state), or empty.
struct BlockedLane {
  std::vector<float> h[2];
  std::vector<float> cells;
};

/// One block of a lane's hidden units, with the op's own per-block data (`Own`).
template <typename Own>
struct UnitBlockOf {
  const Lane& lane;
  BlockedLane& state;
  Units units;
  bool reverse;
  LaneInputs inputs;
  Own own;
};

/// Every lane's BlockedLane (`cells` from `cells(lane)`) and its `blocks` blocks of units, each
/// block's LaneInputs taking R's biases of the gates `with_rb` marks and its own data from
/// `own(lane, units)`. The blocks refer to their lane's state in `states`, which must not move.
template <typename Own, typename Cells, typename MakeOwn>
void PlanUnitBlocks(const KernelCall& call, const Sequence& sq, const std::vector<Lane>& lanes,
                    int64_t blocks, const std::vector<bool>& with_rb, const Cells& cells,
                    const MakeOwn& own, std::vector<BlockedLane>& states,
                    std::vector<UnitBlockOf<Own>>& work) {
  states.reserve(lanes.size());
  work.reserve(lanes.size() * static_cast<size_t>(blocks));
  for (const Lane& lane : lanes) {
    states.push_back({{InitialState(call, 5, sq, lane),
                       std::vector<float>(static_cast<size_t>(lane.count * sq.hidden))},
                      cells(lane)});
    const bool reverse = IsReverse(call, lane.direction);
    for (int64_t q = 0; q < blocks; ++q) {
      const Units units = UnitBlock(sq.hidden, blocks, q);
      work.push_back({lane, states.back(), units, reverse,
                      LaneInputs(call, sq, lane, reverse, with_rb, units), own(lane, units)});
    }
  }
}

/// The lanes' last hidden states, as the outputs' final hidden state.
void WriteFinalHidden(const Sequence& sq, const Outputs& out, const std::vector<Lane>& lanes,
                      const std::vector<BlockedLane>& states) {
  for (size_t l = 0; l < lanes.size(); ++l)
    WriteFinal(sq, out, 0, lanes[l], states[l].h[sq.seq % 2]);
}

/// Runs the blocks of `work` through the sequence with runtime::ParallelSteps, `phases` barriers
/// a step: body(block, s, phase, h, h_next) for each block at each step s and phase, h being the
/// block's lane's hidden state that step s reads and h_next the one it writes.
template <typename Own, typename Body>
void StepBlocks(const Sequence& sq, int64_t phases, std::vector<UnitBlockOf<Own>>& work,
                const Body& body) {
  runtime::ParallelSteps(phases * sq.seq, static_cast<int64_t>(work.size()),
                         [&](int64_t step, int64_t k) {
                           UnitBlockOf<Own>& block = work[static_cast<size_t>(k)];
                           const int64_t s = step / phases;
                           body(block, s, step % phases, block.state.h[s % 2].data(),
                                block.state.h[(s + 1) % 2].data());
                         });
}

/// A block's step s for each entry i of its lane: `body(i, b, t, hb)` writes the entry's new
/// units of the hidden state at hb (in h_next), t being the entry's time index at step s; an
/// entry past its length keeps its old units (from h).
template <typename Own, typename Body>
void StepUnits(const Sequence& sq, const UnitBlockOf<Own>& block, int64_t s, const float* h,
               float* h_next, const Body& body) {
  const Lane& lane = block.lane;
  const Units units = block.units;
  for (int64_t i = 0; i < lane.count; ++i) {
    const int64_t b = lane.first + i;
    const int64_t t = sq.Step(s, b, block.reverse);
    float* hb = h_next + i * sq.hidden + units.first;
    if (t < 0) {  // done: its state stays
      std::copy_n(h + i * sq.hidden + units.first, units.count, hb);
      continue;
    }
    body(i, b, t, hb);
  }
}

/// An LSTM whose lanes are cut into `blocks` blocks of hidden units each (UnitBlocksPerLane),
/// every block stepped together by runtime::ParallelSteps. At each step a block multiplies its
/// lane's hidden state by its units' rows of R (four gates' worth) and updates those units of the
/// cell and hidden states; the barrier between steps hands every block the whole new hidden
/// state, which is kept twice: one copy read while the other is written.
void LstmByUnitBlocks(const KernelCall& call, const Sequence& sq,
                      const std::vector<Activation>& acts, bool input_forget, const Outputs& out,
                      const std::vector<Lane>& lanes, int64_t blocks) {
  const int64_t H = sq.hidden;
  struct Own {
    LstmCell cell;
    std::vector<float> peep;   ///< the units' peepholes: input, output, forget
    std::vector<float> gates;  ///< the lane's entries' products, `units.count` floats a gate
  };
  std::vector<BlockedLane> states;  // `cells`: the cell state
  std::vector<UnitBlockOf<Own>> work;
  PlanUnitBlocks<Own>(
      call, sq, lanes, blocks, {true, true, true, true},
      [&](const Lane& lane) { return InitialState(call, 6, sq, lane); },
      [&](const Lane& lane, Units units) {
        const int64_t d = lane.direction;
        std::vector<float> peep(static_cast<size_t>(3 * units.count), 0.F);
        if (Sequence::Present(call, 7)) {
          for (int64_t g = 0; g < 3; ++g) {
            std::copy_n(Data<const float>(call.input(7)) + (d * 3 + g) * H + units.first,
                        units.count, peep.data() + g * units.count);
          }
        }
        return Own{{acts[d * 3], acts[d * 3 + 1], acts[d * 3 + 2], sq.clip, input_forget},
                   std::move(peep),
                   std::vector<float>(static_cast<size_t>(lane.count * 4 * units.count))};
      },
      states, work);
  const float* r = Data<const float>(call.input(2));
  StepBlocks(
      sq, 1, work,
      [&](UnitBlockOf<Own>& block, int64_t s, int64_t /*phase*/, const float* h, float* h_next) {
        const Lane& lane = block.lane;
        const int64_t u0 = block.units.first;
        const int64_t nu = block.units.count;
        UnitProducts(r + lane.direction * 4 * H * H, H, block.units, 0, 4, h, lane.count,
                     block.own.gates.data());
        StepUnits(sq, block, s, h, h_next, [&](int64_t i, int64_t b, int64_t t, float* hb) {
          LstmStep(block.own.cell, block.inputs.Row(s, i), block.own.peep.data(), nu,
                   block.own.gates.data() + i * 4 * nu, block.state.cells.data() + i * H + u0, hb);
          std::copy_n(hb, nu, out.y + sq.YOffset(t, lane.direction, b) + u0);
        });
      });
  WriteFinalHidden(sq, out, lanes, states);
  for (size_t l = 0; l < lanes.size(); ++l) WriteFinal(sq, out, 1, lanes[l], states[l].cells);
}

void Lstm(const KernelCall& call) {
  const Sequence sq(call, 4);
  const std::vector<Activation> acts =
      ReadActivations(call, {"Sigmoid", "Tanh", "Tanh"}, sq.directions);
  const bool input_forget = call.Bool("input_forget");
  const Outputs out = StartOutputs(call, sq, 2);
  const int64_t H = sq.hidden;
  const std::vector<Lane> lanes = PlanLanes(sq);
  if (const int64_t blocks = UnitBlocksPerLane(sq, lanes); blocks > 1) {
    LstmByUnitBlocks(call, sq, acts, input_forget, out, lanes, blocks);
    return;
  }
  const std::vector<Recurrence> recurrences = Recurrences(call, sq, lanes, kLstmRecurrence, 0);
  ForEachLane(lanes, [&](const Lane& lane) {
    const int64_t d = lane.direction;
    std::vector<float> h = InitialState(call, 5, sq, lane);
    std::vector<float> c = InitialState(call, 6, sq, lane);
    std::vector<float> gates(static_cast<size_t>(lane.count * 4 * H));
    std::vector<float> peep(static_cast<size_t>(3 * H), 0.F);
    if (Sequence::Present(call, 7)) {
      const float* p = Data<const float>(call.input(7)) + d * 3 * H;
      peep.assign(p, p + 3 * H);
    }
    const LstmCell cell{acts[d * 3], acts[d * 3 + 1], acts[d * 3 + 2], sq.clip, input_forget};
    const bool reverse = IsReverse(call, d);
    LaneInputs inputs(call, sq, lane, reverse, {true, true, true, true}, {0, H});
    for (int64_t s = 0; s < sq.seq; ++s) {
      recurrences[d].Apply(h.data(), lane.count, gates.data());
      ForEachRunning(
          sq, lane, s, reverse, inputs, [&](int64_t i, int64_t b, int64_t t, const float* x) {
            float* hb = h.data() + i * H;
            LstmStep(cell, x, peep.data(), H, gates.data() + i * 4 * H, c.data() + i * H, hb);
            WriteStep(sq, out, t, d, b, hb);
          });
    }
    WriteFinal(sq, out, 0, lane, h);
    WriteFinal(sq, out, 1, lane, c);
  });
}
KILN_CPU_KERNEL("nn.lstm", Lstm);
KILN_CPU_PREPACK("nn.lstm", [](size_t index, const Tensor& weight, const KernelCall& call) {
  return PrepackWeights(index, weight, call, 4, kLstmRecurrence);
});

/// A GRU whose lanes are cut into `blocks` blocks of hidden units each (UnitBlocksPerLane),
/// stepped by runtime::ParallelSteps in two phases a step, as the hidden gate's product reads the
/// whole reset state: phase 0 computes a block's units of the update and reset gates and of the
/// reset state (r * h), phase 1, after the barrier, its units of the hidden gate and the new
/// hidden state (kept twice, as in LstmByUnitBlocks).
void GruByUnitBlocks(const KernelCall& call, const Sequence& sq,
                     const std::vector<Activation>& acts, bool linear_before_reset,
                     const Outputs& out, const std::vector<Lane>& lanes, int64_t blocks) {
  const int64_t H = sq.hidden;
  struct Own {
    std::vector<float> rb_h;   ///< the units' Rb of the hidden gate, added after the reset
    std::vector<float> gates;  ///< update and reset products, then gate values
    std::vector<float> hidden_products;
  };
  // `cells`: r * h, every unit: what the hidden gate's product reads.
  std::vector<BlockedLane> states;
  std::vector<UnitBlockOf<Own>> work;
  PlanUnitBlocks<Own>(
      call, sq, lanes, blocks, {true, true, !linear_before_reset},
      [&](const Lane& lane) { return std::vector<float>(static_cast<size_t>(lane.count * H)); },
      [&](const Lane& lane, Units units) {
        std::vector<float> rb_h(static_cast<size_t>(units.count), 0.F);
        if (linear_before_reset && Sequence::Present(call, 3)) {
          std::copy_n(
              Data<const float>(call.input(3)) + lane.direction * 6 * H + 5 * H + units.first,
              units.count, rb_h.data());
        }
        const auto products = static_cast<size_t>(lane.count * units.count);
        return Own{std::move(rb_h), std::vector<float>(2 * products), std::vector<float>(products)};
      },
      states, work);
  const float* r = Data<const float>(call.input(2));
  StepBlocks(
      sq, 2, work,
      [&](UnitBlockOf<Own>& block, int64_t s, int64_t phase, const float* h, float* h_next) {
        const Lane& lane = block.lane;
        const Activation& f = acts[lane.direction * 2];
        const Activation& g = acts[lane.direction * 2 + 1];
        const int64_t u0 = block.units.first;
        const int64_t nu = block.units.count;
        const float* rd = r + lane.direction * 3 * H * H;
        if (phase == 0) {
          UnitProducts(rd, H, block.units, 0, 2, h, lane.count, block.own.gates.data());
          for (int64_t i = 0; i < lane.count; ++i) {
            if (sq.Step(s, lane.first + i, block.reverse) < 0) continue;
            const float* x = block.inputs.Row(s, i);
            float* z = block.own.gates.data() + i * 2 * nu;
            float* reset = z + nu;
            for (int64_t j = 0; j < nu; ++j) {
              z[j] += x[j];
              reset[j] += x[nu + j];
            }
            Activate(f, sq.clip, z, 2 * nu);  // both gates take f
            float* reset_h = block.state.cells.data() + i * H + u0;
            for (int64_t j = 0; j < nu; ++j) reset_h[j] = reset[j] * h[i * H + u0 + j];
          }
          return;
        }
        UnitProducts(rd, H, block.units, 2, 1, linear_before_reset ? h : block.state.cells.data(),
                     lane.count, block.own.hidden_products.data());
        StepUnits(sq, block, s, h, h_next, [&](int64_t i, int64_t b, int64_t t, float* hb) {
          const float* h_old = h + i * H + u0;
          const float* x = block.inputs.Row(s, i);
          const float* z = block.own.gates.data() + i * 2 * nu;
          const float* reset = z + nu;
          float* candidate = block.own.hidden_products.data() + i * nu;
          for (int64_t j = 0; j < nu; ++j) {
            candidate[j] = linear_before_reset
                               ? x[2 * nu + j] + reset[j] * (candidate[j] + block.own.rb_h[j])
                               : x[2 * nu + j] + candidate[j];
          }
          Activate(g, sq.clip, candidate, nu);
          for (int64_t j = 0; j < nu; ++j) hb[j] = (1.F - z[j]) * candidate[j] + z[j] * h_old[j];
          std::copy_n(hb, nu, out.y + sq.YOffset(t, lane.direction, b) + u0);
        });
      });
  WriteFinalHidden(sq, out, lanes, states);
}

void Gru(const KernelCall& call) {
  const Sequence sq(call, 3);
  const std::vector<Activation> acts = ReadActivations(call, {"Sigmoid", "Tanh"}, sq.directions);
  const bool linear_before_reset = call.Bool("linear_before_reset");
  const Outputs out = StartOutputs(call, sq, 1);
  const int64_t H = sq.hidden;
  const std::vector<Lane> lanes = PlanLanes(sq);
  if (const int64_t blocks = UnitBlocksPerLane(sq, lanes); blocks > 1) {
    GruByUnitBlocks(call, sq, acts, linear_before_reset, out, lanes, blocks);
    return;
  }
  const std::vector<Recurrence> gate_recurrences =
      Recurrences(call, sq, lanes, kGruRecurrence, 0);  // update and reset
  const std::vector<Recurrence> candidate_recurrences =
      Recurrences(call, sq, lanes, kGruRecurrence, 1);
  ForEachLane(lanes, [&](const Lane& lane) {
    const int64_t d = lane.direction;
    std::vector<float> rb_h(static_cast<size_t>(H), 0.F);
    if (linear_before_reset && Sequence::Present(call, 3)) {
      const float* bias = Data<const float>(call.input(3)) + d * 6 * H + 5 * H;
      rb_h.assign(bias, bias + H);
    }
    std::vector<float> h = InitialState(call, 5, sq, lane);
    std::vector<float> recurrent(static_cast<size_t>(lane.count * 2 * H));
    std::vector<float> candidate(h.size());
    std::vector<float> reset_h(h.size());
    std::vector<float> reset(h.size());
    const Activation& f = acts[d * 2];
    const Activation& g = acts[d * 2 + 1];
    const bool reverse = IsReverse(call, d);
    // Rb of the hidden gate is added after the reset when linear_before_reset.
    LaneInputs inputs(call, sq, lane, reverse, {true, true, !linear_before_reset}, {0, H});
    for (int64_t s = 0; s < sq.seq; ++s) {
      gate_recurrences[d].Apply(h.data(), lane.count, recurrent.data());
      ForEachRunning(sq, lane, s, reverse, inputs,
                     [&](int64_t i, int64_t /*b*/, int64_t /*t*/, const float* x) {
                       float* r = reset.data() + i * H;
                       for (int64_t j = 0; j < H; ++j)
                         r[j] = x[H + j] + recurrent[i * 2 * H + H + j];
                       Activate(f, sq.clip, r, H);
                       for (int64_t j = 0; j < H; ++j) reset_h[i * H + j] = r[j] * h[i * H + j];
                     });
      // The hidden gate's recurrence reads the reset state, or is reset after.
      candidate_recurrences[d].Apply(linear_before_reset ? h.data() : reset_h.data(), lane.count,
                                     candidate.data());
      ForEachRunning(
          sq, lane, s, reverse, inputs, [&](int64_t i, int64_t b, int64_t t, const float* x) {
            float* hb = h.data() + i * H;
            // The update gate and the candidate, over the entry's recurrent products.
            float* z = recurrent.data() + i * 2 * H;
            float* candidate_value = candidate.data() + i * H;
            for (int64_t j = 0; j < H; ++j) {
              z[j] += x[j];
              const float rec = candidate_value[j];
              candidate_value[j] = linear_before_reset
                                       ? x[2 * H + j] + reset[i * H + j] * (rec + rb_h[j])
                                       : x[2 * H + j] + rec;
            }
            Activate(f, sq.clip, z, H);
            Activate(g, sq.clip, candidate_value, H);
            for (int64_t j = 0; j < H; ++j) {
              hb[j] = (1.F - z[j]) * candidate_value[j] + z[j] * hb[j];
            }
            WriteStep(sq, out, t, d, b, hb);
          });
    }
    WriteFinal(sq, out, 0, lane, h);
  });
}
KILN_CPU_KERNEL("nn.gru", Gru);
KILN_CPU_PREPACK("nn.gru", [](size_t index, const Tensor& weight, const KernelCall& call) {
  return PrepackWeights(index, weight, call, 3, kGruRecurrence);
});

/// An RNN whose lanes are cut into `blocks` blocks of hidden units each (UnitBlocksPerLane),
/// stepped as LstmByUnitBlocks: at each step a block multiplies its lane's hidden state by its
/// units' rows of R and activates those units of the new hidden state (kept twice).
void RnnByUnitBlocks(const KernelCall& call, const Sequence& sq,
                     const std::vector<Activation>& acts, const Outputs& out,
                     const std::vector<Lane>& lanes, int64_t blocks) {
  const int64_t H = sq.hidden;
  using Products = std::vector<float>;  // the lane's entries' products
  std::vector<BlockedLane> states;
  std::vector<UnitBlockOf<Products>> work;
  PlanUnitBlocks<Products>(
      call, sq, lanes, blocks, {true}, [](const Lane& /*lane*/) { return std::vector<float>(); },
      [](const Lane& lane, Units units) {
        return Products(static_cast<size_t>(lane.count * units.count));
      },
      states, work);
  const float* r = Data<const float>(call.input(2));
  StepBlocks(sq, 1, work,
             [&](UnitBlockOf<Products>& block, int64_t s, int64_t /*phase*/, const float* h,
                 float* h_next) {
               const Lane& lane = block.lane;
               const int64_t u0 = block.units.first;
               const int64_t nu = block.units.count;
               UnitProducts(r + lane.direction * H * H, H, block.units, 0, 1, h, lane.count,
                            block.own.data());
               StepUnits(sq, block, s, h, h_next, [&](int64_t i, int64_t b, int64_t t, float* hb) {
                 const float* x = block.inputs.Row(s, i);
                 for (int64_t j = 0; j < nu; ++j) hb[j] = x[j] + block.own[i * nu + j];
                 Activate(acts[lane.direction], sq.clip, hb, nu);
                 std::copy_n(hb, nu, out.y + sq.YOffset(t, lane.direction, b) + u0);
               });
             });
  WriteFinalHidden(sq, out, lanes, states);
}

void Rnn(const KernelCall& call) {
  const Sequence sq(call, 1);
  const std::vector<Activation> acts = ReadActivations(call, {"Tanh"}, sq.directions);
  const Outputs out = StartOutputs(call, sq, 1);
  const int64_t H = sq.hidden;
  const std::vector<Lane> lanes = PlanLanes(sq);
  if (const int64_t blocks = UnitBlocksPerLane(sq, lanes); blocks > 1) {
    RnnByUnitBlocks(call, sq, acts, out, lanes, blocks);
    return;
  }
  const std::vector<Recurrence> recurrences = Recurrences(call, sq, lanes, kRnnRecurrence, 0);
  ForEachLane(lanes, [&](const Lane& lane) {
    const int64_t d = lane.direction;
    std::vector<float> h = InitialState(call, 5, sq, lane);
    std::vector<float> recurrent(h.size());
    const bool reverse = IsReverse(call, d);
    LaneInputs inputs(call, sq, lane, reverse, {true}, {0, H});
    for (int64_t s = 0; s < sq.seq; ++s) {
      recurrences[d].Apply(h.data(), lane.count, recurrent.data());
      ForEachRunning(sq, lane, s, reverse, inputs,
                     [&](int64_t i, int64_t b, int64_t t, const float* x) {
                       float* hb = h.data() + i * H;
                       for (int64_t j = 0; j < H; ++j) hb[j] = x[j] + recurrent[i * H + j];
                       Activate(acts[d], sq.clip, hb, H);
                       WriteStep(sq, out, t, d, b, hb);
                     });
    }
    WriteFinal(sq, out, 0, lane, h);
  });
}
KILN_CPU_KERNEL("nn.rnn", Rnn);
KILN_CPU_PREPACK("nn.rnn", [](size_t index, const Tensor& weight, const KernelCall& call) {
  return PrepackWeights(index, weight, call, 1, kRnnRecurrence);
});

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln

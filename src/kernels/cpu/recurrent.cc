// nn.lstm, nn.gru and nn.rnn (float32), as ONNX defines them (src/ops/nn/recurrent.cc has the
// layouts). Per direction, the input projection of the whole sequence is one GEMM
// (seq * batch rows), the bias added to it once; then each step is one GEMM of the hidden state
// by the recurrence weights and an elementwise pass over the gates. Batch entries with a
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

/// The state tensor `index` of direction d (batch x hidden), from the input or zeros.
std::vector<float> InitialState(const KernelCall& call, size_t index, const Sequence& sq,
                                int64_t d) {
  std::vector<float> state(static_cast<size_t>(sq.batch * sq.hidden), 0.F);
  if (!Sequence::Present(call, index)) return state;
  const auto* given = Data<const float>(call.input(index));
  for (int64_t b = 0; b < sq.batch; ++b) {
    std::copy_n(given + sq.StateOffset(d, b), sq.hidden, state.data() + b * sq.hidden);
  }
  return state;
}

/// data * W[d]^T over the whole sequence plus, per gate, Wb[d] (+ Rb[d] where `with_rb`):
/// (rows of data) x (gates * hidden).
std::vector<float> ProjectInput(const KernelCall& call, const Sequence& sq, int64_t d,
                                const std::vector<bool>& with_rb) {
  const int64_t rows = sq.seq * sq.batch;
  const int64_t width = sq.gates * sq.hidden;
  std::vector<float> projected(static_cast<size_t>(rows * width));
  const float* w = Data<const float>(call.input(1)) + d * width * sq.input;
  // The biases are added in the GEMM's epilogue, while each tile of the product is in cache.
  std::vector<float> total;
  GemmEpilogue epilogue;
  if (Sequence::Present(call, 3)) {
    const float* bias = Data<const float>(call.input(3)) + d * 2 * width;
    total.assign(bias, bias + width);
    for (int64_t g = 0; g < sq.gates; ++g) {
      if (!with_rb[static_cast<size_t>(g)]) continue;
      for (int64_t j = 0; j < sq.hidden; ++j) {
        total[g * sq.hidden + j] += bias[width + g * sq.hidden + j];
      }
    }
    epilogue.col_bias = total.data();
  }
  Gemm(rows, width, sq.input,
       GemmOperand(MatrixView{Data<const float>(call.input(0)), sq.input, 1}),
       GemmOperand(MatrixView{w, 1, sq.input}), projected.data(), width, epilogue);
  return projected;
}

/// out[b * ldo + j] = dot(w + j * k, h + b * k) for j in [0, rows) and b in [0, batch): each
/// weight row read once for every entry while it is in cache, each dot product in 16 lanes so
/// that it vectorizes (a float sum may not be reordered otherwise).
KILN_CPU_CLONES void RowDots(const float* __restrict__ w, const float* __restrict__ h,
                             int64_t batch, int64_t rows, int64_t k, float* __restrict__ out,
                             int64_t ldo) {
  constexpr int64_t kLanes = 16;
  for (int64_t j = 0; j < rows; ++j) {
    const float* row = w + j * k;
    for (int64_t b = 0; b < batch; ++b) {
      const float* x = h + b * k;
      float lanes[kLanes] = {};
      int64_t i = 0;
      for (; i + kLanes <= k; i += kLanes) {
        for (int64_t l = 0; l < kLanes; ++l) lanes[l] += row[i + l] * x[i + l];
      }
      float sum = 0.F;
      for (; i < k; ++i) sum += row[i] * x[i];
      for (float lane : lanes) sum += lane;
      out[b * ldo + j] = sum;
    }
  }
}

/// Rows [row0, row0 + count) of direction d's recurrence weights, transposed and packed for the
/// GEMM once per call: every step multiplies the state by them. A batch of one or two entries
/// takes matrix-vector products instead, reading the weights' rows as they lie: the GEMM's
/// 8-row tiles would compute mostly padding (measured on one LSTM layer, hidden 256, 64 steps:
/// the products are faster at batch 1 and 2, the GEMM from batch 4).
class Recurrence {
 public:
  Recurrence(const KernelCall& call, const Sequence& sq, int64_t d, int64_t row0, int64_t count)
      : hidden_(sq.hidden),
        batch_(sq.batch),
        count_(count),
        view_{Data<const float>(call.input(2)) + (d * sq.gates * sq.hidden + row0) * sq.hidden, 1,
              sq.hidden} {
    if (batch_ > kMatrixVectorBatch) {
      packed_ = NewPackedTensor(PackedGemmBSize(sq.hidden, count));
      PackGemmB(sq.hidden, count, view_, Data<float>(packed_));
    }
  }

  /// out (batch x count) = h (batch x hidden) * R^T.
  void Apply(const float* h, float* out) const {
    if (batch_ > kMatrixVectorBatch) {
      Gemm(batch_, count_, hidden_, GemmOperand(MatrixView{h, hidden_, 1}),
           GemmOperand(view_, Data<const float>(packed_)), out, count_);
      return;
    }
    // Chunks of about 32K multiply-adds, so a small layer does not pay for the thread pool.
    const int64_t grain =
        std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(hidden_ * batch_, 1));
    runtime::ParallelFor(0, count_, grain, [&](int64_t begin, int64_t end) {
      RowDots(view_.data + begin * hidden_, h, batch_, end - begin, hidden_, out + begin, count_);
    });
  }

 private:
  /// Up to this many batch entries, matrix-vector products.
  static constexpr int64_t kMatrixVectorBatch = 2;
  int64_t hidden_, batch_, count_;
  MatrixView view_;  ///< the weights (count x hidden, row-major) as the GEMM's B^T
  Tensor packed_;
};

/// From this many batch entries on, a step's gates run on the thread pool, entries split
/// between the threads: each body touches its own entry's rows only.
constexpr int64_t kParallelBatch = 4;

/// Calls body(b, t, x) for each batch entry still running after `s` steps of a direction
/// (`reverse` or not): t is its step and x its row of `projected` (`width` floats).
template <typename Body>
void ForEachRunning(const Sequence& sq, int64_t s, bool reverse,
                    const std::vector<float>& projected, int64_t width, const Body& body) {
  auto entries = [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const int64_t t = sq.Step(s, b, reverse);
      if (t >= 0) body(b, t, projected.data() + sq.Row(t, b) * width);
    }
  };
  if (sq.batch >= kParallelBatch) {
    runtime::ParallelFor(0, sq.batch, 1, entries);
  } else {
    entries(0, sq.batch);
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

void WriteFinal(const Sequence& sq, const Outputs& out, size_t which, int64_t d,
                const std::vector<float>& state) {
  if (which >= out.finals.size()) return;
  for (int64_t b = 0; b < sq.batch; ++b) {
    std::copy_n(state.data() + b * sq.hidden, sq.hidden, out.finals[which] + sq.StateOffset(d, b));
  }
}

bool IsReverse(const KernelCall& call, int64_t d) {
  const std::string direction = call.Str("direction");
  return direction == "reverse" || (direction == "bidirectional" && d == 1);
}

void Lstm(const KernelCall& call) {
  const Sequence sq(call, 4);
  const std::vector<Activation> acts =
      ReadActivations(call, {"Sigmoid", "Tanh", "Tanh"}, sq.directions);
  const bool input_forget = call.Bool("input_forget");
  const Outputs out = StartOutputs(call, sq, 2);
  const int64_t H = sq.hidden;
  std::vector<float> recurrent(static_cast<size_t>(sq.batch * 4 * H));
  for (int64_t d = 0; d < sq.directions; ++d) {
    const std::vector<float> projected = ProjectInput(call, sq, d, {true, true, true, true});
    const Recurrence recurrence(call, sq, d, 0, 4 * H);
    std::vector<float> h = InitialState(call, 5, sq, d);
    std::vector<float> c = InitialState(call, 6, sq, d);
    std::vector<float> peep(static_cast<size_t>(3 * H), 0.F);
    if (Sequence::Present(call, 7)) {
      const float* p = Data<const float>(call.input(7)) + d * 3 * H;
      peep.assign(p, p + 3 * H);
    }
    const Activation& f = acts[d * 3];
    const Activation& g = acts[d * 3 + 1];
    const Activation& act_h = acts[d * 3 + 2];
    const bool reverse = IsReverse(call, d);
    for (int64_t s = 0; s < sq.seq; ++s) {
      recurrence.Apply(h.data(), recurrent.data());
      ForEachRunning(sq, s, reverse, projected, 4 * H, [&](int64_t b, int64_t t, const float* x) {
        float* hb = h.data() + b * H;
        float* cb = c.data() + b * H;
        // The gates, over the entry's recurrent product. ONNX's gate order: input, output,
        // forget, cell; peepholes: input, output, forget.
        float* i = recurrent.data() + b * 4 * H;
        float* o = i + H;
        float* forget = i + 2 * H;
        float* cell = i + 3 * H;
        for (int64_t j = 0; j < 4 * H; ++j) i[j] += x[j];
        for (int64_t j = 0; j < H; ++j) {
          i[j] += peep[j] * cb[j];
          forget[j] += peep[2 * H + j] * cb[j];
        }
        Activate(f, sq.clip, i, H);
        Activate(g, sq.clip, cell, H);
        if (input_forget) {
          for (int64_t j = 0; j < H; ++j) forget[j] = 1.F - i[j];
        } else {
          Activate(f, sq.clip, forget, H);
        }
        for (int64_t j = 0; j < H; ++j) {
          cb[j] = forget[j] * cb[j] + i[j] * cell[j];
          o[j] += peep[H + j] * cb[j];
          hb[j] = cb[j];
        }
        Activate(f, sq.clip, o, H);
        Activate(act_h, INFINITY, hb, H);  // the clip bounds the gates' inputs, not the cell
        for (int64_t j = 0; j < H; ++j) hb[j] *= o[j];
        WriteStep(sq, out, t, d, b, hb);
      });
    }
    WriteFinal(sq, out, 0, d, h);
    WriteFinal(sq, out, 1, d, c);
  }
}
KILN_CPU_KERNEL("nn.lstm", Lstm);

void Gru(const KernelCall& call) {
  const Sequence sq(call, 3);
  const std::vector<Activation> acts = ReadActivations(call, {"Sigmoid", "Tanh"}, sq.directions);
  const bool linear_before_reset = call.Bool("linear_before_reset");
  const Outputs out = StartOutputs(call, sq, 1);
  const int64_t H = sq.hidden;
  std::vector<float> recurrent(static_cast<size_t>(sq.batch * 2 * H));
  std::vector<float> candidate(static_cast<size_t>(sq.batch * H));
  std::vector<float> reset_h(static_cast<size_t>(sq.batch * H));
  std::vector<float> reset(static_cast<size_t>(sq.batch * H));
  for (int64_t d = 0; d < sq.directions; ++d) {
    // Rb of the hidden gate is added after the reset when linear_before_reset.
    const std::vector<float> projected =
        ProjectInput(call, sq, d, {true, true, !linear_before_reset});
    const Recurrence gates(call, sq, d, 0, 2 * H);  // update and reset
    const Recurrence candidate_gate(call, sq, d, 2 * H, H);
    std::vector<float> rb_h(static_cast<size_t>(H), 0.F);
    if (linear_before_reset && Sequence::Present(call, 3)) {
      const float* bias = Data<const float>(call.input(3)) + d * 6 * H + 5 * H;
      rb_h.assign(bias, bias + H);
    }
    std::vector<float> h = InitialState(call, 5, sq, d);
    const Activation& f = acts[d * 2];
    const Activation& g = acts[d * 2 + 1];
    const bool reverse = IsReverse(call, d);
    for (int64_t s = 0; s < sq.seq; ++s) {
      gates.Apply(h.data(), recurrent.data());
      ForEachRunning(sq, s, reverse, projected, 3 * H,
                     [&](int64_t b, int64_t /*t*/, const float* x) {
                       float* r = reset.data() + b * H;
                       for (int64_t j = 0; j < H; ++j)
                         r[j] = x[H + j] + recurrent[b * 2 * H + H + j];
                       Activate(f, sq.clip, r, H);
                       for (int64_t j = 0; j < H; ++j) reset_h[b * H + j] = r[j] * h[b * H + j];
                     });
      // The hidden gate's recurrence reads the reset state, or is reset after.
      candidate_gate.Apply(linear_before_reset ? h.data() : reset_h.data(), candidate.data());
      ForEachRunning(sq, s, reverse, projected, 3 * H, [&](int64_t b, int64_t t, const float* x) {
        float* hb = h.data() + b * H;
        // The update gate and the candidate, over the entry's recurrent products.
        float* z = recurrent.data() + b * 2 * H;
        float* candidate_value = candidate.data() + b * H;
        for (int64_t j = 0; j < H; ++j) {
          z[j] += x[j];
          const float rec = candidate_value[j];
          candidate_value[j] = linear_before_reset
                                   ? x[2 * H + j] + reset[b * H + j] * (rec + rb_h[j])
                                   : x[2 * H + j] + rec;
        }
        Activate(f, sq.clip, z, H);
        Activate(g, sq.clip, candidate_value, H);
        for (int64_t j = 0; j < H; ++j) hb[j] = (1.F - z[j]) * candidate_value[j] + z[j] * hb[j];
        WriteStep(sq, out, t, d, b, hb);
      });
    }
    WriteFinal(sq, out, 0, d, h);
  }
}
KILN_CPU_KERNEL("nn.gru", Gru);

void Rnn(const KernelCall& call) {
  const Sequence sq(call, 1);
  const std::vector<Activation> acts = ReadActivations(call, {"Tanh"}, sq.directions);
  const Outputs out = StartOutputs(call, sq, 1);
  const int64_t H = sq.hidden;
  std::vector<float> recurrent(static_cast<size_t>(sq.batch * H));
  for (int64_t d = 0; d < sq.directions; ++d) {
    const std::vector<float> projected = ProjectInput(call, sq, d, {true});
    const Recurrence recurrence(call, sq, d, 0, H);
    std::vector<float> h = InitialState(call, 5, sq, d);
    const bool reverse = IsReverse(call, d);
    for (int64_t s = 0; s < sq.seq; ++s) {
      recurrence.Apply(h.data(), recurrent.data());
      ForEachRunning(sq, s, reverse, projected, H, [&](int64_t b, int64_t t, const float* x) {
        float* hb = h.data() + b * H;
        for (int64_t j = 0; j < H; ++j) hb[j] = x[j] + recurrent[b * H + j];
        Activate(acts[d], sq.clip, hb, H);
        WriteStep(sq, out, t, d, b, hb);
      });
    }
    WriteFinal(sq, out, 0, d, h);
  }
}
KILN_CPU_KERNEL("nn.rnn", Rnn);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln

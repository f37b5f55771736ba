#include "winograd.h"

#include <kiln/runtime/thread_pool.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

/// Tiles per GEMM, as whole rows of tiles: fewer leave the GEMMs' columns short.
constexpr int64_t kBandTiles = 64;
/// The smallest convolutions PrefersWinograd takes.
constexpr int64_t kMinInputChannels = 48;
constexpr int64_t kMinOutputChannels = 64;
constexpr int64_t kMinTiles = 36;

/// 16 floats: the tile transforms run on 16 tiles at a time, then one by one (V = float).
typedef float Vec16 __attribute__((vector_size(64)));  // NOLINT(modernize-use-using)

/// (Into `value`: a vector returned by value from code built for the baseline ISA would change
/// the ABI.)
template <typename V>
__attribute__((always_inline)) inline void Load(V& value, const float* from) {
  std::memcpy(&value, from, sizeof(V));
}

template <typename V>
__attribute__((always_inline)) inline void Store(float* to, const V& value) {
  std::memcpy(to, &value, sizeof(V));
}

/// F(2, 3)'s one-dimensional transforms (interpolation points 0, 1, -1): a filter g of 3 taps
/// to u = G g (4 values), a tile d of 4 inputs to Bᵀ d, and 4 products m to the 2 outputs
/// Aᵀ m. The two-dimensional ones apply them along each axis in turn. (F(4, 3), 4 x 4 outputs
/// from 6 x 6 inputs, took 0.83-0.98 of F(2, 3)'s time on resnet's 3x3s but erred ten times as
/// much, up to 1e-3 on outputs of magnitude 40: design §42.)
struct F2x3 {
  static constexpr int kOut = 2;
  static constexpr int kIn = 4;

  template <typename V>
  static void Filter(const V g[3], V u[4]) {
    u[0] = g[0];
    u[1] = (g[0] + g[1] + g[2]) * 0.5F;
    u[2] = (g[0] - g[1] + g[2]) * 0.5F;
    u[3] = g[2];
  }

  template <typename V>
  __attribute__((always_inline)) static void Input(const V d[4], V v[4]) {
    v[0] = d[0] - d[2];
    v[1] = d[1] + d[2];
    v[2] = d[2] - d[1];
    v[3] = d[1] - d[3];
  }

  template <typename V>
  __attribute__((always_inline)) static void Output(const V m[4], V y[2]) {
    y[0] = m[0] + m[1] + m[2];
    y[1] = m[1] - m[2] - m[3];
  }
};

using Transform = F2x3;
constexpr int64_t kOut = Transform::kOut;
constexpr int64_t kIn = Transform::kIn;
constexpr int64_t kValues = kIn * kIn;  ///< values of a transformed tile, one GEMM each

/// u = G g Gᵀ for a 3x3 filter g (row-major), u row-major (kIn x kIn).
void TransformFilter(const float* g, float* u) {
  float rows[kIn][3];  // G g, column by column
  for (int j = 0; j < 3; ++j) {
    const float column[3] = {g[j], g[3 + j], g[6 + j]};
    float transformed[kIn];
    Transform::Filter(column, transformed);
    for (int i = 0; i < kIn; ++i) rows[i][j] = transformed[i];
  }
  for (int i = 0; i < kIn; ++i) Transform::Filter(rows[i], u + i * kIn);
}

/// A two-dimensional transform of a kIn x kIn block: `transform` (kIn values to kTo) along
/// each row, then along each column of the result; `load(r, k, value)` reads element (r, k),
/// `store(i, j, value)` writes element (i, j) of the kTo x kTo result.
template <typename V, int64_t kTo, typename Transform1D, typename LoadFn, typename StoreFn>
__attribute__((always_inline)) inline void TransformBlock(const Transform1D& transform,
                                                          const LoadFn& load,
                                                          const StoreFn& store) {
  V rows[kIn][kTo];
  for (int r = 0; r < kIn; ++r) {
    V line[kIn];
    for (int k = 0; k < kIn; ++k) load(r, k, line[k]);
    transform(line, rows[r]);
  }
  for (int j = 0; j < kTo; ++j) {
    V column[kIn];
    V result[kTo];
    for (int r = 0; r < kIn; ++r) column[r] = rows[r][j];
    transform(column, result);
    for (int i = 0; i < kTo; ++i) store(i, j, result[i]);
  }
}

/// v = Bᵀ d B of tiles t.. of the band, one per lane of V: tile t reads input row r at
/// columns kOut * t + k from phase[r][k % kOut][t + k / kOut]; value i of tile t goes to
/// out[i * stride + t].
template <typename V>
__attribute__((always_inline)) inline void TransformInputTiles(const float* const phase[kIn][kOut],
                                                               int64_t t, float* out,
                                                               int64_t stride) {
  TransformBlock<V, kIn>(
      [](const V* d, V* v) { Transform::Input(d, v); },
      [&](int r, int k, V& value) { Load(value, phase[r][k % kOut] + t + k / kOut); },
      [&](int i, int j, const V& value) { Store(out + (i * kIn + j) * stride + t, value); });
}

/// The input transform of the band's `count` tiles (TransformInputTiles).
KILN_CPU_CLONES void TransformInputs(const float* const phase[kIn][kOut], int64_t count, float* out,
                                     int64_t stride) {
  int64_t t = 0;
  for (; t + 16 <= count; t += 16) TransformInputTiles<Vec16>(phase, t, out, stride);
  for (; t < count; ++t) TransformInputTiles<float>(phase, t, out, stride);
}

/// y = Aᵀ m A of tiles t.. of the band, one per lane of V: value i of tile t is
/// m[i * stride + t]; y[i][j] gets pixel (i, j) of each tile.
template <typename V>
__attribute__((always_inline)) inline void TransformOutputTiles(const float* m, int64_t stride,
                                                                int64_t t,
                                                                float* const y[kOut][kOut]) {
  TransformBlock<V, kOut>(
      [](const V* values, V* pixels) { Transform::Output(values, pixels); },
      [&](int r, int k, V& value) { Load(value, m + (r * kIn + k) * stride + t); },
      [&](int i, int j, const V& value) { Store(y[i][j] + t, value); });
}

/// The output transform of the band's `count` tiles (TransformOutputTiles).
KILN_CPU_CLONES void TransformOutputs(const float* m, int64_t stride, int64_t count,
                                      float* const y[kOut][kOut]) {
  int64_t t = 0;
  for (; t + 16 <= count; t += 16) TransformOutputTiles<Vec16>(m, stride, t, y);
  for (; t < count; ++t) TransformOutputTiles<float>(m, stride, t, y);
}

/// One output row of `width` pixels from its tiles' pixels: column kOut * q + j from
/// pixels[j][q]; written or, when `adds`, added.
KILN_CPU_CLONES void StorePixelRow(const float* const pixels[kOut], int64_t width, bool adds,
                                   float* __restrict__ out) {
  const int64_t whole = width / kOut;
  for (int64_t q = 0; q < whole; ++q) {
    for (int j = 0; j < kOut; ++j) {
      out[kOut * q + j] = adds ? out[kOut * q + j] + pixels[j][q] : pixels[j][q];
    }
  }
  for (int64_t x = whole * kOut; x < width; ++x) {
    out[x] = adds ? out[x] + pixels[x - whole * kOut][whole] : pixels[x - whole * kOut][whole];
  }
}

/// How the output is cut into tasks: bands of whole tile rows of one image, as many as the
/// threads at least, each about kBandTiles tiles.
struct Bands {
  int64_t tile_rows, tile_cols, rows_per_band, per_image;

  Bands(const WinogradConv& s, int64_t threads)
      : tile_rows(CeilDiv(s.oh, kOut)), tile_cols(CeilDiv(s.ow, kOut)) {
    int64_t bands = CeilDiv(tile_rows * tile_cols, kBandTiles);
    if (s.n < threads) bands = CeilDiv(bands, threads) * threads;
    rows_per_band = CeilDiv(tile_rows, std::min(bands, tile_rows));
    per_image = CeilDiv(tile_rows, rows_per_band);
  }
};

/// One band's work: transform its input tiles, run the GEMMs, transform their products into
/// the output. Scratch sized for the largest band, reused for each.
///
/// The tiles are numbered row after row with one more per row than there are (`stride_`
/// tiles a row): every transform then runs over all the band's tiles at once, 16 lanes at a
/// time, and the extra tile of a row, whose inputs are the next row's, is computed and
/// dropped.
class BandRunner {
 public:
  BandRunner(const WinogradConv& s, const Bands& bands, const float* packed,
             const GemmEpilogue& epilogue, bool adds)
      : s_(s),
        bands_(bands),
        packed_(packed),
        epilogue_(epilogue),
        adds_(adds),
        stride_(bands.tile_cols + 1),
        capacity_(bands.rows_per_band * stride_ + 16),
        line_(static_cast<size_t>(kOut * stride_)),
        phases_(static_cast<size_t>(kIn * kOut * capacity_)),
        pixels_(static_cast<size_t>(kOut * kOut * capacity_)),
        v_(new float[static_cast<size_t>(kValues * s.c * capacity_)]),
        m_(new float[static_cast<size_t>(kValues * s.o * capacity_)]) {}

  void Run(int64_t image, int64_t band, const float* x, float* y) {
    const int64_t tile_row0 = band * bands_.rows_per_band;
    const int64_t rows = std::min(bands_.rows_per_band, bands_.tile_rows - tile_row0);
    const int64_t tiles = rows * stride_;
    TransformInput(x + image * s_.c * s_.h * s_.w, tile_row0, rows, tiles);
    const int64_t packed_size = PackedGemmASize(s_.o, s_.c);
    for (int64_t value = 0; value < kValues; ++value) {
      Gemm(s_.o, tiles, s_.c, GemmOperand(MatrixView{nullptr, 0, 0}, packed_ + value * packed_size),
           GemmOperand(MatrixView{v_.get() + value * s_.c * tiles, tiles, 1}),
           m_.get() + value * s_.o * tiles, tiles);
    }
    float* y_image = y + image * s_.o * s_.oh * s_.ow;
    TransformOutput(tile_row0, rows, tiles, y_image);
    if (!epilogue_.active()) return;
    const int64_t spatial = s_.oh * s_.ow;
    const int64_t first = kOut * tile_row0 * s_.ow;
    const int64_t end = std::min(s_.oh, kOut * (tile_row0 + rows)) * s_.ow;
    GemmEpilogue image_epilogue = epilogue_;
    if (epilogue_.residual != nullptr) image_epilogue.residual += image * s_.o * spatial;
    image_epilogue.tile_image = image;
    image_epilogue.Apply(0, s_.o, first, end - first, y_image + first, spatial);
  }

 private:
  /// Columns kOut * q + k (q = 0, 1, ...) of the input rows that row r of each tile reads, one
  /// tile row after another, `stride_` apart.
  float* Phase(int r, int k) { return phases_.data() + (r * kOut + k) * capacity_; }

  /// v_[value][channel][tile] of the band's tiles, channel by channel: each input row, with its
  /// padding, is split into its kOut phases of columns for each tile row that reads it.
  void TransformInput(const float* x, int64_t tile_row0, int64_t rows, int64_t tiles) {
    const int64_t row0 = kOut * tile_row0 - s_.pad_top;
    const int64_t first = s_.pad_left;  // the columns of line_ the image fills
    const int64_t last = std::min<int64_t>(kOut * stride_, s_.w + s_.pad_left);
    const float* phase[kIn][kOut];
    for (int r = 0; r < kIn; ++r) {
      for (int k = 0; k < kOut; ++k) phase[r][k] = Phase(r, k);
    }
    for (int64_t channel = 0; channel < s_.c; ++channel) {
      const float* plane = x + channel * s_.h * s_.w;
      for (int64_t i = 0; i < kOut * rows + kIn - kOut; ++i) {
        const int64_t iy = row0 + i;
        std::fill(line_.begin(), line_.end(), 0.F);
        if (iy >= 0 && iy < s_.h && first < last) {
          std::copy(plane + iy * s_.w, plane + iy * s_.w + last - first, line_.begin() + first);
        }
        // Row i is row i - kOut * tile_row of each tile row that reads it.
        for (int64_t tile_row = std::max<int64_t>(0, CeilDiv(i - kIn + 1, kOut));
             tile_row <= std::min(rows - 1, i / kOut); ++tile_row) {
          const int r = static_cast<int>(i - kOut * tile_row);
          for (int k = 0; k < kOut; ++k) {
            float* to = Phase(r, k) + tile_row * stride_;
            for (int64_t q = 0; q < stride_; ++q) to[q] = line_[kOut * q + k];
          }
        }
      }
      TransformInputs(phase, tiles, v_.get() + channel * tiles, s_.c * tiles);
    }
  }

  /// The band's output pixels from m_[value][channel][tile], written or, when `adds_`, added.
  void TransformOutput(int64_t tile_row0, int64_t rows, int64_t tiles, float* y) {
    float* pixels[kOut][kOut];
    for (int i = 0; i < kOut; ++i) {
      for (int j = 0; j < kOut; ++j) pixels[i][j] = pixels_.data() + (i * kOut + j) * capacity_;
    }
    for (int64_t channel = 0; channel < s_.o; ++channel) {
      TransformOutputs(m_.get() + channel * tiles, s_.o * tiles, tiles, pixels);
      float* plane = y + channel * s_.oh * s_.ow;
      for (int64_t tile_row = 0; tile_row < rows; ++tile_row) {
        const int64_t oy = kOut * (tile_row0 + tile_row);
        for (int64_t i = 0; i < kOut && oy + i < s_.oh; ++i) {
          const float* row[kOut];
          for (int j = 0; j < kOut; ++j) row[j] = pixels[i][j] + tile_row * stride_;
          StorePixelRow(row, s_.ow, adds_, plane + (oy + i) * s_.ow);
        }
      }
    }
  }

  const WinogradConv& s_;
  const Bands& bands_;
  const float* packed_;
  const GemmEpilogue& epilogue_;
  bool adds_;
  int64_t stride_;             ///< tiles per tile row, one more than the row has
  int64_t capacity_;           ///< tiles of the largest band, and a vector's slack
  std::vector<float> line_;    ///< one padded input row
  std::vector<float> phases_;  ///< per row of a tile and phase of columns (Phase)
  std::vector<float> pixels_;  ///< the band's output, per pixel of the tile
  // The GEMMs' operands and products, each written whole before it is read: not zeroed (a
  // megabyte for 64 channels over 56 x 56).
  std::unique_ptr<float[]> v_;
  std::unique_ptr<float[]> m_;
};

}  // namespace

bool PrefersWinograd(int64_t in_channels, int64_t out_channels, int64_t oh, int64_t ow) {
  // Measured against the GEMM (design §42): the GEMMs are as deep as the input channels and as
  // wide as the tiles, so 16 or 32 input channels, 32 output ones or 16 tiles (a 7 x 7 plane)
  // made a conv 1.04-2x slower; 48 to 256 channels over 36 tiles or more, 0.72-0.92 of the
  // time.
  return in_channels >= kMinInputChannels && out_channels >= kMinOutputChannels &&
         CeilDiv(oh, kOut) * CeilDiv(ow, kOut) >= kMinTiles;
}

int64_t WinogradWeightFloats(int64_t o, int64_t c) { return kValues * PackedGemmASize(o, c); }

void PackWinogradWeights(const float* weight, int64_t o, int64_t c, float* packed) {
  std::vector<float> transformed(static_cast<size_t>(kValues * o * c));  // [value][o][c]
  float u[kValues];
  for (int64_t i = 0; i < o * c; ++i) {
    TransformFilter(weight + i * 9, u);
    for (int64_t value = 0; value < kValues; ++value) transformed[value * o * c + i] = u[value];
  }
  for (int64_t value = 0; value < kValues; ++value) {
    PackGemmA(o, c, MatrixView{transformed.data() + value * o * c, c, 1},
              packed + value * PackedGemmASize(o, c));
  }
}

void WinogradConv2D(const WinogradConv& s, const float* x, const float* weight, const float* packed,
                    const GemmEpilogue& merged, float* y) {
  std::unique_ptr<float[]> own;
  if (packed == nullptr) {
    own.reset(new float[static_cast<size_t>(WinogradWeightFloats(s.o, s.c))]);
    PackWinogradWeights(weight, s.o, s.c, own.get());
    packed = own.get();
  }
  GemmEpilogue epilogue = merged;
  const bool adds = TakeResidualInC(epilogue, y, s.oh * s.ow);
  const Bands bands(s, runtime::NumThreads());
  runtime::ParallelFor(0, s.n * bands.per_image, 1, [&](int64_t begin, int64_t end) {
    BandRunner runner(s, bands, packed, epilogue, adds);
    for (int64_t task = begin; task < end; ++task) {
      runner.Run(task / bands.per_image, task % bands.per_image, x, y);
    }
  });
}

}  // namespace cpu
}  // namespace kernels
}  // namespace kiln

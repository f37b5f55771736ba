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

/// Values of one transformed tile: 4 x 4, one GEMM each.
constexpr int64_t kValues = 16;
/// Tiles per GEMM, as whole rows of tiles: fewer leave the GEMMs' columns short.
constexpr int64_t kBandTiles = 64;
/// The smallest convolutions PrefersWinograd takes.
constexpr int64_t kMinInputChannels = 48;
constexpr int64_t kMinOutputChannels = 64;
constexpr int64_t kMinTiles = 36;

/// u = G g Gᵀ for a 3x3 filter g (row-major), G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1].
void TransformFilter(const float* g, float* u) {
  float t[4][3];  // G g
  for (int j = 0; j < 3; ++j) {
    t[0][j] = g[j];
    t[1][j] = 0.5F * (g[j] + g[3 + j] + g[6 + j]);
    t[2][j] = 0.5F * (g[j] - g[3 + j] + g[6 + j]);
    t[3][j] = g[6 + j];
  }
  for (int i = 0; i < 4; ++i) {
    u[i * 4 + 0] = t[i][0];
    u[i * 4 + 1] = 0.5F * (t[i][0] + t[i][1] + t[i][2]);
    u[i * 4 + 2] = 0.5F * (t[i][0] - t[i][1] + t[i][2]);
    u[i * 4 + 3] = t[i][2];
  }
}

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

/// v = Bᵀ d B (Bᵀ = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]) of tiles t.. of a tile row, one per
/// lane of V: `even[r]` and `odd[r]` hold the even and odd columns of the row's input row r;
/// value i of tile t goes to out[i * stride + t].
template <typename V>
__attribute__((always_inline)) inline void TransformInputTiles(const float* const even[4],
                                                               const float* const odd[4], int64_t t,
                                                               float* out, int64_t stride) {
  V a[4][4];  // d B, row by row
  for (int r = 0; r < 4; ++r) {
    V e0;
    Load(e0, even[r] + t);
    V e1;
    Load(e1, even[r] + t + 1);
    V o0;
    Load(o0, odd[r] + t);
    V o1;
    Load(o1, odd[r] + t + 1);
    a[r][0] = e0 - e1;
    a[r][1] = o0 + e1;
    a[r][2] = e1 - o0;
    a[r][3] = o0 - o1;
  }
  for (int j = 0; j < 4; ++j) {
    Store(out + (0 * 4 + j) * stride + t, a[0][j] - a[2][j]);
    Store(out + (1 * 4 + j) * stride + t, a[1][j] + a[2][j]);
    Store(out + (2 * 4 + j) * stride + t, a[2][j] - a[1][j]);
    Store(out + (3 * 4 + j) * stride + t, a[1][j] - a[3][j]);
  }
}

/// The input transform of a tile row's `count` tiles (TransformInputTiles).
KILN_CPU_CLONES void TransformInputRow(const float* const even[4], const float* const odd[4],
                                       int64_t count, float* out, int64_t stride) {
  int64_t t = 0;
  for (; t + 16 <= count; t += 16) TransformInputTiles<Vec16>(even, odd, t, out, stride);
  for (; t < count; ++t) TransformInputTiles<float>(even, odd, t, out, stride);
}

/// y = Aᵀ m A (Aᵀ = [1 1 1 0; 0 1 -1 -1]) of tiles t.. of a tile row, one per lane of V: value
/// i of tile t is m[i * stride + t]; y[i][j] gets pixel (i, j) of each tile.
template <typename V>
__attribute__((always_inline)) inline void TransformOutputTiles(const float* m, int64_t stride,
                                                                int64_t t, float* const y[2][2]) {
  V a[4][2];  // m A, row by row
  for (int r = 0; r < 4; ++r) {
    V m0;
    Load(m0, m + (r * 4 + 0) * stride + t);
    V m1;
    Load(m1, m + (r * 4 + 1) * stride + t);
    V m2;
    Load(m2, m + (r * 4 + 2) * stride + t);
    V m3;
    Load(m3, m + (r * 4 + 3) * stride + t);
    a[r][0] = m0 + m1 + m2;
    a[r][1] = m1 - m2 - m3;
  }
  for (int j = 0; j < 2; ++j) {
    Store(y[0][j] + t, a[0][j] + a[1][j] + a[2][j]);
    Store(y[1][j] + t, a[1][j] - a[2][j] - a[3][j]);
  }
}

/// The output transform of a tile row's `count` tiles (TransformOutputTiles).
KILN_CPU_CLONES void TransformOutputRow(const float* m, int64_t stride, int64_t count,
                                        float* const y[2][2]) {
  int64_t t = 0;
  for (; t + 16 <= count; t += 16) TransformOutputTiles<Vec16>(m, stride, t, y);
  for (; t < count; ++t) TransformOutputTiles<float>(m, stride, t, y);
}

/// One output row from its tiles' pixels: column 2q from left[q], 2q + 1 from right[q], for
/// q < pairs, and column 2 * pairs from left[pairs] when `odd`; written or, when `adds`, added.
KILN_CPU_CLONES void StorePixelRow(const float* left, const float* right, int64_t pairs, bool odd,
                                   bool adds, float* __restrict__ out) {
  if (adds) {
    for (int64_t q = 0; q < pairs; ++q) {
      out[2 * q] += left[q];
      out[2 * q + 1] += right[q];
    }
  } else {
    for (int64_t q = 0; q < pairs; ++q) {
      out[2 * q] = left[q];
      out[2 * q + 1] = right[q];
    }
  }
  if (odd) out[2 * pairs] = adds ? out[2 * pairs] + left[pairs] : left[pairs];
}

/// How the output is cut into tasks: bands of whole tile rows of one image, as many as the
/// threads at least, each about kBandTiles tiles.
struct Bands {
  int64_t tile_rows, tile_cols, rows_per_band, per_image;

  Bands(const WinogradConv& s, int64_t threads)
      : tile_rows(CeilDiv(s.oh, 2)), tile_cols(CeilDiv(s.ow, 2)) {
    int64_t bands = CeilDiv(tile_rows * tile_cols, kBandTiles);
    if (s.n < threads) bands = CeilDiv(bands, threads) * threads;
    rows_per_band = CeilDiv(tile_rows, std::min(bands, tile_rows));
    per_image = CeilDiv(tile_rows, rows_per_band);
  }
};

/// One band's work: transform its input tiles, run the 16 GEMMs, transform their products into
/// the output. Scratch sized for the largest band, reused for each.
///
/// The tiles are numbered row after row with one more per row than there are (`stride_`
/// tiles a row): every transform then runs over all the band's tiles at once, 16 lanes at a
/// time, and the extra tile of a row, whose inputs are the next row's, is computed and
/// dropped (1 GEMM column of 15 on 28 x 28 planes, of 29 on 56 x 56 ones).
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
        line_(static_cast<size_t>(2 * stride_)),
        split_(static_cast<size_t>(8 * capacity_)),
        pixels_(static_cast<size_t>(4 * capacity_)),
        v_(static_cast<size_t>(kValues * s.c * capacity_)),
        m_(static_cast<size_t>(kValues * s.o * capacity_)) {}

  void Run(int64_t image, int64_t band, const float* x, float* y) {
    const int64_t tile_row0 = band * bands_.rows_per_band;
    const int64_t rows = std::min(bands_.rows_per_band, bands_.tile_rows - tile_row0);
    const int64_t tiles = rows * stride_;
    TransformInput(x + image * s_.c * s_.h * s_.w, tile_row0, rows, tiles);
    const int64_t packed_size = PackedGemmASize(s_.o, s_.c);
    for (int64_t value = 0; value < kValues; ++value) {
      Gemm(s_.o, tiles, s_.c, GemmOperand(MatrixView{nullptr, 0, 0}, packed_ + value * packed_size),
           GemmOperand(MatrixView{v_.data() + value * s_.c * tiles, tiles, 1}),
           m_.data() + value * s_.o * tiles, tiles);
    }
    float* y_image = y + image * s_.o * s_.oh * s_.ow;
    TransformOutput(tile_row0, rows, tiles, y_image);
    if (!epilogue_.active()) return;
    const int64_t spatial = s_.oh * s_.ow;
    const int64_t first = 2 * tile_row0 * s_.ow;
    const int64_t end = std::min(s_.oh, 2 * (tile_row0 + rows)) * s_.ow;
    GemmEpilogue image_epilogue = epilogue_;
    if (epilogue_.residual != nullptr) image_epilogue.residual += image * s_.o * spatial;
    image_epilogue.tile_image = image;
    image_epilogue.Apply(0, s_.o, first, end - first, y_image + first, spatial);
  }

 private:
  /// Even (odd) columns of the input rows that row r of each tile reads, one tile row after
  /// another, `stride_` apart.
  float* Even(int64_t r) { return split_.data() + 2 * r * capacity_; }
  float* Odd(int64_t r) { return split_.data() + (2 * r + 1) * capacity_; }

  /// v_[value][channel][tile] of the band's tiles, channel by channel: each input row, with its
  /// padding, is split into its even and odd columns for the one or two tile rows that read it.
  void TransformInput(const float* x, int64_t tile_row0, int64_t rows, int64_t tiles) {
    const int64_t row0 = 2 * tile_row0 - s_.pad_top;
    const int64_t first = s_.pad_left;  // the columns of line_ the image fills
    const int64_t last = std::min<int64_t>(2 * stride_, s_.w + s_.pad_left);
    for (int64_t channel = 0; channel < s_.c; ++channel) {
      const float* plane = x + channel * s_.h * s_.w;
      for (int64_t i = 0; i < 2 * rows + 2; ++i) {
        const int64_t iy = row0 + i;
        std::fill(line_.begin(), line_.end(), 0.F);
        if (iy >= 0 && iy < s_.h && first < last) {
          std::copy(plane + iy * s_.w, plane + iy * s_.w + last - first, line_.begin() + first);
        }
        // Row i is row i % 2 of tile row i / 2 and row i % 2 + 2 of the tile row before.
        for (const int64_t tile_row : {i / 2, i / 2 - 1}) {
          if (tile_row < 0 || tile_row >= rows) continue;
          const int r = static_cast<int>(i - 2 * tile_row);
          float* even = Even(r) + tile_row * stride_;
          float* odd = Odd(r) + tile_row * stride_;
          for (int64_t q = 0; q < stride_; ++q) {
            even[q] = line_[2 * q];
            odd[q] = line_[2 * q + 1];
          }
        }
      }
      const float* even[4] = {Even(0), Even(1), Even(2), Even(3)};
      const float* odd[4] = {Odd(0), Odd(1), Odd(2), Odd(3)};
      TransformInputRow(even, odd, tiles, v_.data() + channel * tiles, s_.c * tiles);
    }
  }

  /// The band's output pixels from m_[value][channel][tile], written or, when `adds_`, added.
  void TransformOutput(int64_t tile_row0, int64_t rows, int64_t tiles, float* y) {
    float* pixels[2][2];
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) pixels[i][j] = pixels_.data() + (i * 2 + j) * capacity_;
    }
    const int64_t pairs = s_.ow / 2;  // output columns 2q and 2q + 1 of tile q
    for (int64_t channel = 0; channel < s_.o; ++channel) {
      TransformOutputRow(m_.data() + channel * tiles, s_.o * tiles, tiles, pixels);
      float* plane = y + channel * s_.oh * s_.ow;
      for (int64_t tile_row = 0; tile_row < rows; ++tile_row) {
        const int64_t oy = 2 * (tile_row0 + tile_row);
        for (int64_t i = 0; i < 2 && oy + i < s_.oh; ++i) {
          StorePixelRow(pixels[i][0] + tile_row * stride_, pixels[i][1] + tile_row * stride_, pairs,
                        s_.ow % 2 != 0, adds_, plane + (oy + i) * s_.ow);
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
  std::vector<float> split_;   ///< per tile row r: the even columns, then the odd ones
  std::vector<float> pixels_;  ///< the band's output, per pixel of the tile
  std::vector<float> v_;
  std::vector<float> m_;
};

}  // namespace

bool PrefersWinograd(int64_t in_channels, int64_t out_channels, int64_t oh, int64_t ow) {
  // Measured against the GEMM (design §42): the 16 GEMMs are as deep as the input channels and
  // as wide as the tiles, so 32 input channels, 32 output ones or 16 tiles (a 7 x 7 plane)
  // made a conv 1.04-2x slower; 48 to 512 channels over 36 tiles or more, 0.72-0.92 of the
  // time.
  return in_channels >= kMinInputChannels && out_channels >= kMinOutputChannels &&
         CeilDiv(oh, 2) * CeilDiv(ow, 2) >= kMinTiles;
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

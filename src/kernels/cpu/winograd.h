// A 3x3 convolution at unit stride as Winograd's minimal filtering F(2x2, 3x3) (Lavin and Gray,
// "Fast Algorithms for Convolutional Neural Networks", 2015): each 2 x 2 block of output pixels
// from a 4 x 4 block of input through 16 products per channel pair instead of 36, the 16
// products of all channel pairs being 16 GEMMs (design §42).
#ifndef KILN_SRC_KERNELS_CPU_WINOGRAD_H_
#define KILN_SRC_KERNELS_CPU_WINOGRAD_H_

#include <cstdint>

#include "gemm.h"

namespace kiln {
namespace kernels {
namespace cpu {

/// The extents of a conv2d with a 3x3 window, unit stride and dilation and one group: data
/// (n, c, h, w), output (n, o, oh, ow), `pad_top` and `pad_left` rows and columns of zeros
/// before the image (those after follow from oh and ow).
struct WinogradConv {
  int64_t n, c, h, w, o, oh, ow, pad_top, pad_left;
};

/// Whether a conv2d of these extents is faster as F(2x2, 3x3) than as one GEMM: enough
/// channels that the GEMMs dominate the transforms, and enough output pixels for whole blocks
/// of tiles on every thread.
bool PrefersWinograd(int64_t in_channels, int64_t out_channels, int64_t oh, int64_t ow);

/// Floats that PackWinogradWeights writes for an (o, c, 3, 3) weight.
int64_t WinogradWeightFloats(int64_t o, int64_t c);

/// The weight (o, c, 3, 3) transformed (G g Gᵀ per channel pair) into 16 matrices of o x c,
/// each packed as a GEMM's A (PackGemmA), one after another.
void PackWinogradWeights(const float* weight, int64_t o, int64_t c, float* packed);

/// y = conv2d(x, weight), then `epilogue` (whose residual may be y itself: the output is then
/// added to it). `packed` is PackWinogradWeights' output, or null to transform `weight` here.
void WinogradConv2D(const WinogradConv& s, const float* x, const float* weight, const float* packed,
                    const GemmEpilogue& epilogue, float* y);

}  // namespace cpu
}  // namespace kernels
}  // namespace kiln

#endif  // KILN_SRC_KERNELS_CPU_WINOGRAD_H_

// block_channels and unblock_channels: a tensor into and out of the channel-blocked layout
// (kiln/ir/channel_blocks.h). Each image's block of 16 channels is a 16 x S matrix (S the
// spatial extent) transposed to S x 16, or back.
#include <kiln/ir/channel_blocks.h>

#include <algorithm>

#include "kernel_util.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

using ir::kChannelBlock;

/// Pixels moved per inner sweep: 16 rows of that many floats are read (or written) in runs
/// while the other side's 16-float lines fill.
constexpr int64_t kPixelRun = 64;

/// Copies between the channel-first tensor `flat` (N, C, *S) and the blocked one (N, B, *S, 16),
/// into the blocked one when `to_blocks` (zero past C), else out of it: per image and block of
/// 16 channels, a 16 x S matrix transposed, in runs of kPixelRun pixels.
void ChangeLayout(const KernelCall& call, bool to_blocks) {
  RequireFloat32Inputs(call);
  const Tensor flat = to_blocks ? call.input(0) : call.output(0);
  const Tensor blocked = to_blocks ? call.output(0) : call.input(0);
  const int64_t images = flat.shape(0);
  const int64_t channels = flat.shape(1);
  const int64_t blocks = blocked.shape(1);
  const int64_t pixels = flat.NumElements() / std::max<int64_t>(1, images * channels);
  auto* flat_data = static_cast<float*>(flat.data());
  auto* blocked_data = static_cast<float*>(blocked.data());
  const int64_t grain = std::max<int64_t>(1, kElementGrain / (pixels * kChannelBlock));
  runtime::ParallelFor(0, images * blocks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t image = i / blocks;
      const int64_t c0 = i % blocks * kChannelBlock;
      const int64_t lanes = std::min(kChannelBlock, channels - c0);
      float* by_channel = flat_data + (image * channels + c0) * pixels;
      float* by_pixel = blocked_data + i * pixels * kChannelBlock;
      for (int64_t p0 = 0; p0 < pixels; p0 += kPixelRun) {
        const int64_t run = std::min(kPixelRun, pixels - p0);
        for (int64_t l = 0; l < lanes; ++l) {
          for (int64_t p = p0; p < p0 + run; ++p) {
            float& lane = by_pixel[p * kChannelBlock + l];
            float& element = by_channel[l * pixels + p];
            (to_blocks ? lane : element) = to_blocks ? element : lane;
          }
        }
        if (!to_blocks || lanes == kChannelBlock) continue;
        for (int64_t p = p0; p < p0 + run; ++p) {
          std::fill(by_pixel + p * kChannelBlock + lanes, by_pixel + (p + 1) * kChannelBlock, 0.F);
        }
      }
    }
  });
}

void BlockChannels(const KernelCall& call) { ChangeLayout(call, /*to_blocks=*/true); }
KILN_CPU_KERNEL("block_channels", BlockChannels);

void UnblockChannels(const KernelCall& call) { ChangeLayout(call, /*to_blocks=*/false); }
KILN_CPU_KERNEL("unblock_channels", UnblockChannels);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln

/// The channel-blocked layout NCHW16c (docs/design.md §48): (N, C, H, W) stored as
/// (N, ceil(C / 16), H, W, 16), channel c at block c / 16, lane c % 16, the lanes past C zero.
#ifndef KILN_IR_CHANNEL_BLOCKS_H_
#define KILN_IR_CHANNEL_BLOCKS_H_

#include <cstdint>

namespace kiln {
namespace ir {

/// Channels per block, whatever the CPU: one AVX-512 vector of float32, two AVX2 ones.
constexpr int64_t kChannelBlock = 16;

/// Blocks that hold `channels` channels.
constexpr int64_t ChannelBlocks(int64_t channels) {
  return (channels + kChannelBlock - 1) / kChannelBlock;
}

}  // namespace ir
}  // namespace kiln

#endif  // KILN_IR_CHANNEL_BLOCKS_H_

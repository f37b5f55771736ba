// Type relations of the nn ops (src/ops/nn/) and the image ops (src/ops/image/).
#include "op/op_test_util.h"

namespace kiln {
namespace op {
namespace {

using testing::ExpectDeferred;
using testing::ExpectType;
using testing::ExpectTypeError;
using testing::S;
using testing::T;

TEST(Conv2DOpTest, SlidesTheKernel) {
  ExpectType(T({1, 8, 8, 8}), "nn.conv2d", {T({1, 3, 8, 8}), T({8, 3, 3, 3})},
             {{"padding", Array<int64_t>{1, 1, 1, 1}}});
  ExpectType(T({1, 8, 3, 3}), "nn.conv2d", {T({1, 3, 8, 8}), T({8, 3, 3, 3})},
             {{"strides", Array<int64_t>{2, 2}}});
  ExpectType(T({1, 8, 6, 6}), "nn.conv2d", {T({1, 4, 8, 8}), T({8, 2, 3, 3})}, {{"groups", 2}});
  ExpectTypeError("nn.conv2d", {T({1, 3, 8, 8}), T({8, 4, 3, 3})}, {},
                  {"input channels 3 of 'data' do not match 4 channels of 'weight'",
                   "Tensor[(1, 3, 8, 8), float32]", "Tensor[(8, 4, 3, 3), float32]"});
  ExpectTypeError(
      "nn.conv2d", {T({1, 3, 8, 8}), T({8, 3, 3, 3})}, {{"strides", Array<int64_t>{1}}},
      {"'strides' must be 2 integers in [1, 1048576], got (1)", "data: Tensor[(1, 3, 8, 8)"});
}

TEST(Conv2DOpTest, SymbolicBatchAndSpatialExtents) {
  // (224 + 3 + 3 - 7) / 2 + 1 = 112 under a symbolic batch.
  ExpectType(S({"batch", "64", "112", "112"}), "nn.conv2d",
             {S({"batch", "3", "224", "224"}), T({64, 3, 7, 7})},
             {{"strides", Array<int64_t>{2, 2}}, {"padding", Array<int64_t>{3, 3, 3, 3}}});
  // floordiv(h + 1 + 1 - 2, 2) + 1: the padding makes the window fit whatever h is.
  ExpectType(S({"n", "8", "floordiv(h, 2) + 1", "floordiv(w, 2) + 1"}), "nn.conv2d",
             {S({"n", "4", "h", "w"}), T({8, 4, 2, 2})},
             {{"strides", Array<int64_t>{2, 2}}, {"padding", Array<int64_t>{1, 1, 1, 1}}});
  ExpectType(S({"n", "8", "h + 2", "5"}), "nn.conv2d", {S({"n", "3", "h", "5"}), T({8, 3, 3, 1})},
             {{"padding", Array<int64_t>{2, 0, 2, 0}}});
  // Channels equal once simplified (c * 2 + c * 2 = c * 2 x 2 groups); the groups divide the
  // symbolic output channels o * 2.
  ExpectType(S({"n", "o * 2", "6", "6"}), "nn.conv2d",
             {S({"n", "c * 2 + c * 2", "8", "8"}), S({"o * 2", "c * 2", "3", "3"})},
             {{"groups", 2}});
}

TEST(Conv2DNchwcOpTest, ConvolvesBlocksOfSixteenChannels) {
  // 20 channels in two blocks, 40 out in three; a symbolic batch and plane.
  ExpectType(S({"n", "3", "h", "w", "16"}), "nn.conv2d_nchwc",
             {S({"n", "2", "h", "w", "16"}), T({40, 20, 3, 3})},
             {{"padding", Array<int64_t>{1, 1, 1, 1}}});
  ExpectType(
      T({1, 2, 4, 4, 16}), "nn.conv2d_nchwc", {T({1, 2, 8, 8, 16}), T({24, 1, 3, 3})},
      {{"groups", 24}, {"strides", Array<int64_t>{2, 2}}, {"padding", Array<int64_t>{1, 1, 1, 1}}});
  ExpectTypeError("nn.conv2d_nchwc", {T({1, 2, 8, 8, 16}), T({8, 40, 3, 3})}, {},
                  {"2 channel blocks of 'data' do not hold the 40 input channels of 'weight'"});
  ExpectTypeError("nn.conv2d_nchwc", {T({1, 2, 8, 8, 8}), T({8, 20, 3, 3})}, {},
                  {"data's last axis must be the block of 16 channels"});
  ExpectTypeError("nn.conv2d_nchwc", {T({1, 2, 8, 8, 16}), T({24, 2, 3, 3})}, {{"groups", 12}},
                  {"groups must be 1 or the channel count (depthwise), got 12"});
}

TEST(BlockChannelsOpTest, AddsABlockAxisAndDropsIt) {
  ExpectType(S({"n", "3", "h", "w", "16"}), "block_channels", {S({"n", "35", "h", "w"})}, {});
  ExpectType(T({2, 1, 7, 16}), "block_channels", {T({2, 5, 7})}, {});
  ExpectTypeError("block_channels", {S({"n", "c", "4", "4"})}, {},
                  {"the channel count", "must be static"});
  ExpectType(S({"n", "35", "h", "w"}), "unblock_channels", {S({"n", "3", "h", "w", "16"})},
             {{"channels", 35}});
  ExpectTypeError("unblock_channels", {T({1, 3, 4, 4, 16})}, {{"channels", 20}},
                  {"channels 20 do not fill 3 blocks of 16"});
}

TEST(Conv2DOpTest, SymbolicConstraintsItCannotProveAreErrors) {
  // h may be 0, 1 or 2, where a 3x3 window does not fit.
  ExpectTypeError("nn.conv2d", {S({"n", "3", "h", "w"}), T({8, 3, 3, 3})}, {},
                  {"the window of extent 3 (kernel 3, dilation 1) does not fit spatial "
                   "dimension 0 of extent h after padding",
                   "h >= 3 cannot be proven or disproven before run time",
                   "data: Tensor[(n, 3, h, w), float32]"});
  ExpectTypeError("nn.conv2d", {S({"n", "c", "8", "8"}), T({8, 3, 3, 3})}, {},
                  {"input channels c of 'data' do not match 3 channels of 'weight' x 1 groups",
                   "(c == 3 cannot be proven"});
  // Proven different: no note, the same message as for static channels.
  ExpectTypeError("nn.conv2d", {S({"n", "c + 4", "8", "8"}), T({8, 3, 3, 3})}, {},
                  {"input channels c + 4 of 'data' do not match 3 channels of 'weight'"});
  ExpectTypeError("nn.conv2d", {S({"n", "8", "8", "8"}), S({"o", "4", "3", "3"})}, {{"groups", 2}},
                  {"groups = 2 must be positive and divide the o output channels of 'weight'",
                   "floormod(o, 2) == 0 cannot be proven"});
  ExpectTypeError("nn.conv2d", {T({1, 3, 8, 8}), S({"8", "3", "k", "3"})}, {},
                  {"the kernel extent (dimension 2 of 'weight' (argument 1)) must be static, "
                   "got k"});
}

TEST(Conv3DOpTest, SymbolicBatch) {
  ExpectType(S({"n", "4", "4", "6", "6"}), "nn.conv3d",
             {S({"n", "2", "6", "8", "8"}), T({4, 2, 3, 3, 3})});
}

TEST(Conv3DOpTest, SlidesTheKernelOverDepthToo) {
  // D: (6 + 1 + 1 - 3) / 1 + 1 = 6; H: (8 - 3) / 2 + 1 = 3; W: (8 - 3 * 2 + 1) / 1 + 1 = 4.
  ExpectType(T({1, 4, 6, 3, 4}), "nn.conv3d", {T({1, 2, 6, 8, 8}), T({4, 2, 3, 3, 3})},
             {{"padding", Array<int64_t>{1, 0, 0, 1, 0, 0}},
              {"strides", Array<int64_t>{1, 2, 1}},
              {"dilation", Array<int64_t>{1, 1, 2}}});
  ExpectType(T({1, 8, 4, 4, 4}), "nn.conv3d", {T({1, 4, 6, 6, 6}), T({8, 2, 3, 3, 3})},
             {{"groups", 2}});
  ExpectTypeError("nn.conv3d", {T({1, 3, 8, 8}), T({8, 3, 3, 3})}, {},
                  {"'data' (argument 0) must be 5-D (N, C, D, H, W)"});
  ExpectTypeError("nn.conv3d", {T({1, 3, 4, 4, 4}), T({8, 3, 3, 3, 3})},
                  {{"padding", Array<int64_t>{1, 1, 1, 1}}}, {"'padding' must be 6 integers"});
}

TEST(Conv2DTransposeOpTest, InvertsConv2DShapes) {
  ExpectType(T({1, 2, 10, 10}), "nn.conv2d_transpose", {T({1, 4, 5, 5}), T({4, 2, 3, 3})},
             {{"strides", Array<int64_t>{2, 2}},
              {"padding", Array<int64_t>{1, 1, 1, 1}},
              {"output_padding", Array<int64_t>{1, 1}}});
  ExpectType(T({1, 6, 7, 7}), "nn.conv2d_transpose", {T({1, 4, 5, 5}), T({4, 3, 3, 3})},
             {{"groups", 2}});
  ExpectTypeError("nn.conv2d_transpose", {T({1, 3, 5, 5}), T({4, 2, 3, 3})}, {},
                  {"input channels 3 of 'data' do not match 4", "Tensor[(1, 3, 5, 5), float32]",
                   "Tensor[(4, 2, 3, 3), float32]"});
  ExpectTypeError("nn.conv2d_transpose", {T({1, 4, 5, 5}), T({4, 2, 3, 3})},
                  {{"strides", Array<int64_t>{2, 2}}, {"output_padding", Array<int64_t>{2, 0}}},
                  {"'output_padding' = (2, 0) must be smaller", "data: Tensor[(1, 4, 5, 5)"});
}

TEST(Conv2DTransposeOpTest, SymbolicExtents) {
  ExpectType(S({"n", "2", "10", "10"}), "nn.conv2d_transpose",
             {S({"n", "4", "5", "5"}), T({4, 2, 3, 3})},
             {{"strides", Array<int64_t>{2, 2}},
              {"padding", Array<int64_t>{1, 1, 1, 1}},
              {"output_padding", Array<int64_t>{1, 1}}});
  // (h - 1) * 2 + 3: h * 2 + 1, at least 1 for every h >= 0.
  ExpectType(S({"n", "2", "h * 2 + 1", "w * 2 + 1"}), "nn.conv2d_transpose",
             {S({"n", "4", "h", "w"}), T({4, 2, 3, 3})}, {{"strides", Array<int64_t>{2, 2}}});
  // With padding 1 + 1 the extent is h * 2 - 1, which is -1 for h = 0.
  // Padding 3 on each side of a stride-2 transpose needs h >= 2: sizes are only known >= 1.
  ExpectTypeError(
      "nn.conv2d_transpose", {S({"n", "4", "h", "w"}), T({4, 2, 3, 3})},
      {{"strides", Array<int64_t>{2, 2}}, {"padding", Array<int64_t>{3, 3, 3, 3}}},
      {"padding (3, 3, 3, 3) leaves no output in spatial dimension 0", "cannot be proven"});
  ExpectTypeError("nn.conv2d_transpose", {S({"n", "c", "5", "5"}), T({4, 2, 3, 3})}, {},
                  {"input channels c of 'data' do not match 4 input channels of 'weight'",
                   "c == 4 cannot be proven"});
}

TEST(DenseOpTest, KeepsSymbolicLeadingDimensionsAndProvesK) {
  ExpectType(S({"batch", "seq", "16"}), "nn.dense", {S({"batch", "seq", "64"}), T({16, 64})});
  ExpectType(S({"n", "m"}), "nn.dense", {S({"n", "k * 2"}), S({"m", "2 * k"})});
  ExpectDeferred(S({"n", "16"}), "nn.dense", {S({"n", "k"}), T({16, 64})}, {},
                 {"k == 64: nn.dense: the last dimension k of 'data' does not match K = 64"});
}

TEST(DenseOpTest, MultipliesByTheTransposedWeight) {
  ExpectType(T({2, 5, 8}), "nn.dense", {T({2, 5, 16}), T({8, 16})});
  ExpectTypeError("nn.dense", {T({2, 15}), T({8, 16})}, {},
                  {"last dimension 15 of 'data'", "K = 16 of 'weight'", "Tensor[(2, 15), float32]",
                   "Tensor[(8, 16), float32]"});
}

TEST(BatchNormOpTest, ParametersFollowTheChannels) {
  const ir::Type param = T({3});
  ExpectType(T({1, 3, 4, 4}), "nn.batch_norm", {T({1, 3, 4, 4}), param, param, param, param});
  ExpectTypeError("nn.batch_norm", {T({1, 3, 4, 4}), T({4}), param, param, param}, {},
                  {"'gamma' (argument 1) must have shape (3)", "gamma: Tensor[(4), float32]"});
}

TEST(BatchNormOpTest, SymbolicBatchAndSpatialExtents) {
  const ir::Type param = T({3});
  ExpectType(S({"batch", "3", "h", "w"}), "nn.batch_norm",
             {S({"batch", "3", "h", "w"}), param, param, param, param});
  ExpectType(S({"batch", "seq", "c"}), "nn.batch_norm",
             {S({"batch", "seq", "c"}), S({"c"}), S({"c"}), S({"c"}), S({"c"})}, {{"axis", -1}});
  ExpectTypeError("nn.batch_norm", {S({"batch", "c", "8", "8"}), param, param, param, param}, {},
                  {"'gamma' (argument 1) must have shape (c), the channels of 'data' along axis 1",
                   "3 == c cannot be proven"});
}

TEST(PoolingOpTest, WindowedPools) {
  for (const char* name : {"nn.max_pool2d", "nn.avg_pool2d"}) {
    ExpectType(T({1, 3, 4, 4}), name, {T({1, 3, 8, 8})},
               {{"pool_size", Array<int64_t>{2, 2}}, {"strides", Array<int64_t>{2, 2}}});
    ExpectTypeError(name, {T({1, 3, 8, 8})}, {{"pool_size", Array<int64_t>{9, 9}}},
                    {"window of extent 9", "does not fit", "data: Tensor[(1, 3, 8, 8)"});
    ExpectTypeError(name, {T({1, 3, 8, 8})}, {{"pool_size", Array<int64_t>{2}}},
                    {"'pool_size' must be 2 integers in [1, 1048576], got (2)"});
  }
  ExpectType(T({1, 3, 8, 8}), "nn.avg_pool2d", {T({1, 3, 8, 8})},
             {{"pool_size", Array<int64_t>{3, 3}},
              {"padding", Array<int64_t>{1, 1, 1, 1}},
              {"count_include_pad", true}});
}

TEST(PoolingOpTest, ThreeDimensionalPools) {
  for (const char* name : {"nn.max_pool3d", "nn.avg_pool3d"}) {
    // D: (7 - 3) / 2 + 1 = 3; H: (8 + 2 - 2) / 2 + 1 = 5; W: 5 - 1 + 1 = 5.
    ExpectType(T({2, 3, 3, 5, 5}), name, {T({2, 3, 7, 8, 5})},
               {{"pool_size", Array<int64_t>{3, 2, 1}},
                {"strides", Array<int64_t>{2, 2, 1}},
                {"padding", Array<int64_t>{0, 1, 0, 0, 1, 0}}});
    ExpectTypeError(name, {T({1, 3, 8, 8, 8})}, {{"pool_size", Array<int64_t>{2, 2}}},
                    {"'pool_size' must be 3 integers"});
  }
}

TEST(PoolingOpTest, CeilModeDropsWindowsStartingInTheRightPadding) {
  auto pool = [](std::vector<int64_t> padding) -> Map<String, Any> {
    return {{"pool_size", Array<int64_t>{2, 2}},
            {"strides", Array<int64_t>{2, 2}},
            {"padding", Array<int64_t>(padding.begin(), padding.end())},
            {"ceil_mode", true}};
  };
  // 5 = 2 + 2 + 1: the partial third window starts inside the input and counts.
  ExpectType(T({1, 1, 3, 3}), "nn.max_pool2d", {T({1, 1, 5, 5})}, pool({0, 0, 0, 0}));
  // 6 + 1 right padding: a fourth window would start in the padding (ONNX/PyTorch drop it).
  ExpectType(T({1, 1, 3, 3}), "nn.max_pool2d", {T({1, 1, 6, 6})}, pool({0, 0, 1, 1}));
  // PyTorch's example: 5 with 1 padding on each side, kernel 3, stride 2.
  ExpectType(T({1, 1, 3, 3}), "nn.avg_pool2d", {T({1, 1, 5, 5})},
             {{"pool_size", Array<int64_t>{3, 3}},
              {"strides", Array<int64_t>{2, 2}},
              {"padding", Array<int64_t>{1, 1, 1, 1}},
              {"ceil_mode", true}});
}

TEST(PoolingOpTest, SymbolicExtents) {
  // (112 + 1 + 1 - 3) / 2 + 1 = 56 under a symbolic batch.
  ExpectType(S({"batch", "64", "56", "56"}), "nn.max_pool2d", {S({"batch", "64", "112", "112"})},
             {{"pool_size", Array<int64_t>{3, 3}},
              {"strides", Array<int64_t>{2, 2}},
              {"padding", Array<int64_t>{1, 1, 1, 1}}});
  // floordiv(h + 1 + 1 - 2, 2) + 1; with ceil_mode and static extents nothing changes.
  ExpectType(S({"n", "c", "floordiv(h, 2) + 1", "floordiv(w, 2) + 1"}), "nn.avg_pool2d",
             {S({"n", "c", "h", "w"})},
             {{"pool_size", Array<int64_t>{2, 2}},
              {"strides", Array<int64_t>{2, 2}},
              {"padding", Array<int64_t>{1, 1, 1, 1}}});
  ExpectType(S({"n", "1", "3", "3"}), "nn.max_pool2d", {S({"n", "1", "6", "6"})},
             {{"pool_size", Array<int64_t>{2, 2}},
              {"strides", Array<int64_t>{2, 2}},
              {"padding", Array<int64_t>{0, 0, 1, 1}},
              {"ceil_mode", true}});
  // Stride 1: the last window starts at h, before the right padding at h + 1.
  ExpectType(S({"n", "c", "h + 1", "w + 1"}), "nn.max_pool2d", {S({"n", "c", "h", "w"})},
             {{"pool_size", Array<int64_t>{2, 2}},
              {"padding", Array<int64_t>{1, 1, 1, 1}},
              {"ceil_mode", true}});
  // D: d + 1 + 1 - 1 + 1.
  ExpectType(S({"n", "c", "d + 2", "1", "1"}), "nn.max_pool3d", {S({"n", "c", "d", "2", "2"})},
             {{"pool_size", Array<int64_t>{1, 2, 2}},
              {"strides", Array<int64_t>{1, 2, 2}},
              {"padding", Array<int64_t>{1, 0, 0, 1, 0, 0}}});
  ExpectType(S({"batch", "512", "1", "1"}), "nn.global_avg_pool2d",
             {S({"batch", "512", "h", "w"})});
}

TEST(PoolingOpTest, SymbolicConstraintsItCannotProveAreErrors) {
  ExpectTypeError("nn.max_pool2d", {S({"n", "c", "h", "w"})}, {{"pool_size", Array<int64_t>{2, 2}}},
                  {"the window of extent 2 (kernel 2, dilation 1) does not fit spatial "
                   "dimension 0 of extent h after padding",
                   "h >= 2 cannot be proven"});
  // Whether the last window starts in the right padding depends on the parity of h.
  ExpectTypeError("nn.max_pool2d", {S({"n", "c", "h", "w"})},
                  {{"pool_size", Array<int64_t>{2, 2}},
                   {"strides", Array<int64_t>{2, 2}},
                   {"padding", Array<int64_t>{1, 1, 1, 1}},
                   {"ceil_mode", true}},
                  {"with ceil_mode, whether the last window of spatial dimension 0 starts in the "
                   "right padding cannot be decided",
                   ">= h + 1 cannot be proven"});
}

TEST(PoolingOpTest, GlobalPools) {
  for (const char* name : {"nn.global_max_pool2d", "nn.global_avg_pool2d"}) {
    ExpectType(T({2, 3, 1, 1}), name, {T({2, 3, 7, 7})});
    ExpectTypeError(name, {T({3, 7, 7})}, {},
                    {"'data' (argument 0) must be 4-D (N, C, H, W), got shape (3, 7, 7)"});
  }
}

TEST(SoftmaxOpTest, KeepsASymbolicType) {
  ExpectType(S({"batch", "heads", "seq", "seq"}), "nn.softmax",
             {S({"batch", "heads", "seq", "seq"})});
  ExpectTypeError("nn.softmax", {S({"n", "m"})}, {{"axis", 2}}, {"'axis' = 2 is out of range"});
}

TEST(SoftmaxOpTest, KeepsTheType) {
  for (const char* name : {"nn.softmax", "nn.log_softmax"}) {
    ExpectType(T({2, 5}), name, {T({2, 5})});
    ExpectType(T({2, 5}), name, {T({2, 5})}, {{"axis", 0}});
    ExpectTypeError(name, {T({2, 5})}, {{"axis", 2}},
                    {"'axis' = 2 is out of range for rank 2", "data: Tensor[(2, 5), float32]"});
  }
}

TEST(AttentionOpTest, KeepsTheLayoutOfQWithTheValueWidth) {
  const Map<String, Any> heads = {{"num_heads", 2}, {"scale", 0.5}};
  // BSNH: (batch 2, seq 3, 2 heads x 4) attending over 5 keys whose values are 2 heads x 3.
  ExpectType(T({2, 3, 6}), "nn.attention", {T({2, 3, 8}), T({2, 5, 8}), T({2, 5, 6}), T({})},
             heads);
  ExpectType(T({2, 3, 6}), "nn.attention",
             {T({2, 3, 8}), T({2, 5, 8}), T({2, 5, 6}), T({2, 1, 1, 5})}, heads);
  // SBNH: (seq, batch, ...); a (seq_q, seq_k) mask.
  Map<String, Any> seq_first = heads;
  seq_first.Set(String("layout"), String("SBNH"));
  ExpectType(T({3, 2, 6}), "nn.attention", {T({3, 2, 8}), T({5, 2, 8}), T({5, 2, 6}), T({3, 5})},
             seq_first);
}

TEST(AttentionOpTest, NamesTheInputThatDoesNotFit) {
  const Map<String, Any> heads = {{"num_heads", 3}, {"scale", 1.0}};
  ExpectTypeError("nn.attention", {T({2, 3, 8}), T({2, 5, 8}), T({2, 5, 8}), T({})}, heads,
                  {"the last dimension 8 of 'q' (argument 0) does not split into num_heads = 3",
                   "q: Tensor[(2, 3, 8), float32]"});
  const Map<String, Any> two = {{"num_heads", 2}, {"scale", 1.0}};
  ExpectTypeError("nn.attention", {T({2, 3, 8}), T({2, 5, 8}), T({2, 4, 8}), T({})}, two,
                  {"'k' and 'v' must have the same sequence length"});
  ExpectTypeError("nn.attention", {T({2, 3, 8}), T({2, 5, 8}), T({2, 5, 8}), T({2, 2, 3, 4})}, two,
                  {"'mask' (2, 2, 3, 4) does not broadcast to the scores", "(2, 2, 3, 5)"});
  ExpectTypeError("nn.attention", {T({2, 3, 8, 1}), T({2, 5, 8}), T({2, 5, 8}), T({})}, two,
                  {"'q' (argument 0) must be 3-D (batch, seq, heads * head_dim)"});
  ExpectTypeError(
      "nn.attention",
      {T({2, 3, 8}, "int32"), T({2, 5, 8}, "int32"), T({2, 5, 8}, "int32"), T({}, "int32")}, two,
      {"'q' must be a floating-point tensor"});
}

TEST(AttentionOpTest, SymbolicBatchAndSequences) {
  const Map<String, Any> heads = {{"num_heads", 4}, {"scale", 0.125}};
  ExpectType(S({"batch", "seq", "32"}), "nn.attention",
             {S({"batch", "seq", "64"}), S({"batch", "kv", "64"}), S({"batch", "kv", "32"}), T({})},
             heads);
  ExpectType(S({"batch", "seq", "32"}), "nn.attention",
             {S({"batch", "seq", "64"}), S({"batch", "kv", "64"}), S({"batch", "kv", "32"}),
              S({"batch", "1", "seq", "kv"})},
             heads);
  // heads * head_dim symbolic: d * 4 splits into 4 heads.
  ExpectType(S({"seq", "b", "d * 4"}), "nn.attention",
             {S({"seq", "b", "d * 4"}), S({"kv", "b", "d * 4"}), S({"kv", "b", "d * 4"}), T({})},
             {{"num_heads", 4}, {"scale", 1.0}, {"layout", "SBNH"}});
}

TEST(AttentionOpTest, SymbolicConstraintsItCannotProveAreErrors) {
  const Map<String, Any> heads = {{"num_heads", 4}, {"scale", 1.0}};
  ExpectTypeError(
      "nn.attention",
      {S({"batch", "seq", "64"}), S({"b2", "kv", "64"}), S({"batch", "kv", "64"}), T({})}, heads,
      {"'q', 'k' and 'v' must have the same batch", "batch == b2 cannot be proven"});
  ExpectTypeError(
      "nn.attention",
      {S({"batch", "seq", "d"}), S({"batch", "kv", "d"}), S({"batch", "kv", "d"}), T({})}, heads,
      {"the last dimension d of 'q' (argument 0) does not split into num_heads = 4 heads",
       "floormod(d, 4) == 0 cannot be proven"});
  ExpectTypeError("nn.attention",
                  {S({"batch", "seq", "64"}), S({"batch", "kv", "64"}), S({"batch", "kv", "64"}),
                   S({"batch", "1", "1", "m"})},
                  heads,
                  {"'mask' (batch, 1, 1, m) does not broadcast to the scores (batch, heads, seq_q, "
                   "seq_k) = (batch, 4, seq, kv)",
                   "m == kv cannot be proven"});
}

TEST(LayerNormOpTest, SymbolicLeadingDimensions) {
  ExpectType(S({"batch", "seq", "768"}), "nn.layer_norm",
             {S({"batch", "seq", "768"}), T({768}), T({768})});
  ExpectType(S({"batch", "seq", "d"}), "nn.layer_norm",
             {S({"batch", "seq", "d"}), S({"seq", "d"}), S({"seq", "d"})}, {{"axis", 1}});
  ExpectTypeError("nn.layer_norm", {S({"batch", "seq", "d"}), T({768}), T({768})}, {},
                  {"'gamma' (argument 1) must have shape (d), the dimensions of 'data' from axis "
                   "2 on; got (768)",
                   "768 == d cannot be proven"});
}

TEST(LayerNormOpTest, ParametersCoverTheNormalizedDims) {
  ExpectType(T({2, 5, 8}), "nn.layer_norm", {T({2, 5, 8}), T({8}), T({8})});
  ExpectType(T({2, 5, 8}), "nn.layer_norm", {T({2, 5, 8}), T({5, 8}), T({5, 8})}, {{"axis", 1}});
  ExpectTypeError(
      "nn.layer_norm", {T({2, 5, 8}), T({8}), T({5})}, {},
      {"'beta' (argument 2) must have shape (8)", "got (5)", "data: Tensor[(2, 5, 8), float32]"});
}

TEST(PadOpTest, PadsInOnnxOrder) {
  ExpectType(T({4, 5}), "nn.pad", {T({2, 3})}, {{"pads", Array<int64_t>{1, 0, 1, 2}}});
  ExpectType(T({2, 2}), "nn.pad", {T({2, 3})}, {{"pads", Array<int64_t>{0, -1, 0, 0}}});
  ExpectType(T({4, 3}), "nn.pad", {T({2, 3})},
             {{"pads", Array<int64_t>{1, 0, 1, 0}}, {"mode", "reflect"}});
  ExpectTypeError("nn.pad", {T({2, 3})},
                  {{"pads", Array<int64_t>{2, 0, 0, 0}}, {"mode", "reflect"}},
                  {"mode 'reflect' pads dimension 0 of 'data' (2, 3) by 2"});
  ExpectTypeError("nn.pad", {T({2, 3})}, {{"pads", Array<int64_t>{1, 1}}},
                  {"'pads' = (1, 1) must have 2 x 2 entries for 'data' (2, 3)"});
  ExpectTypeError("nn.pad", {T({2, 3})}, {{"pads", Array<int64_t>{0, 0, 0, 0}}, {"mode", "wrap"}},
                  {"'mode' = 'wrap' is not one of 'constant', 'reflect', 'edge'",
                   "data: Tensor[(2, 3), float32]"});
}

TEST(PadOpTest, SymbolicExtents) {
  ExpectType(S({"n", "3", "h + 2", "w + 2"}), "nn.pad", {S({"n", "3", "h", "w"})},
             {{"pads", Array<int64_t>{0, 0, 1, 1, 0, 0, 1, 1}}});
  // reflect: only the padded dimensions must be longer than the padding; the batch is not
  // padded, so it need not be proven non-empty.
  ExpectType(S({"n", "3", "12", "12"}), "nn.pad", {S({"n", "3", "8", "8"})},
             {{"pads", Array<int64_t>{0, 0, 2, 2, 0, 0, 2, 2}}, {"mode", "reflect"}});
  ExpectTypeError("nn.pad", {S({"n", "3", "h", "w"})},
                  {{"pads", Array<int64_t>{0, 0, 1, 0, 0, 0, 1, 0}}, {"mode", "reflect"}},
                  {"mode 'reflect' pads dimension 2 of 'data' (n, 3, h, w) by 1, more than its "
                   "extent - 1",
                   "1 < h cannot be proven"});
  // Sizes are at least 1, so edge padding always has an extent to repeat.
  ExpectType(S({"n", "3", "h + 1", "w"}), "nn.pad", {S({"n", "3", "h", "w"})},
             {{"pads", Array<int64_t>{0, 0, 1, 0, 0, 0, 0, 0}}, {"mode", "edge"}});
  ExpectTypeError(
      "nn.pad", {S({"n", "3", "h", "w"})}, {{"pads", Array<int64_t>{0, 0, -1, 0, 0, 0, -1, 0}}},
      {"crops dimension 2 of 'data' (n, 3, h, w) below 0", "h - 2 >= 0 cannot be proven"});
}

TEST(Resize2DOpTest, ResizesHeightAndWidth) {
  ExpectType(T({1, 3, 8, 6}), "image.resize2d", {T({1, 3, 4, 4})},
             {{"size", Array<int64_t>{8, 6}}, {"method", "linear"}});
  ExpectTypeError("image.resize2d", {T({1, 3, 4, 4})},
                  {{"size", Array<int64_t>{8, 6}}, {"method", "bilinear"}},
                  {"'method' = 'bilinear' is not one of 'nearest', 'linear', 'cubic'",
                   "data: Tensor[(1, 3, 4, 4), float32]"});
  ExpectTypeError("image.resize2d", {T({3, 4, 4})}, {{"size", Array<int64_t>{8, 6}}},
                  {"'data' (argument 0) must be 4-D (N, C, H, W), got shape (3, 4, 4)"});
  ExpectType(T({1, 3, 2, 6}), "image.resize2d", {T({1, 3, 4, 4})},
             {{"size", Array<int64_t>{2, 6}}, {"scales", Array<double>{0.6, 1.5}}});
  ExpectTypeError("image.resize2d", {T({1, 3, 4, 4})},
                  {{"size", Array<int64_t>{2, 6}}, {"scales", Array<double>{0.6}}},
                  {"'scales' must be two positive values [H, W]"});
}

TEST(GridSampleOpTest, SamplesAtTheGridPositions) {
  ExpectType(T({2, 3, 5, 7}), "image.grid_sample", {T({2, 3, 4, 4}), T({2, 5, 7, 2})},
             {{"method", "bicubic"}, {"padding_mode", "reflection"}});
  ExpectTypeError("image.grid_sample", {T({2, 3, 4, 4}), T({1, 5, 7, 2})}, {},
                  {"'grid' (1, 5, 7, 2) must be (N, H_out, W_out, 2) for 'data' (2, 3, 4, 4)"});
  ExpectTypeError("image.grid_sample", {T({2, 3, 4, 4}), T({2, 5, 7, 2})},
                  {{"padding_mode", "wrap"}},
                  {"'padding_mode' = 'wrap' is not one of 'zeros', 'border', 'reflection'"});
}

TEST(ImageOpTest, SymbolicBatchAndExtents) {
  ExpectType(S({"n", "3", "8", "6"}), "image.resize2d", {S({"n", "3", "h", "w"})},
             {{"size", Array<int64_t>{8, 6}}});
  ExpectType(S({"n", "3", "ho", "wo"}), "image.grid_sample",
             {S({"n", "3", "h", "w"}), S({"n", "ho", "wo", "2"})});
  ExpectTypeError("image.grid_sample", {S({"n", "3", "4", "4"}), S({"m", "5", "7", "2"})}, {},
                  {"'grid' (m, 5, 7, 2) must be (N, H_out, W_out, 2) for 'data' (n, 3, 4, 4)",
                   "m == n cannot be proven"});
}

}  // namespace
}  // namespace op
}  // namespace kiln

// The core op set as a whole: every op has a schema, a type relation and the pattern kind
// FuseOps expects, and the tests of this directory cover exactly these ops.
#include <kiln/ir/op.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

namespace kiln {
namespace op {
namespace {

using ir::OpPattern;

TEST(CoreOpRegistryTest, EveryCoreOpHasSchemaRelationAndPattern) {
  const std::map<std::string, OpPattern> patterns = {
      {"nn.conv2d", OpPattern::kOutEWiseFusable},
      {"nn.conv2d_transpose", OpPattern::kOutEWiseFusable},
      {"nn.conv3d", OpPattern::kOutEWiseFusable},
      {"nn.dense", OpPattern::kOutEWiseFusable},
      {"matmul", OpPattern::kOutEWiseFusable},
      {"nn.batch_matmul", OpPattern::kOutEWiseFusable},
      {"nn.max_pool2d", OpPattern::kOutEWiseFusable},
      {"nn.avg_pool2d", OpPattern::kOutEWiseFusable},
      {"nn.max_pool3d", OpPattern::kOutEWiseFusable},
      {"nn.avg_pool3d", OpPattern::kOutEWiseFusable},
      {"nn.global_max_pool2d", OpPattern::kOutEWiseFusable},
      {"nn.global_avg_pool2d", OpPattern::kOutEWiseFusable},
      {"nn.softmax", OpPattern::kOpaque},
      {"nn.attention", OpPattern::kOpaque},
      {"nn.log_softmax", OpPattern::kOpaque},
      {"nn.layer_norm", OpPattern::kOpaque},
      {"nn.batch_norm", OpPattern::kOpaque},
      {"sum", OpPattern::kCommReduce},
      {"argmin", OpPattern::kCommReduce},
      {"concatenate", OpPattern::kInjective},
      {"split", OpPattern::kInjective},
      {"strided_slice", OpPattern::kInjective},
      {"take", OpPattern::kInjective},
      {"gather_elements", OpPattern::kInjective},
      {"gather_nd", OpPattern::kInjective},
      {"scatter_elements", OpPattern::kOpaque},
      {"scatter_nd", OpPattern::kOpaque},
      {"cumsum", OpPattern::kOpaque},
      {"arange", OpPattern::kOpaque},
      {"range", OpPattern::kOpaque},
      {"define_sizes", OpPattern::kOpaque},
      {"reshape_sizes", OpPattern::kOpaque},
      {"nonzero", OpPattern::kOpaque},
      {"dynamic_slice", OpPattern::kOpaque},
      {"sum_to", OpPattern::kOpaque},
      {"dynamic_pad", OpPattern::kOpaque},
      {"size_values", OpPattern::kOpaque},
      {"image.resize2d_scaled", OpPattern::kInjective},
      {"topk", OpPattern::kOpaque},
      {"nn.lstm", OpPattern::kOpaque},
      {"nn.gru", OpPattern::kOpaque},
      {"nn.rnn", OpPattern::kOpaque},
      {"det", OpPattern::kOpaque},
      {"squeeze", OpPattern::kInjective},
      {"unsqueeze", OpPattern::kInjective},
      {"expand", OpPattern::kInjective},
      {"nn.pad", OpPattern::kInjective},
      {"image.resize2d", OpPattern::kInjective},
      {"image.grid_sample", OpPattern::kOpaque},
      {"reshape", OpPattern::kInjective},
      {"transpose", OpPattern::kInjective},
      {"where", OpPattern::kBroadcast},
      {"cast", OpPattern::kElemWise},
      {"nn.conv2d_nchwc", OpPattern::kOutEWiseFusable},
      {"block_channels", OpPattern::kInjective},
      {"unblock_channels", OpPattern::kInjective},
      {"annotation.compiler_begin", OpPattern::kOpaque},
      {"annotation.compiler_end", OpPattern::kOpaque},
  };
  for (const auto& [name, pattern] : patterns) {
    EXPECT_EQ(ir::Op::Get(name).pattern(), pattern) << name;
  }
  for (const std::string& name : ir::Op::ListNames()) {
    const ir::Op op = ir::Op::Get(name);
    EXPECT_NE(op.schema(), nullptr) << name;
    EXPECT_TRUE(op.GetAttr<Function>(ir::op_attr::kFInferType).has_value()) << name;
    EXPECT_TRUE(op.GetAttr<int64_t>(ir::op_attr::kPatternKind).has_value()) << name;
  }
  EXPECT_EQ(ir::Op::ListNames().size(), 130U)
      << "a new core op needs tests here and in docs/ops.md";
}

}  // namespace
}  // namespace op
}  // namespace kiln

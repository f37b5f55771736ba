// Type relations of the tensor ops (src/ops/tensor/): elementwise and broadcast, reshape,
// transpose, matmul, reductions, concatenate/split, strided_slice, take, squeeze/unsqueeze,
// expand, gather/scatter (elements and nd), cumsum, topk, det.
#include <limits>

#include "op/op_test_util.h"

namespace kiln {
namespace op {
namespace {

using ir::TupleType;
using testing::ExpectType;
using testing::ExpectTypeError;
using testing::S;
using testing::T;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(ElemwiseOpTest, UnaryOpsKeepTheType) {
  for (const char* name : {"negative",
                           "abs",
                           "exp",
                           "log",
                           "sqrt",
                           "reciprocal",
                           "erf",
                           "floor",
                           "ceil",
                           "round",
                           "sign",
                           "sin",
                           "cos",
                           "tan",
                           "asin",
                           "acos",
                           "atan",
                           "sinh",
                           "cosh",
                           "asinh",
                           "acosh",
                           "atanh",
                           "sigmoid",
                           "tanh",
                           "logical_not",
                           "nn.relu",
                           "nn.gelu",
                           "nn.softplus",
                           "nn.leaky_relu",
                           "nn.elu",
                           "nn.hard_sigmoid",
                           "clip"}) {
    ExpectType(T({2, 3}), name, {T({2, 3})});
    EXPECT_EQ(ir::Op::Get(name).pattern(), ir::OpPattern::kElemWise) << name;
  }
  ExpectType(T({4}), "clip", {T({4})}, {{"a_min", 0}, {"a_max", 6}});
  ExpectTypeError("nn.relu", {TupleType({T({2})})}, {}, {"'data' (argument 0) must be a tensor"});
}

TEST(ElemwiseOpTest, BinaryOpsBroadcast) {
  for (const char* name :
       {"add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "mod", "left_shift",
        "right_shift", "logical_and", "logical_or", "logical_xor"}) {
    ExpectType(T({2, 4, 3}), name, {T({2, 1, 3}), T({4, 1})});
    EXPECT_EQ(ir::Op::Get(name).pattern(), ir::OpPattern::kBroadcast) << name;
  }
  for (const char* name :
       {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}) {
    ExpectType(T({2, 3}, "bool"), name, {T({2, 3}), T({3})});
  }
  ExpectTypeError("add", {T({2, 3}), T({4, 3})}, {},
                  {"'rhs' (argument 1)", "(2, 3)", "(4, 3)", "do not broadcast"});
  ExpectType(T({3, 4}, "int64"), "mod", {T({3, 4}, "int64"), T({4}, "int64")}, {{"fmod", true}});
  ExpectTypeError("multiply", {T({2}), T({2}, "int32")}, {},
                  {"'lhs' (argument 0)", "'rhs' (argument 1)", "float32 and int32"});
}

TEST(ElemwiseOpTest, SymbolicExtentsBroadcastWhenEqualOrAgainstOne) {
  ExpectType(S({"n", "3"}), "add", {S({"n", "3"}), T({3})});
  ExpectType(S({"n", "m"}), "multiply", {S({"n", "1"}), S({"1", "m"})});
  ExpectType(S({"batch", "seq", "64"}), "add", {S({"batch", "seq", "64"}), S({"1", "seq", "1"})});
  // Equal once simplified: the analyzer proves it, whatever the spelling.
  ExpectType(S({"n * 2 + 2"}), "subtract", {S({"n * 2 + 2"}), S({"(n + 1) * 2"})});
  ExpectType(S({"n", "3"}, "bool"), "less", {S({"n", "3"}), S({"n", "1"})});
  ExpectType(S({"n", "4"}), "where", {S({"n", "1"}, "bool"), T({4}), S({"n", "4"})});
  // Two sizes that may differ at run time are named, not silently assumed equal.
  ExpectTypeError("add", {S({"n", "3"}), S({"m", "3"})}, {},
                  {"extent m of 'rhs' (argument 1) and n cannot be proven to broadcast"});
  ExpectTypeError("add", {S({"n"}), T({4})}, {}, {"extent 4 of 'rhs' (argument 1) and n"});
}

TEST(ElemwiseOpTest, WhereAndCast) {
  ExpectType(T({2, 3}), "where", {T({2, 1}, "bool"), T({1, 3}), T({3})});
  ExpectTypeError("where", {T({2}), T({2}), T({2})}, {},
                  {"'condition' (argument 0) must be bool", "Tensor[(2), float32]"});
  ExpectType(T({2, 3}, "int64"), "cast", {T({2, 3})}, {{"dtype", "int64"}});
}

TEST(ReshapeOpTest, CopiesAndInfersExtents) {
  ExpectType(T({2, 12}), "reshape", {T({2, 3, 4})}, {{"newshape", Array<int64_t>{0, -1}}});
  ExpectTypeError("reshape", {T({2, 3, 4})}, {{"newshape", Array<int64_t>{5, -1}}},
                  {"newshape (5, -1)", "24 elements of 'data'", "Tensor[(2, 3, 4), float32]"});
}

TEST(TransposeOpTest, PermutesSymbolicExtents) {
  ExpectType(S({"batch", "4", "seq", "16"}), "transpose", {S({"batch", "seq", "4", "16"})},
             {{"axes", Array<int64_t>{0, 2, 1, 3}}});
  ExpectType(S({"m", "n"}), "transpose", {S({"n", "m"})});
}

TEST(TransposeOpTest, ReversesOrPermutes) {
  ExpectType(T({4, 3, 2}), "transpose", {T({2, 3, 4})});
  ExpectType(T({2, 4, 3}), "transpose", {T({2, 3, 4})}, {{"axes", Array<int64_t>{0, -1, 1}}});
  ExpectTypeError("transpose", {T({2, 3, 4})}, {{"axes", Array<int64_t>{0, 0, 1}}},
                  {"(0, 0, 1) is not a permutation", "data: Tensor[(2, 3, 4), float32]"});
}

TEST(MatmulOpTest, FollowsNumpy) {
  ExpectType(T({3, 5}), "matmul", {T({3, 4}), T({4, 5})});
  ExpectType(T({5}), "matmul", {T({4}), T({4, 5})});
  ExpectType(T({3}), "matmul", {T({3, 4}), T({4})});
  ExpectType(T({}), "matmul", {T({4}), T({4})});
  ExpectType(T({2, 5, 3, 6}), "matmul", {T({2, 1, 3, 4}), T({5, 4, 6})});
  ExpectTypeError(
      "matmul", {T({3, 4}), T({5, 6})}, {},
      {"4 of 'lhs'", "5 of 'rhs'", "Tensor[(3, 4), float32]", "Tensor[(5, 6), float32]"});
  ExpectTypeError("matmul", {T({2, 3, 4}), T({3, 4, 5})}, {},
                  {"batch dimensions (2) of 'lhs' and (3) of 'rhs'"});
  ExpectTypeError("matmul", {T({}), T({4})}, {}, {"'lhs' and 'rhs' must be at least 1-D"});
}

TEST(MatmulOpTest, BatchMatmulTransposesAndBroadcastsBatch) {
  ExpectType(T({2, 3, 5}), "nn.batch_matmul", {T({2, 3, 4}), T({1, 4, 5})});
  ExpectType(T({2, 3, 5}), "nn.batch_matmul", {T({2, 3, 4}), T({2, 5, 4})},
             {{"transpose_b", true}});
  ExpectType(T({2, 3, 5}), "nn.batch_matmul", {T({2, 4, 3}), T({2, 4, 5})},
             {{"transpose_a", true}});
  ExpectTypeError("nn.batch_matmul", {T({3, 4}), T({2, 4, 5})}, {},
                  {"'lhs' (argument 0) must be 3-D", "got shape (3, 4)"});
  ExpectTypeError("nn.batch_matmul", {T({2, 3, 4}), T({3, 4, 5})}, {},
                  {"batch dimensions (2) of 'lhs' and (3) of 'rhs'"});
}

TEST(ReduceOpTest, ReducesAxesKeepingDimsByDefault) {
  for (const char* name : {"sum", "mean", "max", "min", "prod"}) {
    ExpectType(T({1, 1, 1}), name, {T({2, 3, 4})});
    ExpectType(T({3}), name, {T({2, 3, 4})},
               {{"axis", Array<int64_t>{0, -1}}, {"keepdims", false}});
    EXPECT_EQ(ir::Op::Get(name).pattern(), ir::OpPattern::kCommReduce) << name;
  }
  ExpectType(T({2, 3, 1}), "mean", {T({2, 3, 4})}, {{"axis", Array<int64_t>{-1}}});
  ExpectTypeError("sum", {T({2, 3, 4})}, {{"axis", Array<int64_t>{3}}},
                  {"'axis' = 3 is out of range for rank 3", "Tensor[(2, 3, 4), float32]"});
  ExpectTypeError("max", {T({2, 3, 4})}, {{"axis", Array<int64_t>{1, -2}}},
                  {"(1, -2) repeats axis 1", "data: Tensor[(2, 3, 4), float32]"});
}

TEST(ReduceOpTest, KeepsOrDropsSymbolicExtents) {
  ExpectType(S({"batch", "seq", "1"}), "mean", {S({"batch", "seq", "64"})},
             {{"axis", Array<int64_t>{-1}}});
  ExpectType(S({"seq"}), "sum", {S({"batch", "seq"})},
             {{"axis", Array<int64_t>{0}}, {"keepdims", false}});
  ExpectType(S({"batch", "1"}, "int64"), "argmax", {S({"batch", "n"})}, {{"axis", 1}});
}

TEST(ReduceOpTest, ArgReductionsGiveInt64) {
  ExpectType(T({1, 3, 4}, "int64"), "argmax", {T({2, 3, 4})});
  ExpectType(T({2, 3}, "int64"), "argmin", {T({2, 3, 4})}, {{"axis", -1}, {"keepdims", false}});
  ExpectTypeError("argmax", {T({2, 3})}, {{"axis", 2}},
                  {"'axis' = 2 is out of range for rank 2", "data: Tensor[(2, 3), float32]"});
}

TEST(ConcatenateOpTest, JoinsAlongAxis) {
  ExpectType(T({2, 8}), "concatenate", {TupleType({T({2, 3}), T({2, 5})})}, {{"axis", 1}});
  ExpectType(T({3, 2}), "concatenate", {TupleType({T({1, 2}), T({2, 2})})});
  ExpectTypeError("concatenate", {TupleType({T({2, 3}), T({4, 5})})}, {{"axis", 1}},
                  {"field 1 of 'data' (argument 0)", "(4, 5)", "(2, 3)", "outside axis 1"});
  ExpectTypeError("concatenate", {TupleType({T({2}), T({2}, "int32")})}, {},
                  {"field 1 of 'data' (argument 0) has dtype int32"});
  ExpectTypeError("concatenate", {T({2})}, {}, {"'data' (argument 0) must be a tuple"});
}

TEST(ConcatenateOpTest, SplitCutsIntoSections) {
  ExpectType(TupleType({T({1, 4}), T({2, 4}), T({3, 4})}), "split", {T({6, 4})},
             {{"sections", Array<int64_t>{1, 2, 3}}});
  ExpectType(TupleType({T({6, 2}), T({6, 2})}), "split", {T({6, 4})},
             {{"axis", -1}, {"sections", Array<int64_t>{2, 2}}});
  ExpectTypeError("split", {T({6, 4})}, {{"sections", Array<int64_t>{1, 2}}},
                  {"'sections' = (1, 2)", "adding up to 6", "data: Tensor[(6, 4), float32]"});
}

TEST(StridedSliceOpTest, ClampsLikeOnnxSlice) {
  const std::vector<ir::Type> data = {T({10, 8})};
  auto slice = [&](std::vector<int64_t> begin, std::vector<int64_t> end,
                   std::vector<int64_t> strides) -> Map<String, Any> {
    return {{"begin", Array<int64_t>(begin.begin(), begin.end())},
            {"end", Array<int64_t>(end.begin(), end.end())},
            {"strides", Array<int64_t>(strides.begin(), strides.end())}};
  };
  ExpectType(T({9, 8}), "strided_slice", data,
             {{"begin", Array<int64_t>{1}}, {"end", Array<int64_t>{kMax}}});
  ExpectType(T({10, 8}), "strided_slice", data, slice({-1}, {kMin}, {-1}));
  ExpectType(T({3, 8}), "strided_slice", data, slice({8}, {1}, {-3}));
  ExpectType(T({4, 8}), "strided_slice", data, slice({0}, {10}, {3}));
  ExpectType(T({0, 8}), "strided_slice", data, slice({5}, {2}, {1}));
  ExpectType(T({10, 4}), "strided_slice", data, slice({-100, 2}, {100, -2}, {1, 1}));
  ExpectType(T({7, 8}), "strided_slice", data,
             {{"begin", Array<int64_t>{0, 1}},
              {"end", Array<int64_t>{10, 8}},
              {"axes", Array<int64_t>{1, 0}}});
  ExpectTypeError("strided_slice", data, slice({0}, {4}, {0}),
                  {"'strides' = (0) has a 0 step", "data: Tensor[(10, 8), float32]"});
  ExpectTypeError("strided_slice", data, slice({0, 0}, {4}, {1, 1}),
                  {"'begin' (0, 0), 'end' (4)", "data: Tensor[(10, 8), float32]"});
}

TEST(TakeOpTest, GathersAlongAxis) {
  ExpectType(T({5, 2, 6, 3}), "take", {T({5, 4, 3}), T({2, 6}, "int64")}, {{"axis", 1}});
  ExpectType(T({7, 4, 3}), "take", {T({5, 4, 3}), T({7}, "int32")});
  ExpectType(T({4, 3}), "take", {T({5, 4, 3}), T({}, "int64")});
  ExpectTypeError("take", {T({5, 4}), T({2})}, {},
                  {"'indices' (argument 1) must be int32 or int64, got float32",
                   "data: Tensor[(5, 4), float32]"});
}

TEST(SqueezeOpTest, RemovesAndInsertsUnitDims) {
  ExpectType(T({3, 2}), "squeeze", {T({1, 3, 1, 2})});
  ExpectType(T({1, 3, 2}), "squeeze", {T({1, 3, 1, 2})}, {{"axes", Array<int64_t>{-2}}});
  ExpectTypeError("squeeze", {T({1, 3, 1, 2})}, {{"axes", Array<int64_t>{1}}},
                  {"cannot squeeze axis 1 of 'data' (1, 3, 1, 2): its extent is 3"});
  ExpectType(T({1, 3, 4, 1}), "unsqueeze", {T({3, 4})}, {{"axes", Array<int64_t>{0, 3}}});
  ExpectType(T({3, 4, 1}), "unsqueeze", {T({3, 4})}, {{"axes", Array<int64_t>{-1}}});
  ExpectTypeError("unsqueeze", {T({3, 4})}, {{"axes", Array<int64_t>{3}}},
                  {"'axes' = 3 is out of range for rank 3", "data: Tensor[(3, 4), float32]"});
}

TEST(ExpandOpTest, BroadcastsBothWays) {
  ExpectType(T({2, 3, 4}), "expand", {T({3, 1})}, {{"shape", Array<int64_t>{2, 1, 4}}});
  ExpectTypeError("expand", {T({3, 2})}, {{"shape", Array<int64_t>{4}}},
                  {"'data' of shape (3, 2)", "'shape' = (4)"});
}

TEST(GatherElementsOpTest, TakesTheIndicesShape) {
  ExpectType(T({2, 5, 3}), "gather_elements", {T({2, 4, 3}), T({2, 5, 3}, "int64")}, {{"axis", 1}});
  ExpectType(T({1, 2}, "int32"), "gather_elements", {T({3, 3}, "int32"), T({1, 2}, "int32")});
  ExpectTypeError("gather_elements", {T({3, 3}), T({3}, "int64")}, {},
                  {"'indices' (3) must have the rank of 'data' (3, 3)"});
  ExpectTypeError("gather_elements", {T({3, 3}), T({2, 4}, "int64")}, {},
                  {"longer than 'data' (3, 3) along axis 1"});
  ExpectTypeError("gather_elements", {T({3, 3}), T({2, 2})}, {},
                  {"'indices' (argument 1) must be int32 or int64, got float32"});
}

TEST(ScatterElementsOpTest, KeepsTheDataType) {
  ExpectType(T({3, 3}), "scatter_elements", {T({3, 3}), T({2, 3}, "int64"), T({2, 3})},
             {{"axis", 0}, {"reduction", "add"}});
  ExpectTypeError("scatter_elements", {T({3, 3}), T({2, 3}, "int64"), T({3, 3})}, {},
                  {"'updates' must have the shape of 'indices'"});
  ExpectTypeError("scatter_elements", {T({3, 3}), T({2, 3}, "int64"), T({2, 3})},
                  {{"reduction", "sub"}}, {"reduction", "sub"});
}

TEST(GatherNDOpTest, GathersSlicesPerIndexTuple) {
  ExpectType(T({2, 3, 4}), "gather_nd", {T({5, 3, 4}), T({2, 1}, "int64")});
  ExpectType(T({2}), "gather_nd", {T({2, 2}), T({2, 2}, "int64")});
  ExpectType(T({2, 4}), "gather_nd", {T({2, 3, 4}), T({2, 1}, "int64")}, {{"batch_dims", 1}});
  ExpectTypeError("gather_nd", {T({2, 2}), T({1, 3}, "int64")}, {},
                  {"index tuples of 3 elements", "do not fit 'data' (2, 2)"});
}

TEST(ScatterNDOpTest, UpdatesMatchTheGatheredShape) {
  ExpectType(T({4, 3}), "scatter_nd", {T({4, 3}), T({2, 1}, "int64"), T({2, 3})});
  ExpectTypeError("scatter_nd", {T({4, 3}), T({2, 1}, "int64"), T({2, 4})}, {},
                  {"'updates' must have shape (2, 3)"});
}

TEST(TopKOpTest, GivesValuesAndInt64Positions) {
  ExpectType(TupleType({T({2, 3, 4}), T({2, 3, 4}, "int64")}), "topk", {T({2, 5, 4})},
             {{"k", 3}, {"axis", 1}});
  ExpectType(TupleType({T({2}, "int32"), T({2}, "int64")}), "topk", {T({7}, "int32")}, {{"k", 2}});
  ExpectTypeError("topk", {T({2, 5})}, {{"k", 6}}, {"'k' = 6 must lie in [0, 5]"});
}

TEST(DetOpTest, ReducesTheTrailingSquareMatrices) {
  ExpectType(T({2, 3}), "det", {T({2, 3, 4, 4})});
  ExpectType(T({}, "float64"), "det", {T({3, 3}, "float64")});
  ExpectTypeError("det", {T({2, 3, 4})}, {}, {"'data' (2, 3, 4) must end in square matrices"});
}

TEST(CumsumOpTest, KeepsTheTypeAndChecksTheAxis) {
  ExpectType(T({2, 3}, "int32"), "cumsum", {T({2, 3}, "int32")}, {{"axis", -1}});
  ExpectTypeError("cumsum", {T({2, 3})}, {{"axis", 2}}, {"'axis' = 2 is out of range"});
}

}  // namespace
}  // namespace op
}  // namespace kiln

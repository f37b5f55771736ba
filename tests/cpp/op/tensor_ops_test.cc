// Type relations of the tensor ops (src/ops/tensor/): elementwise and broadcast, reshape,
// transpose, matmul, reductions, concatenate/split, strided_slice, take, squeeze/unsqueeze,
// expand, gather/scatter (elements and nd), cumsum, topk, det.
#include <limits>

#include "op/op_test_util.h"

namespace kiln {
namespace op {
namespace {

using ir::TupleType;
using testing::ExpectDeferred;
using testing::ExpectType;
using testing::ExpectTypeError;
using testing::S;
using testing::T;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(ElemwiseOpTest, UnaryOpsKeepTheType) {
  for (const char* name : {"negative",     "abs",           "exp",     "log",
                           "sqrt",         "reciprocal",    "erf",     "floor",
                           "ceil",         "round",         "sign",    "sin",
                           "cos",          "tan",           "asin",    "acos",
                           "atan",         "sinh",          "cosh",    "asinh",
                           "acosh",        "atanh",         "sigmoid", "tanh",
                           "logical_not",  "nn.relu",       "nn.gelu", "nn.silu",
                           "nn.softplus",  "nn.leaky_relu", "nn.elu",  "nn.hard_sigmoid",
                           "nn.hardswish", "clip"}) {
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
  // Two sizes that may differ are taken to be equal, which a run checks.
  ExpectDeferred(S({"n", "3"}), "add", {S({"n", "3"}), S({"m", "3"})}, {},
                 {"n == m: add: extent m of 'rhs' (argument 1) does not broadcast against n"});
  ExpectDeferred(T({4}), "add", {S({"n"}), T({4})}, {}, {"n == 4"});
  // Sizes proven to differ are an error now.
  ExpectTypeError("add", {S({"n"}), S({"n + 1"})}, {},
                  {"extent n + 1 of 'rhs' (argument 1) and n differ, and neither is 1"});
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

TEST(ElemwiseOpTest, CastKeepsASymbolicShape) {
  ExpectType(S({"n", "3"}, "int64"), "cast", {S({"n", "3"})}, {{"dtype", "int64"}});
}

TEST(ReshapeOpTest, CopiesAndInfersSymbolicExtents) {
  // 0 copies batch; -1 is floordiv(batch * 512, batch) = 512.
  ExpectType(S({"batch", "512"}), "reshape", {S({"batch", "512", "1", "1"})},
             {{"newshape", Array<int64_t>{0, -1}}});
  // -1 is floordiv(batch * seq * 768, 12 * 64) = batch * seq.
  ExpectType(S({"batch * seq", "12", "64"}), "reshape", {S({"batch * seq", "768"})},
             {{"newshape", Array<int64_t>{-1, 12, 64}}});
  ExpectType(S({"batch", "seq", "768"}), "reshape", {S({"batch", "seq", "12", "64"})},
             {{"newshape", Array<int64_t>{0, 0, -1}}});
  // No -1: the element counts batch * seq * 768 are proven equal.
  ExpectType(S({"batch", "seq", "12", "64"}), "reshape", {S({"batch", "seq", "768"})},
             {{"newshape", Array<int64_t>{0, 0, 12, 64}}});
}

/// A sizes attribute: each item an int, or the size expression its text parses to.
Array<Any> Sizes(const std::vector<std::string>& items) {
  Array<Any> sizes;
  for (const std::string& item : items) {
    const arith::SizeExpr extent = arith::ParseSizeExpr(item);
    sizes.push_back(extent.as_int().has_value() ? Any(*extent.as_int()) : Any(extent));
  }
  return sizes;
}

TEST(ReshapeOpTest, TakesASymbolicTargetShape) {
  // What an exporter's Shape -> Gather -> Concat -> Reshape chain folds to.
  ExpectType(S({"batch", "seq", "4", "16"}), "reshape", {S({"batch", "seq", "64"})},
             {{"newshape", Sizes({"batch", "seq", "4", "16"})}});
  ExpectType(S({"seq", "batch * 4", "16"}), "reshape", {S({"seq", "batch", "64"})},
             {{"newshape", Sizes({"seq", "batch * 4", "-1"})}});
  ExpectTypeError("reshape", {S({"batch", "seq", "64"})},
                  {{"newshape", Sizes({"batch", "seq", "32"})}},
                  {"newshape (batch, seq, 32) has batch * seq * 32 elements, 'data' batch * seq * "
                   "64"});
}

TEST(ReshapeOpTest, SymbolicElementCountsItCannotProveAreErrors) {
  // n * 3 is even only for even n.
  ExpectTypeError("reshape", {S({"n", "3"})}, {{"newshape", Array<int64_t>{2, -1}}},
                  {"newshape (2, -1) cannot hold the n * 3 elements of 'data'",
                   "floormod(n * 3, 2) == 0 cannot be proven", "data: Tensor[(n, 3), float32]"});
  ExpectTypeError("reshape", {S({"batch * seq", "768"})}, {{"newshape", Array<int64_t>{-1, 5}}},
                  {"newshape (-1, 5) cannot hold the batch * seq * 768 elements of 'data'"});
  // Sizes are at least 1, so the element counts provably differ.
  ExpectTypeError("reshape", {S({"n", "4"})}, {{"newshape", Array<int64_t>{0, 8}}},
                  {"newshape (0, 8) has n * 8 elements, 'data' n * 4"});
  // The 0 copies the static extent 0: the other extents hold no elements, so -1 is undefined.
  ExpectTypeError("reshape", {S({"n", "0"})}, {{"newshape", Array<int64_t>{-1, 0}}},
                  {"newshape (-1, 0) cannot hold the 0 elements of 'data'"});
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

TEST(MatmulOpTest, SymbolicBatchDimensionsAndProvenK) {
  ExpectType(S({"batch", "seq", "32"}), "matmul", {S({"batch", "seq", "64"}), T({64, 32})});
  ExpectType(S({"batch", "heads", "seq", "seq"}), "matmul",
             {S({"batch", "heads", "seq", "64"}), S({"batch", "heads", "64", "seq"})});
  // Batch dimensions broadcast as the elementwise ops do; K is proven equal (k * 2 = 2 * k).
  ExpectType(S({"b", "h", "s", "t"}), "matmul",
             {S({"b", "1", "s", "k * 2"}), S({"h", "2 * k", "t"})});
  ExpectType(S({"seq"}), "matmul", {S({"seq", "64"}), T({64})});
  ExpectType(S({"b", "s", "t"}), "nn.batch_matmul", {S({"b", "s", "64"}), S({"b", "t", "64"})},
             {{"transpose_b", true}});
  ExpectDeferred(S({"n", "8"}), "matmul", {S({"n", "k"}), T({64, 8})}, {},
                 {"k == 64: matmul: the contracted dimension k of 'lhs' does not match 64"});
  ExpectDeferred(S({"b", "3", "5"}), "matmul", {S({"b", "3", "4"}), S({"c", "4", "5"})}, {},
                 {"b == c"});
  ExpectTypeError("matmul", {S({"n", "k"}), S({"k + 1", "8"})}, {},
                  {"the contracted dimension k of 'lhs' does not match k + 1 of 'rhs'"});
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

TEST(ConcatenateOpTest, SumsSymbolicExtentsAlongTheAxis) {
  ExpectType(S({"batch", "seq + 1", "64"}), "concatenate",
             {TupleType({S({"batch", "seq", "64"}), S({"batch", "1", "64"})})}, {{"axis", 1}});
  // seq + seq + 1, simplified.
  ExpectType(S({"b", "seq * 2 + 1", "64"}), "concatenate",
             {TupleType({S({"b", "seq", "64"}), S({"b", "seq", "64"}), S({"b", "1", "64"})})},
             {{"axis", -2}});
  ExpectType(S({"b", "n"}), "concatenate", {TupleType({S({"b", "n"})})}, {{"axis", 1}});
  ExpectDeferred(S({"b", "seq * 2"}), "concatenate",
                 {TupleType({S({"b", "seq"}), S({"c", "seq"})})}, {{"axis", 1}},
                 {"c == b: concatenate: field 1 of 'data' (argument 0) has shape (c, seq), which "
                  "differs from field 0's (b, seq) outside axis 1"});
  ExpectType(TupleType({S({"n", "2"}), S({"n", "4"})}), "split", {S({"n", "6"})},
             {{"axis", 1}, {"sections", Array<int64_t>{2, 4}}});
  // Sections that may add up are checked at run time, like sections read then.
  ExpectDeferred(TupleType({T({1}), T({2})}), "split", {S({"n"})},
                 {{"sections", Array<int64_t>{1, 2}}},
                 {"3 == n", "'sections' = (1, 2) must be non-negative sizes adding up to n"});
  ExpectDeferred(TupleType({S({"a"}), S({"b"})}), "split", {T({5})},
                 {{"sections", Sizes({"a", "b"})}}, {"a + b == 5"});
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

TEST(StridedSliceOpTest, ClampsSymbolicExtentsLikeOnnxSlice) {
  const std::vector<ir::Type> data = {S({"batch", "seq", "64"})};
  auto slice = [](int64_t begin, int64_t end, int64_t step) -> Map<String, Any> {
    return {{"begin", Array<int64_t>{begin}},
            {"end", Array<int64_t>{end}},
            {"axes", Array<int64_t>{1}},
            {"strides", Array<int64_t>{step}}};
  };
  ExpectType(
      S({"batch", "seq", "32"}), "strided_slice", data,
      {{"begin", Array<int64_t>{0}}, {"end", Array<int64_t>{32}}, {"axes", Array<int64_t>{2}}});
  // x[:, 1:]: seq - 1 elements, and none when seq is 0.
  // seq >= 1 (sizes are at least 1): x[1:] is seq - 1 long and x[:1] one long.
  ExpectType(S({"batch", "seq - 1", "64"}), "strided_slice", data, slice(1, kMax, 1));
  // x[:, 1:-1]: seq - 2, at least 0.
  ExpectType(S({"batch", "max(seq, 2) - 2", "64"}), "strided_slice", data, slice(1, -1, 1));
  // x[:, :1] and x[:, -4:]: at most 1 and 4 elements.
  ExpectType(S({"batch", "1", "64"}), "strided_slice", data, slice(0, 1, 1));
  ExpectType(S({"batch", "min(seq, 4)", "64"}), "strided_slice", data, slice(-4, kMax, 1));
  // x[:, ::2]: ceil(seq / 2).
  ExpectType(S({"batch", "floordiv(seq + 1, 2)", "64"}), "strided_slice", data, slice(0, kMax, 2));
  // x[:, ::-1]: from seq - 1 down to 0, every element.
  ExpectType(S({"batch", "seq", "64"}), "strided_slice", data, slice(-1, kMin, -1));
  ExpectTypeError("strided_slice", data, slice(0, 4, 0),
                  {"'strides' = (0) has a 0 step", "data: Tensor[(batch, seq, 64), float32]"});
}

TEST(TakeOpTest, GathersAlongAxis) {
  ExpectType(T({5, 2, 6, 3}), "take", {T({5, 4, 3}), T({2, 6}, "int64")}, {{"axis", 1}});
  ExpectType(T({7, 4, 3}), "take", {T({5, 4, 3}), T({7}, "int32")});
  ExpectType(T({4, 3}), "take", {T({5, 4, 3}), T({}, "int64")});
  ExpectTypeError("take", {T({5, 4}), T({2})}, {},
                  {"'indices' (argument 1) must be int32 or int64, got float32",
                   "data: Tensor[(5, 4), float32]"});
}

TEST(TakeOpTest, SymbolicIndicesAndData) {
  ExpectType(S({"batch", "seq", "768"}), "take",
             {S({"vocab", "768"}), S({"batch", "seq"}, "int64")});
  ExpectType(S({"n", "k"}), "take", {S({"n", "m"}), S({"k"}, "int32")}, {{"axis", 1}});
}

TEST(SqueezeOpTest, SymbolicAxesMustBeProvenUnit) {
  ExpectType(S({"batch", "768"}), "squeeze", {S({"batch", "1", "768"})},
             {{"axes", Array<int64_t>{1}}});
  // Without axes every extent must be decided: n + 2 is never 1.
  ExpectType(S({"n + 2", "3"}), "squeeze", {S({"n + 2", "1", "3"})});
  ExpectTypeError("squeeze", {S({"batch", "1", "768"})}, {{"axes", Array<int64_t>{0}}},
                  {"cannot squeeze axis 0 of 'data' (batch, 1, 768): its extent is batch, not 1",
                   "batch == 1 cannot be proven"});
  // batch may be 1 or not: the rank of the result would depend on it.
  ExpectTypeError("squeeze", {S({"batch", "1"})}, {},
                  {"cannot tell whether axis 0 of 'data' (batch, 1) has extent 1; name the axes",
                   "batch == 1 cannot be proven"});
  ExpectType(S({"batch", "1", "seq"}), "unsqueeze", {S({"batch", "seq"})},
             {{"axes", Array<int64_t>{1}}});
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

TEST(ExpandOpTest, BroadcastsSymbolicExtents) {
  ExpectType(S({"n", "4"}), "expand", {S({"n", "1"})}, {{"shape", Array<int64_t>{1, 4}}});
  ExpectType(S({"2", "n", "3"}), "expand", {S({"n", "3"})}, {{"shape", Array<int64_t>{2, 1, 1}}});
  ExpectDeferred(T({4}), "expand", {S({"n"})}, {{"shape", Array<int64_t>{4}}},
                 {"n == 4: expand: extent 4 of attribute 'shape' does not broadcast against n"});
}

TEST(ExpandOpTest, TakesASymbolicTargetShape) {
  ExpectType(S({"batch", "4", "seq"}), "expand", {S({"1", "4", "1"})},
             {{"shape", Sizes({"batch", "1", "seq"})}});
}

TEST(ArangeOpTest, HasItsSizeAndDtype) {
  ExpectType(S({"seq"}, "int64"), "arange", {}, {{"size", Sizes({"seq"})[0]}});
  ExpectType(T({5}, "float32"), "arange", {}, {{"size", int64_t{5}}, {"dtype", "float32"}});
  ExpectTypeError("arange", {}, {{"size", int64_t{-2}}}, {"attribute 'size' = -2 is negative"});
}

TEST(ValueSizesOpTest, DefineSizesReturnsDataAndChecksItsValues) {
  ExpectType(T({2, 3}), "define_sizes", {T({2, 3}), T({2}, "int64")},
             {{"sizes", Sizes({"n", "m"})}});
  ExpectTypeError("define_sizes", {T({2, 3}), T({3}, "int64")}, {{"sizes", Sizes({"n", "m"})}},
                  {"'values' must be int64 of shape (2,)"});
  ExpectTypeError("define_sizes", {T({2, 3}), T({1}, "int32")}, {{"sizes", Sizes({"n"})}},
                  {"'values' must be int64 of shape (1,)"});
  ExpectTypeError("define_sizes", {T({2, 3}), T({1}, "int64")}, {{"sizes", Sizes({"n + 1"})}},
                  {"size variables only", "n + 1"});
}

TEST(ValueSizesOpTest, SizeOpsGiveOneElementPerSize) {
  ExpectType(T({3}, "int64"), "reshape_sizes", {S({"b", "4"}), T({3}, "int64")});
  ExpectTypeError("reshape_sizes", {T({2}), S({"k"}, "int64")}, {},
                  {"'shape' must be an int64 vector"});
  ExpectType(T({2}, "int64"), "squeeze_sizes", {T({2, 1, 3}), T({1}, "int64")});
  ExpectTypeError("squeeze_sizes", {T({2}), T({2}, "int64")}, {}, {"cannot squeeze 2 axes"});
  ExpectType(T({5}, "int64"), "unsqueeze_sizes", {T({2, 1, 3}), T({2}, "int64")});
  ExpectType(T({3}, "int64"), "expand_sizes", {T({2, 1}), T({3}, "int64")});
  ExpectType(T({1}, "int64"), "nonzero_count", {S({"n", "4"})});
  ExpectType(T({3}, "int64"), "slice_sizes",
             {T({2, 3, 4}), T({2}, "int64"), T({2}, "int64"), T({2}, "int64"), T({2}, "int64")});
  ExpectTypeError(
      "slice_sizes",
      {T({2, 3, 4}), T({2}, "int64"), T({1}, "int64"), T({2}, "int64"), T({2}, "int64")}, {},
      {"'ends' must have as many elements as 'starts'"});
  ExpectType(T({1}, "int64"), "as_sizes", {T({}, "float32")});
  ExpectType(T({3}, "int64"), "as_sizes", {T({3}, "int32")});
  ExpectType(T({1}, "int64"), "range_sizes", {T({}), T({}), T({})});
  ExpectTypeError("range_sizes", {T({}), T({1}), T({})}, {},
                  {"'limit' (argument 1) must be a scalar"});
}

TEST(ValueSizesOpTest, OpsTakingSizesReadAtRunTime) {
  ExpectType(S({"2", "n"}, "int64"), "nonzero", {T({4, 5})}, {{"count", Sizes({"n"})[0]}});
  ExpectType(S({"n"}, "int32"), "range", {T({}, "int32"), T({}, "int32")},
             {{"size", Sizes({"n"})[0]}});
  ExpectTypeError("range", {T({}, "int32"), T({}, "int64")}, {{"size", Sizes({"n"})[0]}},
                  {"one dtype"});
  ExpectType(S({"a", "b"}), "dynamic_slice",
             {T({4, 5}), T({1}, "int64"), T({1}, "int64"), T({1}, "int64")},
             {{"sizes", Sizes({"a", "b"})}});
  ExpectTypeError("dynamic_slice", {T({4, 5}), T({1}, "int64"), T({2}, "int64"), T({1}, "int64")},
                  {{"sizes", Sizes({"a", "b"})}}, {"as long as 'starts'"});
  ExpectTypeError("dynamic_slice", {T({4, 5}), T({1}, "int64"), T({1}, "int64"), T({1}, "int64")},
                  {{"sizes", Sizes({"a"})}}, {"one extent per dimension"});
  // A k read at run time is checked against the axis once it is known.
  ExpectDeferred(TupleType({S({"3", "k"}), S({"3", "k"}, "int64")}), "topk", {T({3, 7})},
                 {{"k", Sizes({"k"})[0]}}, {"7 >= k"});
}

TEST(ValueSizesOpTest, NonMaxSuppressionSelectsCountBoxes) {
  const std::vector<ir::Type> inputs = {T({2, 6, 4}), T({2, 3, 6}), T({1}, "int64"), T({}), T({0})};
  ExpectType(T({1}, "int64"), "non_max_suppression_count", inputs);
  ExpectType(S({"n", "3"}, "int64"), "non_max_suppression", inputs,
             {{"count", Sizes({"n"})[0]}, {"center_point_box", 1}});
  ExpectTypeError("non_max_suppression_count",
                  {T({2, 6, 4}), T({2, 3, 5}), T({1}, "int64"), T({}), T({})}, {},
                  {"'boxes' and 'scores' must agree on the number of boxes (6 and 5)"});
  ExpectTypeError("non_max_suppression_count",
                  {T({2, 6, 5}), T({2, 3, 6}), T({1}, "int64"), T({}), T({})}, {},
                  {"'boxes' must have shape (batches, boxes, 4)"});
  ExpectTypeError("non_max_suppression_count",
                  {T({2, 6, 4}), T({2, 3, 6}), T({1}, "int32"), T({}), T({})}, {},
                  {"'max_output_boxes_per_class' (argument 2)", "of dtype int64"});
  ExpectTypeError("non_max_suppression_count",
                  {T({2, 6, 4}), T({2, 3, 6}), T({1}, "int64"), T({2}), T({})}, {},
                  {"'iou_threshold' (argument 3)", "at most one element"});
  ExpectTypeError("non_max_suppression_count", inputs, {{"center_point_box", 2}},
                  {"'center_point_box' must be 0 or 1, got 2"});
  // Batches and boxes fed at run time are checked once their extents are known.
  ExpectDeferred(T({1}, "int64"), "non_max_suppression_count",
                 {S({"b", "n", "4"}), S({"b", "3", "m"}), T({1}, "int64"), T({}), T({})}, {},
                 {"n == m", "number of boxes"});
}

TEST(ValueSizesOpTest, UniqueGivesCountDistinctSlices) {
  ExpectType(T({1}, "int64"), "unique_count", {S({"n", "4"}, "int32")}, {{"axis", 1}});
  ExpectTypeError("unique_count", {T({})}, {}, {"'data' must have at least one dimension"});
  ExpectTypeError("unique_count", {T({2, 3})}, {{"axis", 2}}, {"axis"});
  ExpectType(TupleType({S({"2", "k", "5"}), S({"k"}, "int64"), T({4}, "int64"), S({"k"}, "int64")}),
             "unique", {T({2, 4, 5})}, {{"count", Sizes({"k"})[0]}, {"axis", -2}});
}

TEST(IndexingOpTest, SymbolicShapes) {
  ExpectType(S({"n", "2"}), "gather_elements", {S({"n", "4"}), S({"n", "2"}, "int64")},
             {{"axis", 1}});
  ExpectTypeError(
      "gather_elements", {S({"n", "4"}), S({"m", "2"}, "int64")}, {{"axis", 1}},
      {"'indices' (m, 2) is longer than 'data' (n, 4) along axis 0", "n >= m cannot be proven"});
  ExpectType(S({"n", "4"}), "scatter_elements",
             {S({"n", "4"}), S({"n", "2"}, "int64"), S({"n", "2"})}, {{"axis", 1}});
  ExpectTypeError("scatter_elements", {S({"n", "4"}), S({"n", "2"}, "int64"), S({"m", "2"})},
                  {{"axis", 1}},
                  {"'updates' must have the shape of 'indices'", "m == n cannot be proven"});
  ExpectType(S({"k", "4"}), "gather_nd", {S({"n", "3", "4"}), S({"k", "2"}, "int64")});
  ExpectType(S({"b", "4"}), "gather_nd", {S({"b", "3", "4"}), S({"b", "1"}, "int64")},
             {{"batch_dims", 1}});
  ExpectTypeError("gather_nd", {S({"n", "3"}), S({"k", "m"}, "int64")}, {},
                  {"the index tuple length (dimension 1 of 'indices' (argument 1)) must be "
                   "static, got m"});
  ExpectType(S({"n", "3"}), "scatter_nd", {S({"n", "3"}), S({"k", "1"}, "int64"), S({"k", "3"})});
  ExpectTypeError("scatter_nd", {S({"n", "3"}), S({"k", "1"}, "int64"), S({"j", "3"})}, {},
                  {"'updates' must have shape (k, 3)", "j == k cannot be proven"});
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

TEST(TopKOpTest, SymbolicExtentsOutsideAndAlongTheAxis) {
  ExpectType(TupleType({S({"batch", "5"}), S({"batch", "5"}, "int64")}), "topk",
             {S({"batch", "1000"})}, {{"k", 5}});
  ExpectType(TupleType({S({"0", "n"}), S({"0", "n"}, "int64")}), "topk", {S({"m", "n"})},
             {{"k", 0}, {"axis", 0}});
  ExpectDeferred(TupleType({S({"batch", "5"}), S({"batch", "5"}, "int64")}), "topk",
                 {S({"batch", "n"})}, {{"k", 5}},
                 {"n >= 5", "'k' = 5 must lie in [0, n], the extent of axis 1"});
  ExpectTypeError("topk", {S({"batch", "4"})}, {{"k", 5}},
                  {"'k' = 5 must lie in [0, 4], the extent of axis 1"});
}

TEST(DetOpTest, SymbolicSquareMatrices) {
  ExpectType(S({"b"}), "det", {S({"b", "m", "m"})});
  ExpectTypeError(
      "det", {S({"b", "m", "n"})}, {},
      {"'data' (b, m, n) must end in square matrices (..., M, M)", "m == n cannot be proven"});
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

TEST(CumsumOpTest, KeepsASymbolicType) {
  ExpectType(S({"n", "3"}), "cumsum", {S({"n", "3"})}, {{"axis", 0}});
}

}  // namespace
}  // namespace op
}  // namespace kiln

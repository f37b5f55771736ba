#include <kiln/ir/type.h>
#include <gtest/gtest.h>

#include "ir_test_util.h"

namespace kiln {
namespace ir {
namespace {

using testing::F32;
using testing::Float32;

TEST(DimTest, StaticDimensionReportsItsExtentThroughTheGenericApi) {
  const Dim dim = IntDim(7);
  EXPECT_EQ(dim.as_static(), 7);
  EXPECT_EQ(dim.ToString(), "7");
  EXPECT_EQ(dim->GetTypeKey(), "kiln.ir.IntDim");
  EXPECT_TRUE(dim->IsInstance<DimObj>());
}

TEST(DimTest, NegativeExtentIsRejected) { EXPECT_THROW(IntDim(-1), Error); }

TEST(DimTest, SymbolicDimensionIsNotStaticAndPrintsItsExpression) {
  const arith::SizeVar batch("batch");
  const Dim dim = SymDim(batch * 2 + 1);
  EXPECT_EQ(dim->GetTypeKey(), "kiln.ir.SymDim");
  EXPECT_TRUE(dim->IsInstance<DimObj>());
  EXPECT_EQ(dim.as_static(), std::nullopt);
  EXPECT_EQ(dim.ToString(), "batch * 2 + 1");
  EXPECT_TRUE(arith::StructuralEqual(dim.AsSizeExpr(), batch * 2 + 1));
  EXPECT_EQ(IntDim(4).AsSizeExpr().as_int(), 4);
}

TEST(DimTest, AConstantExpressionMakesAStaticDimension) {
  const arith::SizeVar n("n");
  const Dim folded = Dim::FromSizeExpr(arith::IntImm(2) * 3);
  EXPECT_TRUE(folded->IsInstance<IntDimObj>());
  EXPECT_EQ(folded.as_static(), 6);
  EXPECT_TRUE(Dim::FromSizeExpr(n - 1)->IsInstance<SymDimObj>());
  EXPECT_THROW(Dim::FromSizeExpr(arith::IntImm(-2)), Error);
  EXPECT_THROW(Dim::FromSizeExpr(arith::SizeExpr()), Error);
  try {
    SymDim(arith::IntImm(3));
    FAIL() << "expected a ValueError";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "ValueError");
    EXPECT_NE(error.message().find("3 is a constant"), std::string::npos) << error.message();
  }
}

TEST(TensorTypeTest, StaticShapeBuildsIntDims) {
  const TensorType type = F32({2, 3});
  ASSERT_EQ(type->shape().size(), 2);
  EXPECT_EQ(type->shape()[1].as_static(), 3);
  EXPECT_EQ(type->dtype().bits, 32);
  EXPECT_TRUE(type->IsInstance<TypeObj>());
}

TEST(TensorTypeTest, NullDimensionAndEmptyDtypeAreValueErrors) {
  try {
    TensorType(Array<Dim>{IntDim(1), Dim()}, Float32());
    FAIL() << "expected a ValueError";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "ValueError");
    EXPECT_NE(error.message().find("dimension 1 is null"), std::string::npos);
  }
  EXPECT_THROW(TensorType(Array<Dim>{}, DLDataType{kDLFloat, 0, 1}), Error);
}

TEST(TupleTypeTest, NullFieldIsRejected) {
  EXPECT_EQ(TupleType(Array<Type>{F32({1})})->fields().size(), 1);
  EXPECT_THROW(TupleType(Array<Type>{Type()}), Error);
}

TEST(FuncTypeTest, NullResultIsRejected) {
  const FuncType type(Array<Type>{F32({1})}, F32({2}));
  EXPECT_TRUE(type->ret().same_as(type->ret()));
  EXPECT_THROW(FuncType(Array<Type>{}, Type()), Error);
}

}  // namespace
}  // namespace ir
}  // namespace kiln

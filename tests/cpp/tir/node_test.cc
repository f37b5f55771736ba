// The tensor-level IR's nodes: construction checks, the text format's round trip, structural
// equality, and a node kind added the way a plugin adds one (kiln/tir/node.h).
#include <kiln/tir/builtin_nodes.h>
#include <kiln/tir/node.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "testing/expect_error.h"

namespace kiln {
namespace tir {
namespace {

constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kI32{kDLInt, 32, 1};
constexpr DLDataType kU8{kDLUInt, 8, 1};

using test_util::ExpectError;

/// out[i, j] = max(a[i, j] + b[j], 0) over (n, 64): a parallel outer loop, a vectorized inner one.
Node AddRelu() {
  const arith::SizeVar n("n");
  const arith::SizeVar i("i");
  const arith::SizeVar j("j");
  const Node a = Buffer("a", kF32, {n, arith::IntImm(64)});
  const Node b = Buffer("b", kF32, {arith::IntImm(64)});
  const Node out = Buffer("out", kF32, {n, arith::IntImm(64)});
  const Node sum = Binary("add", Load(a, {i, j}), Load(b, {j}));
  const Node body = Store(out, {i, j}, Binary("max", sum, FloatImm(0, kF32)));
  return PrimFunc("add_relu", {a, b, out},
                  For("i", n, "parallel", For("j", arith::IntImm(64), "vectorized", body)));
}

TEST(TirNodeTest, TextRoundTripsAndIsStructurallyEqual) {
  const Node func = AddRelu();
  const std::string text = AsText(func);
  EXPECT_NE(text.find("for(var=i, extent=n, kind=parallel, body=\n"), std::string::npos) << text;
  EXPECT_NE(text.find("load(buffer=%a, indices=[i, j])"), std::string::npos) << text;
  EXPECT_NE(text.find("buffer(name=a, dtype=float32, shape=[n, 64])"), std::string::npos) << text;
  const Node parsed = ParseText(text);
  EXPECT_TRUE(StructuralEqual(parsed, func)) << AsText(parsed);
  EXPECT_EQ(StructuralHash(parsed), StructuralHash(func));
  EXPECT_EQ(AsText(parsed), text);
}

TEST(TirNodeTest, EqualityComparesEveryField) {
  const Node func = AddRelu();
  const Node serial = Mutate(func, [](const Node& node) -> std::optional<Node> {
    if (!node.is("for") || node.field_as<String>("var").str() != "j") return std::nullopt;
    return WithFields(node, {{"kind", String("serial")}});
  });
  EXPECT_FALSE(StructuralEqual(serial, func));
  EXPECT_NE(AsText(serial), AsText(func));
  // Floats compare by bits: -0.0 is another immediate than 0.0.
  EXPECT_FALSE(StructuralEqual(FloatImm(-0.0, kF32), FloatImm(0.0, kF32)));
  EXPECT_TRUE(StructuralEqual(FloatImm(std::nan(""), kF32), FloatImm(std::nan(""), kF32)));
  // Every NaN is one value: `-nan` prints as `nan`, and reads back equal, with the same hash
  // (found by the tir_text fuzzer: tests/fuzz/corpus/tir_text/regression_negative_nan_*).
  const Node negative = ParseText("float(value=-nan, dtype=float32)");
  const Node again = ParseText(AsText(negative));
  EXPECT_TRUE(StructuralEqual(again, negative));
  EXPECT_EQ(StructuralHash(again), StructuralHash(negative));
}

TEST(TirNodeTest, ValuesOfEveryFieldKindRoundTrip) {
  const Node x = Var("x", kI32);
  const Node let =
      Let(x, Cast(IndexValue(arith::SizeVar("k") * 2, DLDataType{kDLInt, 64, 1}), kI32),
          Evaluate(Call("my_extern \"quoted\"\n", {x, IntImm(-3, kI32)}, kI32)));
  const Node branch = IfThenElse(
      Binary("lt", x, IntImm(7, kI32)),
      Evaluate(Select(Not(Binary("eq", x, x)), FloatImm(-HUGE_VAL, kF32), FloatImm(1e-30, kF32))),
      Node());
  const Node body = Seq(std::vector<Node>{let, branch});
  const Node func =
      PrimFunc("f", {}, Allocate(Buffer("t", kU8, {arith::SizeVar("k")}), "local", body));
  const Node parsed = ParseText(AsText(func));
  EXPECT_TRUE(StructuralEqual(parsed, func)) << AsText(func) << "\n" << AsText(parsed);
}

TEST(TirNodeTest, ConstructionChecksNameTheKindAndField) {
  const Node a = Buffer("a", kF32, {arith::IntImm(4)});
  ExpectError([&] { Binary("add", FloatImm(1, kF32), IntImm(1, kI32)); }, "TypeError",
              {"tir.add", "float32 and int32"});
  ExpectError(
      [&] {
        Load(a, {arith::IntImm(0), arith::IntImm(1)});
      },
      "ValueError", {"tir.load", "2 indices for buffer 'a' of rank 1"});
  ExpectError([&] { Store(a, {arith::IntImm(0)}, IntImm(1, kI32)); }, "TypeError",
              {"tir.store", "int32 value into a buffer of float32"});
  ExpectError([&] { For("i", arith::IntImm(4), "sideways", Evaluate(IntImm(0, kI32))); },
              "ValueError", {"tir.for", "kind 'sideways' is not one of serial"});
  ExpectError([&] { MakeNode("for", {String("i")}); }, "ValueError", {"tir.for has 4 fields"});
  ExpectError([&] { MakeNode("seq", {Array<Any>{IntImm(1, kI32)}}); }, "ValueError",
              {"tir.seq's stmts[0] must be a statement, got int"});
  ExpectError([&] { MakeNode("nope", {}); }, "KeyError", {"no node kind 'nope'"});
  ExpectError([&] { AddRelu().field("shape"); }, "KeyError",
              {"tir.prim_func has no field 'shape'", "name, params, body"});
}

TEST(TirNodeTest, ParseErrorsGiveTheLineAndColumn) {
  ExpectError([] { ParseText("seq(stmts=[\n  wobble(x=1)])"); }, "ValueError",
              {"line 2, column 3", "unknown node kind 'wobble'"});
  ExpectError([] { ParseText("evaluate(value=load(buffer=%a, indices=[0]))"); }, "ValueError",
              {"no buffer 'a' is declared here"});
  ExpectError([] { ParseText("int(value=1, dtype=floaty)"); }, "ValueError",
              {"expected a data type"});
  ExpectError(
      [] { ParseText("add(a=int(value=1, dtype=int32), b=float(value=1.5, dtype=float32))"); },
      "ValueError", {"tir.add: operands of int32 and float32"});
  // Nesting deeper than the parser allows is an error, not a stack overflow.
  std::string deep;
  for (int i = 0; i < 5000; ++i) deep += "not(a=";
  ExpectError([&] { ParseText(deep); }, "ValueError", {"nest too deeply"});
  // Built deeper than that, a node is refused by the printer and the traversals the same way.
  Node chain = Binary("eq", IntImm(0, kI32), IntImm(0, kI32));
  for (int i = 0; i < 1000; ++i) chain = Not(chain);
  ExpectError([&] { AsText(chain); }, "ValueError", {"nest deeper than"});
  ExpectError([&] { StructuralHash(chain); }, "ValueError", {"nest deeper than"});
  ExpectError([&] { Visit(chain, [](const Node&) { return true; }); }, "ValueError",
              {"nest deeper than"});
}

TEST(TirNodeTest, AKindAddedLikeAPluginsIsPrintedParsedVisitedAndLoweredAway) {
  // A number format's conversion, as a plugin would add it: no core code knows the kind.
  RegisterNode({"test_ext.fp8_cast",
                NodeRole::kValue,
                {{"value", FieldKind::kValue}},
                [](const std::vector<Any>&) { return kU8; }});
  const Node a = Buffer("a", kF32, {arith::IntImm(8)});
  const Node q = Buffer("q", kU8, {arith::IntImm(8)});
  const arith::SizeVar i("i");
  const Node func = PrimFunc("quantize", {a, q},
                             For("i", arith::IntImm(8), "serial",
                                 Store(q, {i}, MakeNode("test_ext.fp8_cast", {Load(a, {i})}))));
  const std::string text = AsText(func);
  EXPECT_NE(text.find("test_ext.fp8_cast(value=load(buffer=%a, indices=[i]))"), std::string::npos)
      << text;
  EXPECT_TRUE(StructuralEqual(ParseText(text), func));
  int found = 0;
  Visit(func, [&](const Node& node) {
    found += node.is("test_ext.fp8_cast") ? 1 : 0;
    return true;
  });
  EXPECT_EQ(found, 1);
  // The plugin's lowering pass: the conversion becomes a cast, and only its ancestors are rebuilt.
  const Node lowered = Mutate(func, [](const Node& node) -> std::optional<Node> {
    if (!node.is("test_ext.fp8_cast")) return std::nullopt;
    return Cast(node.field_as<Node>("value"), kU8);
  });
  EXPECT_NE(AsText(lowered).find("cast(value=load(buffer=%a, indices=[i]), dtype=uint8)"),
            std::string::npos);
  EXPECT_TRUE(lowered.field_as<Array<Any>>("params")[0].cast<Node>().same_as(a));
  EXPECT_TRUE(Mutate(lowered, [](const Node&) { return std::optional<Node>(); }).same_as(lowered));
  ExpectError(
      [] {
        RegisterNode({"test_ext.fp8_cast", NodeRole::kStmt, {}});
      },
      "ValueError", {"'test_ext.fp8_cast' is already registered"});
  ExpectError(
      [] {
        RegisterNode({"bad name", NodeRole::kStmt, {}});
      },
      "ValueError", {"not a node kind's name"});
}

}  // namespace
}  // namespace tir
}  // namespace kiln

// SerializeJsonGraph: a region function with a composite call, a constant and tuples against
// its golden JSON graph; the constants extracted; what cannot be serialized.
#include <kiln/codegen/json_graph.h>
#include <kiln/ir/text_format.h>
#include <kiln/runtime/json_runtime.h>
#include <kiln/runtime/memory.h>
#include <kiln/transform/passes.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>

#include "testing/expect_error.h"

namespace kiln {
namespace {

using test_util::ExpectError;

ir::Function TypedRegion(const std::string& text) {
  const ir::IRModule mod = transform::InferType()(ir::ParseModule(text));
  return mod.Lookup("region");
}

constexpr const char* kRegion = R"(
def @region(%x: Tensor[(2, 3), float32], %b: Tensor[(4), float32])
    attrs={Compiler="test", Primitive=1, global_symbol="kiln_test_0"} {
  %0 = fn (%a, %w, %c) attrs={Composite="test.dense_bias_clip"} {
    %1 = nn.dense(%a, %w);
    %2 = add(%1, %c);
    %3 = clip(%2, a_min=0.0);
    add(%3, %3)
  };
  %4 = %0(%x, const(float32, (4, 3), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]), %b);
  %5 = split(%4, axis=1, sections=[1, 3]);
  (%5.1, %x, %5.0)
})";

constexpr const char* kGolden = R"({
  "version": 1,
  "symbol": "kiln_test_0",
  "nodes": [
    {"kind": "input", "name": "x", "outputs": [{"shape": [2, 3], "dtype": "float32"}]},
    {"kind": "input", "name": "b", "outputs": [{"shape": [4], "dtype": "float32"}]},
    {"kind": "const", "name": "kiln_test_0_const_0",
     "outputs": [{"shape": [4, 3], "dtype": "float32"}]},
    {"kind": "op", "op": "test.dense_bias_clip", "composite": true,
     "attrs": {"nn.dense": {}, "add": {}, "add#1": {},
               "clip": {"a_min": {"float": 0.0}, "a_max": {"float": "inf"}}},
     "inputs": [[0, 0], [2, 0], [1, 0]],
     "outputs": [{"shape": [2, 4], "dtype": "float32"}]},
    {"kind": "op", "op": "split", "attrs": {"axis": {"int": 1}, "sections": {"ints": [1, 3]}},
     "inputs": [[3, 0]],
     "outputs": [{"shape": [2, 1], "dtype": "float32"}, {"shape": [2, 3], "dtype": "float32"}]}
  ],
  "heads": [[4, 1], [0, 0], [4, 0]]
})";

TEST(JsonGraphTest, RegionWithCompositeConstantAndTuplesMatchesGolden) {
  const ir::Function region = TypedRegion(kRegion);
  const codegen::JsonGraphCode code = codegen::SerializeJsonGraph(region);
  EXPECT_EQ(code.symbol, "kiln_test_0");
  EXPECT_EQ(nlohmann::json::parse(code.graph_json), nlohmann::json::parse(kGolden))
      << code.graph_json;
  // The runtime side reads what the compiler side writes.
  const runtime::JsonGraph graph = runtime::ParseJsonGraph(code.graph_json);
  const auto clip = graph.nodes[3].attrs.at("clip").cast<Map<String, Any>>();
  EXPECT_EQ(clip.at("a_min").cast<double>(), 0.0);
}

TEST(JsonGraphTest, ConstantsAreTheBodysTensorsInConstNodeOrder) {
  const ir::Function region = TypedRegion(kRegion);
  const codegen::JsonGraphCode code = codegen::SerializeJsonGraph(region);
  ASSERT_EQ(code.constants.size(), 1);
  const auto* call = region->body().as<ir::TupleObj>()->fields()[0].as<ir::TupleGetItemObj>();
  const auto* split = call->tuple().as<ir::CallObj>();
  const auto* composite = split->args()[0].as<ir::CallObj>();
  const auto* constant = composite->args()[1].as<ir::ConstantObj>();
  ASSERT_NE(constant, nullptr);
  EXPECT_TRUE(code.constants[0].same_as(constant->data()));  // shared, not copied
}

TEST(JsonGraphTest, ConstantsSharingATensorShareOneConstNode) {
  Tensor weight = runtime::Empty({2, 2}, DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCPU, 0});
  std::fill_n(static_cast<float*>(weight.data()), 4, 1.0F);
  const ir::IRModule mod = transform::InferType()(ir::ParseModule(R"(
def @region(%x: Tensor[(2, 2), float32]) attrs={global_symbol="kiln_test_4"} {
  %0 = nn.dense(%x, meta[Constant][0]);
  nn.dense(%0, meta[Constant][0])
})",
                                                                  {weight}));
  const codegen::JsonGraphCode code = codegen::SerializeJsonGraph(mod.Lookup("region"));
  ASSERT_EQ(code.constants.size(), 1);
  const runtime::JsonGraph graph = runtime::ParseJsonGraph(code.graph_json);
  ASSERT_EQ(graph.const_nodes.size(), 1U);
  EXPECT_EQ(graph.nodes[3].inputs[1].node, graph.const_nodes[0]);  // the second dense
}

TEST(JsonGraphTest, WhatTheGraphCannotExpressIsNamed) {
  ExpectError(
      [] {
        codegen::SerializeJsonGraph(TypedRegion(R"(
def @region(%x: Tensor[(2), float32]) attrs={Primitive=1} { nn.relu(%x) })"));
      },
      "ValueError", {"no 'global_symbol' attribute"});
  ExpectError(
      [] {
        codegen::SerializeJsonGraph(TypedRegion(R"(
def @region(%x: Tensor[(2), float32]) attrs={global_symbol="kiln_test_1"} {
  %0 = fn (%y) { nn.relu(%y) };
  %0(%x)
})"));
      },
      "NotImplementedError", {"'kiln_test_1'", "neither an op nor a composite function"});
  ExpectError(
      [] {
        codegen::SerializeJsonGraph(TypedRegion(R"(
def @region(%x: Tensor[(2), float32]) attrs={global_symbol="kiln_test_2"} {
  %0 = fn (%y) attrs={Composite="test.add_one"} { add(%y, const(float32, (2), [1, 1])) };
  %0(%x)
})"));
      },
      "NotImplementedError", {"composite 'test.add_one' has a constant inside its body"});
}

TEST(JsonGraphTest, UntypedFunctionIsAskedToRunInferType) {
  const ir::IRModule mod = ir::ParseModule(R"(
def @region(%x: Tensor[(2), float32]) attrs={global_symbol="kiln_test_3"} { nn.relu(%x) })");
  ExpectError([&] { codegen::SerializeJsonGraph(mod.Lookup("region")); }, "ValueError",
              {"'kiln_test_3'", "run InferType first"});
}

TEST(JsonGraphTest, CreateJsonModulesNamesTheSymbolWhoseFactoryFailed) {
  const Array<ir::Function> functions{TypedRegion(kRegion)};
  try {
    codegen::CreateJsonModules(functions, [](const codegen::JsonGraphCode&) -> runtime::Module {
      KILN_THROW(ValueError) << "factory says no";
      return runtime::Module();
    });
    ADD_FAILURE() << "expected a ValueError";
  } catch (const Error& error) {
    EXPECT_EQ(error.message(), "factory says no");
    EXPECT_NE(error.context().find("while making the module of 'kiln_test_0'"), std::string::npos)
        << error.context();
  }
  ExpectError([&] { codegen::CreateJsonModules(functions, "no_such_plugin"); }, "RuntimeError",
              {"runtime.module.create.no_such_plugin_json",
               "libkiln_runtime_no_such_plugin.so was not found"});
}

}  // namespace
}  // namespace kiln

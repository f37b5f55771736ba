// The loop-level pass `simplify` and running passes by name (tir.RunPasses): inputs and expected
// outputs as text, compared structurally.
#include <kiln/ffi/function.h>
#include <kiln/tir/node.h>
#include <gtest/gtest.h>

#include <string>

#include "testing/expect_error.h"

namespace kiln {
namespace tir {
namespace {

Node RunPasses(const std::string& text, const std::string& passes) {
  return Function::GetGlobalRequired("tir.RunPasses")(ParseText(text), String(passes)).cast<Node>();
}

void ExpectSimplifiesTo(const std::string& input, const std::string& expected) {
  const Node simplified = RunPasses(input, "simplify");
  EXPECT_TRUE(StructuralEqual(simplified, ParseText(expected)))
      << "got:\n"
      << AsText(simplified) << "\nexpected:\n"
      << AsText(ParseText(expected));
}

TEST(TirSimplifyTest, IndicesSimplifyUnderLoopBounds) {
  // i * 4 + j with j < 4: its floordiv by 4 is i, its floormod j.
  ExpectSimplifiesTo(R"(prim_func(name=f, params=[buffer(name=a, dtype=float32, shape=[n, 4]),
      buffer(name=b, dtype=float32, shape=[n * 4])], body=
    for(var=i, extent=n, kind=serial, body=for(var=j, extent=4, kind=serial, body=
      store(buffer=%a, indices=[floordiv(i * 4 + j, 4), floormod(i * 4 + j, 4)],
            value=load(buffer=%b, indices=[i * 4 + j]))))))",
                     R"(prim_func(name=f, params=[buffer(name=a, dtype=float32, shape=[n, 4]),
      buffer(name=b, dtype=float32, shape=[n * 4])], body=
    for(var=i, extent=n, kind=serial, body=for(var=j, extent=4, kind=serial, body=
      store(buffer=%a, indices=[i, j], value=load(buffer=%b, indices=[i * 4 + j]))))))");
}

TEST(TirSimplifyTest, DecidedBranchesAndEmptyLoopsGoAway) {
  // i < n always holds in a loop over n; a loop of n - n iterations is empty.
  ExpectSimplifiesTo(R"(prim_func(name=f, params=[buffer(name=a, dtype=int64, shape=[n])], body=
    seq(stmts=[
      for(var=i, extent=n, kind=parallel, body=
        if(cond=lt(a=index(index=i, dtype=int64), b=index(index=n, dtype=int64)),
           then=store(buffer=%a, indices=[i], value=add(a=int(value=2, dtype=int64),
                                                       b=int(value=3, dtype=int64))),
           else=none)),
      for(var=k, extent=n - n, kind=serial, body=store(buffer=%a, indices=[k],
                                                       value=int(value=0, dtype=int64))),
      if(cond=ge(a=index(index=0, dtype=int64), b=index(index=n, dtype=int64)),
         then=store(buffer=%a, indices=[0], value=int(value=1, dtype=int64)), else=none),
    ])))",
                     R"(prim_func(name=f, params=[buffer(name=a, dtype=int64, shape=[n])], body=
    seq(stmts=[
      for(var=i, extent=n, kind=parallel, body=
        store(buffer=%a, indices=[i], value=int(value=5, dtype=int64))),
    ])))");
}

TEST(TirSimplifyTest, WhatItCannotDecideStaysAndUnchangedInputIsReturned) {
  const std::string text = R"(prim_func(name=f, params=[buffer(name=a, dtype=float32, shape=[n])],
    body=for(var=i, extent=n, kind=serial, body=
      if(cond=lt(a=index(index=i, dtype=int64), b=index(index=m, dtype=int64)),
         then=store(buffer=%a, indices=[i], value=add(a=float(value=1.0, dtype=float32),
                                                     b=float(value=2.0, dtype=float32))),
         else=none))))";
  const Node input = ParseText(text);
  const Node output = Function::GetGlobalRequired("tir.pass.simplify")(input).cast<Node>();
  EXPECT_TRUE(output.same_as(input));  // floats are not folded; i < m is undecided
}

TEST(TirSimplifyTest, UnknownPassNamesTheOnesThereAre) {
  test_util::ExpectError([] { RunPasses("evaluate(value=int(value=0, dtype=int32))", "nope"); },
                         "KeyError", {"no loop-level pass 'nope'", "simplify"});
}

}  // namespace
}  // namespace tir
}  // namespace kiln

// Schedule primitives (kiln/tir/schedule.h): each finds its loop by variable name, checks that
// the transformation is valid there, and rebuilds the function with Mutate.
#include <kiln/arith/analyzer.h>
#include <kiln/ffi/registry.h>
#include <kiln/tir/builtin_nodes.h>
#include <kiln/tir/schedule.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "schedule_internal.h"

namespace kiln {
namespace tir {
namespace internal {

std::string FuncName(const Node& func) {
  KILN_CHECK(func.is("prim_func"), ValueError)
      << "tir schedule: takes a prim_func, got a " << func->name();
  return func.field_as<String>("name").str();
}

std::string LoopVar(const Node& loop) { return loop.field_as<String>("var").str(); }

Node FindLoop(const Node& func, const std::string& var, const std::string& primitive) {
  Node found;
  std::string loops;
  Visit(func, [&](const Node& node) {
    if (node.is("for")) {
      loops += (loops.empty() ? "" : ", ") + LoopVar(node);
      if (LoopVar(node) == var) found = node;
    }
    return true;
  });
  KILN_CHECK(found.defined(), ValueError)
      << "tir schedule " << primitive << ": " << FuncName(func) << " has no loop '" << var
      << "' (its loops: " << (loops.empty() ? "none" : loops) << ")";
  return found;
}

void CheckNewName(const Node& func, const std::string& name, const std::string& primitive) {
  bool taken = false;
  Visit(func, [&](const Node& node) {
    taken = taken || (node.is("for") && LoopVar(node) == name);
    return !taken;
  });
  KILN_CHECK(!taken, ValueError) << "tir schedule " << primitive << ": " << FuncName(func)
                                 << " already has a loop '" << name << "'";
}

Node Replace(const Node& func, const Node& loop, const Node& replacement) {
  return Mutate(func, [&](const Node& node) -> std::optional<Node> {
    if (node.same_as(loop)) return replacement;
    return std::nullopt;
  });
}

Node DirectlyInside(const Node& func, const Node& outer, const std::string& inner,
                    const std::string& primitive) {
  Node body = outer.field_as<Node>("body");
  KILN_CHECK(body.is("for") && LoopVar(body) == inner, ValueError)
      << "tir schedule " << primitive << ": in " << FuncName(func) << ", loop '" << inner
      << "' is not the whole body of loop '" << LoopVar(outer) << "'";
  return body;
}

}  // namespace internal

namespace {

using internal::CheckNewName;
using internal::DirectlyInside;
using internal::FindLoop;
using internal::FuncName;
using internal::LoopVar;
using internal::Replace;

Node WithKind(const Node& func, const std::string& var, const std::string& kind,
              const std::string& primitive) {
  const Node loop = FindLoop(func, var, primitive);
  return Replace(func, loop, WithFields(loop, {{"kind", String(kind)}}));
}

}  // namespace

Node Split(const Node& func, const std::string& loop_var, int64_t factor, const std::string& outer,
           const std::string& inner) {
  const Node loop = FindLoop(func, loop_var, "split");
  KILN_CHECK(factor >= 1, ValueError)
      << "tir schedule split: loop '" << loop_var << "' of " << FuncName(func) << " split by "
      << factor << " (the factor must be at least 1)";
  CheckNewName(func, outer, "split");
  CheckNewName(func, inner, "split");
  KILN_CHECK(outer != inner, ValueError) << "tir schedule split: the two loops of '" << loop_var
                                         << "' need different names, got '" << outer << "' twice";
  const auto extent = loop.field_as<arith::SizeExpr>("extent");
  const arith::SizeVar outer_var{String(outer)}, inner_var{String(inner)};
  const arith::SizeExpr index = outer_var * arith::IntImm(factor) + inner_var;
  Node body = SubstituteIndices(loop.field_as<Node>("body"), {{loop_var, index}});
  if (!arith::Analyzer().CanProveDivisible(extent, factor)) {
    const DLDataType int64{kDLInt, 64, 1};
    body =
        IfThenElse(Binary("lt", IndexValue(index, int64), IndexValue(extent, int64)), body, Node());
  }
  const arith::SizeExpr outer_extent =
      arith::FloorDiv(extent + arith::IntImm(factor - 1), arith::IntImm(factor));
  const Node split = For(outer, outer_extent, loop.field_as<String>("kind").str(),
                         For(inner, arith::IntImm(factor), "serial", body));
  return Replace(func, loop, split);
}

Node Fuse(const Node& func, const std::string& outer, const std::string& inner,
          const std::string& fused) {
  const Node outer_loop = FindLoop(func, outer, "fuse");
  const Node inner_loop = DirectlyInside(func, outer_loop, inner, "fuse");
  CheckNewName(func, fused, "fuse");
  const auto inner_extent = inner_loop.field_as<arith::SizeExpr>("extent");
  const arith::SizeVar fused_var{String(fused)};
  const Node body = SubstituteIndices(inner_loop.field_as<Node>("body"),
                                      {{outer, arith::FloorDiv(fused_var, inner_extent)},
                                       {inner, arith::FloorMod(fused_var, inner_extent)}});
  return Replace(func, outer_loop,
                 For(fused, outer_loop.field_as<arith::SizeExpr>("extent") * inner_extent,
                     outer_loop.field_as<String>("kind").str(), body));
}

Node Reorder(const Node& func, const std::string& outer, const std::string& inner) {
  const Node outer_loop = FindLoop(func, outer, "reorder");
  const Node inner_loop = DirectlyInside(func, outer_loop, inner, "reorder");
  const Node swapped = WithFields(
      inner_loop, {{"body", WithFields(outer_loop, {{"body", inner_loop.field("body")}})}});
  return Replace(func, outer_loop, swapped);
}

Node Parallel(const Node& func, const std::string& loop) {
  return WithKind(func, loop, "parallel", "parallel");
}

Node Vectorize(const Node& func, const std::string& loop) {
  const Node found = FindLoop(func, loop, "vectorize");
  std::string nested;
  Visit(found.field_as<Node>("body"), [&](const Node& node) {
    if (node.is("for") && nested.empty()) nested = LoopVar(node);
    return nested.empty();
  });
  KILN_CHECK(nested.empty(), ValueError)
      << "tir schedule vectorize: loop '" << loop << "' of " << FuncName(func) << " holds loop '"
      << nested << "'; only an innermost loop is vectorized";
  return Replace(func, found, WithFields(found, {{"kind", String("vectorized")}}));
}

Node Unroll(const Node& func, const std::string& loop) {
  return WithKind(func, loop, "unrolled", "unroll");
}

Node Bind(const Node& func, const std::string& loop, const std::string& index) {
  static const std::vector<std::string> kIndices = {"block_x",  "block_y",  "block_z",
                                                    "thread_x", "thread_y", "thread_z"};
  KILN_CHECK(std::find(kIndices.begin(), kIndices.end(), index) != kIndices.end(), ValueError)
      << "tir schedule bind: loop '" << loop << "' of " << FuncName(func) << " bound to '" << index
      << "', which is none of block_x/y/z, thread_x/y/z";
  return WithKind(func, loop, index, "bind");
}

KILN_REGISTER_GLOBAL("tir.schedule.Split")
    .set_body_typed([](const Node& func, const String& loop, int64_t factor, const String& outer,
                       const String& inner) {
      return Split(func, loop.str(), factor, outer.str(), inner.str());
    });
KILN_REGISTER_GLOBAL("tir.schedule.Fuse")
    .set_body_typed([](const Node& func, const String& outer, const String& inner,
                       const String& fused) {
      return Fuse(func, outer.str(), inner.str(), fused.str());
    });
KILN_REGISTER_GLOBAL("tir.schedule.Reorder")
    .set_body_typed([](const Node& func, const String& outer, const String& inner) {
      return Reorder(func, outer.str(), inner.str());
    });
KILN_REGISTER_GLOBAL("tir.schedule.Parallel")
    .set_body_typed([](const Node& func, const String& loop) {
      return Parallel(func, loop.str());
    });
KILN_REGISTER_GLOBAL("tir.schedule.Vectorize")
    .set_body_typed([](const Node& func, const String& loop) {
      return Vectorize(func, loop.str());
    });
KILN_REGISTER_GLOBAL("tir.schedule.Bind")
    .set_body_typed([](const Node& func, const String& loop, const String& index) {
      return Bind(func, loop.str(), index.str());
    });
KILN_REGISTER_GLOBAL("tir.schedule.Unroll")
    .set_body_typed([](const Node& func, const String& loop) { return Unroll(func, loop.str()); });

}  // namespace tir
}  // namespace kiln

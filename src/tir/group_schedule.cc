// The schedules of lowered groups (kiln/tir/lower.h): Kiln's default (contiguous loops fused,
// the outermost loop parallel), registered for every pattern a group can have, and the lookup
// that lets a plugin's schedule replace it.
#include <kiln/ffi/registry.h>
#include <kiln/ir/op.h>
#include <kiln/tir/builtin_nodes.h>
#include <kiln/tir/lower.h>
#include <kiln/tir/schedule.h>

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "schedule_internal.h"

namespace kiln {
namespace tir {
namespace {

/// `node` with the outermost loop of more than one iteration of each loop nest parallel.
Node ParallelizeNests(const Node& node) {
  if (node.is("for")) {
    const auto body = node.field_as<Node>("body");
    const bool single = node.field_as<arith::SizeExpr>("extent").as_int() == 1;
    if (single && body.is("for")) return WithFields(node, {{"body", ParallelizeNests(body)}});
    return WithFields(node, {{"kind", String("parallel")}});
  }
  if (node.is("seq")) {
    Array<Any> stmts;
    for (const Any& stmt : node.field_as<Array<Any>>("stmts")) {
      stmts.push_back(ParallelizeNests(stmt.cast<Node>()));
    }
    return WithFields(node, {{"stmts", stmts}});
  }
  if (node.is("allocate")) {
    return WithFields(node, {{"body", ParallelizeNests(node.field_as<Node>("body"))}});
  }
  return node;
}

int64_t Divisions(const arith::SizeExpr& expr) {
  const auto* binary = expr.as<arith::BinaryObj>();
  if (binary == nullptr) return 0;
  const bool division =
      binary->op() == arith::BinaryOp::kFloorDiv || binary->op() == arith::BinaryOp::kFloorMod;
  return (division ? 1 : 0) + Divisions(binary->a()) + Divisions(binary->b());
}

/// The floor divisions and modulos in the offsets of the loads and stores under `node`: index
/// arithmetic each element pays for, and which keeps a loop from vectorizing.
int64_t DivisionsInOffsets(const Node& node) {
  int64_t count = 0;
  Visit(node, [&](const Node& access) {
    if (access.is("load") || access.is("store")) {
      count += Divisions(
          RowMajorOffset(access.field_as<Node>("buffer"), access.field_as<Array<Any>>("indices")));
    }
    return true;
  });
  return count;
}

/// An innermost serial loop directly inside another serial loop, the outer not in `refused`.
std::optional<std::pair<std::string, std::string>> InnermostPair(
    const Node& func, const std::set<std::string>& refused) {
  std::optional<std::pair<std::string, std::string>> pair;
  auto serial = [](const Node& loop) { return loop.field_as<String>("kind").str() == "serial"; };
  Visit(func, [&](const Node& node) {
    if (pair.has_value()) return false;
    if (!node.is("for")) return true;
    const auto body = node.field_as<Node>("body");
    if (body.is("for") && !body.field_as<Node>("body").is("for") && serial(node) && serial(body) &&
        refused.count(internal::LoopVar(node)) == 0) {
      pair.emplace(internal::LoopVar(node), internal::LoopVar(body));
    }
    return true;
  });
  return pair;
}

/// `func` with directly nested serial loops fused, innermost pairs first, wherever the fused
/// loop's accesses need no more divisions than the pair's did (its index is contiguous in every
/// buffer): an elementwise nest over (64, 56, 56) becomes one loop of 200,704 iterations, which
/// vectorizes without a tail every 56 elements and splits into even chunks on the thread pool.
Node CoalesceLoops(const Node& func) {
  Node result = func;
  int64_t divisions = DivisionsInOffsets(func);
  std::set<std::string> refused;
  while (std::optional<std::pair<std::string, std::string>> pair = InnermostPair(result, refused)) {
    const auto& [outer, inner] = *pair;
    std::string name = outer;
    name.append("_").append(inner);
    const Node fused = Fuse(result, outer, inner, name);
    const int64_t after = DivisionsInOffsets(fused);
    if (after > divisions) {
      refused.insert(outer);
      continue;
    }
    result = fused;
    divisions = after;
  }
  return result;
}

}  // namespace

Node DefaultSchedule(const Node& func) {
  KILN_CHECK(func.is("prim_func"), ValueError)
      << "tir default schedule: takes a prim_func, got a " << func->name();
  const Node coalesced = CoalesceLoops(func);
  return WithFields(coalesced, {{"body", ParallelizeNests(coalesced.field_as<Node>("body"))}});
}

std::pair<Node, std::string> ScheduleGroup(const Node& func, const std::vector<ir::Op>& ops) {
  std::string name;
  std::optional<Function> schedule;
  for (const ir::Op& op : ops) {
    name = "tir.schedule.for_op." + op->name().str();
    schedule = Function::GetGlobal(name.c_str());
    if (schedule.has_value()) break;
  }
  if (!schedule.has_value() && !ops.empty()) {
    name = std::string("tir.schedule.default.") + ir::OpPatternName(ops.front().pattern());
    schedule = Function::GetGlobal(name.c_str());
  }
  if (!schedule.has_value()) return {func, ""};
  Any scheduled;
  try {
    scheduled = (*schedule)(func);
  } catch (const Error& error) {
    throw error.WithContext("in the schedule " + name + " of " +
                            func.field_as<String>("name").str());
  }
  std::optional<Node> result = scheduled.as<Node>();
  KILN_CHECK(result.has_value() && result->is("prim_func"), TypeError)
      << "the schedule " << name << " returned "
      << (result.has_value() ? "a " + (*result)->name() : "a " + scheduled.type_str())
      << ", not a prim_func";
  return {*result, name};
}

// The patterns a lowered group can have (ir::OpPatternName's names).
KILN_REGISTER_GLOBAL("tir.schedule.default.elemwise").set_body_typed(DefaultSchedule);
KILN_REGISTER_GLOBAL("tir.schedule.default.broadcast").set_body_typed(DefaultSchedule);
KILN_REGISTER_GLOBAL("tir.schedule.default.injective").set_body_typed(DefaultSchedule);
KILN_REGISTER_GLOBAL("tir.schedule.default.reduce").set_body_typed(DefaultSchedule);

}  // namespace tir
}  // namespace kiln

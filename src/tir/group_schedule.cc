// The schedules of lowered groups (kiln/tir/lower.h): Kiln's default, registered for every
// pattern a group can have, and the lookup that lets a plugin's schedule replace it.
#include <kiln/ffi/registry.h>
#include <kiln/ir/op.h>
#include <kiln/tir/builtin_nodes.h>
#include <kiln/tir/lower.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

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

}  // namespace

Node DefaultSchedule(const Node& func) {
  KILN_CHECK(func.is("prim_func"), ValueError)
      << "tir default schedule: takes a prim_func, got a " << func->name();
  return WithFields(func, {{"body", ParallelizeNests(func.field_as<Node>("body"))}});
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

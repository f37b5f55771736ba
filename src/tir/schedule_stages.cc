// The schedule primitives that move stages (kiln/tir/schedule.h): ComputeInline and ComputeAt.
// A stage is a buffer the function allocates and computes in one statement of the sequence its
// allocation holds (how the lowering writes a group's reductions, and how a hand-written
// function writes a temporary); its consumers are the later statements of that sequence.
#include <kiln/arith/analyzer.h>
#include <kiln/ffi/registry.h>
#include <kiln/tir/builtin_nodes.h>
#include <kiln/tir/schedule.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "node_internal.h"
#include "passes/buffer_access.h"
#include "passes/simplify.h"
#include "schedule_internal.h"

namespace kiln {
namespace tir {
namespace {

using internal::FindLoop;
using internal::FuncName;
using internal::LoopVar;

/// Where stage `buffer` lives in `func`.
struct Stage {
  Node allocation;          // allocate(buffer, ...)
  Node seq;                 // the sequence under it (through directly nested allocations)
  int64_t producer = -1;    // the statement of `seq` that stores into the buffer
  std::vector<Node> loops;  // the producer's perfectly nested loops, outermost first
  Node body;                // what those loops hold
  std::vector<arith::SizeExpr> store_indices;
};

[[noreturn]] void Fail(const Node& func, const std::string& primitive, const std::string& buffer,
                       const std::string& reason) {
  KILN_THROW(ValueError) << "tir schedule " << primitive << ": buffer '" << buffer << "' of "
                         << FuncName(func) << " " << reason;
}

std::string BufferName(const Node& buffer) { return buffer.field_as<String>("name").str(); }

Node FindAllocation(const Node& func, const std::string& buffer, const std::string& primitive) {
  for (const Any& param : func.field_as<Array<Any>>("params")) {
    if (BufferName(param.cast<Node>()) == buffer) {
      Fail(func, primitive, buffer,
           "is a parameter; only a buffer the function allocates is a stage");
    }
  }
  Node found;
  std::string allocated;
  Visit(func, [&](const Node& node) {
    if (!node.is("allocate")) return true;
    const std::string name = BufferName(node.field_as<Node>("buffer"));
    allocated += (allocated.empty() ? "" : ", ") + name;
    if (name == buffer) found = node;
    return true;
  });
  if (!found.defined()) {
    Fail(func, primitive, buffer,
         "does not exist (allocated buffers: " + (allocated.empty() ? "none" : allocated) + ")");
  }
  return found;
}

int64_t CountStores(const Node& root, const std::string& buffer) {
  int64_t stores = 0;
  Visit(root, [&](const Node& node) {
    if (node.is("store") && AccessedBuffer(node) == buffer) ++stores;
    return true;
  });
  return stores;
}

Node StoreInto(const Node& root, const std::string& buffer) {
  Node store;
  Visit(root, [&](const Node& node) {
    if (node.is("store") && AccessedBuffer(node) == buffer) store = node;
    return !store.defined();
  });
  return store;
}

std::vector<arith::SizeExpr> Indices(const Node& access) {
  std::vector<arith::SizeExpr> indices;
  for (const Any& index : access.field_as<Array<Any>>("indices")) {
    indices.push_back(index.cast<arith::SizeExpr>());
  }
  return indices;
}

Stage FindStage(const Node& func, const std::string& buffer, const std::string& primitive) {
  Stage stage;
  stage.allocation = FindAllocation(func, buffer, primitive);
  Node inner = stage.allocation.field_as<Node>("body");
  while (inner.is("allocate")) inner = inner.field_as<Node>("body");
  if (!inner.is("seq")) Fail(func, primitive, buffer, "holds no sequence of statements");
  stage.seq = inner;
  const auto stmts = stage.seq.field_as<Array<Any>>("stmts");
  if (CountStores(stage.seq, buffer) != 1) {
    Fail(func, primitive, buffer,
         "is stored into by " + std::to_string(CountStores(stage.seq, buffer)) +
             " statements; a stage is computed by one store");
  }
  for (int64_t i = 0; i < stmts.size(); ++i) {
    if (CountStores(stmts[i].cast<Node>(), buffer) == 1) stage.producer = i;
  }
  Node body = stmts[stage.producer].cast<Node>();
  while (body.is("for")) {
    stage.loops.push_back(body);
    body = body.field_as<Node>("body");
  }
  stage.body = body;
  stage.store_indices = Indices(StoreInto(body, buffer));
  return stage;
}

/// Whether `index` is the variable of `loop` (or 0 for a loop of one iteration).
bool IsLoopIndex(const arith::SizeExpr& index, const Node& loop) {
  const auto* var = index.as<arith::SizeVarObj>();
  if (var != nullptr) return var->name().str() == LoopVar(loop);
  return index.as_int() == 0 && loop.field_as<arith::SizeExpr>("extent").as_int() == 1;
}

/// A ValueError unless the producer stores at its first `axes` loops' variables, in order.
void CheckStoredAtLoops(const Node& func, const std::string& primitive, const std::string& buffer,
                        const Stage& stage, size_t axes) {
  bool at_loops = stage.loops.size() >= axes && stage.store_indices.size() >= axes;
  for (size_t a = 0; at_loops && a < axes; ++a) {
    at_loops = IsLoopIndex(stage.store_indices[a], stage.loops[a]);
  }
  if (at_loops) return;
  std::string indices;
  for (const arith::SizeExpr& index : stage.store_indices) {
    indices += (indices.empty() ? "" : ", ") + index.ToString();
  }
  std::string loops;
  for (size_t a = 0; a < std::min(axes, stage.loops.size()); ++a) {
    loops += (loops.empty() ? "" : ", ") + LoopVar(stage.loops[a]);
  }
  Fail(func, primitive, buffer,
       "is stored at [" + indices + "], not at the variables of the loops around its store (" +
           (loops.empty() ? "none" : loops) + ")");
}

/// Appends to `path` the nodes from `node` down to `target` (by identity); false, with `path`
/// as it was, when `target` is not under `node`.
bool PathTo(const Node& node, const Node& target, std::vector<Node>* path, int depth) {
  KILN_CHECK(depth < internal::kMaxDepth, ValueError)
      << "tir: nodes nest deeper than " << internal::kMaxDepth << " levels";
  path->push_back(node);
  if (node.same_as(target)) return true;
  const std::vector<FieldInfo>& infos = node->info().fields;
  for (size_t i = 0; i < infos.size(); ++i) {
    const Any& value = node->fields()[i];
    if (!internal::HoldsChildren(infos[i].kind) || value.is_none()) continue;
    if (!internal::IsList(infos[i].kind)) {
      if (PathTo(value.cast<Node>(), target, path, depth + 1)) return true;
      continue;
    }
    for (const Any& item : value.cast<Array<Any>>()) {
      if (PathTo(item.cast<Node>(), target, path, depth + 1)) return true;
    }
  }
  path->pop_back();
  return false;
}

/// `root` with sequence `seq` (by identity) replaced by one of `stmts`.
Node ReplaceSeq(const Node& root, const Node& seq, const std::vector<Node>& stmts) {
  return Mutate(root, [&](const Node& node) -> std::optional<Node> {
    if (node.same_as(seq)) return Seq(stmts);
    return std::nullopt;
  });
}

/// `root` without the allocation of `allocation`'s buffer: its body instead (the same node, so a
/// sequence under it keeps its identity).
Node WithoutAllocation(const Node& root, const Node& allocation) {
  return Mutate(root, [&](const Node& node) -> std::optional<Node> {
    if (node.is("allocate") && BufferName(node.field_as<Node>("buffer")) ==
                                   BufferName(allocation.field_as<Node>("buffer"))) {
      return node.field_as<Node>("body");
    }
    return std::nullopt;
  });
}

std::vector<Node> SeqStmts(const Node& seq) {
  std::vector<Node> stmts;
  for (const Any& stmt : seq.field_as<Array<Any>>("stmts")) stmts.push_back(stmt.cast<Node>());
  return stmts;
}

}  // namespace

Node ComputeInline(const Node& func, const std::string& buffer) {
  const std::string primitive = "compute_inline";
  const Stage stage = FindStage(func, buffer, primitive);
  if (!stage.body.is("store")) {
    Fail(func, primitive, buffer,
         "is computed by a " + stage.body->name() + " inside its loops, not by one store");
  }
  CheckStoredAtLoops(func, primitive, buffer, stage, stage.store_indices.size());
  const auto value = stage.body.field_as<Node>("value");
  if (ReadsBuffer(value, buffer)) Fail(func, primitive, buffer, "reads itself (a reduction)");
  std::vector<Node> stmts = SeqStmts(stage.seq);
  stmts.erase(stmts.begin() + stage.producer);
  Node inlined = ReplaceSeq(func, stage.seq, stmts);
  inlined = Mutate(inlined, [&](const Node& node) -> std::optional<Node> {
    if (!node.is("load") || AccessedBuffer(node) != buffer) return std::nullopt;
    std::map<std::string, arith::SizeExpr> at;
    const std::vector<arith::SizeExpr> read = Indices(node);
    for (size_t a = 0; a < read.size(); ++a) {
      if (stage.store_indices[a].as<arith::SizeVarObj>() != nullptr) {
        at[stage.store_indices[a].ToString()] = read[a];
      }
    }
    return SubstituteIndices(value, at);
  });
  return Simplify(WithoutAllocation(inlined, stage.allocation));
}

Node ComputeAt(const Node& func, const std::string& buffer, const std::string& loop) {
  const std::string primitive = "compute_at";
  const Stage stage = FindStage(func, buffer, primitive);
  const Node consumer_loop = FindLoop(func, loop, primitive);
  const std::vector<Node> stmts = SeqStmts(stage.seq);
  // The consumer statement: the later statement of the sequence holding the loop, with the
  // loops from it down to the loop (inclusive), outermost first.
  int64_t consumer = -1;
  std::vector<Node> around;
  for (int64_t i = stage.producer + 1; i < static_cast<int64_t>(stmts.size()); ++i) {
    std::vector<Node> path;
    if (!PathTo(stmts[i], consumer_loop, &path, 0)) continue;
    consumer = i;
    for (const Node& node : path) {
      if (node.is("for")) around.push_back(node);
    }
    break;
  }
  if (consumer < 0) {
    Fail(func, primitive, buffer,
         "is computed after loop '" + loop +
             "' or in another sequence; it can move only into a "
             "loop of a later statement of the sequence that computes it");
  }
  const size_t axes = around.size();
  CheckStoredAtLoops(func, primitive, buffer, stage, axes);
  // Every read must be inside the loop, at the loops' variables on the leading axes.
  for (int64_t i = stage.producer + 1; i < static_cast<int64_t>(stmts.size()); ++i) {
    Visit(stmts[i], [&](const Node& node) {
      if (node.same_as(consumer_loop)) {
        Visit(node, [&](const Node& read) {
          if (!read.is("load") || AccessedBuffer(read) != buffer) return true;
          const std::vector<arith::SizeExpr> at = Indices(read);
          for (size_t a = 0; a < axes; ++a) {
            if (!arith::StructuralEqual(at[a], arith::SizeVar(String(LoopVar(around[a]))))) {
              Fail(func, primitive, buffer,
                   "is read at index " + at[a].ToString() + " of axis " + std::to_string(a) +
                       " inside loop '" + loop + "', not at loop '" + LoopVar(around[a]) +
                       "''s variable: each iteration would need values another computes");
            }
          }
          return true;
        });
        return false;
      }
      if (node.is("load") && AccessedBuffer(node) == buffer) {
        Fail(func, primitive, buffer, "is read outside loop '" + loop + "'");
      }
      return true;
    });
  }
  // Moving the producer later must not change what it reads.
  std::set<std::string> read_by_producer;
  Visit(stmts[stage.producer], [&](const Node& node) {
    if (node.is("load")) read_by_producer.insert(AccessedBuffer(node));
    return true;
  });
  for (int64_t i = stage.producer + 1; i <= consumer; ++i) {
    Visit(stmts[i], [&](const Node& node) {
      if (node.is("store") && read_by_producer.count(AccessedBuffer(node)) != 0) {
        Fail(func, primitive, buffer,
             "is computed from '" + AccessedBuffer(node) + "', which is written before loop '" +
                 loop + "'");
      }
      return true;
    });
  }
  // The stage shrinks to one slice of its leading axes, computed in each iteration.
  const Node old_buffer = stage.allocation.field_as<Node>("buffer");
  const auto shape = old_buffer.field_as<Array<Any>>("shape");
  std::vector<arith::SizeExpr> slice_shape;
  for (int64_t a = static_cast<int64_t>(axes); a < shape.size(); ++a) {
    slice_shape.push_back(shape[a].cast<arith::SizeExpr>());
  }
  if (slice_shape.empty()) slice_shape.push_back(arith::IntImm(1));
  const Node slice = Buffer(buffer, old_buffer.field_as<DLDataType>("dtype"), slice_shape);
  auto drop_leading = [&](const Array<Any>& indices) {
    std::vector<arith::SizeExpr> rest;
    for (int64_t a = static_cast<int64_t>(axes); a < indices.size(); ++a) {
      rest.push_back(indices[a].cast<arith::SizeExpr>());
    }
    if (rest.empty()) rest.push_back(arith::IntImm(0));
    return rest;
  };
  std::map<std::string, arith::SizeExpr> at_consumer;
  for (size_t a = 0; a < axes; ++a) {
    at_consumer[LoopVar(stage.loops[a])] = arith::SizeVar(String(LoopVar(around[a])));
  }
  Node producer = stage.loops.size() > axes ? stage.loops[axes] : stage.body;
  producer =
      RetargetAccesses(SubstituteIndices(producer, at_consumer), buffer, slice, drop_leading);
  const Node consumer_body =
      RetargetAccesses(consumer_loop.field_as<Node>("body"), buffer, slice, drop_leading);
  const Node moved = WithFields(
      consumer_loop, {{"body", Allocate(slice, "local", Seq({producer, consumer_body}))}});
  std::vector<Node> rest = stmts;
  rest[consumer] = internal::Replace(stmts[consumer], consumer_loop, moved);
  rest.erase(rest.begin() + stage.producer);
  // The stage's allocation goes first: the slice allocated in the loop has its name.
  return Simplify(ReplaceSeq(WithoutAllocation(func, stage.allocation), stage.seq, rest));
}

KILN_REGISTER_GLOBAL("tir.schedule.ComputeInline")
    .set_body_typed([](const Node& func, const String& buffer) {
      return ComputeInline(func, buffer.str());
    });
KILN_REGISTER_GLOBAL("tir.schedule.ComputeAt")
    .set_body_typed([](const Node& func, const String& buffer, const String& loop) {
      return ComputeAt(func, buffer.str(), loop.str());
    });

}  // namespace tir
}  // namespace kiln

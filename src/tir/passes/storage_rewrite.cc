// The loop-level pass `storage_rewrite` (the global "tir.pass.storage_rewrite"): temporaries
// whose lives do not overlap share memory.
//
// It looks at allocations nested directly around a sequence, which is how the lowering declares
// a group's stage buffers: `allocate(t0, body=allocate(t1, body=seq([...])))`. A buffer lives
// from the first statement of the sequence that accesses it to the last. Taking them in the
// order their lives start, a buffer moves into an earlier one whose life has ended when both
// have the same dtype and scope and the earlier one is large enough: the same shape, or both
// one-dimensional with an extent the analyzer proves large enough (run flatten_buffers first to
// let buffers of different shapes share). Its allocation goes, and its loads and stores access
// the buffer it moved into.
#include <kiln/arith/analyzer.h>
#include <kiln/ffi/registry.h>
#include <kiln/tir/builtin_nodes.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "buffer_access.h"
#include "simplify.h"

namespace kiln {
namespace tir {
namespace {

struct Temporary {
  Node allocation;
  std::string name;
  int64_t first = -1;  // the statements of the sequence that access it, first and last
  int64_t last = -1;
  std::string host;  // the temporary whose memory it takes, or "" for its own
};

bool Fits(const Node& small, const Node& large, const arith::Analyzer& analyzer) {
  const auto small_shape = small.field_as<Array<Any>>("shape");
  const auto large_shape = large.field_as<Array<Any>>("shape");
  if (small_shape.size() != large_shape.size()) return false;
  if (small_shape.size() == 1) {
    return analyzer.CanProveLE(small_shape[0].cast<arith::SizeExpr>(),
                               large_shape[0].cast<arith::SizeExpr>());
  }
  for (int64_t axis = 0; axis < small_shape.size(); ++axis) {
    if (!arith::StructuralEqual(small_shape[axis].cast<arith::SizeExpr>(),
                                large_shape[axis].cast<arith::SizeExpr>())) {
      return false;
    }
  }
  return true;
}

bool CanShare(const Temporary& later, const Temporary& earlier, const arith::Analyzer& analyzer) {
  const auto a = later.allocation.field_as<Node>("buffer");
  const auto b = earlier.allocation.field_as<Node>("buffer");
  return earlier.host.empty() && earlier.last < later.first &&
         DataTypeEqual(a.field_as<DLDataType>("dtype"), b.field_as<DLDataType>("dtype")) &&
         later.allocation.field_as<String>("scope").str() ==
             earlier.allocation.field_as<String>("scope").str() &&
         Fits(a, b, analyzer);
}

/// The lives of `temporaries` over the statements of `seq`.
void MeasureLives(const Node& seq, std::vector<Temporary>* temporaries) {
  const auto stmts = seq.field_as<Array<Any>>("stmts");
  for (Temporary& temporary : *temporaries) {
    for (int64_t i = 0; i < stmts.size(); ++i) {
      if (!AccessesBuffer(stmts[i].cast<Node>(), temporary.name)) continue;
      if (temporary.first < 0) temporary.first = i;
      temporary.last = i;
    }
  }
}

/// Chooses a host for each temporary that can take another's memory; true when any can.
bool AssignHosts(std::vector<Temporary>* temporaries, const arith::Analyzer& analyzer) {
  std::vector<Temporary*> by_start;
  for (Temporary& temporary : *temporaries) {
    if (temporary.first >= 0) by_start.push_back(&temporary);
  }
  std::stable_sort(by_start.begin(), by_start.end(),
                   [](const Temporary* a, const Temporary* b) { return a->first < b->first; });
  bool shared = false;
  for (size_t i = 0; i < by_start.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (!CanShare(*by_start[i], *by_start[j], analyzer)) continue;
      by_start[i]->host = by_start[j]->name;
      by_start[j]->last = by_start[i]->last;  // the host now lives as long as its guest
      shared = true;
      break;
    }
  }
  return shared;
}

std::optional<Node> Rewrite(const Node& outermost, const arith::Analyzer& analyzer) {
  std::vector<Temporary> temporaries;
  Node inner = outermost;
  while (inner.is("allocate")) {
    Temporary temporary;
    temporary.allocation = inner;
    temporary.name = inner.field_as<Node>("buffer").field_as<String>("name").str();
    temporaries.push_back(temporary);
    inner = inner.field_as<Node>("body");
  }
  if (temporaries.size() < 2 || !inner.is("seq")) return std::nullopt;
  MeasureLives(inner, &temporaries);
  if (!AssignHosts(&temporaries, analyzer)) return std::nullopt;
  std::map<std::string, Node> buffers;
  for (const Temporary& temporary : temporaries) {
    buffers[temporary.name] = temporary.allocation.field_as<Node>("buffer");
  }
  Node body = inner;
  for (const Temporary& temporary : temporaries) {
    if (temporary.host.empty()) continue;
    body = RetargetAccesses(body, temporary.name, buffers[temporary.host],
                            [](const Array<Any>& indices) {
                              std::vector<arith::SizeExpr> same;
                              for (const Any& index : indices)
                                same.push_back(index.cast<arith::SizeExpr>());
                              return same;
                            });
  }
  for (auto it = temporaries.rbegin(); it != temporaries.rend(); ++it) {
    if (!it->host.empty()) continue;
    body = Allocate(buffers[it->name], it->allocation.field_as<String>("scope").str(), body);
  }
  return body;
}

Node StorageRewrite(const Node& func) {
  const arith::Analyzer analyzer = FunctionAnalyzer(func);
  return Mutate(func, [&](const Node& node) -> std::optional<Node> {
    return node.is("allocate") ? Rewrite(node, analyzer) : std::nullopt;
  });
}

}  // namespace

KILN_REGISTER_GLOBAL("tir.pass.storage_rewrite").set_body_typed(StorageRewrite);

}  // namespace tir
}  // namespace kiln

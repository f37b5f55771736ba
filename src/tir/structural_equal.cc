// Structural equality and hashing of tensor-level IR nodes (kiln/tir/node.h), over every kind's
// registered fields.
#include <cmath>
#include <cstring>
#include <limits>

#include "node_internal.h"

namespace kiln {
namespace tir {
namespace {

uint64_t Combine(uint64_t seed, uint64_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

/// The bits a float compares and hashes by: its own, except that every NaN is one value (the
/// IR gives a NaN's sign and payload no meaning, and the text format writes each as `nan`).
uint64_t FloatBits(double value) {
  if (std::isnan(value)) value = std::numeric_limits<double>::quiet_NaN();
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

uint64_t HashString(const std::string& text) { return std::hash<std::string>()(text); }

/// A referenced buffer is its name: the declaration it names is compared where it stands.
std::string BufferName(const Any& value) {
  return value.cast<Node>().field_as<String>("name").str();
}

bool FieldEqual(const Any& a, const Any& b, FieldKind kind, int depth);
uint64_t FieldHash(const Any& value, FieldKind kind, int depth);

bool NodeEqual(const Node& a, const Node& b, int depth) {
  KILN_CHECK(depth < internal::kMaxDepth, ValueError)
      << "tir: nodes nest deeper than " << internal::kMaxDepth << " levels";
  if (a.same_as(b)) return true;
  if (&a->info() != &b->info()) return false;
  const std::vector<FieldInfo>& fields = a->info().fields;
  for (size_t i = 0; i < fields.size(); ++i) {
    const Any& x = a->fields()[i];
    const Any& y = b->fields()[i];
    if (x.is_none() || y.is_none()) {
      if (x.is_none() != y.is_none()) return false;
      continue;
    }
    if (!FieldEqual(x, y, fields[i].kind, depth + 1)) return false;
  }
  return true;
}

uint64_t NodeHash(const Node& node, int depth) {
  KILN_CHECK(depth < internal::kMaxDepth, ValueError)
      << "tir: nodes nest deeper than " << internal::kMaxDepth << " levels";
  uint64_t hash = HashString(node->name());
  const std::vector<FieldInfo>& fields = node->info().fields;
  for (size_t i = 0; i < fields.size(); ++i) {
    const Any& value = node->fields()[i];
    hash = Combine(hash, value.is_none() ? 0 : FieldHash(value, fields[i].kind, depth + 1));
  }
  return hash;
}

/// The kind of one item of a list of `kind`.
FieldKind ItemKind(FieldKind kind) {
  switch (kind) {
    case FieldKind::kIndices: return FieldKind::kIndex;
    case FieldKind::kValues: return FieldKind::kValue;
    case FieldKind::kStmts: return FieldKind::kStmt;
    case FieldKind::kBuffers: return FieldKind::kBuffer;
    default: return kind;
  }
}

bool FieldEqual(const Any& a, const Any& b, FieldKind kind, int depth) {
  if (internal::IsList(kind)) {
    const auto x = a.cast<Array<Any>>();
    const auto y = b.cast<Array<Any>>();
    if (x.size() != y.size()) return false;
    for (int64_t i = 0; i < x.size(); ++i) {
      if (!FieldEqual(x[i], y[i], ItemKind(kind), depth)) return false;
    }
    return true;
  }
  switch (kind) {
    case FieldKind::kIndex:
      return arith::StructuralEqual(a.cast<arith::SizeExpr>(), b.cast<arith::SizeExpr>());
    case FieldKind::kValue:
    case FieldKind::kStmt:
    case FieldKind::kBuffer: return NodeEqual(a.cast<Node>(), b.cast<Node>(), depth);
    case FieldKind::kBufferRef: return BufferName(a) == BufferName(b);
    case FieldKind::kIdent:
    case FieldKind::kString: return a.cast<std::string>() == b.cast<std::string>();
    case FieldKind::kDType: return DataTypeEqual(a.cast<DLDataType>(), b.cast<DLDataType>());
    case FieldKind::kInt: return a.cast<int64_t>() == b.cast<int64_t>();
    case FieldKind::kFloat:
      // By bits: NaN equals NaN (whatever its sign), -0 differs from 0.
      return FloatBits(a.cast<double>()) == FloatBits(b.cast<double>());
    default: return false;
  }
}

uint64_t FieldHash(const Any& value, FieldKind kind, int depth) {
  if (internal::IsList(kind)) {
    uint64_t hash = 0;
    for (const Any& item : value.cast<Array<Any>>()) {
      hash = Combine(hash, FieldHash(item, ItemKind(kind), depth));
    }
    return hash;
  }
  switch (kind) {
    case FieldKind::kIndex: return arith::StructuralHash(value.cast<arith::SizeExpr>());
    case FieldKind::kValue:
    case FieldKind::kStmt:
    case FieldKind::kBuffer: return NodeHash(value.cast<Node>(), depth);
    case FieldKind::kBufferRef: return HashString(BufferName(value));
    case FieldKind::kIdent:
    case FieldKind::kString: return HashString(value.cast<std::string>());
    case FieldKind::kDType: {
      const DLDataType dtype = value.cast<DLDataType>();
      return (uint64_t{dtype.code} << 24) | (uint64_t{dtype.bits} << 16) | dtype.lanes;
    }
    case FieldKind::kInt: return static_cast<uint64_t>(value.cast<int64_t>());
    case FieldKind::kFloat: return FloatBits(value.cast<double>());
    default: return 0;
  }
}

}  // namespace

bool StructuralEqual(const Node& a, const Node& b) { return NodeEqual(a, b, 0); }

uint64_t StructuralHash(const Node& node) { return NodeHash(node, 0); }

}  // namespace tir
}  // namespace kiln

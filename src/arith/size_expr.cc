// Size expression nodes, the folding builders, and structural comparison.
#include <kiln/arith/size_expr.h>

#include <algorithm>
#include <functional>
#include <string>
#include <string_view>

#include "arith_internal.h"
#include "int_arith_internal.h"

namespace kiln {
namespace arith {
namespace {

/// The function names of the text; a variable may not take one (the parser could not tell).
bool IsReservedName(std::string_view name) {
  return name == "floordiv" || name == "floormod" || name == "min" || name == "max";
}

bool IsIdentifier(std::string_view name) {
  if (name.empty()) return false;
  auto ident_start = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  };
  if (!ident_start(name[0])) return false;
  for (char c : name) {
    if (!ident_start(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

int32_t DepthOf(const SizeExpr& expr) { return expr.defined() ? expr->depth() : 0; }

/// The value of `op` on two constants, as the builders fold it.
int64_t Fold(BinaryOp op, int64_t x, int64_t y, const SizeExpr& a, const SizeExpr& b) {
  std::optional<int64_t> result;
  switch (op) {
    case BinaryOp::kAdd: result = internal::CheckedAdd(x, y); break;
    case BinaryOp::kSub: result = internal::CheckedSub(x, y); break;
    case BinaryOp::kMul: result = internal::CheckedMul(x, y); break;
    case BinaryOp::kFloorDiv: result = internal::CheckedFloorDiv(x, y); break;
    case BinaryOp::kFloorMod: result = internal::FloorModOf(x, y); break;
    case BinaryOp::kMin: result = std::min(x, y); break;
    case BinaryOp::kMax: result = std::max(x, y); break;
  }
  KILN_CHECK(result.has_value(), OverflowError)
      << internal::RawBinary(op, a, b) << " does not fit in int64";
  return *result;
}

/// Kinds in the order StructuralCompare sorts them: IntImm, SizeVar, then BinaryOp's order.
int KindRank(const SizeExprObj* node) {
  if (node->IsInstance<IntImmObj>()) return 0;
  if (node->IsInstance<SizeVarObj>()) return 1;
  return 2 + static_cast<int>(static_cast<const BinaryObj*>(node)->op());
}

uint64_t Combine(uint64_t seed, uint64_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

}  // namespace

namespace internal {

SizeExpr RawBinary(BinaryOp op, SizeExpr a, SizeExpr b) {
  switch (op) {
    case BinaryOp::kAdd: return SizeExpr(make_object<AddObj>(std::move(a), std::move(b)));
    case BinaryOp::kSub: return SizeExpr(make_object<SubObj>(std::move(a), std::move(b)));
    case BinaryOp::kMul: return SizeExpr(make_object<MulObj>(std::move(a), std::move(b)));
    case BinaryOp::kFloorDiv: return SizeExpr(make_object<FloorDivObj>(std::move(a), std::move(b)));
    case BinaryOp::kFloorMod: return SizeExpr(make_object<FloorModObj>(std::move(a), std::move(b)));
    case BinaryOp::kMin: return SizeExpr(make_object<MinObj>(std::move(a), std::move(b)));
    case BinaryOp::kMax: return SizeExpr(make_object<MaxObj>(std::move(a), std::move(b)));
  }
  KILN_THROW(InternalError) << "unknown BinaryOp " << static_cast<int>(op);
}

const char* OpSpelling(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd: return "+";
    case BinaryOp::kSub: return "-";
    case BinaryOp::kMul: return "*";
    case BinaryOp::kFloorDiv: return "floordiv";
    case BinaryOp::kFloorMod: return "floormod";
    case BinaryOp::kMin: return "min";
    case BinaryOp::kMax: return "max";
  }
  return "?";
}

}  // namespace internal

std::optional<int64_t> SizeExpr::as_int() const {
  if (const auto* imm = as<IntImmObj>()) return imm->value();
  return std::nullopt;
}

IntImm::IntImm(int64_t value) { data_ = make_object<IntImmObj>(value); }

SizeVar::SizeVar(String name) {
  KILN_CHECK(IsIdentifier(name.view()), ValueError)
      << "SizeVar: '" << name << "' is not a name ([A-Za-z_][A-Za-z0-9_]*)";
  KILN_CHECK(!IsReservedName(name.view()), ValueError)
      << "SizeVar: '" << name << "' is a function of the size expression text, not a name";
  data_ = make_object<SizeVarObj>(std::move(name));
}

BinaryObj::BinaryObj(BinaryOp op, SizeExpr a, SizeExpr b)
    : SizeExprObj(1 + std::max(DepthOf(a), DepthOf(b))),
      op_(op),
      a_(std::move(a)),
      b_(std::move(b)) {
  KILN_CHECK(a_.defined() && b_.defined(), ValueError)
      << internal::OpSpelling(op) << ": an operand is null";
  KILN_CHECK(depth() <= kMaxSizeExprDepth, ValueError)
      << "size expression nests deeper than " << kMaxSizeExprDepth << " levels";
}

SizeExpr MakeBinary(BinaryOp op, const SizeExpr& a, const SizeExpr& b) {
  KILN_CHECK(a.defined() && b.defined(), ValueError)
      << internal::OpSpelling(op) << ": an operand is null";
  const std::optional<int64_t> x = a.as_int();
  const std::optional<int64_t> y = b.as_int();
  if (op == BinaryOp::kFloorDiv || op == BinaryOp::kFloorMod) {
    KILN_CHECK(y != 0, ValueError) << "division by zero in " << internal::RawBinary(op, a, b);
  }
  if (x.has_value() && y.has_value()) return IntImm(Fold(op, *x, *y, a, b));
  // Identities that hold wherever the operands are defined.
  switch (op) {
    case BinaryOp::kAdd:
      if (x == 0) return b;
      if (y == 0) return a;
      break;
    case BinaryOp::kSub:
      if (y == 0) return a;
      break;
    case BinaryOp::kMul:
      if (x == 0 || y == 0) return IntImm(0);
      if (x == 1) return b;
      if (y == 1) return a;
      break;
    case BinaryOp::kFloorDiv:
      if (y == 1) return a;
      if (x == 0) return IntImm(0);
      break;
    case BinaryOp::kFloorMod:
      if (x == 0 || (y.has_value() && (*y == 1 || *y == -1))) return IntImm(0);
      break;
    case BinaryOp::kMin:
    case BinaryOp::kMax:
      if (StructuralEqual(a, b)) return a;
      break;
  }
  return internal::RawBinary(op, a, b);
}

SizeExpr operator+(const SizeExpr& a, const SizeExpr& b) {
  return MakeBinary(BinaryOp::kAdd, a, b);
}
SizeExpr operator-(const SizeExpr& a, const SizeExpr& b) {
  return MakeBinary(BinaryOp::kSub, a, b);
}
SizeExpr operator*(const SizeExpr& a, const SizeExpr& b) {
  return MakeBinary(BinaryOp::kMul, a, b);
}
SizeExpr FloorDiv(const SizeExpr& a, const SizeExpr& b) {
  return MakeBinary(BinaryOp::kFloorDiv, a, b);
}
SizeExpr FloorMod(const SizeExpr& a, const SizeExpr& b) {
  return MakeBinary(BinaryOp::kFloorMod, a, b);
}
SizeExpr Min(const SizeExpr& a, const SizeExpr& b) { return MakeBinary(BinaryOp::kMin, a, b); }
SizeExpr Max(const SizeExpr& a, const SizeExpr& b) { return MakeBinary(BinaryOp::kMax, a, b); }

int StructuralCompare(const SizeExpr& a, const SizeExpr& b) {
  if (a.same_as(b)) return 0;
  if (!a.defined() || !b.defined()) return a.defined() ? 1 : -1;
  const int rank_a = KindRank(a.get());
  const int rank_b = KindRank(b.get());
  if (rank_a != rank_b) return rank_a < rank_b ? -1 : 1;
  if (const auto* x = a.as<IntImmObj>()) {
    const int64_t y = b.as<IntImmObj>()->value();
    return x->value() == y ? 0 : (x->value() < y ? -1 : 1);
  }
  if (const auto* x = a.as<SizeVarObj>()) {
    const int order = x->name().view().compare(b.as<SizeVarObj>()->name().view());
    return order == 0 ? 0 : (order < 0 ? -1 : 1);
  }
  const auto* x = a.as<BinaryObj>();
  const auto* y = b.as<BinaryObj>();
  const int first = StructuralCompare(x->a(), y->a());
  return first != 0 ? first : StructuralCompare(x->b(), y->b());
}

bool StructuralEqual(const SizeExpr& a, const SizeExpr& b) { return StructuralCompare(a, b) == 0; }

uint64_t StructuralHash(const SizeExpr& expr) {
  if (!expr.defined()) return 0;
  const uint64_t kind = static_cast<uint64_t>(KindRank(expr.get())) + 1;
  if (const auto* imm = expr.as<IntImmObj>()) {
    return Combine(kind, static_cast<uint64_t>(imm->value()));
  }
  if (const auto* var = expr.as<SizeVarObj>()) {
    return Combine(kind, std::hash<std::string_view>()(var->name().view()));
  }
  const auto* node = expr.as<BinaryObj>();
  return Combine(Combine(kind, StructuralHash(node->a())), StructuralHash(node->b()));
}

}  // namespace arith
}  // namespace kiln

// Structural equality and hashing with explicit work stacks (graphs may be 100,000 nodes deep).
#include <kiln/ir/structural_equal.h>

#include <kiln/ffi/map.h>
#include <kiln/ir/control_flow.h>
#include <kiln/ir/function.h>
#include <kiln/ir/module.h>
#include <kiln/ir/op.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kiln {
namespace ir {
namespace {

const Object* ObjectOf(const Any& value) {
  return kiln::detail::HoldsObject(value.raw())
             ? kiln::detail::ObjectUnsafe::FromHeader(value.raw()->v_obj)
             : nullptr;
}

template <typename T>
const T* As(const Object* node) {
  return node->IsInstance<T>() ? static_cast<const T*>(node) : nullptr;
}

/// Whether a tensor's bytes can be read here: Constant guarantees it, a tensor in an attribute
/// map may live on a device or be strided, and is then compared by identity instead.
bool HasReadableBytes(const TensorObj* tensor) {
  const DLTensor& t = tensor->dl_tensor;
  return t.device.device_type == kDLCPU && t.strides == nullptr;
}

/// The bytes of a compact host tensor.
std::string_view TensorBytes(const TensorObj* tensor) {
  const DLTensor& t = tensor->dl_tensor;
  int64_t elements = 1;
  for (int32_t i = 0; i < t.ndim; ++i) elements *= t.shape[i];
  const int64_t element_bytes = (static_cast<int64_t>(t.dtype.bits) * t.dtype.lanes + 7) / 8;
  return std::string_view(static_cast<const char*>(t.data) + t.byte_offset,
                          static_cast<size_t>(elements * element_bytes));
}

/// The bytes of a String or Bytes object; nullopt for other kinds.
std::optional<std::string_view> ByteView(const Object* node) {
  if (!node->IsInstance<StringObj>() && !node->IsInstance<BytesObj>()) return std::nullopt;
  const KilnByteArray& bytes = static_cast<const kiln::detail::ByteSequenceObj*>(node)->bytes;
  return std::string_view(bytes.data, bytes.size);
}

/// A size expression node as a reference, for the arith library's comparison and hash.
arith::SizeExpr SizeExprOf(const Object* node) {
  return arith::SizeExpr::FromUnchecked(ObjectPtr<Object>::FromBorrowed(const_cast<Object*>(node)));
}

bool SameTensor(const TensorObj* a, const TensorObj* b) {
  const DLTensor& x = a->dl_tensor;
  const DLTensor& y = b->dl_tensor;
  if (!DataTypeEqual(x.dtype, y.dtype) || x.ndim != y.ndim) return false;
  if (!std::equal(x.shape, x.shape + x.ndim, y.shape)) return false;
  return TensorBytes(a) == TensorBytes(b);
}

/// Inline values (numbers, dtypes, devices, pointers) compare by their payload.
bool SameInlineValue(const KilnAny* a, const KilnAny* b) {
  if (a->type_index == kKilnTypeFloat) return a->v_float64 == b->v_float64;
  if (a->type_index == kKilnTypeDataType) return DataTypeEqual(a->v_dtype, b->v_dtype);
  return a->v_int64 == b->v_int64;
}

class EqualChecker {
 public:
  explicit EqualChecker(bool map_free_vars) : map_free_vars_(map_free_vars) {}

  bool Run(Any a, Any b) {
    pending_.emplace_back(std::move(a), std::move(b));
    while (!pending_.empty()) {
      const std::pair<Any, Any> next = std::move(pending_.back());
      pending_.pop_back();
      if (!Step(next.first, next.second)) return false;
    }
    return true;
  }

 private:
  /// Compares what one pair holds itself and queues the pairs of its children.
  bool Step(const Any& a, const Any& b) {
    if (a.type_index() != b.type_index()) return false;
    const Object* x = ObjectOf(a);
    const Object* y = ObjectOf(b);
    if (x == nullptr) return SameInlineValue(a.raw(), b.raw());
    if (As<VarObj>(x) != nullptr) return SameVar(x, y);
    // Each pair is compared once: a DAG is not unfolded into a tree. Safe because the variable
    // mapping only grows, so a pair's verdict cannot change later.
    if (!seen_.emplace(x, y).second) return true;
    if (x == y && !MayContainVar(x)) return true;
    return SameFields(x, y);
  }

  /// Whether a node may reach a variable, whose verdict depends on the mapping: the same object
  /// on both sides is not enough when it mentions a parameter bound differently on each side.
  static bool MayContainVar(const Object* node) {
    if (node->IsInstance<ArrayObj>() || node->IsInstance<MapObj>()) return true;
    return node->IsInstance<ExprObj>() && !node->IsInstance<ConstantObj>() &&
           !node->IsInstance<OpObj>() && !node->IsInstance<GlobalVarObj>();
  }

  bool SameVar(const Object* x, const Object* y) {
    if (auto it = lhs_to_rhs_.find(x); it != lhs_to_rhs_.end()) return it->second == y;
    if (rhs_to_lhs_.count(y) > 0) return false;
    if (!map_free_vars_) return x == y;
    return Bind(static_cast<const VarObj*>(x), static_cast<const VarObj*>(y));
  }

  bool Bind(const VarObj* x, const VarObj* y) {
    if (lhs_to_rhs_.count(x) > 0 || rhs_to_lhs_.count(y) > 0) return false;
    lhs_to_rhs_.emplace(x, y);
    rhs_to_lhs_.emplace(y, x);
    Push(x->type_annotation(), y->type_annotation());
    return true;
  }

  template <typename T>
  void Push(const T& a, const T& b) {
    pending_.emplace_back(Any(a), Any(b));
  }

  bool SameFields(const Object* x, const Object* y) {
    if (const auto* a = As<CallObj>(x)) {
      const auto* b = static_cast<const CallObj*>(y);
      Push(a->op(), b->op());
      Push(a->args(), b->args());
      Push(a->attrs(), b->attrs());
      return true;
    }
    if (const auto* a = As<TupleObj>(x)) {
      Push(a->fields(), static_cast<const TupleObj*>(y)->fields());
      return true;
    }
    if (const auto* a = As<TupleGetItemObj>(x)) {
      const auto* b = static_cast<const TupleGetItemObj*>(y);
      Push(a->tuple(), b->tuple());
      return a->index() == b->index();
    }
    if (const auto* a = As<FunctionObj>(x))
      return SameFunction(a, static_cast<const FunctionObj*>(y));
    if (const auto* a = As<IfObj>(x)) {
      const auto* b = static_cast<const IfObj*>(y);
      Push(a->cond(), b->cond());
      Push(a->then_branch(), b->then_branch());
      Push(a->else_branch(), b->else_branch());
      Push(a->sizes(), b->sizes());
      return true;
    }
    if (const auto* a = As<LoopObj>(x)) {
      const auto* b = static_cast<const LoopObj*>(y);
      Push(a->trip_count(), b->trip_count());
      Push(a->condition(), b->condition());
      Push(a->initial(), b->initial());
      Push(a->body(), b->body());
      return arith::StructuralEqual(a->iterations(), b->iterations());
    }
    if (const auto* a = As<ConstantObj>(x)) {
      return SameTensor(a->data().get(), static_cast<const ConstantObj*>(y)->data().get());
    }
    if (const auto* a = As<GlobalVarObj>(x)) {
      return a->name_hint() == static_cast<const GlobalVarObj*>(y)->name_hint();
    }
    if (const auto* a = As<IRModuleObj>(x))
      return SameModule(a, static_cast<const IRModuleObj*>(y));
    return SameTypeOrValue(x, y);
  }

  /// Functions are matched by name, as GlobalVars are.
  bool SameModule(const IRModuleObj* a, const IRModuleObj* b) {
    if (a->functions().size() != b->functions().size()) return false;
    std::unordered_map<std::string, Function> rhs;
    for (const auto& [gvar, func] : b->functions()) rhs.emplace(gvar->name_hint().str(), func);
    for (const auto& [gvar, func] : a->functions()) {
      auto it = rhs.find(gvar->name_hint().str());
      if (it == rhs.end()) return false;
      Push(func, it->second);
    }
    Push(a->attrs(), b->attrs());
    return true;
  }

  bool SameFunction(const FunctionObj* a, const FunctionObj* b) {
    if (a->params().size() != b->params().size()) return false;
    // Parameters are bound before the body is compared: the body's pair is popped later.
    for (int64_t i = 0; i < a->params().size(); ++i) {
      if (!Bind(a->params()[i].get(), b->params()[i].get())) return false;
    }
    Push(a->ret_type(), b->ret_type());
    Push(a->attrs(), b->attrs());
    Push(a->body(), b->body());
    return true;
  }

  bool SameTypeOrValue(const Object* x, const Object* y) {
    if (const auto* a = As<IntDimObj>(x))
      return a->value() == static_cast<const IntDimObj*>(y)->value();
    // Size expressions compare by structure, their variables by name (kiln/arith/size_expr.h).
    if (const auto* a = As<SymDimObj>(x))
      return arith::StructuralEqual(a->expr(), static_cast<const SymDimObj*>(y)->expr());
    if (x->IsInstance<arith::SizeExprObj>())
      return arith::StructuralEqual(SizeExprOf(x), SizeExprOf(y));
    if (const auto* a = As<TensorTypeObj>(x)) {
      const auto* b = static_cast<const TensorTypeObj*>(y);
      Push(a->shape(), b->shape());
      return DataTypeEqual(a->dtype(), b->dtype());
    }
    if (const auto* a = As<TupleTypeObj>(x)) {
      Push(a->fields(), static_cast<const TupleTypeObj*>(y)->fields());
      return true;
    }
    if (const auto* a = As<FuncTypeObj>(x)) {
      const auto* b = static_cast<const FuncTypeObj*>(y);
      Push(a->params(), b->params());
      Push(a->ret(), b->ret());
      return true;
    }
    return SameContainer(x, y);
  }

  bool SameContainer(const Object* x, const Object* y) {
    if (const auto* a = As<ArrayObj>(x)) {
      const auto* b = static_cast<const ArrayObj*>(y);
      if (a->size() != b->size()) return false;
      for (int64_t i = 0; i < a->size(); ++i) pending_.emplace_back((*a)[i], (*b)[i]);
      return true;
    }
    if (const auto* a = As<MapObj>(x)) {
      // Entries are matched by key, so insertion order does not matter.
      const auto* b = static_cast<const MapObj*>(y);
      if (a->size() != b->size()) return false;
      for (const auto& [key, value] : a->entries()) {
        const Any* other = b->Find(key);
        if (other == nullptr) return false;
        pending_.emplace_back(value, *other);
      }
      return true;
    }
    if (std::optional<std::string_view> text = ByteView(x)) return *text == *ByteView(y);
    if (const auto* a = As<TensorObj>(x)) {
      const auto* b = static_cast<const TensorObj*>(y);
      return HasReadableBytes(a) && HasReadableBytes(b) ? SameTensor(a, b) : a == b;
    }
    return x == y;  // Op, and kinds without a structure of their own
  }

  bool map_free_vars_;
  std::vector<std::pair<Any, Any>> pending_;
  std::set<std::pair<const Object*, const Object*>> seen_;
  std::unordered_map<const Object*, const Object*> lhs_to_rhs_;
  std::unordered_map<const Object*, const Object*> rhs_to_lhs_;
};

uint64_t Combine(uint64_t seed, uint64_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

uint64_t HashBytes(std::string_view bytes) { return std::hash<std::string_view>()(bytes); }

uint64_t HashTensor(const TensorObj* tensor) {
  const DLTensor& t = tensor->dl_tensor;
  uint64_t hash = Combine(t.dtype.code, Combine(t.dtype.bits, t.dtype.lanes));
  for (int32_t i = 0; i < t.ndim; ++i) hash = Combine(hash, static_cast<uint64_t>(t.shape[i]));
  return Combine(hash, HashBytes(TensorBytes(tensor)));
}

/// Post-order hashing: a node's hash combines its kind, its own scalars and its children's
/// hashes. Every input is context-free (a bound variable hashes by its parameter position, not
/// by where its function sits), so memoizing per node is consistent with StructuralEqual, which
/// does not compare sharing.
class Hasher {
 public:
  explicit Hasher(bool map_free_vars) : map_free_vars_(map_free_vars) {}

  uint64_t Run(const Any& root) {
    std::vector<std::pair<Any, bool>> stack;
    stack.emplace_back(root, false);
    while (!stack.empty()) {
      if (stack.back().second) {
        const Object* node = ObjectOf(stack.back().first);
        stack.pop_back();
        if (memo_.count(node) == 0) memo_.emplace(node, Finish(node));
        continue;
      }
      stack.back().second = true;
      const Object* node = ObjectOf(stack.back().first);
      if (node == nullptr || memo_.count(node) > 0) {
        stack.pop_back();
        continue;
      }
      for (const Any& child : Expand(node)) {
        if (ObjectOf(child) != nullptr && memo_.count(ObjectOf(child)) == 0) {
          stack.emplace_back(child, false);
        }
      }
    }
    return HashOf(root);
  }

 private:
  /// The hash of a value whose children (if it is an object) are all finished.
  uint64_t HashOf(const Any& value) const {
    const Object* node = ObjectOf(value);
    if (node != nullptr) return memo_.at(node);
    const KilnAny* raw = value.raw();
    if (raw->type_index == kKilnTypeFloat) {
      // 0.0 == -0.0 in the comparison, so both must hash alike (their bits differ).
      const double number = raw->v_float64 == 0 ? 0.0 : raw->v_float64;
      return Combine(kKilnTypeFloat, std::hash<double>()(number));
    }
    const uint64_t payload =
        raw->type_index == kKilnTypeDataType
            ? Combine(raw->v_dtype.code, Combine(raw->v_dtype.bits, raw->v_dtype.lanes))
            : static_cast<uint64_t>(raw->v_int64);
    return Combine(static_cast<uint64_t>(raw->type_index), payload);
  }

  /// The children of `node` whose hashes Finish combines, in order. Binds function parameters.
  std::vector<Any> Expand(const Object* node) {
    if (const auto* var = As<VarObj>(node)) return {Any(var->type_annotation())};
    if (const auto* call = As<CallObj>(node))
      return {Any(call->op()), Any(call->args()), Any(call->attrs())};
    if (const auto* tuple = As<TupleObj>(node)) return {Any(tuple->fields())};
    if (const auto* item = As<TupleGetItemObj>(node))
      return {Any(item->tuple()), Any(item->index())};
    if (const auto* function = As<FunctionObj>(node)) {
      for (int64_t i = 0; i < function->params().size(); ++i) {
        bound_position_.emplace(function->params()[i].get(), i);
      }
      return {Any(function->params()), Any(function->body()), Any(function->ret_type()),
              Any(function->attrs())};
    }
    if (const auto* branch = As<IfObj>(node)) {
      return {Any(branch->cond()), Any(branch->then_branch()), Any(branch->else_branch()),
              Any(branch->sizes())};
    }
    if (const auto* loop = As<LoopObj>(node)) {
      return {Any(loop->trip_count()), Any(loop->condition()), Any(loop->initial()),
              Any(loop->body()), Any(loop->iterations())};
    }
    if (const auto* type = As<TensorTypeObj>(node)) return {Any(type->shape()), Any(type->dtype())};
    if (const auto* type = As<TupleTypeObj>(node)) return {Any(type->fields())};
    if (const auto* type = As<FuncTypeObj>(node)) return {Any(type->params()), Any(type->ret())};
    if (const auto* array = As<ArrayObj>(node)) return array->items();
    if (const auto* module = As<IRModuleObj>(node)) {
      // Sorted by name: the comparison matches functions by name, not by insertion order.
      std::map<std::string, Function> sorted;
      for (const auto& [gvar, func] : module->functions()) sorted.emplace(gvar->name_hint(), func);
      std::vector<Any> children{Any(module->attrs())};
      for (const auto& [name, func] : sorted) children.push_back(func);
      return children;
    }
    if (const auto* map = As<MapObj>(node)) {
      std::vector<Any> children;
      for (const auto& [key, value] : map->entries()) {
        children.push_back(key);
        children.push_back(value);
      }
      return children;
    }
    return {};
  }

  uint64_t Finish(const Object* node) {
    const std::vector<Any> children = Expand(node);
    uint64_t hash = Combine(static_cast<uint64_t>(node->type_index()), OwnHash(node));
    if (node->IsInstance<MapObj>()) {
      // Order-insensitive, like the comparison: a sum of per-entry hashes.
      uint64_t sum = 0;
      for (size_t i = 0; i + 1 < children.size(); i += 2) {
        sum += Combine(HashOf(children[i]), HashOf(children[i + 1]));
      }
      return Combine(hash, sum);
    }
    for (const Any& child : children) hash = Combine(hash, HashOf(child));
    return hash;
  }

  /// What a node contributes besides its children: identity, position, value or bytes.
  uint64_t OwnHash(const Object* node) const {
    if (node->IsInstance<VarObj>()) {
      if (auto it = bound_position_.find(node); it != bound_position_.end()) {
        return Combine(1, static_cast<uint64_t>(it->second));
      }
      return map_free_vars_ ? 2 : reinterpret_cast<uintptr_t>(node);
    }
    if (const auto* dim = As<IntDimObj>(node)) return static_cast<uint64_t>(dim->value());
    if (const auto* dim = As<SymDimObj>(node)) return arith::StructuralHash(dim->expr());
    if (node->IsInstance<arith::SizeExprObj>()) return arith::StructuralHash(SizeExprOf(node));
    if (const auto* constant = As<ConstantObj>(node)) return HashTensor(constant->data().get());
    if (const auto* tensor = As<TensorObj>(node)) {
      return HasReadableBytes(tensor) ? HashTensor(tensor) : reinterpret_cast<uintptr_t>(node);
    }
    if (std::optional<std::string_view> text = ByteView(node)) return HashBytes(*text);
    if (const auto* gvar = As<GlobalVarObj>(node)) return HashBytes(gvar->name_hint().str());
    const bool structural = node->IsInstance<ExprObj>() || node->IsInstance<TypeObj>() ||
                            node->IsInstance<ArrayObj>() || node->IsInstance<MapObj>() ||
                            node->IsInstance<IRModuleObj>();
    const bool by_identity = node->IsInstance<OpObj>();
    // Everything else (Op, unknown kinds) is equal only to itself.
    return structural && !by_identity ? 0 : reinterpret_cast<uintptr_t>(node);
  }

  bool map_free_vars_;
  std::unordered_map<const Object*, uint64_t> memo_;
  std::unordered_map<const Object*, int64_t> bound_position_;
};

}  // namespace

bool StructuralEqual(const ObjectRef& a, const ObjectRef& b, bool map_free_vars) {
  return EqualChecker(map_free_vars).Run(Any(a), Any(b));
}

uint64_t StructuralHash(const ObjectRef& node, bool map_free_vars) {
  return Hasher(map_free_vars).Run(Any(node));
}

}  // namespace ir
}  // namespace kiln

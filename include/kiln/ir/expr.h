/// Expressions of the graph IR: Var, Constant, Call, Tuple, TupleGetItem, GlobalVar.
///
/// Function (function.h) and Op (op.h) are expressions too. Nodes are immutable once built; the
/// only mutable field is each expression's checked_type cache, which type inference fills in.
///
/// Other languages reach the IR through global functions with one scheme:
///   - constructors are `ir.<Node>` with the C++ constructor's arguments in order
///     (`ir.Var(name_hint, type_annotation|None)`, `ir.Call(op, args, attrs)`, ...);
///   - every field is read with `ir.NodeField(node, "field")`, the field named as its C++
///     getter (`ir.NodeField(call, "args")`); an unknown field is a KeyError listing the fields.
#ifndef KILN_IR_EXPR_H_
#define KILN_IR_EXPR_H_

#include <kiln/ffi/map.h>
#include <kiln/ffi/string.h>
#include <kiln/ffi/tensor.h>
#include <kiln/ir/type.h>

namespace kiln {
namespace ir {

namespace detail {
/// Drops a reference to a child node without recursing: a node freed while another is being
/// freed only queues its children, and the outermost release drains the queue. Without this,
/// freeing the head of a 100,000-node chain would nest 100,000 destructors on the stack.
KILN_API void ReleaseIteratively(ObjectRef child);
}  // namespace detail

/// Base of every expression. Not thread-safe while type inference writes checked_type.
class ExprObj : public Object {
 public:
  static constexpr const char* _type_key = "kiln.ir.Expr";
  KILN_DECLARE_OBJECT_INFO(ExprObj, Object);

  /// The type inferred for this expression; null until type inference has run.
  const Type& checked_type() const { return checked_type_; }
  /// Written by type inference only: a cache, not part of the node's value.
  void set_checked_type(Type type) const { checked_type_ = std::move(type); }

 private:
  mutable Type checked_type_;
};

class Expr : public ObjectRef {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(Expr, ObjectRef, ExprObj);

  /// The node as a T (e.g. CallObj), or nullptr when it is null or of another kind.
  template <typename T>
  const T* as() const {
    return defined() && data_->IsInstance<T>() ? static_cast<const T*>(data_.get()) : nullptr;
  }
};

/// A variable: a function parameter or a free variable. Two Vars are the same variable only when
/// they are the same object; the name is a hint for printing.
class VarObj : public ExprObj {
 public:
  static constexpr const char* _type_key = "kiln.ir.Var";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(VarObj, ExprObj);

  VarObj(String name_hint, Type type_annotation)
      : name_hint_(std::move(name_hint)), type_annotation_(std::move(type_annotation)) {}
  const String& name_hint() const { return name_hint_; }
  /// May be null: the type is then left to inference.
  const Type& type_annotation() const { return type_annotation_; }

 private:
  String name_hint_;
  Type type_annotation_;
};

class Var : public Expr {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(Var, Expr, VarObj);
  /// A fresh variable; ValueError when the name is empty.
  KILN_API explicit Var(String name_hint, Type type_annotation = Type());
};

/// A constant tensor, shared (not copied) with whoever built it.
class ConstantObj : public ExprObj {
 public:
  static constexpr const char* _type_key = "kiln.ir.Constant";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(ConstantObj, ExprObj);

  explicit ConstantObj(Tensor data) : data_(std::move(data)) {}
  const Tensor& data() const { return data_; }

 private:
  Tensor data_;
};

class Constant : public Expr {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(Constant, Expr, ConstantObj);
  /// ValueError when `data` is null or not a contiguous tensor in host memory (constants are
  /// compared and hashed by their bytes).
  KILN_API explicit Constant(Tensor data);
};

/// An application of an Op, a Function or a GlobalVar to arguments, with attributes.
class CallObj : public ExprObj {
 public:
  static constexpr const char* _type_key = "kiln.ir.Call";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(CallObj, ExprObj);

  CallObj(Expr op, Array<Expr> args, Map<String, Any> attrs)
      : op_(std::move(op)), args_(std::move(args)), attrs_(std::move(attrs)) {}
  KILN_API ~CallObj();
  const Expr& op() const { return op_; }
  const Array<Expr>& args() const { return args_; }
  const Map<String, Any>& attrs() const { return attrs_; }

 private:
  Expr op_;
  Array<Expr> args_;
  Map<String, Any> attrs_;
};

class Call : public Expr {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(Call, Expr, CallObj);
  /// ValueError when `op` or an argument is null.
  KILN_API Call(Expr op, Array<Expr> args, Map<String, Any> attrs = Map<String, Any>());
};

/// A fixed-size group of values.
class TupleObj : public ExprObj {
 public:
  static constexpr const char* _type_key = "kiln.ir.Tuple";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(TupleObj, ExprObj);

  explicit TupleObj(Array<Expr> fields) : fields_(std::move(fields)) {}
  KILN_API ~TupleObj();
  const Array<Expr>& fields() const { return fields_; }

 private:
  Array<Expr> fields_;
};

class Tuple : public Expr {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(Tuple, Expr, TupleObj);
  /// ValueError when a field is null.
  KILN_API explicit Tuple(Array<Expr> fields);
};

/// Field `index` of a tuple-typed expression.
class TupleGetItemObj : public ExprObj {
 public:
  static constexpr const char* _type_key = "kiln.ir.TupleGetItem";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(TupleGetItemObj, ExprObj);

  TupleGetItemObj(Expr tuple, int64_t index) : tuple_(std::move(tuple)), index_(index) {}
  KILN_API ~TupleGetItemObj();
  const Expr& tuple() const { return tuple_; }
  int64_t index() const { return index_; }

 private:
  Expr tuple_;
  int64_t index_;
};

class TupleGetItem : public Expr {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(TupleGetItem, Expr, TupleGetItemObj);
  /// ValueError when `tuple` is null, IndexError when `index` is negative (or past the end of a
  /// literal Tuple).
  KILN_API TupleGetItem(Expr tuple, int64_t index);
};

/// The name of a function in an IRModule; like Var, identity is by object.
class GlobalVarObj : public ExprObj {
 public:
  static constexpr const char* _type_key = "kiln.ir.GlobalVar";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(GlobalVarObj, ExprObj);

  explicit GlobalVarObj(String name_hint) : name_hint_(std::move(name_hint)) {}
  const String& name_hint() const { return name_hint_; }

 private:
  String name_hint_;
};

class GlobalVar : public Expr {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(GlobalVar, Expr, GlobalVarObj);
  /// ValueError when the name is empty.
  KILN_API explicit GlobalVar(String name_hint);
};

}  // namespace ir
}  // namespace kiln

#endif  // KILN_IR_EXPR_H_

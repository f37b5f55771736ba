/// Types of the graph IR: TensorType, TupleType, FuncType, and the dimensions (Dim) of a shape.
///
/// Every node is an immutable FFI object with a type key under "kiln.ir." (docs/design.md §13).
/// A shape is an Array<Dim>. A Dim is a static extent (IntDim) or a symbolic one (SymDim, a size
/// expression such as `batch * 2`, docs/design.md §19); code reads a dimension through
/// Dim::as_static() (nullopt for a symbolic one) or Dim::AsSizeExpr(), and prints it with
/// Dim::ToString(), never by casting to one kind, so further kinds need no change of callers.
#ifndef KILN_IR_TYPE_H_
#define KILN_IR_TYPE_H_

#include <kiln/arith/size_expr.h>
#include <kiln/ffi/array.h>

#include <optional>
#include <string>

namespace kiln {
namespace ir {

/// Base of every dimension kind.
class DimObj : public Object {
 public:
  static constexpr const char* _type_key = "kiln.ir.Dim";
  KILN_DECLARE_OBJECT_INFO(DimObj, Object);
};

/// One extent of a tensor shape.
class Dim : public ObjectRef {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(Dim, ObjectRef, DimObj);

  /// The extent when it is known at compile time; nullopt for a kind that is not static.
  KILN_API std::optional<int64_t> as_static() const;
  /// The extent as a size expression: an IntImm for a static one.
  KILN_API arith::SizeExpr AsSizeExpr() const;
  /// The extent as the text format writes it ("4", "batch * 2").
  KILN_API std::string ToString() const;

  /// The dimension of extent `expr`: an IntDim when it is a constant (so a static extent has one
  /// representation), else a SymDim. ValueError when `expr` is null or a negative constant.
  KILN_API static Dim FromSizeExpr(const arith::SizeExpr& expr);
};

/// A static extent (>= 0).
class IntDimObj : public DimObj {
 public:
  static constexpr const char* _type_key = "kiln.ir.IntDim";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(IntDimObj, DimObj);

  explicit IntDimObj(int64_t value) : value_(value) {}
  int64_t value() const { return value_; }

 private:
  int64_t value_;
};

class IntDim : public Dim {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(IntDim, Dim, IntDimObj);
  /// ValueError when `value` is negative.
  KILN_API explicit IntDim(int64_t value);
};

/// A symbolic extent: a size expression over size variables that is not a constant.
class SymDimObj : public DimObj {
 public:
  static constexpr const char* _type_key = "kiln.ir.SymDim";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(SymDimObj, DimObj);

  explicit SymDimObj(arith::SizeExpr expr) : expr_(std::move(expr)) {}
  const arith::SizeExpr& expr() const { return expr_; }

 private:
  arith::SizeExpr expr_;
};

class SymDim : public Dim {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(SymDim, Dim, SymDimObj);
  /// ValueError when `expr` is null or a constant (a constant extent is an IntDim; see
  /// Dim::FromSizeExpr). The expression is kept as written, not simplified.
  KILN_API explicit SymDim(arith::SizeExpr expr);
};

/// Base of every type.
class TypeObj : public Object {
 public:
  static constexpr const char* _type_key = "kiln.ir.Type";
  KILN_DECLARE_OBJECT_INFO(TypeObj, Object);
};

/// A type; may be null where a type is optional (a Var without annotation).
class Type : public ObjectRef {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(Type, ObjectRef, TypeObj);

  /// The type as a T (e.g. TensorTypeObj), or nullptr when it is null or of another kind.
  template <typename T>
  const T* as() const {
    return defined() && data_->IsInstance<T>() ? static_cast<const T*>(data_.get()) : nullptr;
  }
};

/// A dense tensor of a shape and an element type.
class TensorTypeObj : public TypeObj {
 public:
  static constexpr const char* _type_key = "kiln.ir.TensorType";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(TensorTypeObj, TypeObj);

  TensorTypeObj(Array<Dim> shape, DLDataType dtype) : shape_(std::move(shape)), dtype_(dtype) {}
  const Array<Dim>& shape() const { return shape_; }
  DLDataType dtype() const { return dtype_; }

 private:
  Array<Dim> shape_;
  DLDataType dtype_;
};

class TensorType : public Type {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(TensorType, Type, TensorTypeObj);
  /// ValueError when a dimension is null or the dtype has zero bits or lanes.
  KILN_API TensorType(Array<Dim> shape, DLDataType dtype);
  /// Shorthand for a static shape.
  KILN_API static TensorType Static(const std::vector<int64_t>& shape, DLDataType dtype);
};

/// The type of a Tuple: one type per field.
class TupleTypeObj : public TypeObj {
 public:
  static constexpr const char* _type_key = "kiln.ir.TupleType";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(TupleTypeObj, TypeObj);

  explicit TupleTypeObj(Array<Type> fields) : fields_(std::move(fields)) {}
  const Array<Type>& fields() const { return fields_; }

 private:
  Array<Type> fields_;
};

class TupleType : public Type {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(TupleType, Type, TupleTypeObj);
  /// ValueError when a field is null.
  KILN_API explicit TupleType(Array<Type> fields);
};

/// The type of a Function: parameter types and the result type.
class FuncTypeObj : public TypeObj {
 public:
  static constexpr const char* _type_key = "kiln.ir.FuncType";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(FuncTypeObj, TypeObj);

  FuncTypeObj(Array<Type> params, Type ret) : params_(std::move(params)), ret_(std::move(ret)) {}
  const Array<Type>& params() const { return params_; }
  const Type& ret() const { return ret_; }

 private:
  Array<Type> params_;
  Type ret_;
};

class FuncType : public Type {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(FuncType, Type, FuncTypeObj);
  /// ValueError when a parameter type or the result type is null.
  KILN_API FuncType(Array<Type> params, Type ret);
};

}  // namespace ir
}  // namespace kiln

#endif  // KILN_IR_TYPE_H_

/// Op: a primitive operator of the graph IR, and the registry that names them.
///
/// An Op is an expression (the callee of a Call) with one object per name for the life of the
/// process, so passes compare ops by identity. What the compiler knows of an op lives in the
/// registry and may be added after the op is first looked up (reading takes a shared lock):
///   - its schema: the names of its inputs and its attributes (name, kind, default). A Call of
///     an op with a schema is checked when it is built: argument count, unknown attributes and
///     attribute kinds, with errors naming the op and the attribute; missing attributes get
///     their defaults, so `nn.conv2d(%x, %w)` and `nn.conv2d(%x, %w, groups=1)` are the same
///     Call. An op registered without any add_input/add_attr has no schema and takes any
///     attributes (handy for tests and quick experiments);
///   - its pattern kind (OpPattern), which FuseOps groups by;
///   - its type relation (type_relation.h), which InferType calls;
///   - free-form attributes: kernels (`FKernel`), `target.<compiler>` predicates, ...
///
///   KILN_REGISTER_OP("nn.leaky_relu")
///       .add_input("data")
///       .add_attr("alpha", AttrKind::kFloat, 0.01)
///       .set_pattern(OpPattern::kElemWise)
///       .set_type_relation(IdentityRelation);
///
/// Like KILN_REGISTER_GLOBAL, a registration in a plugin is deferred until the host has
/// accepted the plugin's ABI (kiln/ffi/registry.h); plugins that register ops link Kiln::compiler.
#ifndef KILN_IR_OP_H_
#define KILN_IR_OP_H_

#include <kiln/ffi/function.h>
#include <kiln/ffi/registry.h>
#include <kiln/ir/expr.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln {
namespace ir {

/// How an op's outputs depend on its inputs, from the most to the least fusable. FuseOps reads
/// it (attribute "pattern_kind"); the numbering is part of the op registry's interface.
enum class OpPattern : int {
  kElemWise = 0,         ///< out[i] depends on in[i] of same-shaped inputs (relu, add of equals)
  kBroadcast = 1,        ///< elementwise after broadcasting inputs (add, where)
  kInjective = 2,        ///< each output element reads some input elements (reshape, concat)
  kCommReduce = 3,       ///< a commutative reduction over axes (sum, max)
  kOutEWiseFusable = 4,  ///< complex, but elementwise ops can be fused after it (conv2d, dense)
  kTuple = 7,            ///< builds or reads tuples
  kOpaque = 8,           ///< never fused (the default for ops that say nothing)
};

/// The name FuseOps and error messages use: "elemwise", "broadcast", ...
KILN_API const char* OpPatternName(OpPattern pattern);
/// The pattern named `name` (as OpPatternName writes it); ValueError listing the names
/// otherwise. For registrations from other languages.
KILN_API OpPattern ParseOpPattern(const std::string& name);

/// Names of the op attributes the compiler reads (besides the schema).
namespace op_attr {
/// Int, an OpPattern.
constexpr const char* kPatternKind = "pattern_kind";
/// Function `(op: Op, arg_types: Array<Type>, attrs: Map) -> Type` (type_relation.h).
constexpr const char* kFInferType = "FInferType";
/// Function `(inputs: Array<Tensor>, outputs: Array<Tensor>, attrs: Map) -> None`: the CPU
/// kernel. It writes every output, which the caller allocated from the Call's type (one tensor,
/// or one per field of a tuple type), and reads the inputs in argument order. FoldConstant runs
/// it; the executor calls it for each op.
constexpr const char* kFKernel = "FKernel";
}  // namespace op_attr

/// An FKernel that calls the global function `kernel.cpu.<op>`, looked up at each call: what the
/// core ops have, and what a plugin op whose kernel its runtime library registers sets, so that
/// FoldConstant runs it too (docs/kernels.md, "Kernels of plugin ops"):
///   KILN_REGISTER_OP("my_ext.swish")...set_attr(op_attr::kFKernel, CpuKernelOf("my_ext.swish"));
/// A missing kernel of a plugin namespace loads libkiln_runtime_<namespace>.so first.
KILN_API Function CpuKernelOf(const std::string& op);

/// What a value of an op attribute may be.
enum class AttrKind : int {
  kInt = 0,     ///< an integer (a bool is not accepted)
  kFloat = 1,   ///< a float; an integer is accepted and stored as a float
  kBool = 2,    ///< true or false
  kString = 3,  ///< any string
  kDType = 4,   ///< a string naming a data type ("float32", "int64", "bool")
  kInts = 5,    ///< an array of integers
  kFloats = 6,  ///< an array of floats (integers accepted and stored as floats)
  /// An extent: an integer, or a size expression (arith::SizeExpr) when it is symbolic; a
  /// constant expression is stored as its integer. Kernels see it evaluated for each call.
  kSize = 7,
  /// An array of extents (kSize), such as a symbolic target shape.
  kSizes = 8,
};

/// "int", "float", "bool", "str", "dtype", "ints", "floats", "size", "sizes".
KILN_API const char* AttrKindName(AttrKind kind);
/// The kind named `name` (as AttrKindName writes it); ValueError listing the names otherwise.
KILN_API AttrKind ParseAttrKind(const std::string& name);

/// One attribute of an op's schema. An attribute without a default is required; a default of
/// None means "absent unless given" and lets the attribute be None.
struct AttrField {
  std::string name;
  AttrKind kind;
  std::optional<Any> default_value;
};

/// What a Call of an op must look like.
struct OpSchema {
  /// Names of the inputs, in order; a Call has exactly this many arguments.
  std::vector<std::string> inputs;
  std::vector<AttrField> attrs;

  /// The field named `name`, or nullptr.
  KILN_API const AttrField* FindAttr(const std::string& name) const;
};

class OpObj : public ExprObj {
 public:
  static constexpr const char* _type_key = "kiln.ir.Op";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(OpObj, ExprObj);

  explicit OpObj(String name) : name_(std::move(name)) {}
  const String& name() const { return name_; }

 private:
  String name_;
};

class OpRegisterer;

class Op : public Expr {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(Op, Expr, OpObj);

  /// The registered op `name`; KeyError suggesting close names when there is none.
  /// Thread-safe.
  KILN_API static Op Get(const std::string& name);
  /// Starts a registration; see KILN_REGISTER_OP.
  static OpRegisterer Register(std::string name);
  /// Names of every registered op, sorted.
  KILN_API static std::vector<std::string> ListNames();

  /// The op's schema; nullptr when it has none (any attributes accepted). Thread-safe: the
  /// schema is an immutable snapshot.
  KILN_API std::shared_ptr<const OpSchema> schema() const;
  /// The op's pattern kind; kOpaque when it has none.
  KILN_API OpPattern pattern() const;

  /// A snapshot of this op's attributes. Thread-safe.
  KILN_API Map<String, Any> attrs() const;
  /// Attribute `key` converted to T; nullopt when absent, TypeError when it is not a T.
  template <typename T>
  std::optional<T> GetAttr(const String& key) const {
    std::optional<Any> value = attrs().Get(key);
    if (!value.has_value()) return std::nullopt;
    return value->cast<T>();
  }
};

namespace detail {
/// Adds op `name` to the registry; KeyError when it is already registered.
KILN_API void RegisterOp(const std::string& name);
/// Sets an attribute of the registered op `name`; KeyError when the attribute is already set
/// and `allow_override` is false.
KILN_API void SetOpAttr(const std::string& name, const String& key, const Any& value,
                        bool allow_override);
/// Appends input `input` to the schema of op `name` (giving it a schema if it had none).
KILN_API void AddOpInput(const std::string& name, const std::string& input);
/// Appends attribute `field` to the schema of op `name`; ValueError when the name is taken or
/// the default does not have the field's kind.
KILN_API void AddOpAttrField(const std::string& name, AttrField field);
}  // namespace detail

class TypeRelationContext;
/// An op's type relation in C++: the result type of a Call from its argument types and
/// attributes (type_relation.h).
using TypeRelation = Type (*)(const TypeRelationContext&);
/// The same relation as the op attribute "FInferType" holds: a Function
/// `(op: Op, arg_types: Array<Type>, attrs: Map) -> Type`, callable from any language.
KILN_API kiln::Function MakeTypeRelationFunction(TypeRelation relation);

/// Builder behind KILN_REGISTER_OP: each step runs at once in Kiln's own libraries and after the
/// ABI check in a plugin, always in the order written.
class OpRegisterer {
 public:
  explicit OpRegisterer(std::string name) : name_(std::move(name)) {
    kiln::detail::RegisterOrDefer([name = name_] { detail::RegisterOp(name); });
  }
  /// Adds to op `name`, registered elsewhere (KILN_EXTEND_OP); each step is a KeyError when
  /// there is no such op.
  static OpRegisterer Extend(std::string name) {
    OpRegisterer registerer;
    registerer.name_ = std::move(name);
    return registerer;
  }
  /// Sets attribute `key`; a second value for the same key is a KeyError unless
  /// `allow_override`.
  OpRegisterer& set_attr(const std::string& key, Any value, bool allow_override = false) {
    kiln::detail::RegisterOrDefer([name = name_, key, value = std::move(value), allow_override] {
      detail::SetOpAttr(name, String(key), value, allow_override);
    });
    return *this;
  }
  /// Appends an input name to the schema.
  OpRegisterer& add_input(const std::string& input) {
    kiln::detail::RegisterOrDefer([name = name_, input] { detail::AddOpInput(name, input); });
    return *this;
  }
  /// Appends an attribute; without `default_value` the attribute is required.
  OpRegisterer& add_attr(const std::string& attr, AttrKind kind,
                         std::optional<Any> default_value = std::nullopt) {
    kiln::detail::RegisterOrDefer(
        [name = name_, field = AttrField{attr, kind, std::move(default_value)}] {
          detail::AddOpAttrField(name, field);
        });
    return *this;
  }
  /// Sets the pattern kind (attribute "pattern_kind").
  OpRegisterer& set_pattern(OpPattern pattern) {
    return set_attr(op_attr::kPatternKind, static_cast<int64_t>(pattern));
  }
  /// Sets the type relation (attribute "FInferType").
  OpRegisterer& set_type_relation(TypeRelation relation) {
    return set_attr(op_attr::kFInferType, MakeTypeRelationFunction(relation));
  }

 private:
  OpRegisterer() = default;
  std::string name_;
};

inline OpRegisterer Op::Register(std::string name) { return OpRegisterer(std::move(name)); }

}  // namespace ir
}  // namespace kiln

/// Registers an op at load time: KILN_REGISTER_OP("nn.relu").set_attr("key", value);
#define KILN_REGISTER_OP(Name)                                                             \
  [[maybe_unused]] static ::kiln::ir::OpRegisterer KILN_UNIQUE_NAME(kiln_op_registerer_) = \
      ::kiln::ir::Op::Register(Name)

/// Adds attributes to an op registered elsewhere, e.g. a plugin's kernel or BYOC predicate:
///   KILN_EXTEND_OP("nn.conv2d").set_attr("target.my_compiler", predicate);
#define KILN_EXTEND_OP(Name)                                                             \
  [[maybe_unused]] static ::kiln::ir::OpRegisterer KILN_UNIQUE_NAME(kiln_op_extender_) = \
      ::kiln::ir::OpRegisterer::Extend(Name)

#endif  // KILN_IR_OP_H_

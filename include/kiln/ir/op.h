/// Op: a primitive operator of the graph IR, and the registry that names them.
///
/// An Op is an expression (the callee of a Call) with one object per name for the life of the
/// process, so passes compare ops by identity. Its attributes (later: attribute schema, type
/// relation, pattern kind, kernels, `target.<compiler>` predicates) live in the registry and
/// may be added after the op is first looked up; reading them takes a shared lock.
///
///   KILN_REGISTER_OP("nn.relu").set_attr("pattern_kind", 0);
///
/// Like KILN_REGISTER_GLOBAL, a registration in a plugin is deferred until the host has
/// accepted the plugin's ABI (kiln/ffi/registry.h); plugins that register ops link Kiln::compiler.
#ifndef KILN_IR_OP_H_
#define KILN_IR_OP_H_

#include <kiln/ffi/registry.h>
#include <kiln/ir/expr.h>

#include <optional>
#include <string>
#include <vector>

namespace kiln {
namespace ir {

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
}  // namespace detail

/// Builder behind KILN_REGISTER_OP: each step runs at once in Kiln's own libraries and after the
/// ABI check in a plugin, always in the order written.
class OpRegisterer {
 public:
  explicit OpRegisterer(std::string name) : name_(std::move(name)) {
    kiln::detail::RegisterOrDefer([name = name_] { detail::RegisterOp(name); });
  }
  /// Sets attribute `key`; a second value for the same key is a KeyError unless
  /// `allow_override`.
  OpRegisterer& set_attr(const std::string& key, Any value, bool allow_override = false) {
    kiln::detail::RegisterOrDefer([name = name_, key, value = std::move(value), allow_override] {
      detail::SetOpAttr(name, String(key), value, allow_override);
    });
    return *this;
  }

 private:
  std::string name_;
};

inline OpRegisterer Op::Register(std::string name) { return OpRegisterer(std::move(name)); }

}  // namespace ir
}  // namespace kiln

/// Registers an op at load time: KILN_REGISTER_OP("nn.relu").set_attr("key", value);
#define KILN_REGISTER_OP(Name)                                                             \
  [[maybe_unused]] static ::kiln::ir::OpRegisterer KILN_UNIQUE_NAME(kiln_op_registerer_) = \
      ::kiln::ir::Op::Register(Name)

#endif  // KILN_IR_OP_H_

// WellFormed: scoping of Vars, TupleGetItem arity and global_symbol consistency.
#include <kiln/ir/expr_functor.h>
#include <kiln/transform/well_formed.h>

#include <sstream>
#include <unordered_set>
#include <vector>

namespace kiln {
namespace transform {
namespace {

using ir::ObjectRefIdentityHash;

std::string Describe(const ir::Var& var) { return "%" + var->name_hint().str(); }

/// Checks one global function. Walks with an explicit stack (graphs of 100k nodes) and keeps a
/// visited set per enclosing function: a node shared between a nested function and its parent
/// is checked once in each scope, since a Var may be bound in one and free in the other.
class FunctionChecker {
 public:
  explicit FunctionChecker(std::string function_name) : function_name_(std::move(function_name)) {}

  bool Check(const ir::Function& func, std::string* reason) {
    struct Frame {
      ir::Expr expr;
      bool leaving;  // true: the Function whose params go out of scope here
    };
    std::vector<Frame> stack{{func, false}};
    visited_.emplace_back();
    while (!stack.empty()) {
      Frame frame = stack.back();
      stack.pop_back();
      if (frame.leaving) {
        for (const ir::Var& param : frame.expr.as<ir::FunctionObj>()->params()) {
          in_scope_.erase(param);
        }
        visited_.pop_back();
        continue;
      }
      const ir::Expr& expr = frame.expr;
      if (!visited_.back().insert(expr).second) continue;
      if (const auto* fn = expr.as<ir::FunctionObj>()) {
        for (const ir::Var& param : fn->params()) {
          if (!ever_bound_.insert(param).second) {
            return Fail(reason, "variable " + Describe(param) +
                                    " is bound twice (as a parameter of two functions)");
          }
          in_scope_.insert(param);
        }
        stack.push_back({expr, true});
        stack.push_back({fn->body(), false});
        visited_.emplace_back();
      } else if (expr.as<ir::VarObj>() != nullptr) {
        const auto var = ir::Var::FromUnchecked(expr.data());
        if (in_scope_.count(var) == 0) {
          return Fail(reason, "variable " + Describe(var) +
                                  " is used but not bound by the parameters of an enclosing "
                                  "function");
        }
      } else if (const auto* call = expr.as<ir::CallObj>()) {
        stack.push_back({call->op(), false});
        for (const ir::Expr& arg : call->args()) stack.push_back({arg, false});
      } else if (const auto* tuple = expr.as<ir::TupleObj>()) {
        for (const ir::Expr& field : tuple->fields()) stack.push_back({field, false});
      } else if (const auto* item = expr.as<ir::TupleGetItemObj>()) {
        const int64_t arity = KnownArity(item->tuple());
        if (arity >= 0 && (item->index() < 0 || item->index() >= arity)) {
          std::ostringstream message;
          message << "TupleGetItem index " << item->index() << " is out of range for a tuple of "
                  << arity << " fields";
          return Fail(reason, message.str());
        }
        stack.push_back({item->tuple(), false});
      }
    }
    return true;
  }

 private:
  static int64_t KnownArity(const ir::Expr& tuple) {
    if (const auto* node = tuple.as<ir::TupleObj>()) return node->fields().size();
    const ir::Type& type = tuple->checked_type();
    if (type.defined() && type->IsInstance<ir::TupleTypeObj>()) {
      return static_cast<const ir::TupleTypeObj*>(type.get())->fields().size();
    }
    return -1;
  }

  bool Fail(std::string* reason, const std::string& what) const {
    if (reason != nullptr) *reason = "in @" + function_name_ + ": " + what;
    return false;
  }

  std::string function_name_;
  std::unordered_set<ir::Var, ObjectRefIdentityHash> in_scope_;
  std::unordered_set<ir::Var, ObjectRefIdentityHash> ever_bound_;
  std::vector<std::unordered_set<ir::Expr, ObjectRefIdentityHash>> visited_;
};

}  // namespace

bool WellFormed(const ir::IRModule& mod, std::string* reason) {
  for (const auto& [gvar, func] : mod->functions()) {
    const std::string name = gvar->name_hint().str();
    if (std::optional<String> symbol = func.GetAttr<String>(ir::attr::kGlobalSymbol)) {
      if (symbol->str() != name) {
        if (reason != nullptr) {
          *reason = "in @";
          *reason += name + ": the global_symbol attribute '" + symbol->str();
          *reason += "' differs from the function's GlobalVar @" + name;
        }
        return false;
      }
    }
    if (!FunctionChecker(name).Check(func, reason)) return false;
  }
  return true;
}

void CheckWellFormed(const ir::IRModule& mod) {
  std::string reason;
  KILN_CHECK(WellFormed(mod, &reason), ValueError) << "the module is not well-formed: " << reason;
}

}  // namespace transform
}  // namespace kiln

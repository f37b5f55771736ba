// Expressions of the graph IR: construction, validation and iterative release.
#include <kiln/ir/expr.h>
#include <kiln/ir/op.h>

#include <vector>

#include "op_schema_internal.h"
#include "validate_internal.h"

namespace kiln {
namespace ir {

namespace detail {

void ReleaseIteratively(ObjectRef child) {
  // Trivially destructible thread-locals, so a node freed during thread or process exit (after
  // non-trivial thread-locals are gone) is still safe. The queue itself lives on the stack of
  // the outermost call and allocates only when a release cascades.
  thread_local std::vector<ObjectRef>* pending = nullptr;
  if (pending != nullptr) {
    pending->push_back(std::move(child));  // the outermost call frees it, one level down
    return;
  }
  std::vector<ObjectRef> queue;
  pending = &queue;
  child = ObjectRef();  // nested destructors only append to `queue`
  while (!queue.empty()) {
    ObjectRef next = std::move(queue.back());
    queue.pop_back();
    next = ObjectRef();
  }
  pending = nullptr;
}

}  // namespace detail

Var::Var(String name_hint, Type type_annotation) {
  KILN_CHECK(!name_hint.empty(), ValueError) << "Var: the name hint is empty";
  data_ = make_object<VarObj>(std::move(name_hint), std::move(type_annotation));
}

Constant::Constant(Tensor data) {
  KILN_CHECK(data.defined(), ValueError) << "Constant: the tensor is null";
  KILN_CHECK(data.device().device_type == kDLCPU && data.IsContiguous(), ValueError)
      << "Constant: the tensor must be contiguous and in host memory";
  data_ = make_object<ConstantObj>(std::move(data));
}

CallObj::~CallObj() {
  detail::ReleaseIteratively(std::move(op_));
  detail::ReleaseIteratively(std::move(args_));
}

Call::Call(Expr op, Array<Expr> args, Map<String, Any> attrs) {
  KILN_CHECK(op.defined(), ValueError) << "Call: the callee is null";
  CheckNoNullElement(args, "Call", "argument");
  if (op.as<OpObj>() != nullptr) {
    attrs = NormalizeCallAttrs(Op::FromUnchecked(op.data()), args.size(), attrs);
  }
  data_ = make_object<CallObj>(std::move(op), std::move(args), std::move(attrs));
}

TupleObj::~TupleObj() { detail::ReleaseIteratively(std::move(fields_)); }

Tuple::Tuple(Array<Expr> fields) {
  CheckNoNullElement(fields, "Tuple", "field");
  data_ = make_object<TupleObj>(std::move(fields));
}

TupleGetItemObj::~TupleGetItemObj() { detail::ReleaseIteratively(std::move(tuple_)); }

TupleGetItem::TupleGetItem(Expr tuple, int64_t index) {
  KILN_CHECK(tuple.defined(), ValueError) << "TupleGetItem: the tuple is null";
  KILN_CHECK(index >= 0, IndexError) << "TupleGetItem: the index cannot be negative, got " << index;
  if (tuple->IsInstance<TupleObj>()) {
    const int64_t size = static_cast<const TupleObj*>(tuple.get())->fields().size();
    KILN_CHECK(index < size, IndexError) << "TupleGetItem: index " << index
                                         << " is out of range for a tuple of " << size << " fields";
  }
  data_ = make_object<TupleGetItemObj>(std::move(tuple), index);
}

GlobalVar::GlobalVar(String name_hint) {
  KILN_CHECK(!name_hint.empty(), ValueError) << "GlobalVar: the name hint is empty";
  data_ = make_object<GlobalVarObj>(std::move(name_hint));
}

}  // namespace ir
}  // namespace kiln

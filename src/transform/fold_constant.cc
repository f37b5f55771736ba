// FoldConstant: evaluates, at compile time, every op call whose arguments are all constants,
// through the op's CPU kernel (op_attr::kFKernel). Ops without a kernel are left as they are:
// the pass never guesses a result.
#include <kiln/runtime/memory.h>
#include <kiln/transform/passes.h>

#include <vector>

#include "constant_util.h"
#include "typed_mutator.h"

namespace kiln {
namespace transform {
namespace {

using ir::Expr;

/// Results larger than this stay computed at run time rather than bloat the artifact (an
/// `expand` of a scalar to a large shape, say).
constexpr int64_t kMaxFoldedBytes = int64_t{64} << 20;

/// Empty CPU tensors for the tensor types in `type` (a tensor, or a tuple of tensors); nullopt
/// when it holds anything else, a dimension that is not static, or too many bytes.
std::optional<std::vector<Tensor>> AllocateOutputs(const ir::Type& type) {
  std::vector<ir::Type> fields{type};
  if (const auto* tuple = type.as<ir::TupleTypeObj>()) {
    fields.assign(tuple->fields().begin(), tuple->fields().end());
  }
  std::vector<Tensor> outputs;
  int64_t total_bytes = 0;
  for (const ir::Type& field : fields) {
    const auto* tensor = field.as<ir::TensorTypeObj>();
    if (tensor == nullptr) return std::nullopt;
    std::vector<int64_t> shape;
    int64_t elements = 1;
    for (const ir::Dim& dim : tensor->shape()) {
      std::optional<int64_t> extent = dim.as_static();
      if (!extent.has_value()) return std::nullopt;
      shape.push_back(*extent);
      elements *= *extent;
    }
    total_bytes += elements * ElementBytes(tensor->dtype());
    if (total_bytes > kMaxFoldedBytes) return std::nullopt;
    outputs.push_back(runtime::Empty(shape, tensor->dtype(), DLDevice{kDLCPU, 0}));
  }
  return outputs;
}

class ConstantFolder : public TypedMutator {
 public:
  using TypedMutator::TypedMutator;

 protected:
  Expr RewriteCall(const ir::Call& /*pre*/, const ir::Call& call) override {
    const auto* op = call->op().as<ir::OpObj>();
    if (op == nullptr) return call;
    // A kernel takes a tuple argument (concatenate's) as its fields, in order.
    Array<Tensor> inputs;
    for (const Expr& arg : call->args()) {
      std::vector<Expr> parts{arg};
      if (const auto* tuple = arg.as<ir::TupleObj>()) {
        parts.assign(tuple->fields().begin(), tuple->fields().end());
      }
      for (const Expr& part : parts) {
        const auto* constant = part.as<ir::ConstantObj>();
        if (constant == nullptr) return call;
        inputs.push_back(constant->data());
      }
    }
    std::optional<kiln::Function> kernel =
        Downcast<ir::Op>(call->op()).GetAttr<kiln::Function>(ir::op_attr::kFKernel);
    if (!kernel.has_value()) return call;
    std::optional<std::vector<Tensor>> outputs = AllocateOutputs(call->checked_type());
    if (!outputs.has_value()) return call;
    (*kernel)(inputs, Array<Tensor>(outputs->begin(), outputs->end()), call->attrs());
    if (call->checked_type().as<ir::TensorTypeObj>() != nullptr) {
      return ir::Constant(outputs->front());
    }
    Array<Expr> fields;
    for (const Tensor& output : *outputs) fields.push_back(Typed(ir::Constant(output)));
    return ir::Tuple(fields);
  }

  /// An If on a constant condition is the branch it takes: the branch's body, which reads
  /// outer values directly, so nothing is left to bind.
  Expr RewriteIf(const ir::If& node) override {
    const std::optional<int64_t> cond = ScalarInt(node->cond());
    if (!cond.has_value()) return node;
    return (*cond != 0 ? node->then_branch() : node->else_branch())->body();
  }

  /// A field of a literal tuple is the field itself.
  Expr RewriteTupleGetItem(const ir::TupleGetItem& item) override {
    if (const auto* tuple = item->tuple().as<ir::TupleObj>()) {
      return tuple->fields()[item->index()];
    }
    return item;
  }
};

}  // namespace

Pass FoldConstant() {
  return CreateFunctionPass(
      [](const ir::Function& func, const ir::IRModule& mod, const PassContext& /*ctx*/) {
        return ConstantFolder(mod).RewriteFunction(func);
      },
      PassInfo{"transform.FoldConstant", 2, false});
}

KILN_REGISTER_PASS(FoldConstant);

}  // namespace transform
}  // namespace kiln

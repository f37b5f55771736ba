// UnrollLoops (docs/design.md §32): a Loop that runs a small constant number of iterations
// becomes its body repeated, so the iterations fuse and run as ordinary graph nodes instead of
// one call of a compiled body each.
#include <kiln/ir/control_flow.h>
#include <kiln/ir/expr_functor.h>
#include <kiln/transform/infer_type.h>
#include <kiln/transform/pass_context.h>
#include <kiln/transform/passes.h>

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "constant_util.h"

namespace kiln {
namespace transform {
namespace {

using ir::Expr;

constexpr const char* kMaxTripCount = "transform.unroll_loops.max_trip_count";
KILN_REGISTER_PASS_CONFIG(kMaxTripCount, int64_t, 8);

/// A constant of shape () holding `value`: an int64, or a bool (one byte).
Expr ScalarConstant(int64_t value, DLDataType dtype) {
  auto storage = std::make_shared<int64_t>(0);
  if (dtype.bits == 1) {
    *reinterpret_cast<uint8_t*>(storage.get()) = value != 0 ? 1 : 0;
  } else {
    *storage = value;
  }
  return ir::Constant(
      Tensor::FromMemory(storage.get(), {}, dtype, DLDevice{kDLCPU, 0}, [storage] {}));
}

class LoopUnroller : public ir::ExprMutator {
 public:
  explicit LoopUnroller(int64_t max_trip_count) : max_trip_count_(max_trip_count) {}

 protected:
  Expr VisitLoop(const ir::Loop& /*pre*/, const ir::Loop& post) override {
    const std::optional<int64_t> trips = ScalarInt(post->trip_count());
    if (!trips.has_value() || *trips < 0 || *trips > max_trip_count_) return post;
    if (ScalarInt(post->condition()) != 1) return post;
    const ir::Function& body = post->body();
    const auto* result = body->body().as<ir::TupleObj>();
    if (result == nullptr) return post;
    const Expr& returned = result->fields()[0];
    if (!returned.same_as(body->params()[1]) && ScalarInt(returned) != 1) return post;
    const int64_t carried_count = post->initial().size();
    const int64_t scans = result->fields().size() - 1 - carried_count;
    if (scans > 0 && *trips == 0) return post;  // no row to give the empty scan its shape
    std::vector<Expr> carried(post->initial().begin(), post->initial().end());
    std::vector<Array<Expr>> rows(static_cast<size_t>(scans));
    for (int64_t k = 0; k < *trips; ++k) {
      std::unordered_map<const Object*, Expr> values{
          {body->params()[0].get(), ScalarConstant(k, DLDataType{kDLInt, 64, 1})},
          {body->params()[1].get(), ScalarConstant(1, DLDataType{kDLUInt, 1, 1})}};
      for (int64_t i = 0; i < carried_count; ++i) {
        values.emplace(body->params()[i + 2].get(), carried[static_cast<size_t>(i)]);
      }
      const Expr iteration = ir::SubstituteVars(body->body(), values);
      const Array<Expr>& fields = iteration.as<ir::TupleObj>()->fields();
      for (int64_t i = 0; i < carried_count; ++i) carried[static_cast<size_t>(i)] = fields[i + 1];
      for (int64_t s = 0; s < scans; ++s) {
        rows[static_cast<size_t>(s)].push_back(Row(fields[1 + carried_count + s]));
      }
    }
    Array<Expr> value(carried.begin(), carried.end());
    for (const Array<Expr>& scanned : rows) {
      value.push_back(ir::Call(ir::Op::Get("concatenate"), {ir::Tuple(scanned)}, {{"axis", 0}}));
    }
    return ir::Tuple(value);
  }

 private:
  /// `scanned` with a leading axis of 1, as one row of its scan output.
  static Expr Row(const Expr& scanned) {
    const auto* type = InferNodeType(scanned).as<ir::TensorTypeObj>();
    KILN_CHECK(type != nullptr, TypeError) << "UnrollLoops: a scanned value is not a tensor";
    Array<Any> shape{int64_t{1}};
    for (const ir::Dim& dim : type->shape()) {
      const std::optional<int64_t> extent = dim.as_static();
      shape.push_back(extent.has_value() ? Any(*extent) : Any(dim.AsSizeExpr()));
    }
    return ir::Call(ir::Op::Get("reshape"), {scanned}, {{"newshape", shape}});
  }

  int64_t max_trip_count_;
};

}  // namespace

Pass UnrollLoops() {
  return CreateFunctionPass(
      [](const ir::Function& func, const ir::IRModule& mod, const PassContext& ctx) {
        InferExprType(func, mod);
        LoopUnroller unroller(ctx.GetConfig<int64_t>(kMaxTripCount));
        const Expr body = unroller.Mutate(func->body());
        if (body.same_as(func->body())) return func;
        ir::Function unrolled(func->params(), body, func->ret_type(), func->attrs());
        InferExprType(unrolled, mod);
        return unrolled;
      },
      PassInfo{"transform.UnrollLoops", 2, false});
}

KILN_REGISTER_PASS(UnrollLoops);

}  // namespace transform
}  // namespace kiln

// libkiln_blas.so, the compiler side of the blas plugin: which calls cblas_sgemm can run
// (`target.blas` on nn.dense, matmul and nn.batch_matmul) and the codegen kiln.ext.blas, which
// hands each region to the JSON graph runtime of libkiln_runtime_blas.so.
#include <kiln/codegen/json_graph.h>
#include <kiln/ffi/registry.h>
#include <kiln/ir/op.h>

#include <string>
#include <vector>

namespace kiln {
namespace blas {
namespace {

/// The static shape of float32 argument `i` of `call`, or why there is none.
std::optional<std::vector<int64_t>> Float32Shape(const ir::CallObj& call, int i,
                                                 std::string* reason) {
  const auto* type = call.args()[i]->checked_type().as<ir::TensorTypeObj>();
  if (type == nullptr) {
    *reason = "argument " + std::to_string(i) + " is not a typed tensor";
    return std::nullopt;
  }
  if (!DataTypeEqual(type->dtype(), DLDataType{kDLFloat, 32, 1})) {
    *reason = "dtype " + DataTypeToString(type->dtype()) + " is not float32";
    return std::nullopt;
  }
  std::vector<int64_t> shape;
  for (const ir::Dim& dim : type->shape()) {
    if (!dim.as_static().has_value()) {
      *reason = "argument " + std::to_string(i) + " has a dynamic shape";
      return std::nullopt;
    }
    shape.push_back(*dim.as_static());
  }
  return shape;
}

/// A predicate `(call) -> true | reason` from `check(lhs, rhs) -> reason` ("" accepts).
template <typename Check>
Function Predicate(Check check) {
  return Function::FromTyped(
      [check](const ir::Call& call) -> Any {
        std::string reason;
        std::optional<std::vector<int64_t>> lhs = Float32Shape(*call.get(), 0, &reason);
        std::optional<std::vector<int64_t>> rhs = Float32Shape(*call.get(), 1, &reason);
        if (lhs.has_value() && rhs.has_value()) reason = check(*lhs, *rhs);
        if (reason.empty()) return true;
        return String(reason);
      },
      "target.blas");
}

// nn.dense: data (..., K) times weight (N, K) transposed: one GEMM over the flattened rows.
KILN_EXTEND_OP("nn.dense").set_attr("target.blas", Predicate([](const auto&, const auto&) {
                                      return std::string();
                                    }));

// matmul: one GEMM when rhs is a matrix, one per batch when the batch dimensions are equal.
KILN_EXTEND_OP("matmul").set_attr(
    "target.blas", Predicate([](const std::vector<int64_t>& lhs, const std::vector<int64_t>& rhs) {
      if (lhs.size() < 2 || rhs.size() < 2) return std::string("a 1-D operand");
      if (rhs.size() == 2) return std::string();
      const bool same_batch =
          lhs.size() == rhs.size() && std::equal(lhs.begin(), lhs.end() - 2, rhs.begin());
      return same_batch ? std::string() : std::string("broadcast batch dimensions");
    }));

// nn.batch_matmul: transposes are GEMM flags and a batch of 1 broadcasts with stride 0.
KILN_EXTEND_OP("nn.batch_matmul").set_attr("target.blas", Predicate([](const auto&, const auto&) {
                                             return std::string();
                                           }));

KILN_REGISTER_GLOBAL("kiln.ext.blas")
    .set_body_typed([](const Array<ir::Function>& functions, const Map<String, Any>&) {
      return codegen::CreateJsonModules(functions, "blas");
    });

}  // namespace
}  // namespace blas
}  // namespace kiln

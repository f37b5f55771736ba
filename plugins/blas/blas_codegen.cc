// libkiln_blas.so, the compiler side of the blas plugin: which calls cblas_sgemm can run
// (`target.blas` on nn.dense, matmul and nn.batch_matmul) and the codegen kiln.ext.blas, which
// hands each region to the JSON graph runtime of libkiln_runtime_blas.so.
#include <kiln/codegen/json_graph.h>
#include <kiln/ffi/registry.h>
#include <kiln/ir/op.h>
#include <kiln/transform/byoc.h>

#include <string>
#include <vector>

namespace kiln {
namespace blas {
namespace {

/// A predicate `(call) -> true | reason` from `check(lhs, rhs) -> reason` ("" accepts).
template <typename Check>
Function Predicate(Check check) {
  return Function::FromTyped(
      [check](const ir::Call& call) -> Any {
        std::string reason;
        std::optional<std::vector<int64_t>> lhs =
            transform::StaticFloat32Shape(call->args()[0]->checked_type(), "argument 0", &reason);
        if (!lhs.has_value()) return String(reason);
        std::optional<std::vector<int64_t>> rhs =
            transform::StaticFloat32Shape(call->args()[1]->checked_type(), "argument 1", &reason);
        if (!rhs.has_value()) return String(reason);
        reason = check(*lhs, *rhs);
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

// CheckedSchemaRegistry (checked_schemas.h): ONNX's schemas, the convolutions' shape inference
// wrapped in a rank check. The wrapped schemas are copies made on first use and kept.
#include "checked_schemas.h"

#include <onnx/defs/shape_inference.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

/// The inputs holding the data and the weight of each guarded op.
struct ConvInputs {
  size_t data;
  size_t weight;
};

const std::map<std::string, ConvInputs>& GuardedOps() {
  static const std::map<std::string, ConvInputs> ops = {{"Conv", {0, 1}},
                                                        {"ConvInteger", {0, 1}},
                                                        {"ConvTranspose", {0, 1}},
                                                        {"QLinearConv", {0, 3}}};
  return ops;
}

int32_t RankOf(onnx::InferenceContext& ctx, size_t input) {
  return ctx.getInputType(input)->tensor_type().shape().dim_size();
}

/// `inference`, run only when the data and the weight (where their shapes are known) have one
/// rank of at least 3, as the operator's definition requires.
onnx::InferenceFunction GuardRanks(std::string op, ConvInputs inputs,
                                   const onnx::InferenceFunction& inference) {
  return [op = std::move(op), inputs, inference](onnx::InferenceContext& ctx) {
    const size_t count = ctx.getNumInputs();
    if (inputs.data < count && inputs.weight < count && onnx::hasInputShape(ctx, inputs.data) &&
        onnx::hasInputShape(ctx, inputs.weight)) {
      const int32_t data = RankOf(ctx, inputs.data);
      const int32_t weight = RankOf(ctx, inputs.weight);
      if (data < 3 || data != weight) {
        fail_shape_inference(op, ": the input has rank ", data, " and the weight rank ", weight,
                             "; both must have the same rank, at least 3");
      }
    }
    if (inference) inference(ctx);
  };
}

class Registry final : public onnx::ISchemaRegistry {
 public:
  const onnx::OpSchema* GetSchema(const std::string& key, const int max_inclusive_version,
                                  const std::string& domain) const override {
    const onnx::OpSchema* schema =
        onnx::OpSchemaRegistry::Instance()->GetSchema(key, max_inclusive_version, domain);
    const auto guarded = GuardedOps().find(key);
    const bool default_domain = domain.empty() || domain == "ai.onnx";
    if (schema == nullptr || !default_domain || guarded == GuardedOps().end()) return schema;
    std::lock_guard<std::mutex> lock(mutex_);
    std::unique_ptr<onnx::OpSchema>& copy = copies_[schema];
    if (!copy) {
      copy = std::make_unique<onnx::OpSchema>(*schema);
      copy->TypeAndShapeInferenceFunction(
          GuardRanks(key, guarded->second, schema->GetTypeAndShapeInferenceFunction()));
    }
    return copy.get();
  }

 private:
  mutable std::mutex mutex_;
  mutable std::map<const onnx::OpSchema*, std::unique_ptr<onnx::OpSchema>> copies_;
};

}  // namespace

const onnx::ISchemaRegistry* CheckedSchemaRegistry() {
  static const Registry* registry = new Registry();  // never freed: schemas outlive imports
  return registry;
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln

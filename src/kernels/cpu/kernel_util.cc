#include "kernel_util.h"

#include <kiln/runtime/kernel_program.h>

#include <string>
#include <utility>

namespace kiln {
namespace kernels {
namespace cpu {

std::vector<int64_t> KernelCall::Ints(const char* name) const {
  std::vector<int64_t> values;
  for (const Any& item : Attr(name).cast<Array<Any>>()) values.push_back(item.cast<int64_t>());
  return values;
}

std::vector<double> KernelCall::Floats(const char* name) const {
  std::vector<double> values;
  for (const Any& item : Attr(name).cast<Array<Any>>()) values.push_back(item.cast<double>());
  return values;
}

std::optional<std::vector<int64_t>> KernelCall::OptionalInts(const char* name) const {
  std::optional<Any> value = attrs_.Get(String(name));
  if (!value.has_value() || value->is_none()) return std::nullopt;
  return Ints(name);
}

std::optional<std::vector<double>> KernelCall::OptionalFloats(const char* name) const {
  std::optional<Any> value = attrs_.Get(String(name));
  if (!value.has_value() || value->is_none()) return std::nullopt;
  return Floats(name);
}

Any KernelCall::Attr(const char* name) const {
  std::optional<Any> value = attrs_.Get(String(name));
  KILN_CHECK(value.has_value() && !value->is_none(), ValueError)
      << Prefix() << "attribute '" << name << "' is missing";
  return *value;
}

int64_t KernelCall::IntOr(const char* name, int64_t fallback) const {
  return attrs_.Get(String(name)).has_value() ? Int(name) : fallback;
}

double KernelCall::FloatOr(const char* name, double fallback) const {
  return attrs_.Get(String(name)).has_value() ? Float(name) : fallback;
}

bool KernelCall::BoolOr(const char* name, bool fallback) const {
  return attrs_.Get(String(name)).has_value() ? Bool(name) : fallback;
}

const float* KernelCall::Prepacked(size_t i) const {
  const std::optional<Tensor> packed = PrepackedTensor(i);
  return packed.has_value() ? static_cast<const float*>(packed->data()) : nullptr;
}

std::optional<Tensor> KernelCall::PrepackedTensor(size_t i) const {
  std::optional<Any> value = attrs_.Get(String(runtime::kPrepackedAttrPrefix + std::to_string(i)));
  if (!value.has_value()) return std::nullopt;
  return value->cast<Tensor>();
}

Tensor KernelCall::Checked(const Array<Tensor>& tensors, size_t i, const char* what) const {
  KILN_CHECK(static_cast<int64_t>(i) < static_cast<int64_t>(tensors.size()), ValueError)
      << Prefix() << "expected at least " << i + 1 << " " << what << "s, got " << tensors.size();
  Tensor tensor = tensors[i];
  KILN_CHECK(tensor.device().device_type == kDLCPU, ValueError)
      << Prefix() << what << " " << i << " is not on the CPU";
  KILN_CHECK(tensor.IsContiguous() && tensor.dl_tensor().byte_offset == 0, ValueError)
      << Prefix() << what << " " << i << " is not a compact tensor";
  return tensor;
}

void KernelCall::UnsupportedDType(DLDataType dtype) const {
  KILN_THROW(ValueError) << Prefix() << "dtype " << DataTypeToString(dtype) << " is not supported";
}

int64_t KernelCall::NormalizeAxis(int64_t axis, int64_t rank) const {
  const int64_t normalized = axis < 0 ? axis + rank : axis;
  KILN_CHECK(normalized >= 0 && normalized < std::max<int64_t>(rank, 1), ValueError)
      << Prefix() << "axis " << axis << " is out of range for rank " << rank;
  return normalized;
}

bool RegisterKernel(const char* op, KernelBody body) {
  const std::string name = std::string("kernel.cpu.") + op;
  GlobalFunctionRegisterer(name.c_str())
      .set_body_typed([op = std::string(op), body](const Array<Tensor>& inputs,
                                                   const Array<Tensor>& outputs,
                                                   const Map<String, Any>& attrs) {
        body(KernelCall(op, inputs, outputs, attrs));
      });
  return true;
}

bool RegisterPrepack(const char* op, PrepackBody body) {
  const std::string name = std::string("kernel_prepack.cpu.") + op;
  GlobalFunctionRegisterer(name.c_str())
      .set_body_typed([op = std::string(op), body](int64_t index, const Tensor& constant,
                                                   const Map<String, Any>& attrs) {
        const Array<Tensor> none;
        std::optional<Tensor> packed =
            body(static_cast<size_t>(index), constant, KernelCall(op, none, none, attrs));
        return packed.has_value() ? Any(*packed) : Any();
      });
  return true;
}

std::vector<int64_t> ShapeOf(const Tensor& tensor) {
  const DLTensor& dl = tensor.dl_tensor();
  return std::vector<int64_t>(dl.shape, dl.shape + dl.ndim);
}

unsigned DTypeBit(DLDataType dtype) {
  if (dtype.lanes != 1) return 0;
  switch (dtype.code) {
    case kDLFloat:
      switch (dtype.bits) {
        case 16: return kF16;
        case 32: return kF32;
        case 64: return kF64;
        default: return 0;
      }
    case kDLBfloat: return dtype.bits == 16 ? kBF16 : 0;
    case kDLInt:
      switch (dtype.bits) {
        case 8: return kI8;
        case 16: return kI16;
        case 32: return kI32;
        case 64: return kI64;
        default: return 0;
      }
    case kDLUInt:
      switch (dtype.bits) {
        case 1: return kBoolBit;
        case 8: return kU8;
        case 16: return kU16;
        case 32: return kU32;
        case 64: return kU64;
        default: return 0;
      }
    default: return 0;
  }
}

void RequireSameDType(const KernelCall& call, size_t first, size_t last) {
  const DLDataType dtype = call.input(first).dtype();
  for (size_t i = first + 1; i <= last; ++i) {
    const DLDataType other = call.input(i).dtype();
    KILN_CHECK(DataTypeEqual(dtype, other), ValueError)
        << call.Prefix() << "inputs " << first << " and " << i << " differ in dtype ("
        << DataTypeToString(dtype) << " vs " << DataTypeToString(other) << ")";
  }
}

void RequireFloat32Inputs(const KernelCall& call) {
  for (size_t i = 0; i < call.num_inputs(); ++i) {
    const DLDataType dtype = call.input(i).dtype();
    if (DTypeBit(dtype) != kF32) call.UnsupportedDType(dtype);
  }
}

int64_t BroadcastPlan::rows() const {
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < shape.size(); ++d) rows *= shape[d];
  return rows;
}

int64_t BroadcastPlan::RowOffset(size_t i, int64_t row) const {
  int64_t offset = 0;
  for (size_t d = shape.empty() ? 0 : shape.size() - 1; d-- > 0;) {
    offset += (row % shape[d]) * strides[i][d];
    row /= shape[d];
  }
  return offset;
}

BroadcastPlan PlanStrided(const std::vector<int64_t>& shape,
                          const std::vector<std::vector<int64_t>>& strides) {
  BroadcastPlan plan;
  plan.strides.resize(strides.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;  // contributes no offset
    bool merge = !plan.shape.empty();
    for (size_t i = 0; merge && i < strides.size(); ++i) {
      merge = plan.strides[i].back() == strides[i][d] * shape[d];
    }
    if (merge) {
      plan.shape.back() *= shape[d];
      for (size_t i = 0; i < strides.size(); ++i) plan.strides[i].back() = strides[i][d];
      continue;
    }
    plan.shape.push_back(shape[d]);
    for (size_t i = 0; i < strides.size(); ++i) plan.strides[i].push_back(strides[i][d]);
  }
  return plan;
}

BroadcastPlan PlanBroadcast(const std::vector<int64_t>& out_shape,
                            const std::vector<std::vector<int64_t>>& operand_shapes) {
  const size_t rank = out_shape.size();
  // Strides aligned to the output's trailing dims, 0 where the operand broadcasts.
  std::vector<std::vector<int64_t>> strides(operand_shapes.size(), std::vector<int64_t>(rank, 0));
  for (size_t i = 0; i < operand_shapes.size(); ++i) {
    const std::vector<int64_t>& shape = operand_shapes[i];
    const std::vector<int64_t> compact = CompactStrides(shape);
    for (size_t k = 0; k < shape.size(); ++k) {
      strides[i][rank - shape.size() + k] = shape[k] == 1 ? 0 : compact[k];
    }
  }
  return PlanStrided(out_shape, strides);
}

std::vector<int64_t> CompactStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return strides;
}

AxisSplit SplitAtAxis(const std::vector<int64_t>& shape, int64_t axis) {
  AxisSplit split;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < axis) split.outer *= shape[d];
    if (d == axis) split.extent = shape[d];
    if (d > axis) split.inner *= shape[d];
  }
  return split;
}

}  // namespace cpu
}  // namespace kernels
}  // namespace kiln

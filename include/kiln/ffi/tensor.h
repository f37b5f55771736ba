/// Tensor: an n-dimensional array object that embeds a DLTensor, with zero-copy DLPack import
/// and export. Where its memory comes from is up to its creator (a device allocator, a DLPack
/// producer such as numpy or PyTorch); the creator's release callback runs when it is freed.
#ifndef KILN_FFI_TENSOR_H_
#define KILN_FFI_TENSOR_H_

#include <kiln/ffi/any.h>
#include <kiln/ffi/shape.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// "float32", "int64", "bool", "float16x4", ...
inline std::string DataTypeToString(DLDataType dtype) {
  if (dtype.code == kDLUInt && dtype.bits == 1) return "bool";
  const char* code = dtype.code == kDLInt      ? "int"
                     : dtype.code == kDLUInt   ? "uint"
                     : dtype.code == kDLFloat  ? "float"
                     : dtype.code == kDLBfloat ? "bfloat"
                                               : "opaque";
  std::string result = code + std::to_string(dtype.bits);
  if (dtype.lanes != 1) result += "x" + std::to_string(dtype.lanes);
  return result;
}

/// Same code, bits and lanes.
inline bool DataTypeEqual(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

/// The dtype DataTypeToString spells as `text` ("float32", "int8", "bool", "float16x4"); nullopt
/// for anything else, including other spellings of the same type ("float032", "int8x1", "uint1").
KILN_API std::optional<DLDataType> ParseDataType(std::string_view text);

/// Bytes per element of `dtype` (sub-byte types take a whole byte per element).
inline int64_t ElementBytes(DLDataType dtype) {
  return (static_cast<int64_t>(dtype.bits) * dtype.lanes + 7) / 8;
}

/// Elements of `tensor` (1 for a scalar).
inline int64_t NumElements(const DLTensor& tensor) {
  int64_t count = 1;
  for (int32_t i = 0; i < tensor.ndim; ++i) count *= tensor.shape[i];
  return count;
}

/// Bytes of a compact tensor with `tensor`'s shape and dtype.
inline int64_t CompactBytes(const DLTensor& tensor) {
  return NumElements(tensor) * ElementBytes(tensor.dtype);
}

/// True when the elements are row-major without gaps (strides absent or matching).
inline bool IsCompact(const DLTensor& tensor) {
  if (tensor.strides == nullptr) return true;
  int64_t expected = 1;
  for (int32_t i = tensor.ndim - 1; i >= 0; --i) {
    if (tensor.shape[i] != 1 && tensor.strides[i] != expected) return false;
    expected *= tensor.shape[i];
  }
  return true;
}

/// Layout after the header matches KilnTensorObject.
class TensorObj : public Object {
 public:
  static constexpr const char* _type_key = "kiln.Tensor";
  static constexpr bool _type_final = true;
  KILN_DECLARE_STATIC_OBJECT_INFO(TensorObj, Object, kKilnTypeTensor);

  TensorObj(const DLTensor& desc, std::vector<int64_t> shape, std::vector<int64_t> strides,
            std::function<void()> release)
      : dl_tensor(desc),
        shape_(std::move(shape)),
        strides_(std::move(strides)),
        release_(std::move(release)) {
    dl_tensor.ndim = static_cast<int32_t>(shape_.size());
    dl_tensor.shape = shape_.data();
    dl_tensor.strides = strides_.empty() ? nullptr : strides_.data();
  }
  TensorObj(const TensorObj&) = delete;
  TensorObj& operator=(const TensorObj&) = delete;
  ~TensorObj() {
    if (release_) release_();
  }

  DLTensor dl_tensor;  // must stay the first member: read through the C layout

 private:
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  std::function<void()> release_;
};

class Tensor : public ObjectRef {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(Tensor, ObjectRef, TensorObj);

  /// A tensor over memory someone else owns; `release` runs when the last reference goes.
  /// `strides` empty means compact row-major.
  static Tensor FromMemory(void* data, const std::vector<int64_t>& shape, DLDataType dtype,
                           DLDevice device, std::function<void()> release,
                           std::vector<int64_t> strides = {}, uint64_t byte_offset = 0) {
    KILN_CHECK(strides.empty() || strides.size() == shape.size(), ValueError)
        << "a tensor of " << shape.size() << " dimensions needs as many strides, got "
        << strides.size();
    for (int64_t extent : shape) {
      KILN_CHECK(extent >= 0, ValueError) << "a tensor extent cannot be negative: " << extent;
    }
    DLTensor desc{};
    desc.data = data;
    desc.device = device;
    desc.dtype = dtype;
    desc.byte_offset = byte_offset;
    return Tensor(make_object<TensorObj>(desc, shape, std::move(strides), std::move(release)));
  }

  /// Takes ownership of `managed` (zero copy); its deleter runs when the tensor is freed.
  static Tensor FromDLPack(DLManagedTensor* managed) {
    KilnObjectHandle handle = nullptr;
    if (kiln_tensor_from_dlpack(managed, &handle) != 0) detail::ThrowRaised();
    return FromUnchecked(ObjectPtr<Object>::FromOwned(detail::ObjectUnsafe::FromHeader(handle)));
  }
  /// A DLManagedTensor sharing this tensor's memory; the consumer must call its deleter.
  DLManagedTensor* ToDLPack() const {
    DLManagedTensor* managed = nullptr;
    if (kiln_tensor_to_dlpack(detail::ObjectUnsafe::Header(get()), &managed) != 0) {
      detail::ThrowRaised();
    }
    return managed;
  }

  const DLTensor& dl_tensor() const { return get()->dl_tensor; }
  void* data() const { return get()->dl_tensor.data; }
  int32_t ndim() const { return get()->dl_tensor.ndim; }
  DLDataType dtype() const { return get()->dl_tensor.dtype; }
  DLDevice device() const { return get()->dl_tensor.device; }
  int64_t shape(int32_t axis) const { return get()->dl_tensor.shape[axis]; }
  Shape shape() const { return Shape(get()->dl_tensor.shape, get()->dl_tensor.ndim); }
  int64_t NumElements() const { return kiln::NumElements(get()->dl_tensor); }
  /// Bytes of a compact tensor of this shape and dtype.
  int64_t NumBytes() const { return CompactBytes(get()->dl_tensor); }
  /// True when the elements are laid out row-major without gaps.
  bool IsContiguous() const { return IsCompact(get()->dl_tensor); }
};

}  // namespace kiln

#endif  // KILN_FFI_TENSOR_H_

/// AnyView (borrowed) and Any (owning): C++ wrappers over the 16-byte KilnAny, and TypeTraits,
/// the one place that says how each C++ type crosses the ABI.
///
/// A TypeTraits<T> specialization provides:
///   static void CopyToAnyView(const T&, KilnAny*)   borrowed view, no reference taken
///   static void MoveToAny(T, KilnAny*)              owning value
///   static std::optional<T> TryCastFromAnyView(const KilnAny*)   nullopt when not convertible
///   static std::string TypeStr()                    the name used in error messages
#ifndef KILN_FFI_ANY_H_
#define KILN_FFI_ANY_H_

#include <kiln/ffi/error.h>
#include <kiln/ffi/string.h>

#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace kiln {

template <typename T, typename = void>
struct TypeTraits {
  static constexpr bool enabled = false;
};

namespace detail {
/// True when T converts to Any/AnyView; for Self itself it never looks at TypeTraits<Self>, so
/// the converting constructors below do not instantiate TypeTraits<AnyView/Any> before their
/// specializations are declared (clang rejects that; GCC lets it pass).
template <typename T>
struct TypeTraitsEnabled : std::bool_constant<TypeTraits<T>::enabled> {};
template <typename T, typename Self>
inline constexpr bool kConvertsTo =
    std::conjunction_v<std::negation<std::is_same<std::decay_t<T>, Self>>,
                       TypeTraitsEnabled<std::decay_t<T>>>;

KILN_ALWAYS_INLINE void InitNone(KilnAny* value) {
  value->type_index = kKilnTypeNone;
  value->zero_padding = 0;
  value->v_int64 = 0;
}

KILN_ALWAYS_INLINE bool HoldsObject(const KilnAny* value) {
  return value->type_index >= kKilnTypeStaticObjectBegin;
}

/// The name of the type a value holds, as error messages show it.
inline std::string AnyTypeStr(const KilnAny* value) {
  switch (value->type_index) {
    case kKilnTypeNone: return "None";
    case kKilnTypeInt: return "int";
    case kKilnTypeBool: return "bool";
    case kKilnTypeFloat: return "float";
    case kKilnTypeOpaquePtr: return "void*";
    case kKilnTypeDataType: return "DataType";
    case kKilnTypeDevice: return "Device";
    case kKilnTypeDLTensorPtr: return "DLTensor*";
    case kKilnTypeRawStr: return "str";
    case kKilnTypeByteArrayPtr: return "bytes";
    default: {
      const KilnTypeInfo* info = GetTypeInfo(value->type_index);
      return std::string(info->type_key.data, info->type_key.size);
    }
  }
}

/// Turns a borrowed value into an owning one in place: takes a reference to an object, and
/// copies a borrowed string or byte array into a String/Bytes object (its pointer may dangle).
inline void PromoteViewToOwned(KilnAny* value) {
  if (HoldsObject(value)) {
    IncRef(value->v_obj);
  } else if (value->type_index == kKilnTypeRawStr) {
    String s(value->v_c_str);
    value->type_index = kKilnTypeString;
    value->v_obj = ObjectUnsafe::Header(std::move(s).ReleaseData().release());
  } else if (value->type_index == kKilnTypeByteArrayPtr) {
    const auto* bytes = static_cast<const KilnByteArray*>(value->v_ptr);
    Bytes b(bytes->data, bytes->size);
    value->type_index = kKilnTypeBytes;
    value->v_obj = ObjectUnsafe::Header(std::move(b).ReleaseData().release());
  }
}

template <typename T>
[[noreturn]] void ThrowCastError(const KilnAny* value) {
  throw Error("TypeError", "cannot convert a value of type `" + AnyTypeStr(value) + "` to `" +
                               TypeTraits<T>::TypeStr() + "`");
}

}  // namespace detail

namespace detail {
/// Read access shared by AnyView and Any, which hold one KilnAny each and expose it as raw().
template <typename Derived>
class AnyReader {
 public:
  int32_t type_index() const { return Raw()->type_index; }
  bool is_none() const { return Raw()->type_index == kKilnTypeNone; }
  std::string type_str() const { return AnyTypeStr(Raw()); }

  template <typename T>
  std::optional<T> as() const {
    return TypeTraits<T>::TryCastFromAnyView(Raw());
  }
  /// Converts or throws TypeError naming both types.
  template <typename T>
  T cast() const {
    std::optional<T> result = TypeTraits<T>::TryCastFromAnyView(Raw());
    if (!result.has_value()) ThrowCastError<T>(Raw());
    return *std::move(result);
  }

 private:
  const KilnAny* Raw() const { return static_cast<const Derived*>(this)->raw(); }
};
}  // namespace detail

class Any;

/// A borrowed value: never owns what it points to. Arguments of a call arrive as AnyView.
class AnyView : public detail::AnyReader<AnyView> {
 public:
  AnyView() { detail::InitNone(&data_); }
  template <typename T, typename = std::enable_if_t<detail::kConvertsTo<T, AnyView>>>
  AnyView(const T& value) {  // NOLINT(google-explicit-constructor)
    TypeTraits<std::decay_t<T>>::CopyToAnyView(value, &data_);
  }
  static AnyView FromRaw(const KilnAny& raw) {
    AnyView view;
    view.data_ = raw;
    return view;
  }

  const KilnAny* raw() const { return &data_; }

 private:
  KilnAny data_;
};

/// An owning value: holds one reference when it holds an object.
class Any : public detail::AnyReader<Any> {
 public:
  Any() { detail::InitNone(&data_); }
  Any(const Any& other) : data_(other.data_) {
    if (detail::HoldsObject(&data_)) detail::IncRef(data_.v_obj);
  }
  Any(Any&& other) noexcept : data_(other.data_) { detail::InitNone(&other.data_); }
  template <typename T, typename = std::enable_if_t<detail::kConvertsTo<T, Any>>>
  Any(T&& value) {  // NOLINT(google-explicit-constructor)
    TypeTraits<std::decay_t<T>>::MoveToAny(std::forward<T>(value), &data_);
  }
  ~Any() { Reset(); }

  Any& operator=(Any other) noexcept {
    std::swap(data_, other.data_);
    return *this;
  }

  /// Takes over a value that already owns its reference (a call's result, say).
  static Any FromOwnedRaw(const KilnAny& raw) {
    Any any;
    any.data_ = raw;
    return any;
  }
  /// Gives the owned value to the caller (C code), leaving None behind.
  KilnAny ReleaseRaw() && {
    KilnAny raw = data_;
    detail::InitNone(&data_);
    return raw;
  }
  /// For out-parameters of the C ABI; the previous value is released first.
  KilnAny* ResetToRaw() {
    Reset();
    return &data_;
  }

  const KilnAny* raw() const { return &data_; }

 private:
  void Reset() {
    if (detail::HoldsObject(&data_)) detail::DecRef(data_.v_obj);
    detail::InitNone(&data_);
  }
  KilnAny data_;
};

static_assert(sizeof(Any) == sizeof(KilnAny) && std::is_standard_layout_v<Any>);
static_assert(sizeof(AnyView) == sizeof(KilnAny) && std::is_standard_layout_v<AnyView>);

// ---------------------------------------------------------------------------------------------
// TypeTraits for plain values
// ---------------------------------------------------------------------------------------------

/// Traits of a value stored inline (no object): one type index, one payload field.
template <typename T, int32_t kIndex>
struct InlineValueTraitsBase {
  static constexpr bool enabled = true;
  static void CopyToAnyView(const T& src, KilnAny* out) {
    out->type_index = kIndex;
    out->zero_padding = 0;
    out->v_int64 = 0;
    Store(src, out);
  }
  static void MoveToAny(T src, KilnAny* out) { CopyToAnyView(src, out); }

 private:
  // T is the stored value itself (a pointer for DLTensor*), so sizeof(T) is what is meant.
  static void Store(const T& src, KilnAny* out) {
    std::memcpy(&out->v_int64, &src, sizeof(T));  // NOLINT(bugprone-sizeof-expression)
  }
};

template <typename Int>
struct TypeTraits<Int, std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool>>> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(Int src, KilnAny* out) {
    out->type_index = kKilnTypeInt;
    out->zero_padding = 0;
    out->v_int64 = static_cast<int64_t>(src);
  }
  static void MoveToAny(Int src, KilnAny* out) { CopyToAnyView(src, out); }
  static std::optional<Int> TryCastFromAnyView(const KilnAny* src) {
    if (src->type_index != kKilnTypeInt && src->type_index != kKilnTypeBool) return std::nullopt;
    const int64_t value = src->v_int64;
    if constexpr (sizeof(Int) < sizeof(int64_t) || std::is_unsigned_v<Int>) {
      if (value < 0 && std::is_unsigned_v<Int>) return std::nullopt;
      if constexpr (sizeof(Int) < sizeof(int64_t)) {
        if (value < static_cast<int64_t>(std::numeric_limits<Int>::min()) ||
            value > static_cast<int64_t>(std::numeric_limits<Int>::max())) {
          return std::nullopt;
        }
      }
    }
    return static_cast<Int>(value);
  }
  static std::string TypeStr() {
    if constexpr (std::is_same_v<Int, int64_t>) return "int";
    return std::string(std::is_unsigned_v<Int> ? "uint" : "int") + std::to_string(8 * sizeof(Int));
  }
};

template <>
struct TypeTraits<bool> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(bool src, KilnAny* out) {
    out->type_index = kKilnTypeBool;
    out->zero_padding = 0;
    out->v_int64 = src ? 1 : 0;
  }
  static void MoveToAny(bool src, KilnAny* out) { CopyToAnyView(src, out); }
  static std::optional<bool> TryCastFromAnyView(const KilnAny* src) {
    if (src->type_index != kKilnTypeBool && src->type_index != kKilnTypeInt) return std::nullopt;
    return src->v_int64 != 0;
  }
  static std::string TypeStr() { return "bool"; }
};

template <typename Float>
struct TypeTraits<Float, std::enable_if_t<std::is_floating_point_v<Float>>> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(Float src, KilnAny* out) {
    out->type_index = kKilnTypeFloat;
    out->zero_padding = 0;
    out->v_float64 = static_cast<double>(src);
  }
  static void MoveToAny(Float src, KilnAny* out) { CopyToAnyView(src, out); }
  static std::optional<Float> TryCastFromAnyView(const KilnAny* src) {
    switch (src->type_index) {
      case kKilnTypeFloat: return static_cast<Float>(src->v_float64);
      case kKilnTypeInt:
      case kKilnTypeBool: return static_cast<Float>(src->v_int64);
      default: return std::nullopt;
    }
  }
  static std::string TypeStr() { return "float"; }
};

template <>
struct TypeTraits<std::nullptr_t> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(std::nullptr_t, KilnAny* out) { detail::InitNone(out); }
  static void MoveToAny(std::nullptr_t, KilnAny* out) { detail::InitNone(out); }
  static std::optional<std::nullptr_t> TryCastFromAnyView(const KilnAny* src) {
    if (src->type_index == kKilnTypeNone) return nullptr;
    return std::nullopt;
  }
  static std::string TypeStr() { return "None"; }
};

template <>
struct TypeTraits<void*> : InlineValueTraitsBase<void*, kKilnTypeOpaquePtr> {
  static std::optional<void*> TryCastFromAnyView(const KilnAny* src) {
    if (src->type_index == kKilnTypeOpaquePtr) return src->v_ptr;
    if (src->type_index == kKilnTypeNone) return static_cast<void*>(nullptr);
    return std::nullopt;
  }
  static std::string TypeStr() { return "void*"; }
};

template <>
struct TypeTraits<DLDevice> : InlineValueTraitsBase<DLDevice, kKilnTypeDevice> {
  static std::optional<DLDevice> TryCastFromAnyView(const KilnAny* src) {
    if (src->type_index == kKilnTypeDevice) return src->v_device;
    return std::nullopt;
  }
  static std::string TypeStr() { return "Device"; }
};

template <>
struct TypeTraits<DLDataType> : InlineValueTraitsBase<DLDataType, kKilnTypeDataType> {
  static std::optional<DLDataType> TryCastFromAnyView(const KilnAny* src) {
    if (src->type_index == kKilnTypeDataType) return src->v_dtype;
    return std::nullopt;
  }
  static std::string TypeStr() { return "DataType"; }
};

template <>
struct TypeTraits<DLTensor*> : InlineValueTraitsBase<DLTensor*, kKilnTypeDLTensorPtr> {
  static std::optional<DLTensor*> TryCastFromAnyView(const KilnAny* src) {
    if (src->type_index == kKilnTypeDLTensorPtr) return static_cast<DLTensor*>(src->v_ptr);
    if (src->type_index == kKilnTypeTensor) {
      return &reinterpret_cast<KilnTensorObject*>(src->v_obj)->dl_tensor;
    }
    return std::nullopt;
  }
  static std::string TypeStr() { return "DLTensor*"; }
};

// ---------------------------------------------------------------------------------------------
// TypeTraits for strings: passed as borrowed C strings, owned as String objects
// ---------------------------------------------------------------------------------------------

namespace detail {
/// The bytes of a RawStr or String value, or nullopt.
inline std::optional<std::string_view> StringViewOf(const KilnAny* src) {
  if (src->type_index == kKilnTypeRawStr) return std::string_view(src->v_c_str);
  if (src->type_index == kKilnTypeString) {
    const auto* obj = reinterpret_cast<const KilnStringObject*>(src->v_obj);
    return std::string_view(obj->bytes.data, obj->bytes.size);
  }
  return std::nullopt;
}

inline void MoveStringToAny(std::string_view text, KilnAny* out) {
  String s(text);
  out->type_index = kKilnTypeString;
  out->zero_padding = 0;
  out->v_obj = ObjectUnsafe::Header(std::move(s).ReleaseData().release());
}
}  // namespace detail

template <>
struct TypeTraits<const char*> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(const char* src, KilnAny* out) {
    out->type_index = kKilnTypeRawStr;
    out->zero_padding = 0;
    out->v_c_str = src;
  }
  static void MoveToAny(const char* src, KilnAny* out) { detail::MoveStringToAny(src, out); }
  /// The pointer lives as long as the value it was cast from.
  static std::optional<const char*> TryCastFromAnyView(const KilnAny* src) {
    std::optional<std::string_view> text = detail::StringViewOf(src);
    if (!text.has_value()) return std::nullopt;
    return text->data();
  }
  static std::string TypeStr() { return "str"; }
};

/// String literals and char buffers are passed like const char*.
template <>
struct TypeTraits<char*> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(const char* src, KilnAny* out) {
    TypeTraits<const char*>::CopyToAnyView(src, out);
  }
  static void MoveToAny(const char* src, KilnAny* out) { detail::MoveStringToAny(src, out); }
  static std::string TypeStr() { return "str"; }
};

template <>
struct TypeTraits<std::string> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(const std::string& src, KilnAny* out) {
    TypeTraits<const char*>::CopyToAnyView(src.c_str(), out);
  }
  static void MoveToAny(const std::string& src, KilnAny* out) { detail::MoveStringToAny(src, out); }
  static std::optional<std::string> TryCastFromAnyView(const KilnAny* src) {
    std::optional<std::string_view> text = detail::StringViewOf(src);
    if (!text.has_value()) return std::nullopt;
    return std::string(*text);
  }
  static std::string TypeStr() { return "str"; }
};

// ---------------------------------------------------------------------------------------------
// TypeTraits for object references
// ---------------------------------------------------------------------------------------------

/// Shared by every ObjectRef subclass; containers add element checks on top.
template <typename RefT>
struct ObjectRefTraitsBase {
  static constexpr bool enabled = true;
  using ContainerType = typename RefT::ContainerType;

  static void CopyToAnyView(const RefT& src, KilnAny* out) {
    if (!src.defined()) {
      detail::InitNone(out);
      return;
    }
    out->type_index = src->type_index();
    out->zero_padding = 0;
    out->v_obj = detail::ObjectUnsafe::Header(src.get());
  }
  static void MoveToAny(RefT src, KilnAny* out) {
    if (!src.defined()) {
      detail::InitNone(out);
      return;
    }
    out->type_index = src->type_index();
    out->zero_padding = 0;
    out->v_obj = detail::ObjectUnsafe::Header(std::move(src).ReleaseData().release());
  }
  static std::optional<RefT> TryCastFromAnyView(const KilnAny* src) {
    if (!detail::HoldsObject(src)) return std::nullopt;
    Object* obj = detail::ObjectUnsafe::FromHeader(src->v_obj);
    if (!obj->IsInstance<ContainerType>()) return std::nullopt;
    return RefT::FromUnchecked(ObjectPtr<Object>::FromBorrowed(obj));
  }
  static std::string TypeStr() { return ContainerType::_type_key; }
};

template <typename T>
class Array;
template <typename K, typename V>
class Map;

namespace detail {
/// Containers check their elements too, so they bring their own TypeTraits.
template <typename T>
struct IsCheckedContainer : std::false_type {};
template <typename T>
struct IsCheckedContainer<Array<T>> : std::true_type {};
template <typename K, typename V>
struct IsCheckedContainer<Map<K, V>> : std::true_type {};
}  // namespace detail

template <typename RefT>
struct TypeTraits<RefT, std::enable_if_t<std::is_base_of_v<ObjectRef, RefT> &&
                                         !detail::IsCheckedContainer<RefT>::value>>
    : ObjectRefTraitsBase<RefT> {};

template <>
struct TypeTraits<String> : ObjectRefTraitsBase<String> {
  static std::optional<String> TryCastFromAnyView(const KilnAny* src) {
    if (src->type_index == kKilnTypeRawStr) return String(src->v_c_str);
    return ObjectRefTraitsBase<String>::TryCastFromAnyView(src);
  }
  static std::string TypeStr() { return "str"; }
};

template <>
struct TypeTraits<Bytes> : ObjectRefTraitsBase<Bytes> {
  static std::optional<Bytes> TryCastFromAnyView(const KilnAny* src) {
    if (src->type_index == kKilnTypeByteArrayPtr) {
      const auto* bytes = static_cast<const KilnByteArray*>(src->v_ptr);
      return Bytes(bytes->data, bytes->size);
    }
    return ObjectRefTraitsBase<Bytes>::TryCastFromAnyView(src);
  }
  static std::string TypeStr() { return "bytes"; }
};

// ---------------------------------------------------------------------------------------------
// TypeTraits for Any, AnyView and std::optional
// ---------------------------------------------------------------------------------------------

template <>
struct TypeTraits<AnyView> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(const AnyView& src, KilnAny* out) { *out = *src.raw(); }
  static void MoveToAny(const AnyView& src, KilnAny* out) {
    *out = *src.raw();
    detail::PromoteViewToOwned(out);
  }
  static std::optional<AnyView> TryCastFromAnyView(const KilnAny* src) {
    return AnyView::FromRaw(*src);
  }
  static std::string TypeStr() { return "Any"; }
};

template <>
struct TypeTraits<Any> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(const Any& src, KilnAny* out) { *out = *src.raw(); }
  static std::optional<Any> TryCastFromAnyView(const KilnAny* src) {
    KilnAny owned = *src;
    detail::PromoteViewToOwned(&owned);
    return Any::FromOwnedRaw(owned);
  }
  static std::string TypeStr() { return "Any"; }
};

template <typename T>
struct TypeTraits<std::optional<T>, std::enable_if_t<TypeTraits<T>::enabled>> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(const std::optional<T>& src, KilnAny* out) {
    if (src.has_value()) {
      TypeTraits<T>::CopyToAnyView(*src, out);
    } else {
      detail::InitNone(out);
    }
  }
  static void MoveToAny(std::optional<T> src, KilnAny* out) {
    if (src.has_value()) {
      TypeTraits<T>::MoveToAny(*std::move(src), out);
    } else {
      detail::InitNone(out);
    }
  }
  static std::optional<std::optional<T>> TryCastFromAnyView(const KilnAny* src) {
    if (src->type_index == kKilnTypeNone) return std::optional<T>();
    std::optional<T> value = TypeTraits<T>::TryCastFromAnyView(src);
    if (!value.has_value()) return std::nullopt;
    return value;
  }
  static std::string TypeStr() { return "Optional[" + TypeTraits<T>::TypeStr() + "]"; }
};

}  // namespace kiln

#endif  // KILN_FFI_ANY_H_

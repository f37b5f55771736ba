/// String and Bytes: immutable byte sequences stored in one allocation with their object header.
#ifndef KILN_FFI_STRING_H_
#define KILN_FFI_STRING_H_

#include <kiln/ffi/object.h>

#include <cstring>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace kiln {

namespace detail {
/// Layout shared by String and Bytes (KilnStringObject): the bytes follow the object.
class ByteSequenceObj : public Object {
 public:
  KilnByteArray bytes;

 protected:
  ByteSequenceObj() = default;
};

template <typename ObjT>
ObjectPtr<ObjT> MakeByteSequence(const char* data, size_t size) {
  ObjectPtr<ObjT> obj = make_inplace_object<ObjT>(size + 1);
  char* storage = reinterpret_cast<char*>(obj.get() + 1);
  if (size != 0) std::memcpy(storage, data, size);
  storage[size] = '\0';
  obj->bytes = {storage, size};
  return obj;
}
}  // namespace detail

class StringObj : public detail::ByteSequenceObj {
 public:
  static constexpr const char* _type_key = "kiln.String";
  static constexpr bool _type_final = true;
  KILN_DECLARE_STATIC_OBJECT_INFO(StringObj, Object, kKilnTypeString);
};

class BytesObj : public detail::ByteSequenceObj {
 public:
  static constexpr const char* _type_key = "kiln.Bytes";
  static constexpr bool _type_final = true;
  KILN_DECLARE_STATIC_OBJECT_INFO(BytesObj, Object, kKilnTypeBytes);
};

/// An immutable UTF-8 string object; never null once constructed from text.
class String : public ObjectRef {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(String, ObjectRef, StringObj);

  String(const char* text)  // NOLINT(google-explicit-constructor)
      : String(std::string_view(text)) {}
  String(const std::string& text)  // NOLINT(google-explicit-constructor)
      : String(std::string_view(text)) {}
  String(std::string_view text)  // NOLINT(google-explicit-constructor)
      : ObjectRef(detail::MakeByteSequence<StringObj>(text.data(), text.size())) {}

  const char* data() const { return get()->bytes.data; }
  const char* c_str() const { return get()->bytes.data; }
  size_t size() const { return get()->bytes.size; }
  bool empty() const { return size() == 0; }
  std::string_view view() const { return {data(), size()}; }
  operator std::string_view() const { return view(); }  // NOLINT(google-explicit-constructor)
  std::string str() const { return std::string(view()); }

  bool operator==(const String& other) const { return view() == other.view(); }
  bool operator!=(const String& other) const { return view() != other.view(); }
  bool operator<(const String& other) const { return view() < other.view(); }
  bool operator==(std::string_view other) const { return view() == other; }
  bool operator!=(std::string_view other) const { return view() != other; }
  bool operator==(const char* other) const { return view() == other; }
  bool operator!=(const char* other) const { return view() != other; }
};

inline std::ostream& operator<<(std::ostream& os, const String& s) { return os << s.view(); }

/// An immutable byte buffer object.
class Bytes : public ObjectRef {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(Bytes, ObjectRef, BytesObj);

  Bytes(const char* data, size_t size)
      : ObjectRef(detail::MakeByteSequence<BytesObj>(data, size)) {}
  explicit Bytes(std::string_view data) : Bytes(data.data(), data.size()) {}

  const char* data() const { return get()->bytes.data; }
  size_t size() const { return get()->bytes.size; }
  std::string_view view() const { return {data(), size()}; }
  bool operator==(const Bytes& other) const { return view() == other.view(); }
};

}  // namespace kiln

template <>
struct std::hash<kiln::String> {
  size_t operator()(const kiln::String& s) const { return std::hash<std::string_view>()(s.view()); }
};

#endif  // KILN_FFI_STRING_H_

/// Reference-counted objects over the C ABI's KilnObject header: Object, ObjectPtr, ObjectRef.
///
/// Every Kiln object is a C++ class derived from Object whose first bytes are the KilnObject
/// header, so a pointer to it can cross the C ABI as a KilnObjectHandle. Reference counting is
/// inline and atomic; the deleter stored in the header frees the object with the code of the DSO
/// that created it.
#ifndef KILN_FFI_OBJECT_H_
#define KILN_FFI_OBJECT_H_

#include <kiln/ffi/base.h>

#include <cstdint>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

namespace kiln {

class Object;

namespace detail {
/// Throws the error raised in this thread's slot as a kiln::Error (defined in error.h).
[[noreturn]] void ThrowRaised();

KILN_ALWAYS_INLINE void IncRef(KilnObject* obj) {
  __atomic_fetch_add(&obj->ref_count, 1, __ATOMIC_RELAXED);
}
KILN_ALWAYS_INLINE void DecRef(KilnObject* obj) {
  if (__atomic_fetch_sub(&obj->ref_count, 1, __ATOMIC_ACQ_REL) == 1) obj->deleter(obj);
}

/// Registers (or looks up) a run-time type; the index is stable for the life of the process.
inline int32_t RegisterObjectType(const char* type_key, int32_t parent_index) {
  int32_t index = -1;
  if (kiln_type_register(type_key, parent_index, &index) != 0) ThrowRaised();
  return index;
}

inline const KilnTypeInfo* GetTypeInfo(int32_t type_index) {
  const KilnTypeInfo* info = nullptr;
  if (kiln_type_get_info(type_index, &info) != 0) ThrowRaised();
  return info;
}

/// Access to the header of an Object, kept out of Object's public interface.
struct ObjectUnsafe;
}  // namespace detail

/// Declares the run-time type of an object class with a fixed index from KilnTypeIndex.
#define KILN_DECLARE_STATIC_OBJECT_INFO(TypeName, ParentType, Index) \
  static constexpr int32_t RuntimeTypeIndex() { return Index; }      \
  static int32_t TypeDepth() { return ParentType::TypeDepth() + 1; }

/// Declares the run-time type of an object class whose index is allocated by its `_type_key`.
#define KILN_DECLARE_OBJECT_INFO(TypeName, ParentType)                                           \
  static int32_t RuntimeTypeIndex() {                                                            \
    static const int32_t index =                                                                 \
        ::kiln::detail::RegisterObjectType(TypeName::_type_key, ParentType::RuntimeTypeIndex()); \
    return index;                                                                                \
  }                                                                                              \
  static int32_t TypeDepth() { return ParentType::TypeDepth() + 1; }

/// Base of every object. Not copyable in a way that copies the header: a copy is a new object.
class Object {
 public:
  static constexpr const char* _type_key = "kiln.Object";
  /// A final type has no subtypes, so IsInstance is one comparison.
  static constexpr bool _type_final = false;
  static constexpr int32_t RuntimeTypeIndex() { return kKilnTypeObject; }
  static int32_t TypeDepth() { return 0; }

  int32_t type_index() const { return header_.type_index; }
  /// The registered type key, e.g. "kiln.String".
  std::string GetTypeKey() const {
    const KilnTypeInfo* info = detail::GetTypeInfo(header_.type_index);
    return std::string(info->type_key.data, info->type_key.size);
  }
  uint64_t use_count() const { return __atomic_load_n(&header_.ref_count, __ATOMIC_RELAXED); }

  /// True when this object is a T or derives from T; one load through the ancestors table.
  template <typename T>
  bool IsInstance() const {
    if constexpr (std::is_same_v<T, Object>) {
      return true;
    } else {
      const int32_t target = T::RuntimeTypeIndex();
      if (header_.type_index == target) return true;
      if constexpr (T::_type_final) {
        return false;
      } else {
        const KilnTypeInfo* info = detail::GetTypeInfo(header_.type_index);
        const int32_t depth = T::TypeDepth();
        return info->depth > depth && info->ancestors[depth] == target;
      }
    }
  }

 protected:
  Object() = default;
  Object(const Object&) : header_{} {}
  Object& operator=(const Object&) { return *this; }

 private:
  KilnObject header_{};
  friend struct detail::ObjectUnsafe;
};

namespace detail {
struct ObjectUnsafe {
  static KilnObject* Header(const Object* obj) { return const_cast<KilnObject*>(&obj->header_); }
  static Object* FromHeader(KilnObject* header) { return reinterpret_cast<Object*>(header); }
  template <typename T>
  static void InitHeader(T* obj, void (*deleter)(KilnObject*)) {
    obj->header_.ref_count = 1;
    obj->header_.type_index = T::RuntimeTypeIndex();
    obj->header_.deleter = deleter;
  }
};
}  // namespace detail

/// An owning pointer to an object of type T (intrusive reference count).
template <typename T>
class ObjectPtr {
 public:
  ObjectPtr() = default;
  ObjectPtr(std::nullptr_t) {}  // NOLINT(google-explicit-constructor)
  ObjectPtr(const ObjectPtr& other) : ptr_(other.ptr_) { Retain(); }
  ObjectPtr(ObjectPtr&& other) noexcept : ptr_(std::exchange(other.ptr_, nullptr)) {}
  template <typename U, typename = std::enable_if_t<std::is_base_of_v<T, U>>>
  ObjectPtr(const ObjectPtr<U>& other) : ptr_(other.get()) {  // NOLINT(google-explicit-constructor)
    Retain();
  }
  template <typename U, typename = std::enable_if_t<std::is_base_of_v<T, U>>>
  ObjectPtr(ObjectPtr<U>&& other)  // NOLINT(google-explicit-constructor)
      : ptr_(other.release()) {}
  ~ObjectPtr() { Reset(); }

  ObjectPtr& operator=(ObjectPtr other) noexcept {
    std::swap(ptr_, other.ptr_);
    return *this;
  }

  /// Takes over one reference that the caller already holds.
  static ObjectPtr FromOwned(T* ptr) {
    ObjectPtr result;
    result.ptr_ = ptr;
    return result;
  }
  /// Takes a new reference to `ptr`.
  static ObjectPtr FromBorrowed(T* ptr) {
    ObjectPtr result;
    result.ptr_ = ptr;
    result.Retain();
    return result;
  }

  T* get() const { return ptr_; }
  T* operator->() const { return ptr_; }
  T& operator*() const { return *ptr_; }
  explicit operator bool() const { return ptr_ != nullptr; }
  bool operator==(const ObjectPtr& other) const { return ptr_ == other.ptr_; }
  bool operator!=(const ObjectPtr& other) const { return ptr_ != other.ptr_; }
  bool operator==(std::nullptr_t) const { return ptr_ == nullptr; }
  bool operator!=(std::nullptr_t) const { return ptr_ != nullptr; }

  /// Gives up ownership without decrementing; the caller now holds the reference.
  T* release() { return std::exchange(ptr_, nullptr); }
  void Reset() {
    if (ptr_ != nullptr) detail::DecRef(detail::ObjectUnsafe::Header(ptr_));
    ptr_ = nullptr;
  }

 private:
  void Retain() {
    if (ptr_ != nullptr) detail::IncRef(detail::ObjectUnsafe::Header(ptr_));
  }
  T* ptr_ = nullptr;
};

/// Allocates a T with `new` and wires its header; the result holds the only reference.
template <typename T, typename... Args>
ObjectPtr<T> make_object(Args&&... args) {
  static_assert(std::is_base_of_v<Object, T>, "make_object needs a subclass of kiln::Object");
  T* obj = new T(std::forward<Args>(args)...);
  detail::ObjectUnsafe::InitHeader(obj, [](KilnObject* header) {
    delete static_cast<T*>(detail::ObjectUnsafe::FromHeader(header));
  });
  return ObjectPtr<T>::FromOwned(obj);
}

/// Allocates a T followed by `extra_bytes` of storage in one block (strings, shapes).
template <typename T, typename... Args>
ObjectPtr<T> make_inplace_object(size_t extra_bytes, Args&&... args) {
  void* memory = ::operator new(sizeof(T) + extra_bytes);
  T* obj = new (memory) T(std::forward<Args>(args)...);
  detail::ObjectUnsafe::InitHeader(obj, [](KilnObject* header) {
    T* self = static_cast<T*>(detail::ObjectUnsafe::FromHeader(header));
    self->~T();
    ::operator delete(static_cast<void*>(self));
  });
  return ObjectPtr<T>::FromOwned(obj);
}

/// A nullable, reference-counted handle to an Object; subclasses add typed accessors.
class ObjectRef {
 public:
  using ContainerType = Object;

  ObjectRef() = default;
  explicit ObjectRef(ObjectPtr<Object> data) : data_(std::move(data)) {}
  static ObjectRef FromUnchecked(ObjectPtr<Object> data) { return ObjectRef(std::move(data)); }

  const Object* get() const { return data_.get(); }
  const Object* operator->() const { return data_.get(); }
  bool defined() const { return data_ != nullptr; }
  bool same_as(const ObjectRef& other) const { return data_ == other.data_; }
  bool operator==(const ObjectRef& other) const { return data_ == other.data_; }
  bool operator!=(const ObjectRef& other) const { return data_ != other.data_; }
  uint64_t use_count() const { return data_ ? data_->use_count() : 0; }

  /// True when this ref is non-null and points to a RefT::ContainerType.
  template <typename RefT>
  std::enable_if_t<std::is_base_of_v<ObjectRef, RefT>, bool> Is() const {
    return data_ != nullptr && data_->IsInstance<typename RefT::ContainerType>();
  }

  const ObjectPtr<Object>& data() const { return data_; }
  ObjectPtr<Object> ReleaseData() && { return std::move(data_); }

 protected:
  ObjectPtr<Object> data_;
};

/// Defines the constructors and typed accessors of an ObjectRef subclass.
#define KILN_DEFINE_OBJECT_REF_METHODS(TypeName, ParentType, ObjectName)                       \
  using ContainerType = ObjectName;                                                            \
  TypeName() = default;                                                                        \
  explicit TypeName(::kiln::ObjectPtr<ObjectName> data) : ParentType(std::move(data)) {}       \
  /* The caller guarantees the object is an ObjectName (checked by the Any casts). */          \
  static TypeName FromUnchecked(::kiln::ObjectPtr<::kiln::Object> data) {                      \
    TypeName result;                                                                           \
    result.data_ = std::move(data);                                                            \
    return result;                                                                             \
  }                                                                                            \
  const ObjectName* operator->() const { return static_cast<const ObjectName*>(data_.get()); } \
  const ObjectName* get() const { return static_cast<const ObjectName*>(data_.get()); }

/// Mutable access for builders that own the only reference (copy-on-write containers).
#define KILN_DEFINE_OBJECT_REF_COW_METHOD(ObjectName)                             \
  ObjectName* CopyOnWrite() {                                                     \
    if (data_->use_count() != 1) data_ = ::kiln::make_object<ObjectName>(*get()); \
    return static_cast<ObjectName*>(data_.get());                                 \
  }

}  // namespace kiln

#endif  // KILN_FFI_OBJECT_H_

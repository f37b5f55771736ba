/// Array<T>: an immutable, copy-on-write sequence of values (any type T that crosses the ABI).
#ifndef KILN_FFI_ARRAY_H_
#define KILN_FFI_ARRAY_H_

#include <kiln/ffi/any.h>

#include <initializer_list>
#include <iterator>
#include <vector>

namespace kiln {

/// Layout matches KilnArrayObject: `data`, `size` and `capacity` mirror `storage_`.
class ArrayObj : public Object {
 public:
  static constexpr const char* _type_key = "kiln.Array";
  static constexpr bool _type_final = true;
  KILN_DECLARE_STATIC_OBJECT_INFO(ArrayObj, Object, kKilnTypeArray);

  ArrayObj() { Sync(); }
  explicit ArrayObj(std::vector<Any> items) : storage_(std::move(items)) { Sync(); }
  ArrayObj(const ArrayObj& other) : Object(other), storage_(other.storage_) { Sync(); }
  ArrayObj& operator=(const ArrayObj&) = delete;

  int64_t size() const { return size_; }
  const Any& operator[](int64_t i) const { return storage_[i]; }
  const std::vector<Any>& items() const { return storage_; }

  /// Mutators for the copy-on-write owner only (use_count() == 1).
  void push_back(Any value) {
    storage_.push_back(std::move(value));
    Sync();
  }
  void Set(int64_t i, Any value) { storage_[i] = std::move(value); }

 private:
  void Sync() {
    data_ = reinterpret_cast<KilnAny*>(storage_.data());
    size_ = static_cast<int64_t>(storage_.size());
    capacity_ = static_cast<int64_t>(storage_.capacity());
  }
  // Read through the C layout (KilnArrayObject); must come first.
  KilnAny* data_ = nullptr;
  int64_t size_ = 0;
  int64_t capacity_ = 0;
  std::vector<Any> storage_;
};

/// A sequence of T. Elements are checked to be T when an Array<T> is cast from an Any.
template <typename T = Any>
class Array : public ObjectRef {
 public:
  using ContainerType = ArrayObj;
  using value_type = T;

  Array() : ObjectRef(make_object<ArrayObj>()) {}
  Array(std::initializer_list<T> items) : Array(items.begin(), items.end()) {}
  explicit Array(const std::vector<T>& items) : Array(items.begin(), items.end()) {}
  template <typename Iter>
  Array(Iter first, Iter last) : ObjectRef(Make(first, last)) {}
  static Array FromUnchecked(ObjectPtr<Object> data) { return Array(nullptr, std::move(data)); }

  const ArrayObj* get() const { return static_cast<const ArrayObj*>(data_.get()); }
  int64_t size() const { return get()->size(); }
  bool empty() const { return size() == 0; }
  T operator[](int64_t i) const { return Element(i); }
  T at(int64_t i) const {
    KILN_CHECK(i >= 0 && i < size(), IndexError)
        << "index " << i << " is out of range for an array of " << size() << " elements";
    return Element(i);
  }
  T back() const { return at(size() - 1); }

  void push_back(T value) { CopyOnWrite()->push_back(Any(std::move(value))); }
  void Set(int64_t i, T value) {
    KILN_CHECK(i >= 0 && i < size(), IndexError)
        << "index " << i << " is out of range for an array of " << size() << " elements";
    CopyOnWrite()->Set(i, Any(std::move(value)));
  }

  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = T;
    Iterator(const Array* array, int64_t index) : array_(array), index_(index) {}
    T operator*() const { return (*array_)[index_]; }
    Iterator& operator++() {
      ++index_;
      return *this;
    }
    bool operator==(const Iterator& other) const { return index_ == other.index_; }
    bool operator!=(const Iterator& other) const { return index_ != other.index_; }

   private:
    const Array* array_;
    int64_t index_;
  };
  Iterator begin() const { return Iterator(this, 0); }
  Iterator end() const { return Iterator(this, size()); }

 private:
  /// Wraps `data` without checking its type (FromUnchecked).
  Array(std::nullptr_t /*unchecked*/, ObjectPtr<Object> data) : ObjectRef(std::move(data)) {}
  template <typename Iter>
  static ObjectPtr<ArrayObj> Make(Iter first, Iter last) {
    std::vector<Any> items;
    for (; first != last; ++first) items.emplace_back(T(*first));
    return make_object<ArrayObj>(std::move(items));
  }
  T Element(int64_t i) const {
    if constexpr (std::is_same_v<T, Any>) {
      return (*get())[i];
    } else {
      return (*get())[i].template cast<T>();
    }
  }
  ArrayObj* CopyOnWrite() {
    if (data_->use_count() != 1) data_ = make_object<ArrayObj>(*get());
    return static_cast<ArrayObj*>(data_.get());
  }
};

template <typename T>
struct TypeTraits<Array<T>> : ObjectRefTraitsBase<Array<T>> {
  static std::optional<Array<T>> TryCastFromAnyView(const KilnAny* src) {
    std::optional<Array<T>> array = ObjectRefTraitsBase<Array<T>>::TryCastFromAnyView(src);
    if constexpr (!std::is_same_v<T, Any>) {
      if (array.has_value()) {
        for (const Any& item : array->get()->items()) {
          if (!item.as<T>().has_value()) return std::nullopt;
        }
      }
    }
    return array;
  }
  static std::string TypeStr() { return "Array[" + TypeTraits<T>::TypeStr() + "]"; }
};

}  // namespace kiln

#endif  // KILN_FFI_ARRAY_H_

/// Shape: an immutable array of int64 extents, stored in one allocation with its header.
#ifndef KILN_FFI_SHAPE_H_
#define KILN_FFI_SHAPE_H_

#include <kiln/ffi/error.h>

#include <algorithm>
#include <initializer_list>
#include <ostream>
#include <vector>

namespace kiln {

/// Layout matches KilnShapeObject.
class ShapeObj : public Object {
 public:
  static constexpr const char* _type_key = "kiln.Shape";
  static constexpr bool _type_final = true;
  KILN_DECLARE_STATIC_OBJECT_INFO(ShapeObj, Object, kKilnTypeShape);

  const int64_t* data = nullptr;
  int64_t size = 0;
};

class Shape : public ObjectRef {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(Shape, ObjectRef, ShapeObj);

  Shape(const int64_t* dims, int64_t ndim) : ObjectRef(Make(dims, ndim)) {}
  Shape(std::initializer_list<int64_t> dims)
      : Shape(dims.begin(), static_cast<int64_t>(dims.size())) {}
  explicit Shape(const std::vector<int64_t>& dims)
      : Shape(dims.data(), static_cast<int64_t>(dims.size())) {}

  int64_t size() const { return get()->size; }
  int64_t ndim() const { return get()->size; }
  const int64_t* begin() const { return get()->data; }
  const int64_t* end() const { return get()->data + get()->size; }
  int64_t operator[](int64_t i) const { return get()->data[i]; }
  int64_t at(int64_t i) const {
    KILN_CHECK(i >= 0 && i < size(), IndexError)
        << "shape index " << i << " out of range for " << size() << " dimensions";
    return get()->data[i];
  }
  /// Product of the extents (1 for a scalar shape).
  int64_t NumElements() const {
    int64_t n = 1;
    for (int64_t d : *this) n *= d;
    return n;
  }
  bool operator==(const Shape& other) const {
    return std::equal(begin(), end(), other.begin(), other.end());
  }
  bool operator!=(const Shape& other) const { return !(*this == other); }

 private:
  static ObjectPtr<ShapeObj> Make(const int64_t* dims, int64_t ndim) {
    KILN_CHECK(ndim >= 0, ValueError) << "a shape cannot have " << ndim << " dimensions";
    ObjectPtr<ShapeObj> obj = make_inplace_object<ShapeObj>(sizeof(int64_t) * ndim);
    auto* storage = reinterpret_cast<int64_t*>(obj.get() + 1);
    std::copy(dims, dims + ndim, storage);
    obj->data = storage;
    obj->size = ndim;
    return obj;
  }
};

inline std::ostream& operator<<(std::ostream& os, const Shape& shape) {
  os << '(';
  for (int64_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  return os << (shape.size() == 1 ? ",)" : ")");
}

}  // namespace kiln

#endif  // KILN_FFI_SHAPE_H_

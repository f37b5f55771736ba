/// Map<K, V>: an immutable, copy-on-write hash map that keeps insertion order (so printing and
/// iteration are deterministic). Strings compare by content, other objects by identity.
#ifndef KILN_FFI_MAP_H_
#define KILN_FFI_MAP_H_

#include <kiln/ffi/any.h>

#include <unordered_map>
#include <utility>
#include <vector>

namespace kiln {

namespace detail {
struct AnyHash {
  size_t operator()(const Any& value) const {
    if (std::optional<std::string_view> text = StringViewOf(value.raw())) {
      return std::hash<std::string_view>()(*text);
    }
    return std::hash<int64_t>()(value.raw()->v_int64) ^ static_cast<size_t>(value.type_index());
  }
};
struct AnyEqual {
  bool operator()(const Any& a, const Any& b) const {
    std::optional<std::string_view> text_a = StringViewOf(a.raw());
    std::optional<std::string_view> text_b = StringViewOf(b.raw());
    if (text_a.has_value() || text_b.has_value()) return text_a == text_b;
    return a.type_index() == b.type_index() && a.raw()->v_int64 == b.raw()->v_int64;
  }
};
}  // namespace detail

class MapObj : public Object {
 public:
  static constexpr const char* _type_key = "kiln.Map";
  static constexpr bool _type_final = true;
  KILN_DECLARE_STATIC_OBJECT_INFO(MapObj, Object, kKilnTypeMap);

  using Entry = std::pair<Any, Any>;

  int64_t size() const { return static_cast<int64_t>(entries_.size()); }
  const std::vector<Entry>& entries() const { return entries_; }
  const Any* Find(const Any& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &entries_[it->second].second;
  }
  /// For the copy-on-write owner only (use_count() == 1).
  void Set(Any key, Any value) {
    auto it = index_.find(key);
    if (it != index_.end()) {
      entries_[it->second].second = std::move(value);
      return;
    }
    index_.emplace(key, entries_.size());
    entries_.emplace_back(std::move(key), std::move(value));
  }

 private:
  std::vector<Entry> entries_;
  std::unordered_map<Any, size_t, detail::AnyHash, detail::AnyEqual> index_;
};

template <typename K = Any, typename V = Any>
class Map : public ObjectRef {
 public:
  using ContainerType = MapObj;

  Map() : ObjectRef(make_object<MapObj>()) {}
  Map(std::initializer_list<std::pair<K, V>> items) : Map() {
    for (const auto& [key, value] : items) Set(key, value);
  }
  static Map FromUnchecked(ObjectPtr<Object> data) { return Map(nullptr, std::move(data)); }

  const MapObj* get() const { return static_cast<const MapObj*>(data_.get()); }
  int64_t size() const { return get()->size(); }
  bool empty() const { return size() == 0; }
  bool count(const K& key) const { return get()->Find(Any(key)) != nullptr; }
  std::optional<V> Get(const K& key) const {
    const Any* value = get()->Find(Any(key));
    if (value == nullptr) return std::nullopt;
    return Cast<V>(*value);
  }
  /// The value for `key`; KeyError naming the key when it is absent.
  V at(const K& key) const {
    const Any* value = get()->Find(Any(key));
    if (value == nullptr) {
      KILN_THROW(KeyError) << "key " << DescribeKey(key) << " is not in the map";
    }
    return Cast<V>(*value);
  }
  void Set(const K& key, const V& value) {
    if (data_->use_count() != 1) data_ = make_object<MapObj>(*get());
    static_cast<MapObj*>(data_.get())->Set(Any(key), Any(value));
  }

  class Iterator {
   public:
    Iterator(const MapObj* map, size_t index) : map_(map), index_(index) {}
    std::pair<K, V> operator*() const {
      const MapObj::Entry& entry = map_->entries()[index_];
      return {Cast<K>(entry.first), Cast<V>(entry.second)};
    }
    Iterator& operator++() {
      ++index_;
      return *this;
    }
    bool operator!=(const Iterator& other) const { return index_ != other.index_; }

   private:
    const MapObj* map_;
    size_t index_;
  };
  Iterator begin() const { return Iterator(get(), 0); }
  Iterator end() const { return Iterator(get(), get()->entries().size()); }

 private:
  /// Wraps `data` without checking its type (FromUnchecked).
  Map(std::nullptr_t /*unchecked*/, ObjectPtr<Object> data) : ObjectRef(std::move(data)) {}
  template <typename T>
  static T Cast(const Any& value) {
    if constexpr (std::is_same_v<T, Any>) {
      return value;
    } else {
      return value.cast<T>();
    }
  }
  static std::string DescribeKey(const K& key) {
    const AnyView any(key);
    if (std::optional<std::string_view> text = detail::StringViewOf(any.raw())) {
      return "'" + std::string(*text) + "'";
    }
    return "of type " + any.type_str();
  }
};

template <typename K, typename V>
struct TypeTraits<Map<K, V>> : ObjectRefTraitsBase<Map<K, V>> {
  static std::optional<Map<K, V>> TryCastFromAnyView(const KilnAny* src) {
    std::optional<Map<K, V>> map = ObjectRefTraitsBase<Map<K, V>>::TryCastFromAnyView(src);
    if (!map.has_value()) return std::nullopt;
    for (const auto& [key, value] : map->get()->entries()) {
      if constexpr (!std::is_same_v<K, Any>) {
        if (!key.template as<K>().has_value()) return std::nullopt;
      }
      if constexpr (!std::is_same_v<V, Any>) {
        if (!value.template as<V>().has_value()) return std::nullopt;
      }
    }
    return map;
  }
  static std::string TypeStr() {
    return "Map[" + TypeTraits<K>::TypeStr() + ", " + TypeTraits<V>::TypeStr() + "]";
  }
};

}  // namespace kiln

#endif  // KILN_FFI_MAP_H_

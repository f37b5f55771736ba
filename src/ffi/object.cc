// Reference counting entry points and the run-time type table.
#include <kiln/ffi/error.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "c_api_guard_internal.h"

namespace kiln {
namespace {

/// One registered type. Entries are never freed or moved, so readers hold plain pointers.
struct TypeEntry {
  KilnTypeInfo info{};
  std::string key;
  std::vector<int32_t> ancestors;
};

/// Type indices are dense, so the table is an array of atomic pointers: IsInstance reads it
/// without a lock while another thread registers a new type.
class TypeTable {
 public:
  static constexpr int32_t kMaxTypes = 1 << 16;

  static TypeTable& Global() {
    static TypeTable* table = new TypeTable();  // never destroyed: used by static destructors
    return *table;
  }

  int32_t Register(const std::string& key, int32_t parent, int32_t static_index) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = by_key_.find(key);
    if (it != by_key_.end()) {
      const TypeEntry* existing = Get(it->second);
      const int32_t existing_parent = existing->info.depth == 0 ? -1 : existing->ancestors.back();
      KILN_CHECK(existing_parent == parent, TypeError)
          << "type '" << key << "' is already registered with parent type index " << existing_parent
          << ", not " << parent;
      return it->second;
    }
    const int32_t index = static_index >= 0 ? static_index : next_dynamic_index_++;
    KILN_CHECK(index < kMaxTypes, RuntimeError) << "too many object types registered";
    auto entry = std::make_unique<TypeEntry>();
    entry->key = key;
    if (parent >= 0) {
      const TypeEntry* parent_entry = Get(parent);
      KILN_CHECK(parent_entry != nullptr, TypeError)
          << "parent type index " << parent << " of type '" << key << "' is not registered";
      entry->ancestors = parent_entry->ancestors;
      entry->ancestors.push_back(parent);
    }
    entry->info.type_index = index;
    entry->info.depth = static_cast<int32_t>(entry->ancestors.size());
    entry->info.type_key = {entry->key.data(), entry->key.size()};
    entry->info.ancestors = entry->ancestors.data();
    entries_[index].store(entry.release(), std::memory_order_release);
    by_key_.emplace(key, index);
    return index;
  }

  const TypeEntry* Get(int32_t index) const {
    if (index < 0 || index >= kMaxTypes) return nullptr;
    return entries_[index].load(std::memory_order_acquire);
  }

  int32_t Find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = by_key_.find(key);
    return it == by_key_.end() ? -1 : it->second;
  }

 private:
  TypeTable() {
    Register("kiln.Object", -1, kKilnTypeObject);
    const std::pair<const char*, int32_t> static_types[] = {
        {"kiln.String", kKilnTypeString}, {"kiln.Bytes", kKilnTypeBytes},
        {"kiln.Error", kKilnTypeError},   {"kiln.Function", kKilnTypeFunction},
        {"kiln.Array", kKilnTypeArray},   {"kiln.Map", kKilnTypeMap},
        {"kiln.Shape", kKilnTypeShape},   {"kiln.Tensor", kKilnTypeTensor},
        {"kiln.Module", kKilnTypeModule},
    };
    for (const auto& [key, index] : static_types) Register(key, kKilnTypeObject, index);
  }

  std::mutex mutex_;
  std::unordered_map<std::string, int32_t> by_key_;
  int32_t next_dynamic_index_ = kKilnTypeDynObjectBegin;
  std::array<std::atomic<TypeEntry*>, kMaxTypes> entries_{};
};

}  // namespace
}  // namespace kiln

extern "C" {

void kiln_object_inc_ref(KilnObjectHandle obj) {
  if (obj != nullptr) kiln::detail::IncRef(obj);
}

void kiln_object_dec_ref(KilnObjectHandle obj) {
  if (obj != nullptr) kiln::detail::DecRef(obj);
}

int kiln_type_register(const char* type_key, int32_t parent_type_index, int32_t* out_type_index) {
  KILN_C_API_BEGIN();
  KILN_CHECK(type_key != nullptr && *type_key != '\0', ValueError) << "empty type key";
  *out_type_index = kiln::TypeTable::Global().Register(type_key, parent_type_index, -1);
  KILN_C_API_END();
}

int kiln_type_key_to_index(const char* type_key, int32_t* out_type_index) {
  KILN_C_API_BEGIN();
  const int32_t index = kiln::TypeTable::Global().Find(type_key);
  KILN_CHECK(index >= 0, KeyError) << "no object type is registered as '" << type_key << "'";
  *out_type_index = index;
  KILN_C_API_END();
}

int kiln_type_get_info(int32_t type_index, const KilnTypeInfo** out_info) {
  const kiln::TypeEntry* entry = kiln::TypeTable::Global().Get(type_index);
  if (entry == nullptr) {
    const std::string message = "no object type has index " + std::to_string(type_index);
    return kiln_error_set_raised_from_cstr("KeyError", message.c_str());
  }
  *out_info = &entry->info;
  return 0;
}

}  // extern "C"

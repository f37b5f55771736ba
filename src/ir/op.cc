// The op registry: one Op object per name, with attributes added under a lock.
#include <kiln/ffi/close_names.h>
#include <kiln/ffi/plugin.h>
#include <kiln/ir/op.h>

#include "op_schema_internal.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <utility>

namespace kiln {
namespace ir {
namespace {

struct OpEntry {
  Op op;
  Map<String, Any> attrs;
  /// Replaced, never changed in place: readers keep the snapshot they got.
  std::shared_ptr<const OpSchema> schema;
};

class OpRegistry {
 public:
  static OpRegistry& Global() {
    // Leaked on purpose: ops may be looked up from other libraries' static destructors.
    static auto* registry = new OpRegistry();
    return *registry;
  }

  void Register(const std::string& name) {
    KILN_CHECK(!name.empty(), ValueError) << "an op name cannot be empty";
    std::unique_lock lock(mutex_);
    KILN_CHECK(entries_.count(name) == 0, KeyError) << "op '" << name << "' is already registered";
    entries_.emplace(name,
                     OpEntry{Op(make_object<OpObj>(String(name))), Map<String, Any>(), nullptr});
    kiln::detail::OnRegistrationRollback([this, name] {
      std::unique_lock undo_lock(mutex_);
      entries_.erase(name);
    });
  }

  /// Applies `edit` to a copy of op `name`'s schema (an empty one when it has none).
  template <typename Edit>
  void EditSchema(const std::string& name, Edit edit) {
    std::unique_lock lock(mutex_);
    OpEntry& entry = FindLocked(name);
    auto schema =
        entry.schema ? std::make_shared<OpSchema>(*entry.schema) : std::make_shared<OpSchema>();
    edit(*schema);
    kiln::detail::OnRegistrationRollback([this, name, previous = entry.schema] {
      std::unique_lock undo_lock(mutex_);
      if (auto it = entries_.find(name); it != entries_.end()) it->second.schema = previous;
    });
    entry.schema = std::move(schema);
  }

  std::shared_ptr<const OpSchema> Schema(const std::string& name) const {
    std::shared_lock lock(mutex_);
    return FindLocked(name).schema;
  }

  void SetAttr(const std::string& name, const String& key, const Any& value, bool allow_override) {
    std::unique_lock lock(mutex_);
    OpEntry& entry = FindLocked(name);
    KILN_CHECK(allow_override || !entry.attrs.count(key), KeyError)
        << "op '" << name << "' already has attribute '" << key << "'";
    // Readers hold snapshots of the old map; copy-on-write leaves those untouched.
    kiln::detail::OnRegistrationRollback([this, name, previous = entry.attrs] {
      std::unique_lock undo_lock(mutex_);
      if (auto it = entries_.find(name); it != entries_.end()) it->second.attrs = previous;
    });
    entry.attrs.Set(key, value);
  }

  Op Get(const std::string& name) const {
    std::shared_lock lock(mutex_);
    return FindLocked(name).op;
  }

  Map<String, Any> Attrs(const std::string& name) const {
    std::shared_lock lock(mutex_);
    return FindLocked(name).attrs;
  }

  std::vector<std::string> Names() const {
    std::shared_lock lock(mutex_);
    std::vector<std::string> names;
    for (const auto& [name, entry] : entries_) names.push_back(name);
    return names;  // sorted: std::map
  }

 private:
  const OpEntry& FindLocked(const std::string& name) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) ThrowUnknownLocked(name);
    return it->second;
  }
  OpEntry& FindLocked(const std::string& name) {
    return const_cast<OpEntry&>(std::as_const(*this).FindLocked(name));
  }
  [[noreturn]] void ThrowUnknownLocked(const std::string& name) const;

  mutable std::shared_mutex mutex_;
  std::map<std::string, OpEntry> entries_;
};

void OpRegistry::ThrowUnknownLocked(const std::string& name) const {
  std::vector<std::string> names;
  names.reserve(entries_.size());
  for (const auto& [candidate, entry] : entries_) names.push_back(candidate);
  const std::vector<std::string> close = CloseNames(name, names);
  std::ostringstream message;
  message << "unknown op '" << name << "'";
  for (size_t i = 0; i < close.size(); ++i) {
    message << (i == 0 ? "; did you mean: " : ", ") << "'" << close[i] << "'";
  }
  KILN_THROW(KeyError) << message.str();
}

}  // namespace

Op Op::Get(const std::string& name) {
  try {
    return OpRegistry::Global().Get(name);
  } catch (const Error& error) {
    if (error.kind() != "KeyError") throw;
  }
  // An op of a plugin that is installed but not loaded yet.
  EnsurePluginsDiscovered();
  return OpRegistry::Global().Get(name);
}

std::vector<std::string> Op::ListNames() { return OpRegistry::Global().Names(); }

Map<String, Any> Op::attrs() const { return OpRegistry::Global().Attrs(get()->name().str()); }

std::shared_ptr<const OpSchema> Op::schema() const {
  return OpRegistry::Global().Schema(get()->name().str());
}

OpPattern Op::pattern() const {
  std::optional<int64_t> kind = GetAttr<int64_t>(op_attr::kPatternKind);
  return kind.has_value() ? static_cast<OpPattern>(*kind) : OpPattern::kOpaque;
}

const AttrField* OpSchema::FindAttr(const std::string& name) const {
  for (const AttrField& field : attrs) {
    if (field.name == name) return &field;
  }
  return nullptr;
}

namespace detail {

void RegisterOp(const std::string& name) { OpRegistry::Global().Register(name); }

void SetOpAttr(const std::string& name, const String& key, const Any& value, bool allow_override) {
  OpRegistry::Global().SetAttr(name, key, value, allow_override);
}

void AddOpInput(const std::string& name, const std::string& input) {
  OpRegistry::Global().EditSchema(name, [&](OpSchema& schema) {
    for (const std::string& existing : schema.inputs) {
      KILN_CHECK(existing != input, ValueError)
          << "op '" << name << "' already has an input named '" << input << "'";
    }
    schema.inputs.push_back(input);
  });
}

void AddOpAttrField(const std::string& name, AttrField field) {
  if (field.default_value.has_value() && !field.default_value->is_none()) {
    // The default is stored the way a Call would store a value given for it.
    field.default_value = CheckAttrValue(name, field, *field.default_value);
  }
  OpRegistry::Global().EditSchema(name, [&](OpSchema& schema) {
    KILN_CHECK(schema.FindAttr(field.name) == nullptr, ValueError)
        << "op '" << name << "' already has an attribute named '" << field.name << "'";
    schema.attrs.push_back(std::move(field));
  });
}

}  // namespace detail
}  // namespace ir
}  // namespace kiln

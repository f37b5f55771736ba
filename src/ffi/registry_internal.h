// Private interface between the global function registry and the plugin loader.
#ifndef KILN_SRC_FFI_REGISTRY_INTERNAL_H_
#define KILN_SRC_FFI_REGISTRY_INTERNAL_H_

#include <kiln/ffi/object.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kiln {
namespace detail {

/// One registered global function and who registered it.
struct RegistryEntry {
  ObjectPtr<Object> func;
  std::string owner;
};

/// While alive on a thread, the global functions registered by that thread are attributed to
/// `owner` and remembered, so a plugin whose registration fails half way can be rolled back.
class RegistrationScope {
 public:
  explicit RegistrationScope(std::string owner);
  ~RegistrationScope();
  RegistrationScope(const RegistrationScope&) = delete;
  RegistrationScope& operator=(const RegistrationScope&) = delete;

  /// The scope active on this thread, or nullptr.
  static RegistrationScope* Current();

  const std::string& owner() const { return owner_; }
  /// Names registered so far in this scope, in order.
  std::vector<std::string> RegisteredNames() const;
  /// Undoes every registration of this scope (restoring overridden entries).
  void RollBack();

  void Record(const std::string& name, std::optional<RegistryEntry> previous);
  /// Adds an undo action of another registry (OnRegistrationRollback).
  void RecordUndo(std::function<void()> undo) { undo_actions_.push_back(std::move(undo)); }

 private:
  struct Change {
    std::string name;
    std::optional<RegistryEntry> previous;
  };
  std::string owner_;
  std::vector<Change> changes_;
  std::vector<std::function<void()>> undo_actions_;
  RegistrationScope* outer_;
};

}  // namespace detail
}  // namespace kiln

#endif  // KILN_SRC_FFI_REGISTRY_INTERNAL_H_

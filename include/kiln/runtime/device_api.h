/// Device APIs in C++: the base class a backend implements (DeviceAPI), the registration macro,
/// and the caller's view (DeviceApiRef) over the C table found as "device_api.<name>".
#ifndef KILN_RUNTIME_DEVICE_API_H_
#define KILN_RUNTIME_DEVICE_API_H_

#include <kiln/ffi/registry.h>
#include <kiln/runtime/c_device_api.h>

#include <optional>
#include <string>
#include <string_view>

namespace kiln {
namespace runtime {

/// The name of a DLPack device type in registry names: "cpu", "cuda", "opencl", ...
inline const char* DeviceTypeName(int32_t device_type) {
  switch (device_type) {
    case kDLCPU: return "cpu";
    case kDLCUDA: return "cuda";
    case kDLCUDAHost: return "cuda_host";
    case kDLOpenCL: return "opencl";
    case kDLVulkan: return "vulkan";
    case kDLMetal: return "metal";
    case kDLROCM: return "rocm";
    case kDLROCMHost: return "rocm_host";
    case kDLExtDev: return "ext_dev";
    case kDLCUDAManaged: return "cuda_managed";
    default: return "unknown";
  }
}

/// The DLPack device type of a name ("cuda" -> kDLCUDA), or nullopt.
inline std::optional<int32_t> DeviceTypeFromName(std::string_view name) {
  for (int32_t type = kDLCPU; type <= kDLCUDAManaged; ++type) {
    if (name == DeviceTypeName(type)) return type;
  }
  return std::nullopt;
}

/// Base class of a backend's device API. Methods throw kiln::Error; the C table built by
/// c_api() turns that into the C ABI's -1 + error slot.
class DeviceAPI {
 public:
  DeviceAPI() = default;
  DeviceAPI(const DeviceAPI&) = delete;
  DeviceAPI& operator=(const DeviceAPI&) = delete;
  virtual ~DeviceAPI() = default;

  /// None for an attribute the device does not know. kKilnDeviceAttrExist must not throw.
  virtual Any GetAttr(int32_t device_id, KilnDeviceAttr attr) = 0;
  virtual void* Alloc(int32_t device_id, size_t nbytes, size_t alignment) = 0;
  virtual void Free(int32_t device_id, void* ptr) = 0;
  virtual void Copy(const DLTensor& from, DLTensor& to, KilnStreamHandle stream) = 0;
  virtual KilnStreamHandle CreateStream(int32_t /*device_id*/) { return nullptr; }
  virtual void FreeStream(int32_t /*device_id*/, KilnStreamHandle /*stream*/) {}
  virtual void Sync(int32_t device_id, KilnStreamHandle stream) = 0;

  /// The C table over this object; valid as long as the object lives.
  const KilnDeviceApi* c_api() {
    table_.struct_size = sizeof(KilnDeviceApi);
    table_.self = this;
    table_.get_attr = [](void* self, int32_t id, int32_t attr, KilnAny* out) {
      return Guard([&] { *out = Self(self)->GetAttr(id, KilnDeviceAttr(attr)).ReleaseRaw(); });
    };
    table_.alloc = [](void* self, int32_t id, size_t nbytes, size_t alignment, void** out) {
      return Guard([&] { *out = Self(self)->Alloc(id, nbytes, alignment); });
    };
    table_.free = [](void* self, int32_t id, void* ptr) {
      return Guard([&] { Self(self)->Free(id, ptr); });
    };
    table_.copy = [](void* self, const DLTensor* from, DLTensor* to, KilnStreamHandle stream) {
      return Guard([&] { Self(self)->Copy(*from, *to, stream); });
    };
    table_.stream_create = [](void* self, int32_t id, KilnStreamHandle* out) {
      return Guard([&] { *out = Self(self)->CreateStream(id); });
    };
    table_.stream_free = [](void* self, int32_t id, KilnStreamHandle stream) {
      return Guard([&] { Self(self)->FreeStream(id, stream); });
    };
    table_.stream_sync = [](void* self, int32_t id, KilnStreamHandle stream) {
      return Guard([&] { Self(self)->Sync(id, stream); });
    };
    return &table_;
  }

 private:
  static DeviceAPI* Self(void* self) { return static_cast<DeviceAPI*>(self); }
  template <typename F>
  static int Guard(F&& body) noexcept {
    try {
      body();
      return 0;
    } catch (...) {
      detail::SetRaisedFromCurrentException();
      return -1;
    }
  }
  KilnDeviceApi table_{};
};

/// Registers a DeviceAPI subclass as "device_api.<Name>". The object is created on first use
/// and lives for the process (backends are never unloaded).
#define KILN_REGISTER_DEVICE_API(Name, ApiType)                           \
  KILN_REGISTER_GLOBAL("device_api." Name).set_body_typed([]() -> void* { \
    /* Filled once: concurrent lookups only read the table. */            \
    static const KilnDeviceApi* table = (new ApiType())->c_api();         \
    return const_cast<KilnDeviceApi*>(table);                             \
  })

/// The caller's view of a device kind's API. Looked up at each call of Find, never cached
/// as absent, so a backend loaded later is found.
class DeviceApiRef {
 public:
  /// The API of `device_type`, or nullopt when no loaded backend provides it.
  static std::optional<DeviceApiRef> Find(int32_t device_type) {
    const std::string name = std::string("device_api.") + DeviceTypeName(device_type);
    std::optional<Function> getter = Function::GetGlobal(name.c_str());
    if (!getter.has_value()) {
      // Backends load on first need; once discovery has run this call is a table lookup.
      if (std::optional<Function> discover = Function::GetGlobal("runtime.DiscoverBackends")) {
        (*discover)();
        getter = Function::GetGlobal(name.c_str());
      }
    }
    if (!getter.has_value()) return std::nullopt;
    return DeviceApiRef(static_cast<const KilnDeviceApi*>((*getter)().cast<void*>()));
  }
  /// The API of `device_type`; an error naming the backend library to install otherwise.
  static DeviceApiRef Get(int32_t device_type) {
    std::optional<DeviceApiRef> api = Find(device_type);
    KILN_CHECK(api.has_value(), RuntimeError)
        << "no runtime backend for device '" << DeviceTypeName(device_type)
        << "' is loaded; install libkiln_runtime_" << DeviceTypeName(device_type)
        << ".so next to libkiln_runtime.so or on KILN_RUNTIME_PATH (see kiln.runtime.backends())";
    return *api;
  }

  Any GetAttr(int32_t device_id, KilnDeviceAttr attr) const {
    KilnAny out{};
    Check(api_->get_attr(api_->self, device_id, attr, &out));
    return Any::FromOwnedRaw(out);
  }
  void* Alloc(int32_t device_id, size_t nbytes, size_t alignment) const {
    void* ptr = nullptr;
    Check(api_->alloc(api_->self, device_id, nbytes, alignment, &ptr));
    return ptr;
  }
  void Free(int32_t device_id, void* ptr) const { Check(api_->free(api_->self, device_id, ptr)); }
  void Copy(const DLTensor& from, DLTensor& to, KilnStreamHandle stream = nullptr) const {
    Check(api_->copy(api_->self, &from, &to, stream));
  }
  KilnStreamHandle CreateStream(int32_t device_id) const {
    KilnStreamHandle stream = nullptr;
    Check(api_->stream_create(api_->self, device_id, &stream));
    return stream;
  }
  void FreeStream(int32_t device_id, KilnStreamHandle stream) const {
    Check(api_->stream_free(api_->self, device_id, stream));
  }
  void Sync(int32_t device_id, KilnStreamHandle stream = nullptr) const {
    Check(api_->stream_sync(api_->self, device_id, stream));
  }
  const KilnDeviceApi* c_api() const { return api_; }

 private:
  explicit DeviceApiRef(const KilnDeviceApi* api) : api_(api) {}
  static void Check(int status) {
    if (status != 0) detail::ThrowRaised();
  }
  const KilnDeviceApi* api_;
};

/// True when `device` can be used; false (never an error) when its backend or driver is missing.
inline bool DeviceExists(DLDevice device) {
  std::optional<DeviceApiRef> api = DeviceApiRef::Find(device.device_type);
  if (!api.has_value()) return false;
  return api->GetAttr(device.device_id, kKilnDeviceAttrExist).cast<bool>();
}

}  // namespace runtime
}  // namespace kiln

#endif  // KILN_RUNTIME_DEVICE_API_H_

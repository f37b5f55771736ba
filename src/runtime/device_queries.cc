// Device queries for bindings: whether a device exists and its attributes. A missing backend or
// driver answers "does not exist", never an error.
#include <kiln/runtime/device_api.h>

namespace kiln {
namespace runtime {
namespace {

KILN_REGISTER_GLOBAL("runtime.DeviceExists").set_body_typed([](DLDevice device) {
  return DeviceExists(device);
});

KILN_REGISTER_GLOBAL("runtime.DeviceAttr").set_body_typed([](DLDevice device, int32_t attr) {
  std::optional<DeviceApiRef> api = DeviceApiRef::Find(device.device_type);
  if (!api.has_value()) return Any();
  return api->GetAttr(device.device_id, static_cast<KilnDeviceAttr>(attr));
});

// Waits for the device's default stream, where Kiln queues its copies and kernels; for
// consumers outside Kiln (DLPack) that read on streams of their own.
KILN_REGISTER_GLOBAL("runtime.DeviceSync").set_body_typed([](DLDevice device) {
  DeviceApiRef::Get(device.device_type).Sync(device.device_id);
});

KILN_REGISTER_GLOBAL("runtime.DeviceTypeName").set_body_typed([](int32_t device_type) {
  return String(DeviceTypeName(device_type));
});

KILN_REGISTER_GLOBAL("runtime.DeviceTypeFromName").set_body_typed([](const String& name) {
  std::optional<int32_t> type = DeviceTypeFromName(name.view());
  KILN_CHECK(type.has_value(), ValueError)
      << "unknown device kind '" << name << "'; known kinds are cpu, cuda, cuda_host, opencl, "
      << "vulkan, metal, rocm, rocm_host, ext_dev, cuda_managed";
  return *type;
});

}  // namespace
}  // namespace runtime
}  // namespace kiln

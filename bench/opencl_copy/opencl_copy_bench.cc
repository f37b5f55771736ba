// Copy bandwidth between host memory and OpenCL device 0 through the device API
// ("device_api.opencl", the C table the runtime calls), for 1 MiB, 16 MiB and 256 MiB. Host to
// device and device to host copies are blocking, so each iteration is one whole transfer; the
// device-to-device copy is queued, so its iteration includes a Sync. Reported as bytes_per_second.
//
// Both buffers are written once before timing, so first-touch page faults and the driver's
// lazy allocation are not counted.
#include <kiln/ffi/plugin.h>
#include <kiln/runtime/device_api.h>
#include <benchmark/benchmark.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace {

using kiln::runtime::DeviceApiRef;

constexpr DLDevice kOpenCL0{kDLOpenCL, 0};
constexpr DLDataType kUInt8{kDLUInt, 8, 1};

/// The OpenCL device API, or nullopt with the reason in `*why` when there is no device.
std::optional<DeviceApiRef> OpenCLApi(std::string* why) {
  kiln::LoadPlugin(KILN_OPENCL_BACKEND);
  if (!kiln::runtime::DeviceExists(kOpenCL0)) {
    *why = "no OpenCL device: " +
           kiln::Function::GetGlobalRequired("runtime.opencl.Status")().cast<std::string>();
    return std::nullopt;
  }
  return DeviceApiRef::Get(kDLOpenCL);
}

/// A 1-D byte tensor over `data`.
struct ByteTensor {
  ByteTensor(void* data, int64_t size, DLDevice device) : shape(size) {
    tensor.data = data;
    tensor.device = device;
    tensor.ndim = 1;
    tensor.dtype = kUInt8;
    tensor.shape = &shape;
  }
  int64_t shape;
  DLTensor tensor{};
};

enum class Direction { kHostToDevice, kDeviceToHost, kDeviceToDevice };

void Copy(benchmark::State& state, Direction direction) {
  std::string why;
  std::optional<DeviceApiRef> api = OpenCLApi(&why);
  if (!api.has_value()) {
    state.SkipWithError(why.c_str());
    return;
  }
  const int64_t size = state.range(0);
  std::vector<char> host(size);
  std::memset(host.data(), 1, host.size());
  void* first = api->Alloc(0, size, 64);
  void* second = api->Alloc(0, size, 64);
  ByteTensor host_view(host.data(), size, {kDLCPU, 0});
  ByteTensor first_view(first, size, kOpenCL0);
  ByteTensor second_view(second, size, kOpenCL0);
  api->Copy(host_view.tensor, first_view.tensor);
  api->Copy(host_view.tensor, second_view.tensor);
  api->Sync(0);

  for (auto _ : state) {
    switch (direction) {
      case Direction::kHostToDevice: api->Copy(host_view.tensor, first_view.tensor); break;
      case Direction::kDeviceToHost: api->Copy(first_view.tensor, host_view.tensor); break;
      case Direction::kDeviceToDevice:
        api->Copy(first_view.tensor, second_view.tensor);
        api->Sync(0);
        break;
    }
  }
  state.SetBytesProcessed(state.iterations() * size);
  state.SetLabel(api->GetAttr(0, kKilnDeviceAttrName).cast<std::string>());
  api->Free(0, first);
  api->Free(0, second);
}

void BM_HostToDevice(benchmark::State& state) { Copy(state, Direction::kHostToDevice); }
void BM_DeviceToHost(benchmark::State& state) { Copy(state, Direction::kDeviceToHost); }
void BM_DeviceToDevice(benchmark::State& state) { Copy(state, Direction::kDeviceToDevice); }

void Sizes(benchmark::internal::Benchmark* bench) {
  for (int64_t mib : {1, 16, 256}) bench->Arg(mib << 20);
  bench->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_HostToDevice)->Apply(Sizes);
BENCHMARK(BM_DeviceToHost)->Apply(Sizes);
BENCHMARK(BM_DeviceToDevice)->Apply(Sizes);

}  // namespace

BENCHMARK_MAIN();

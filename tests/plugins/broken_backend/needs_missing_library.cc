// A runtime backend that depends on a library which is absent where it is deployed (as the CUDA
// backend would be without libcuda.so.1): discovery must skip it and keep the loader's reason.
extern "C" int kiln_fake_vendor_runtime_init();

extern "C" __attribute__((visibility("default"))) int kiln_plugin_init(const void*, void*) {
  return kiln_fake_vendor_runtime_init();
}

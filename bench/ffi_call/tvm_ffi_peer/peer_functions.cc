// libkiln_bench_tvm_ffi_functions.so: tvm-ffi's counterparts of the libkiln_testing.so functions
// that bench/ffi_call times (testing.nop, testing.add, testing.string_len), with the same
// signatures and bodies, registered in tvm-ffi's global registry when the library is loaded.
// The C++ benchmark (tvm_ffi_call_bench.cc) and the Python timings (../python_calls.py) both load
// it, so every tvm-ffi call crosses into another DSO as every Kiln call does.
#include <tvm/ffi/function.h>
#include <tvm/ffi/reflection/registry.h>
#include <tvm/ffi/string.h>

#include <cstdint>

// GlobalDef().def wraps each lambda with Function::FromTyped, as KILN_REGISTER_GLOBAL's
// set_body_typed does on Kiln's side.
TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef()
      .def("bench.nop", []() {})
      .def("bench.add", [](int64_t a, int64_t b) { return a + b; })
      .def("bench.string_len",
           [](const tvm::ffi::String& s) { return static_cast<int64_t>(s.size()); });
}

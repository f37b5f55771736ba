/*
 * Private declarations shared by the files of kiln._ffi, the CPython binding over Kiln's C ABI.
 *
 *   errors.cc          Kiln Error <-> Python exception
 *   class_registry.cc  type index -> Python class, and wrapping handles in Python objects
 *   convert.cc         Python <-> KilnAny, calls in both directions (the hot path, one file)
 *   object_types.cc    the kiln.Object and kiln.Function types
 *   value_types.cc     Device (a C type) and DataType (a str subclass defined in Python)
 *   tensor.cc          Tensor fields and DLPack capsules in both directions
 *   ffi_module.cc      the module: registry, plugins, container helpers, PyInit__ffi
 *
 * One interpreter; everything here is used with the GIL held.
 */
#ifndef KILN_PYTHON_CSRC_FFI_INTERNAL_H_
#define KILN_PYTHON_CSRC_FFI_INTERNAL_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <vector>

#include <kiln/ffi/c_api.h>

namespace kiln_python {

/* ---- object_types.cc ---- */

/// kiln.Object: one owned reference to a Kiln object (nullptr before initialization).
struct PyKilnObject {
  PyObject_HEAD KilnObjectHandle handle;
};

/// kiln.Function: an Object that Python calls through `vectorcall`.
struct PyKilnFunction {
  PyKilnObject base;
  vectorcallfunc vectorcall;
  PyObject* name;  // str or nullptr; the registry name when known, used in messages
};

extern PyTypeObject* g_object_type;
extern PyTypeObject* g_function_type;

/// Creates kiln.Object and kiln.Function; returns 0, or -1 with a Python error.
int InitObjectTypes();

inline KilnObjectHandle HandleOf(PyObject* self) {
  return reinterpret_cast<PyKilnObject*>(self)->handle;
}

/// Handle of `obj`, checked to be an initialized kiln.Object whose Kiln object is an instance of
/// `type_index` (`what` names it in the error); nullptr with a Python error otherwise.
KilnObjectHandle CheckedHandle(PyObject* obj, int32_t type_index, const char* what);

/* ---- value_types.cc ---- */

/// kiln.Device's C base: a DLDevice held inline. Python subclasses add no C state.
struct PyKilnDevice {
  PyObject_HEAD DLDevice device;
};

extern PyTypeObject* g_device_type;  // the C base, kiln._ffi.Device
extern PyObject* g_device_class;     // class of Device results (kiln.Device once registered)
extern PyObject* g_dtype_class;      // class of DataType results (kiln.DataType, a str subclass)
extern PyObject* g_value_converter;  // obj -> replacement or None, for values nothing else takes

/// Creates the Device type and adds it and the value-type functions to `module`; 0 or -1.
int AddValueTypes(PyObject* module);
/// Parses "float32", "int8", "bool", "float16x4", ...; false (no Python error) when invalid.
bool ParseDataType(const char* text, DLDataType* out);
/// New str of the canonical name of `dtype`, of class g_dtype_class when registered.
PyObject* DataTypeToPy(DLDataType dtype);
/// New Python Device of class g_device_class.
PyObject* DeviceToPy(DLDevice device);

/* ---- tensor.cc ---- */

/// Adds the Tensor and DLPack functions to `module`; 0 or -1.
int AddTensorFunctions(PyObject* module);

/* ---- errors.cc ---- */

extern PyObject* g_error_factory;        // (kind, message, context) -> exception instance
extern PyObject* g_exception_converter;  // exception -> (kind, message, context)

/// New str from UTF-8 bytes (invalid bytes kept as lone surrogates).
PyObject* DecodeUtf8(const KilnByteArray& bytes);
/// Drops this thread's raised Kiln error, if any.
void DiscardKilnError();
/// Moves this thread's raised Kiln error into a Python exception; returns nullptr.
PyObject* RaiseFromKiln();
/// Moves the current Python exception into this thread's raised Kiln error.
void SetKilnErrorFromPython();
/// Re-raises the current Python exception (same class) with `prefix` (may be nullptr) first.
void PrefixPythonError(PyObject* prefix);

/// Whether the interpreter is gone or going: Python objects must not be touched then.
inline bool PythonIsFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return !Py_IsInitialized() || Py_IsFinalizing();
#else
  return !Py_IsInitialized() || _Py_IsFinalizing();
#endif
}

/* ---- class_registry.cc ---- */

/// Creates the registry; returns 0, or -1 with a Python error. After InitObjectTypes.
int InitClassRegistry();
/// Whether `obj` is an instance of `type_index` (itself or a descendant).
bool IsInstance(KilnObjectHandle obj, int32_t type_index);
/// New Python wrapper that takes over `handle` (a new reference, released even on failure),
/// of the class registered for the object's type or its nearest registered ancestor.
PyObject* WrapHandle(KilnObjectHandle handle);
/// Module function register_object_class(type_key_or_index, cls).
PyObject* RegisterObjectClass(PyObject* module, PyObject* const* args, Py_ssize_t nargs);

/* ---- convert.cc ---- */

/// Objects created while converting arguments; released when the call is over.
class Temporaries {
 public:
  Temporaries() = default;
  Temporaries(const Temporaries&) = delete;
  Temporaries& operator=(const Temporaries&) = delete;
  ~Temporaries() {
    for (int i = 0; i < num_inline_; ++i) kiln_object_dec_ref(inline_[i]);
    for (KilnObjectHandle handle : overflow_) kiln_object_dec_ref(handle);
  }
  void Add(KilnObjectHandle handle) {
    if (num_inline_ < kInline) {
      inline_[num_inline_++] = handle;
    } else {
      overflow_.push_back(handle);
    }
  }

 private:
  static constexpr int kInline = 4;
  KilnObjectHandle inline_[kInline];
  int num_inline_ = 0;
  std::vector<KilnObjectHandle> overflow_;
};

/*
 * Converts `obj` into `out` as a call argument: borrowed views of str/bytes (`bytes` gives the
 * KilnByteArray its storage) and of existing objects; objects created here go to `temps`.
 * Returns 0, or -1 with a Python exception set.
 */
int PyToAny(PyObject* obj, KilnAny* out, KilnByteArray* bytes, Temporaries* temps);
/// Converts `obj` into an owning value (String/Bytes objects for str/bytes).
int PyToOwnedAny(PyObject* obj, KilnAny* out);
/// Python value of `value`; with `owned` the reference `value` holds is consumed (also on
/// failure), otherwise `value` is borrowed.
PyObject* AnyToPy(const KilnAny& value, bool owned);
/// The vectorcall entry of kiln.Function.
PyObject* FunctionVectorcall(PyObject* self, PyObject* const* args, size_t nargsf,
                             PyObject* kwnames);

/* ---- ffi_module.cc ---- */

/// METH_FASTCALL functions go into PyMethodDef as PyCFunction (the cast CPython documents).
inline PyCFunction FastCall(PyObject* (*fn)(PyObject*, PyObject* const*, Py_ssize_t)) {
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(fn));
}

}  // namespace kiln_python

#endif  // KILN_PYTHON_CSRC_FFI_INTERNAL_H_

/*
 * The call path in both directions, kept in one file so that it inlines: Python -> KilnAny for
 * arguments, KilnAny -> Python for results, kiln.Function's vectorcall, and Python callables
 * wrapped as Kiln Functions.
 *
 * An empty call costs one vectorcall, one kiln_function_call and no Python allocation besides
 * the result: arguments live on the stack (up to ArgBuffer::kInline), str arguments are the
 * str's own cached UTF-8 (RawStr), bytes are borrowed (ByteArrayPtr), a bytearray is copied. The
 * call itself runs without the GIL (FunctionVectorcall).
 */
// Python.h (through ffi_internal.h) must come before any standard header.
#include "ffi_internal.h"

#include <stdint.h>
#include <string.h>

#include <vector>

namespace kiln_python {
namespace {

KilnObjectHandle g_map_constructor = nullptr;  // global "ffi.Map", looked up on first use

/* Argument storage for one call: on the stack up to kInline arguments. */
class ArgBuffer {
 public:
  static constexpr Py_ssize_t kInline = 6;
  explicit ArgBuffer(Py_ssize_t n) {
    if (n > kInline) {
      heap_any_.resize(static_cast<size_t>(n));
      heap_bytes_.resize(static_cast<size_t>(n));
      any_ = heap_any_.data();
      bytes_ = heap_bytes_.data();
    }
  }
  ArgBuffer(const ArgBuffer&) = delete;
  ArgBuffer& operator=(const ArgBuffer&) = delete;
  KilnAny* any() { return any_; }
  KilnByteArray* bytes() { return bytes_; }
  Temporaries& temporaries() { return temporaries_; }

 private:
  KilnAny inline_any_[kInline];
  KilnByteArray inline_bytes_[kInline];
  KilnAny* any_ = inline_any_;
  KilnByteArray* bytes_ = inline_bytes_;
  std::vector<KilnAny> heap_any_;
  std::vector<KilnByteArray> heap_bytes_;
  Temporaries temporaries_;
};

void SetObject(KilnAny* out, KilnObjectHandle handle) {
  out->type_index = handle->type_index;
  out->v_obj = handle;
}

int SequenceToArray(PyObject* seq, KilnAny* out, Temporaries* temps) {
  const bool is_list = PyList_Check(seq);
  const Py_ssize_t size = is_list ? PyList_GET_SIZE(seq) : PyTuple_GET_SIZE(seq);
  ArgBuffer items(size);
  for (Py_ssize_t i = 0; i < size; ++i) {
    // A list can change while its elements convert (__index__ runs Python code).
    if (is_list && i >= PyList_GET_SIZE(seq)) {
      PyErr_SetString(PyExc_RuntimeError, "list changed size while converting it to a kiln.Array");
      return -1;
    }
    PyObject* item = is_list ? PyList_GET_ITEM(seq, i) : PyTuple_GET_ITEM(seq, i);
    Py_INCREF(item);
    int rc = PyToAny(item, &items.any()[i], &items.bytes()[i], &items.temporaries());
    Py_DECREF(item);
    if (rc != 0) {
      PyObject* prefix = PyUnicode_FromFormat("element %zd: ", i);
      PrefixPythonError(prefix);
      Py_XDECREF(prefix);
      return -1;
    }
  }
  KilnObjectHandle array = nullptr;
  if (kiln_array_create(items.any(), size, &array) != 0) {
    RaiseFromKiln();
    return -1;
  }
  temps->Add(array);
  SetObject(out, array);
  return 0;
}

KilnObjectHandle MapConstructor() {
  if (g_map_constructor == nullptr) {
    if (kiln_func_get_global("ffi.Map", &g_map_constructor) != 0) {
      RaiseFromKiln();
      return nullptr;
    }
    if (g_map_constructor == nullptr) {
      PyErr_SetString(PyExc_RuntimeError, "kiln: global function ffi.Map is not registered");
    }
  }
  return g_map_constructor;
}

int DictToMap(PyObject* dict, KilnAny* out, Temporaries* temps) {
  KilnObjectHandle constructor = MapConstructor();
  if (constructor == nullptr) return -1;
  // A snapshot: converting keys and values may run Python code that changes the dict.
  PyObject* items = PyDict_Items(dict);
  if (items == nullptr) return -1;
  const Py_ssize_t size = PyList_GET_SIZE(items);
  ArgBuffer args(2 * size);
  int rc = 0;
  for (Py_ssize_t i = 0; i < size && rc == 0; ++i) {
    PyObject* pair = PyList_GET_ITEM(items, i);
    for (int j = 0; j < 2 && rc == 0; ++j) {
      Py_ssize_t k = 2 * i + j;
      rc =
          PyToAny(PyTuple_GET_ITEM(pair, j), &args.any()[k], &args.bytes()[k], &args.temporaries());
      if (rc != 0) {
        PyObject* prefix = PyUnicode_FromFormat(j == 0 ? "key %R: " : "value of key %R: ",
                                                PyTuple_GET_ITEM(pair, 0));
        PrefixPythonError(prefix);
        Py_XDECREF(prefix);
      }
    }
  }
  Py_DECREF(items);
  if (rc != 0) return -1;
  KilnAny map;
  map.type_index = kKilnTypeNone;
  map.zero_padding = 0;
  map.v_int64 = 0;
  if (kiln_function_call(constructor, args.any(), static_cast<int32_t>(2 * size), &map) != 0) {
    RaiseFromKiln();
    return -1;
  }
  if (map.type_index < kKilnTypeStaticObjectBegin || map.v_obj == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "kiln: ffi.Map did not return an object");
    return -1;
  }
  temps->Add(map.v_obj);
  SetObject(out, map.v_obj);
  return 0;
}

int CallPython(PyObject* callable, const KilnAny* args, int32_t num_args, KilnAny* result) {
  constexpr int32_t kInline = 6;
  PyObject* inline_args[kInline];
  std::vector<PyObject*> heap_args;
  PyObject** py_args = inline_args;
  if (num_args > kInline) {
    heap_args.resize(static_cast<size_t>(num_args));
    py_args = heap_args.data();
  }
  int32_t converted = 0;
  for (; converted < num_args; ++converted) {
    py_args[converted] = AnyToPy(args[converted], /*owned=*/false);
    if (py_args[converted] == nullptr) break;
  }
  PyObject* ret =
      converted == num_args
          ? PyObject_Vectorcall(callable, py_args, static_cast<size_t>(num_args), nullptr)
          : nullptr;
  for (int32_t i = 0; i < converted; ++i) Py_DECREF(py_args[i]);
  if (ret != nullptr) {
    KilnAny value;
    int rc = PyToOwnedAny(ret, &value);
    Py_DECREF(ret);
    if (rc == 0) {
      *result = value;
      return 0;
    }
    PyObject* prefix = PyUnicode_FromFormat("return value of Python callback %R: ", callable);
    PrefixPythonError(prefix);
    Py_XDECREF(prefix);
  }
  SetKilnErrorFromPython();
  return -1;
}

int PyCallbackSafeCall(void* self, const KilnAny* args, int32_t num_args, KilnAny* result) {
  if (PythonIsFinalizing()) {
    return kiln_error_set_raised_from_cstr(
        "RuntimeError", "cannot call a Python callback: Python is shutting down");
  }
  PyGILState_STATE gil = PyGILState_Ensure();
  int rc = CallPython(static_cast<PyObject*>(self), args, num_args, result);
  PyGILState_Release(gil);
  return rc;
}

void PyCallbackDeleter(void* resource) {
  // Functions still registered at exit are freed after Python is gone: leak the callable then.
  if (PythonIsFinalizing()) return;
  PyGILState_STATE gil = PyGILState_Ensure();
  Py_DECREF(static_cast<PyObject*>(resource));
  PyGILState_Release(gil);
}

/* New Function object (new reference) that calls the Python callable `obj`. */
KilnObjectHandle CallableToFunction(PyObject* obj) {
  KilnObjectHandle func = nullptr;
  Py_INCREF(obj);
  if (kiln_function_create(obj, PyCallbackSafeCall, PyCallbackDeleter, &func) != 0) {
    Py_DECREF(obj);
    RaiseFromKiln();
    return nullptr;
  }
  return func;
}

bool IsDLPackProducer(PyObject* obj) {
  static PyObject* name = PyUnicode_InternFromString("__dlpack__");
  if (name == nullptr) {
    PyErr_Clear();
    return false;
  }
  // Looked up on the type, like the protocol's special methods; never raises.
  return PyObject_HasAttr(reinterpret_cast<PyObject*>(Py_TYPE(obj)), name) == 1;
}

int DataTypeArgument(PyObject* obj, KilnAny* out) {
  const char* text = PyUnicode_AsUTF8(obj);
  if (text == nullptr) return -1;
  if (!ParseDataType(text, &out->v_dtype)) {
    PyErr_Format(PyExc_ValueError, "%R is not a data type Kiln knows", obj);
    return -1;
  }
  out->type_index = kKilnTypeDataType;
  return 0;
}

/*
 * Values no rule above takes (numpy arrays, numpy dtypes, ...) go through the Python hook
 * (_to_kiln_value in kiln/tensors.py), which returns a kiln.Object, Device or DataType to pass
 * instead, or None.
 */
int ConvertReplacement(PyObject* obj, KilnAny* out, Temporaries* temps) {
  PyObject* replacement = PyObject_CallOneArg(g_value_converter, obj);
  if (replacement == nullptr) return -1;
  int rc = -1;
  if (replacement == Py_None) {
    PyErr_Format(PyExc_TypeError, "cannot convert a Python '%s' to a Kiln value",
                 Py_TYPE(obj)->tp_name);
  } else if (PyObject_TypeCheck(replacement, g_object_type) ||
             PyObject_TypeCheck(replacement, g_device_type) ||
             (g_dtype_class != nullptr &&
              PyObject_TypeCheck(replacement, reinterpret_cast<PyTypeObject*>(g_dtype_class)))) {
    KilnByteArray unused;
    rc = PyToAny(replacement, out, &unused, temps);
    // The replacement dies here: the call keeps its own reference to the object.
    if (rc == 0 && out->type_index >= kKilnTypeStaticObjectBegin) {
      kiln_object_inc_ref(out->v_obj);
      temps->Add(out->v_obj);
    }
  } else {
    PyErr_Format(PyExc_TypeError,
                 "kiln: the value converter turned a Python '%s' into a '%s'; expected a "
                 "kiln.Object, kiln.Device or kiln.DataType",
                 Py_TYPE(obj)->tp_name, Py_TYPE(replacement)->tp_name);
  }
  Py_DECREF(replacement);
  return rc;
}

PyObject* FunctionDisplayName(PyObject* self) {
  PyObject* name = reinterpret_cast<PyKilnFunction*>(self)->name;
  if (name) return PyUnicode_FromFormat("%U()", name);
  return PyUnicode_FromFormat("<kiln.Function at %p>", HandleOf(self));
}

}  // namespace

/*
 * Python value of `value`. With `owned`, `value` holds a reference that this call consumes
 * (also on failure); otherwise it is borrowed and an object gets a new reference.
 */
PyObject* AnyToPy(const KilnAny& value, bool owned) {
  switch (value.type_index) {
    case kKilnTypeNone: Py_RETURN_NONE;
    case kKilnTypeInt: return PyLong_FromLongLong(value.v_int64);
    case kKilnTypeBool: return PyBool_FromLong(value.v_int64 != 0);
    case kKilnTypeFloat: return PyFloat_FromDouble(value.v_float64);
    case kKilnTypeOpaquePtr:
    case kKilnTypeDLTensorPtr:
      if (value.v_ptr == nullptr) Py_RETURN_NONE;
      return PyLong_FromVoidPtr(value.v_ptr);
    case kKilnTypeDataType: return DataTypeToPy(value.v_dtype);
    case kKilnTypeDevice: return DeviceToPy(value.v_device);
    case kKilnTypeRawStr:
      if (value.v_c_str == nullptr) Py_RETURN_NONE;
      return PyUnicode_DecodeUTF8(value.v_c_str, static_cast<Py_ssize_t>(strlen(value.v_c_str)),
                                  "surrogateescape");
    case kKilnTypeByteArrayPtr: {
      const auto* bytes = static_cast<const KilnByteArray*>(value.v_ptr);
      if (bytes == nullptr) Py_RETURN_NONE;
      return PyBytes_FromStringAndSize(bytes->data, static_cast<Py_ssize_t>(bytes->size));
    }
    default: break;
  }
  if (value.type_index < kKilnTypeStaticObjectBegin) {
    return PyErr_Format(PyExc_TypeError, "kiln: unknown inline value type index %d",
                        value.type_index);
  }
  KilnObjectHandle obj = value.v_obj;
  if (obj == nullptr) Py_RETURN_NONE;
  if (obj->type_index == kKilnTypeString || obj->type_index == kKilnTypeBytes) {
    const auto* s = reinterpret_cast<const KilnStringObject*>(obj);
    PyObject* result =
        obj->type_index == kKilnTypeString
            ? DecodeUtf8(s->bytes)
            : PyBytes_FromStringAndSize(s->bytes.data, static_cast<Py_ssize_t>(s->bytes.size));
    if (owned) kiln_object_dec_ref(obj);
    return result;
  }
  if (!owned) kiln_object_inc_ref(obj);
  return WrapHandle(obj);
}

int PyToAny(PyObject* obj, KilnAny* out, KilnByteArray* bytes, Temporaries* temps) {
  out->zero_padding = 0;
  if (obj == Py_None) {
    out->type_index = kKilnTypeNone;
    out->v_int64 = 0;
    return 0;
  }
  if (PyBool_Check(obj)) {  // before int: bool is a subclass of int
    out->type_index = kKilnTypeBool;
    out->v_int64 = obj == Py_True ? 1 : 0;
    return 0;
  }
  if (PyLong_Check(obj)) {
    int overflow = 0;
    long long value = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow != 0) {
      PyErr_Format(PyExc_OverflowError, "Python int %R does not fit in a 64-bit signed integer",
                   obj);
      return -1;
    }
    if (value == -1 && PyErr_Occurred()) return -1;
    out->type_index = kKilnTypeInt;
    out->v_int64 = value;
    return 0;
  }
  if (PyFloat_Check(obj)) {
    out->type_index = kKilnTypeFloat;
    out->v_float64 = PyFloat_AS_DOUBLE(obj);
    return 0;
  }
  if (PyUnicode_Check(obj)) {
    if (!PyUnicode_CheckExact(obj) && g_dtype_class != nullptr &&
        PyObject_TypeCheck(obj, reinterpret_cast<PyTypeObject*>(g_dtype_class))) {
      return DataTypeArgument(obj, out);
    }
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(obj, &size);
    if (data != nullptr && memchr(data, 0, static_cast<size_t>(size)) == nullptr) {
      // Zero copy: the str object caches its UTF-8 form and outlives the call.
      out->type_index = kKilnTypeRawStr;
      out->v_c_str = data;
      return 0;
    }
    // Embedded NUL (a RawStr ends at the first NUL) or lone surrogates (from bytes decoded
    // with surrogateescape): pass a String object with the exact bytes.
    PyObject* encoded = nullptr;
    if (data == nullptr) {
      PyErr_Clear();
      encoded = PyUnicode_AsEncodedString(obj, "utf-8", "surrogateescape");
      if (encoded == nullptr) return -1;
      data = PyBytes_AS_STRING(encoded);
      size = PyBytes_GET_SIZE(encoded);
    }
    KilnObjectHandle str = nullptr;
    int rc = kiln_string_create(data, static_cast<size_t>(size), &str);
    Py_XDECREF(encoded);
    if (rc != 0) {
      RaiseFromKiln();
      return -1;
    }
    temps->Add(str);
    SetObject(out, str);
    return 0;
  }
  if (PyObject_TypeCheck(obj, g_object_type)) {
    KilnObjectHandle handle = reinterpret_cast<PyKilnObject*>(obj)->handle;
    if (handle == nullptr) {
      PyErr_Format(PyExc_ValueError, "%s object is not initialized (it holds no Kiln object)",
                   Py_TYPE(obj)->tp_name);
      return -1;
    }
    SetObject(out, handle);
    return 0;
  }
  if (PyObject_TypeCheck(obj, g_device_type)) {
    out->type_index = kKilnTypeDevice;
    out->v_device = reinterpret_cast<PyKilnDevice*>(obj)->device;
    return 0;
  }
  if (PyBytes_Check(obj)) {
    bytes->data = PyBytes_AS_STRING(obj);
    bytes->size = static_cast<size_t>(PyBytes_GET_SIZE(obj));
    out->type_index = kKilnTypeByteArrayPtr;
    out->v_ptr = bytes;
    return 0;
  }
  if (PyByteArray_Check(obj)) {
    // Copied, not borrowed: calls run without the GIL, and another thread may resize it then.
    KilnObjectHandle handle = nullptr;
    if (kiln_bytes_create(PyByteArray_AS_STRING(obj),
                          static_cast<size_t>(PyByteArray_GET_SIZE(obj)), &handle) != 0) {
      RaiseFromKiln();
      return -1;
    }
    temps->Add(handle);
    SetObject(out, handle);
    return 0;
  }
  if (PyList_Check(obj) || PyTuple_Check(obj) || PyDict_Check(obj)) {
    if (Py_EnterRecursiveCall(" while converting a Python container to a Kiln value")) return -1;
    int rc = PyDict_Check(obj) ? DictToMap(obj, out, temps) : SequenceToArray(obj, out, temps);
    Py_LeaveRecursiveCall();
    return rc;
  }
  // numpy arrays have __index__ (for their 0-d int form): DLPack producers go to the hook first.
  if (PyIndex_Check(obj) && !(g_value_converter != nullptr && IsDLPackProducer(obj))) {
    // numpy integers and other int-like objects
    PyObject* index = PyNumber_Index(obj);
    if (index == nullptr) return -1;
    int rc = PyToAny(index, out, bytes, temps);
    Py_DECREF(index);
    return rc;
  }
  if (PyCallable_Check(obj)) {
    KilnObjectHandle func = CallableToFunction(obj);
    if (func == nullptr) return -1;
    temps->Add(func);
    SetObject(out, func);
    return 0;
  }
  if (g_value_converter != nullptr) return ConvertReplacement(obj, out, temps);
  PyErr_Format(PyExc_TypeError, "cannot convert a Python '%s' to a Kiln value",
               Py_TYPE(obj)->tp_name);
  return -1;
}

/* Converts `obj` into an owning value (objects for str and bytes, a reference for objects). */
int PyToOwnedAny(PyObject* obj, KilnAny* out) {
  Temporaries temps;
  KilnAny value;
  KilnByteArray bytes;
  if (PyToAny(obj, &value, &bytes, &temps) != 0) return -1;
  if (value.type_index == kKilnTypeRawStr || value.type_index == kKilnTypeByteArrayPtr) {
    KilnObjectHandle created = nullptr;
    int rc = value.type_index == kKilnTypeRawStr
                 ? kiln_string_create(value.v_c_str, strlen(value.v_c_str), &created)
                 : kiln_bytes_create(bytes.data, bytes.size, &created);
    if (rc != 0) {
      RaiseFromKiln();
      return -1;
    }
    SetObject(&value, created);
  } else if (value.type_index >= kKilnTypeStaticObjectBegin) {
    kiln_object_inc_ref(value.v_obj);  // `temps` releases its own reference
  }
  *out = value;
  return 0;
}

PyObject* FunctionVectorcall(PyObject* self, PyObject* const* args, size_t nargsf,
                             PyObject* kwnames) {
  KilnObjectHandle handle = HandleOf(self);
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if ((kwnames && PyTuple_GET_SIZE(kwnames) > 0) || handle == nullptr || nargs > INT32_MAX) {
    PyObject* name = FunctionDisplayName(self);
    if (name == nullptr) return nullptr;
    if (handle == nullptr) {
      PyErr_Format(PyExc_ValueError, "%U: the function object is not initialized", name);
    } else if (nargs > INT32_MAX) {
      PyErr_Format(PyExc_TypeError, "%U: too many arguments", name);
    } else {
      PyErr_Format(PyExc_TypeError, "%U takes no keyword arguments", name);
    }
    Py_DECREF(name);
    return nullptr;
  }
  ArgBuffer buffer(nargs);
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    if (PyToAny(args[i], &buffer.any()[i], &buffer.bytes()[i], &buffer.temporaries()) != 0) {
      PyObject* name = FunctionDisplayName(self);
      PyObject* prefix = name ? PyUnicode_FromFormat("%U: argument %zd: ", name, i) : nullptr;
      PrefixPythonError(prefix);
      Py_XDECREF(prefix);
      Py_XDECREF(name);
      return nullptr;
    }
  }
  KilnAny result;
  result.type_index = kKilnTypeNone;
  result.zero_padding = 0;
  result.v_int64 = 0;
  // Other Python threads run while Kiln works: a model running on one thread must not stall
  // the rest of the program, and several threads may run models at once. Callbacks into Python
  // and deleters of Python-owned memory take the GIL back themselves (PyCallbackSafeCall,
  // tensor.cc); the arguments stay alive, held by the caller's frame and `buffer`.
  int rc = 0;
  Py_BEGIN_ALLOW_THREADS rc =
      kiln_function_call(handle, buffer.any(), static_cast<int32_t>(nargs), &result);
  Py_END_ALLOW_THREADS if (rc != 0) return RaiseFromKiln();
  return AnyToPy(result, /*owned=*/true);
}

}  // namespace kiln_python

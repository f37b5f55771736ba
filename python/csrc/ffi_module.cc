/*
 * kiln._ffi: the CPython binding over Kiln's stable C ABI (include/kiln/ffi/c_api.h).
 *
 * It uses the C ABI only (no Kiln C++ header), so it is also the reference for what a language
 * binding needs. This file holds the module: the global registry, plugins, the helpers behind
 * kiln.Array/Map/Shape/Error, and PyInit__ffi. The other files are listed in ffi_internal.h;
 * the conversions are documented in python/kiln/__init__.py.
 */
// Python.h (through ffi_internal.h) must come before any standard header.
#include "ffi_internal.h"

#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include <vector>

namespace kiln_python {
namespace {

const char* Utf8Arg(PyObject* obj, const char* what) {
  if (!PyUnicode_Check(obj)) {
    PyErr_Format(PyExc_TypeError, "%s must be a str, got a Python '%s'", what,
                 Py_TYPE(obj)->tp_name);
    return nullptr;
  }
  return PyUnicode_AsUTF8(obj);
}

PyObject* GetGlobalFunc(PyObject*, PyObject* name) {
  const char* utf8 = Utf8Arg(name, "name");
  if (utf8 == nullptr) return nullptr;
  KilnObjectHandle func = nullptr;
  if (kiln_func_get_global(utf8, &func) != 0) return RaiseFromKiln();
  if (func == nullptr) Py_RETURN_NONE;
  PyObject* result = WrapHandle(func);
  if (result && PyObject_TypeCheck(result, g_function_type)) {
    Py_INCREF(name);
    Py_XSETREF(reinterpret_cast<PyKilnFunction*>(result)->name, name);
  }
  return result;
}

PyObject* ListGlobalFuncs(PyObject*, PyObject*) {
  KilnObjectHandle array = nullptr;
  if (kiln_func_list_global(&array) != 0) return RaiseFromKiln();
  const auto* a = reinterpret_cast<const KilnArrayObject*>(array);
  PyObject* names = PyList_New(static_cast<Py_ssize_t>(a->size));
  for (int64_t i = 0; names && i < a->size; ++i) {
    PyObject* name = AnyToPy(a->data[i], /*owned=*/false);
    if (name == nullptr) {
      Py_CLEAR(names);
    } else {
      PyList_SET_ITEM(names, static_cast<Py_ssize_t>(i), name);
    }
  }
  kiln_object_dec_ref(array);
  return names;
}

/* register_global_func(name, func, override, owner) */
PyObject* RegisterGlobalFunc(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 4) {
    PyErr_SetString(PyExc_TypeError, "register_global_func(name, func, override, owner)");
    return nullptr;
  }
  const char* name = Utf8Arg(args[0], "name");
  const char* owner = args[3] == Py_None ? nullptr : Utf8Arg(args[3], "owner");
  int override_flag = PyObject_IsTrue(args[2]);
  if (name == nullptr || (args[3] != Py_None && owner == nullptr) || override_flag < 0) {
    return nullptr;
  }
  Temporaries temps;
  KilnAny func;
  KilnByteArray bytes;
  if (!PyCallable_Check(args[1]) || PyToAny(args[1], &func, &bytes, &temps) != 0 ||
      func.type_index < kKilnTypeStaticObjectBegin || !IsInstance(func.v_obj, kKilnTypeFunction)) {
    PyErr_Clear();
    return PyErr_Format(PyExc_TypeError,
                        "cannot register a Python '%s' as global '%s': "
                        "expected a callable",
                        Py_TYPE(args[1])->tp_name, name);
  }
  if (kiln_func_set_global(name, func.v_obj, override_flag ? KILN_FUNC_OVERRIDE : 0, owner) != 0) {
    return RaiseFromKiln();
  }
  Py_RETURN_NONE;
}

PyObject* RemoveGlobalFunc(PyObject*, PyObject* name) {
  const char* utf8 = Utf8Arg(name, "name");
  if (utf8 == nullptr) return nullptr;
  if (kiln_func_remove_global(utf8) != 0) return RaiseFromKiln();
  Py_RETURN_NONE;
}

PyObject* GetGlobalFuncOwner(PyObject*, PyObject* name) {
  const char* utf8 = Utf8Arg(name, "name");
  if (utf8 == nullptr) return nullptr;
  const char* owner = nullptr;
  if (kiln_func_get_global_owner(utf8, &owner) != 0) return RaiseFromKiln();
  if (owner == nullptr) Py_RETURN_NONE;
  return PyUnicode_DecodeUTF8(owner, static_cast<Py_ssize_t>(strlen(owner)), "surrogateescape");
}

PyObject* PluginLoad(PyObject*, PyObject* path) {
  PyObject* encoded = nullptr;
  if (!PyUnicode_FSConverter(path, &encoded)) return nullptr;
  KilnObjectHandle info = nullptr;
  int rc = kiln_plugin_load(PyBytes_AS_STRING(encoded), &info);
  Py_DECREF(encoded);
  if (rc != 0) return RaiseFromKiln();
  if (info == nullptr) Py_RETURN_NONE;
  return WrapHandle(info);
}

PyObject* AbiVersion(PyObject*, PyObject*) {
  int32_t major = 0, minor = 0;
  kiln_abi_version(&major, &minor);
  return Py_BuildValue("(ii)", static_cast<int>(major), static_cast<int>(minor));
}

PyObject* LibraryPath(PyObject*, PyObject*) {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&kiln_abi_version), &info) == 0 || info.dli_fname == nullptr) {
    Py_RETURN_NONE;
  }
  return PyUnicode_DecodeFSDefault(info.dli_fname);
}

/*
 * load_library(path): dlopen one of Kiln's own libraries (libkiln_runtime.so) so that its global
 * functions register. RTLD_LOCAL, like plugins: everything goes through the registry. Never
 * closed; loading a file twice is a no-op (the dynamic loader counts it).
 */
PyObject* LoadLibrary(PyObject*, PyObject* path) {
  PyObject* encoded = nullptr;
  if (!PyUnicode_FSConverter(path, &encoded)) return nullptr;
  void* handle = dlopen(PyBytes_AS_STRING(encoded), RTLD_NOW | RTLD_LOCAL);
  Py_DECREF(encoded);
  if (handle == nullptr) {
    const char* reason = dlerror();
    PyErr_Format(PyExc_OSError, "cannot load %R: %s", path, reason ? reason : "unknown error");
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyObject* ArraySize(PyObject*, PyObject* array) {
  KilnObjectHandle handle = CheckedHandle(array, kKilnTypeArray, "Array");
  if (handle == nullptr) return nullptr;
  return PyLong_FromLongLong(reinterpret_cast<const KilnArrayObject*>(handle)->size);
}

/* array_getitem(array, index): index must already be in [0, size). */
PyObject* ArrayGetItem(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "array_getitem(array, index)");
    return nullptr;
  }
  KilnObjectHandle handle = CheckedHandle(args[0], kKilnTypeArray, "Array");
  if (handle == nullptr) return nullptr;
  Py_ssize_t index = PyNumber_AsSsize_t(args[1], PyExc_IndexError);
  if (index == -1 && PyErr_Occurred()) return nullptr;
  const auto* a = reinterpret_cast<const KilnArrayObject*>(handle);
  if (index < 0 || index >= a->size) {
    return PyErr_Format(PyExc_IndexError, "kiln.Array index %zd out of range [0, %lld)", index,
                        static_cast<long long>(a->size));
  }
  return AnyToPy(a->data[index], /*owned=*/false);
}

PyObject* ArrayToList(PyObject*, PyObject* array) {
  KilnObjectHandle handle = CheckedHandle(array, kKilnTypeArray, "Array");
  if (handle == nullptr) return nullptr;
  const auto* a = reinterpret_cast<const KilnArrayObject*>(handle);
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(a->size));
  for (int64_t i = 0; list && i < a->size; ++i) {
    PyObject* item = AnyToPy(a->data[i], /*owned=*/false);
    if (item == nullptr) {
      Py_CLEAR(list);
    } else {
      PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), item);
    }
  }
  return list;
}

PyObject* ShapeToTuple(PyObject*, PyObject* shape) {
  KilnObjectHandle handle = CheckedHandle(shape, kKilnTypeShape, "Shape");
  if (handle == nullptr) return nullptr;
  const auto* s = reinterpret_cast<const KilnShapeObject*>(handle);
  PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(s->size));
  for (int64_t i = 0; tuple && i < s->size; ++i) {
    PyObject* dim = PyLong_FromLongLong(s->data[i]);
    if (dim == nullptr) {
      Py_CLEAR(tuple);
    } else {
      PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(i), dim);
    }
  }
  return tuple;
}

PyObject* MakeShape(PyObject*, PyObject* dims) {
  PyObject* seq = PySequence_Tuple(dims);  // a copy: __index__ below may change `dims`
  if (seq == nullptr) return nullptr;
  const Py_ssize_t size = PyTuple_GET_SIZE(seq);
  std::vector<int64_t> data(static_cast<size_t>(size));
  for (Py_ssize_t i = 0; i < size; ++i) {
    PyObject* item = PyTuple_GET_ITEM(seq, i);
    if (!PyIndex_Check(item) || PyBool_Check(item)) {
      PyErr_Format(PyExc_TypeError, "shape dimension %zd must be an int, got a Python '%s'", i,
                   Py_TYPE(item)->tp_name);
      Py_DECREF(seq);
      return nullptr;
    }
    PyObject* index = PyNumber_Index(item);
    long long value = index ? PyLong_AsLongLong(index) : -1;
    Py_XDECREF(index);
    if (value == -1 && PyErr_Occurred()) {
      Py_DECREF(seq);
      return nullptr;
    }
    data[static_cast<size_t>(i)] = value;
  }
  Py_DECREF(seq);
  KilnObjectHandle shape = nullptr;
  if (kiln_shape_create(data.data(), static_cast<int64_t>(size), &shape) != 0) {
    return RaiseFromKiln();
  }
  return WrapHandle(shape);
}

PyObject* ErrorFields(PyObject*, PyObject* error) {
  KilnObjectHandle handle = CheckedHandle(error, kKilnTypeError, "Error");
  if (handle == nullptr) return nullptr;
  const auto* e = reinterpret_cast<const KilnErrorObject*>(handle);
  PyObject* kind = DecodeUtf8(e->kind);
  PyObject* message = DecodeUtf8(e->message);
  PyObject* context = DecodeUtf8(e->context);
  PyObject* result = kind && message && context ? PyTuple_Pack(3, kind, message, context) : nullptr;
  Py_XDECREF(kind);
  Py_XDECREF(message);
  Py_XDECREF(context);
  return result;
}

/* make_error(kind, message, context) -> a new kiln Error object */
PyObject* MakeError(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 3) {
    PyErr_SetString(PyExc_TypeError, "make_error(kind, message, context)");
    return nullptr;
  }
  const char* kind = Utf8Arg(args[0], "kind");
  const char* message = kind ? Utf8Arg(args[1], "message") : nullptr;
  const char* context = message ? Utf8Arg(args[2], "context") : nullptr;
  if (context == nullptr) return nullptr;
  KilnObjectHandle error = nullptr;
  if (kiln_error_create(kind, message, context, &error) != 0) return RaiseFromKiln();
  return WrapHandle(error);
}

/* convert(value): the Kiln value a Python value becomes as an argument, back in Python. */
PyObject* Convert(PyObject*, PyObject* value) {
  KilnAny any;
  if (PyToOwnedAny(value, &any) != 0) return nullptr;
  return AnyToPy(any, /*owned=*/true);
}

PyObject* TypeKeyToIndex(PyObject*, PyObject* key) {
  const char* utf8 = Utf8Arg(key, "type_key");
  if (utf8 == nullptr) return nullptr;
  int32_t index = 0;
  if (kiln_type_key_to_index(utf8, &index) != 0) return RaiseFromKiln();
  return PyLong_FromLong(index);
}

/* type_info(index) -> (type_key, depth, ancestors) */
PyObject* TypeInfo(PyObject*, PyObject* index) {
  long value = PyLong_AsLong(index);
  if (value == -1 && PyErr_Occurred()) return nullptr;
  const KilnTypeInfo* info = nullptr;
  if (kiln_type_get_info(static_cast<int32_t>(value), &info) != 0) return RaiseFromKiln();
  PyObject* ancestors = PyTuple_New(info->depth);
  for (int32_t i = 0; ancestors && i < info->depth; ++i) {
    PyObject* item = PyLong_FromLong(info->ancestors[i]);
    if (item == nullptr) {
      Py_CLEAR(ancestors);
    } else {
      PyTuple_SET_ITEM(ancestors, i, item);
    }
  }
  if (ancestors == nullptr) return nullptr;
  PyObject* key = DecodeUtf8(info->type_key);
  PyObject* result =
      key ? Py_BuildValue("(OiO)", key, static_cast<int>(info->depth), ancestors) : nullptr;
  Py_XDECREF(key);
  Py_DECREF(ancestors);
  return result;
}

PyObject* SetHook(PyObject** slot, PyObject* fn) {
  if (fn != Py_None && !PyCallable_Check(fn)) {
    PyErr_SetString(PyExc_TypeError, "expected a callable or None");
    return nullptr;
  }
  Py_XINCREF(fn == Py_None ? nullptr : fn);
  Py_XSETREF(*slot, fn == Py_None ? nullptr : fn);
  Py_RETURN_NONE;
}

PyObject* SetErrorFactory(PyObject*, PyObject* fn) { return SetHook(&g_error_factory, fn); }

PyObject* SetExceptionConverter(PyObject*, PyObject* fn) {
  return SetHook(&g_exception_converter, fn);
}

PyMethodDef g_module_methods[] = {
    {"get_global_func", GetGlobalFunc, METH_O,
     "get_global_func(name) -> Function or None: a new lookup every call."},
    {"list_global_funcs", ListGlobalFuncs, METH_NOARGS,
     "list_global_funcs() -> sorted list of every registered name."},
    {"register_global_func", FastCall(RegisterGlobalFunc), METH_FASTCALL,
     "register_global_func(name, func, override, owner)."},
    {"remove_global_func", RemoveGlobalFunc, METH_O, "remove_global_func(name)."},
    {"get_global_func_owner", GetGlobalFuncOwner, METH_O,
     "get_global_func_owner(name) -> owner str or None."},
    {"plugin_load", PluginLoad, METH_O, "plugin_load(path) -> Map describing the plugin."},
    {"abi_version", AbiVersion, METH_NOARGS, "abi_version() -> (major, minor) of libkiln_ffi."},
    {"library_path", LibraryPath, METH_NOARGS, "Path libkiln_ffi.so was loaded from."},
    {"load_library", LoadLibrary, METH_O,
     "load_library(path): dlopen a Kiln library so its global functions register."},
    {"register_object_class", FastCall(RegisterObjectClass), METH_FASTCALL,
     "register_object_class(type_key_or_index, cls)."},
    {"array_size", ArraySize, METH_O, "Number of items of a kiln Array."},
    {"array_getitem", FastCall(ArrayGetItem), METH_FASTCALL,
     "array_getitem(array, index) with 0 <= index < size."},
    {"array_to_list", ArrayToList, METH_O, "Items of a kiln Array as a list."},
    {"shape_to_tuple", ShapeToTuple, METH_O, "Extents of a kiln Shape as a tuple."},
    {"make_shape", MakeShape, METH_O, "make_shape(dims) -> kiln Shape."},
    {"error_fields", ErrorFields, METH_O, "error_fields(error) -> (kind, message, context)."},
    {"make_error", FastCall(MakeError), METH_FASTCALL,
     "make_error(kind, message, context) -> kiln Error object."},
    {"convert", Convert, METH_O, "The value a Python object becomes when passed to Kiln."},
    {"type_key_to_index", TypeKeyToIndex, METH_O, "Type index of a registered type key."},
    {"type_info", TypeInfo, METH_O, "type_info(index) -> (type_key, depth, ancestors)."},
    {"set_error_factory", SetErrorFactory, METH_O,
     "Hook (kind, message, context) -> exception instance, used to raise Kiln errors."},
    {"set_exception_converter", SetExceptionConverter, METH_O,
     "Hook exception -> (kind, message, context), used when a Python callback raises."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef g_module = {PyModuleDef_HEAD_INIT,
                        "kiln._ffi",
                        "CPython binding over Kiln's C ABI (include/kiln/ffi/c_api.h).",
                        -1,
                        g_module_methods,
                        nullptr,
                        nullptr,
                        nullptr,
                        nullptr};

struct IntConstant {
  const char* name;
  int value;
};

const IntConstant kIntConstants[] = {
    {"TYPE_OBJECT", kKilnTypeObject},
    {"TYPE_STRING", kKilnTypeString},
    {"TYPE_BYTES", kKilnTypeBytes},
    {"TYPE_ERROR", kKilnTypeError},
    {"TYPE_FUNCTION", kKilnTypeFunction},
    {"TYPE_ARRAY", kKilnTypeArray},
    {"TYPE_MAP", kKilnTypeMap},
    {"TYPE_SHAPE", kKilnTypeShape},
    {"TYPE_TENSOR", kKilnTypeTensor},
    {"TYPE_MODULE", kKilnTypeModule},
    {"TYPE_DYN_OBJECT_BEGIN", kKilnTypeDynObjectBegin},
    {"ABI_VERSION_MAJOR", KILN_ABI_VERSION_MAJOR},
    {"ABI_VERSION_MINOR", KILN_ABI_VERSION_MINOR},
};

int AddMembers(PyObject* module) {
  if (InitObjectTypes() != 0 || InitClassRegistry() != 0 || AddValueTypes(module) != 0 ||
      AddTensorFunctions(module) != 0) {
    return -1;
  }
  auto* object_type = reinterpret_cast<PyObject*>(g_object_type);
  auto* function_type = reinterpret_cast<PyObject*>(g_function_type);
  if (PyModule_AddObjectRef(module, "Object", object_type) != 0 ||
      PyModule_AddObjectRef(module, "Function", function_type) != 0) {
    return -1;
  }
  for (const IntConstant& constant : kIntConstants) {
    if (PyModule_AddIntConstant(module, constant.name, constant.value) != 0) return -1;
  }
  return 0;
}

}  // namespace
}  // namespace kiln_python

PyMODINIT_FUNC PyInit__ffi(void) {
  PyObject* module = PyModule_Create(&kiln_python::g_module);
  if (module != nullptr && kiln_python::AddMembers(module) != 0) Py_CLEAR(module);
  return module;
}

/*
 * The Python class of each Kiln object type. Python registers classes by type key (a type a
 * plugin has not registered yet is fine) or, for the core types, by type index; an object gets
 * the class of its own type or else of its nearest registered ancestor (kiln.Object at the
 * root). The answer is cached per type index and the cache is dropped when a class is added.
 */
// Python.h (through ffi_internal.h) must come before any standard header.
#include "ffi_internal.h"

namespace kiln_python {
namespace {

struct ClassEntry {
  PyTypeObject* cls;  // borrowed from g_classes_by_index / g_classes_by_key
  bool is_function;
};

PyObject* g_classes_by_index = nullptr;  // dict: type index -> Python class
PyObject* g_classes_by_key = nullptr;    // dict: type key -> Python class
std::vector<ClassEntry> g_class_cache;   // indexed by type index; cls == nullptr: not resolved

/* Borrowed class registered for `type_index` itself, or nullptr (no error) when none. */
PyObject* RegisteredClass(int32_t type_index) {
  PyObject* index = PyLong_FromLong(type_index);
  if (index == nullptr) return nullptr;
  PyObject* cls = PyDict_GetItemWithError(g_classes_by_index, index);
  Py_DECREF(index);
  if (cls || PyErr_Occurred()) return cls;
  const KilnTypeInfo* info = nullptr;
  if (kiln_type_get_info(type_index, &info) != 0) {
    DiscardKilnError();
    return nullptr;
  }
  PyObject* key = DecodeUtf8(info->type_key);
  if (key == nullptr) return nullptr;
  cls = PyDict_GetItemWithError(g_classes_by_key, key);
  Py_DECREF(key);
  return cls;
}

const ClassEntry* LookupClass(int32_t type_index) {
  if (type_index >= 0 && static_cast<size_t>(type_index) < g_class_cache.size() &&
      g_class_cache[type_index].cls) {
    return &g_class_cache[type_index];
  }
  if (type_index < 0) {
    PyErr_Format(PyExc_RuntimeError, "kiln: object with invalid type index %d", type_index);
    return nullptr;
  }
  PyTypeObject* cls = nullptr;
  const KilnTypeInfo* info = nullptr;
  if (kiln_type_get_info(type_index, &info) != 0) {
    DiscardKilnError();
  } else {
    // From the type itself up to the root: the nearest registered class wins.
    for (int32_t depth = info->depth; depth >= 0 && cls == nullptr; --depth) {
      int32_t index = depth == info->depth ? type_index : info->ancestors[depth];
      cls = reinterpret_cast<PyTypeObject*>(RegisteredClass(index));
      if (cls == nullptr && PyErr_Occurred()) return nullptr;
    }
  }
  if (cls == nullptr) cls = g_object_type;
  if (g_class_cache.size() <= static_cast<size_t>(type_index)) {
    g_class_cache.resize(static_cast<size_t>(type_index) + 1, ClassEntry{nullptr, false});
  }
  g_class_cache[type_index] = ClassEntry{cls, PyType_IsSubtype(cls, g_function_type) != 0};
  return &g_class_cache[type_index];
}

}  // namespace

bool IsInstance(KilnObjectHandle obj, int32_t type_index) {
  if (obj->type_index == type_index) return true;
  const KilnTypeInfo* target = nullptr;
  const KilnTypeInfo* info = nullptr;
  if (kiln_type_get_info(type_index, &target) != 0 ||
      kiln_type_get_info(obj->type_index, &info) != 0) {
    DiscardKilnError();
    return false;
  }
  return info->depth > target->depth && info->ancestors[target->depth] == type_index;
}

/* New wrapper that takes over `handle` (a new reference, released even on failure). */
PyObject* WrapHandle(KilnObjectHandle handle) {
  const ClassEntry* entry = LookupClass(handle->type_index);
  PyObject* self = entry ? entry->cls->tp_alloc(entry->cls, 0) : nullptr;
  if (self == nullptr) {
    kiln_object_dec_ref(handle);
    return nullptr;
  }
  reinterpret_cast<PyKilnObject*>(self)->handle = handle;
  if (entry->is_function) reinterpret_cast<PyKilnFunction*>(self)->vectorcall = FunctionVectorcall;
  return self;
}

/* register_object_class(type_key or type_index, cls) */
PyObject* RegisterObjectClass(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "register_object_class(type_key_or_index, cls)");
    return nullptr;
  }
  PyObject* cls = args[1];
  if (!PyType_Check(cls) ||
      !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls), g_object_type)) {
    PyErr_Format(PyExc_TypeError, "%R is not a subclass of kiln.Object", cls);
    return nullptr;
  }
  PyObject* dict = nullptr;
  if (PyLong_Check(args[0])) {
    dict = g_classes_by_index;
  } else if (PyUnicode_Check(args[0])) {
    dict = g_classes_by_key;
  } else {
    PyErr_SetString(PyExc_TypeError, "the first argument must be a type key (str) or index (int)");
    return nullptr;
  }
  if (PyDict_SetItem(dict, args[0], cls) != 0) return nullptr;
  g_class_cache.clear();
  Py_RETURN_NONE;
}

int InitClassRegistry() {
  g_classes_by_index = PyDict_New();
  g_classes_by_key = PyDict_New();
  if (g_classes_by_index == nullptr || g_classes_by_key == nullptr) return -1;
  PyObject* object_index = PyLong_FromLong(kKilnTypeObject);
  PyObject* function_index = PyLong_FromLong(kKilnTypeFunction);
  int rc = -1;
  if (object_index && function_index &&
      PyDict_SetItem(g_classes_by_index, object_index,
                     reinterpret_cast<PyObject*>(g_object_type)) == 0 &&
      PyDict_SetItem(g_classes_by_index, function_index,
                     reinterpret_cast<PyObject*>(g_function_type)) == 0) {
    rc = 0;
  }
  Py_XDECREF(object_index);
  Py_XDECREF(function_index);
  return rc;
}

}  // namespace kiln_python

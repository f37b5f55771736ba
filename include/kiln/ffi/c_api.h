/*
 * Kiln's stable C ABI: the only interface a plugin, a backend or a language binding must agree on.
 *
 * Rules of this header (see docs/design.md, "The C ABI"):
 *  - plain C99, no C++ types; it is compiled as C in tests/cpp/ffi/c_api_test.c;
 *  - append-only within a major version: new functions and new enum values may be added, nothing
 *    is removed, reordered or changes meaning;
 *  - every struct that a plugin fills or the host passes starts with `struct_size`, so either side
 *    can tell how much of it the other side knows;
 *  - every function returns 0 on success and -1 on failure; on failure the error is in a
 *    thread-local slot (kiln_error_move_from_raised) and no out-parameter was written;
 *  - ownership is spelled out: "new reference" means the caller must kiln_object_dec_ref it,
 *    "borrowed" means the caller must not.
 */
#ifndef KILN_FFI_C_API_H_
#define KILN_FFI_C_API_H_

#include <stddef.h>
#include <stdint.h>
#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define KILN_API_EXPORT __declspec(dllexport)
#else
#define KILN_API_EXPORT __attribute__((visibility("default")))
#endif

/*! \brief Exported from libkiln_ffi.so (KILN_FFI_EXPORTS is set while building it). */
#define KILN_FFI_API KILN_API_EXPORT

/*! \brief ABI version: a different major is incompatible; a newer minor only adds. */
#define KILN_ABI_VERSION_MAJOR 1
#define KILN_ABI_VERSION_MINOR 0

/* ------------------------------------------------------------------------------------------ */
/* Type indices                                                                                 */
/* ------------------------------------------------------------------------------------------ */

/*!
 * \brief Fixed type indices. Values below kKilnTypeStaticObjectBegin are held inline in a
 * KilnAny (no reference count); values from there on are objects. Indices from
 * kKilnTypeDynObjectBegin on are handed out at run time by type key (kiln_type_register).
 */
typedef enum {
  kKilnTypeNone = 0,
  kKilnTypeInt = 1,          /* v_int64 */
  kKilnTypeBool = 2,         /* v_int64, 0 or 1 */
  kKilnTypeFloat = 3,        /* v_float64 */
  kKilnTypeOpaquePtr = 4,    /* v_ptr, not owned */
  kKilnTypeDataType = 5,     /* v_dtype */
  kKilnTypeDevice = 6,       /* v_device */
  kKilnTypeDLTensorPtr = 7,  /* v_ptr to a DLTensor, borrowed */
  kKilnTypeRawStr = 8,       /* v_c_str, NUL-terminated, borrowed (arguments only) */
  kKilnTypeByteArrayPtr = 9, /* v_ptr to a KilnByteArray, borrowed (arguments only) */
  kKilnTypeStaticObjectBegin = 64,
  kKilnTypeObject = 64, /* root of every object type */
  kKilnTypeString = 65,
  kKilnTypeBytes = 66,
  kKilnTypeError = 67,
  kKilnTypeFunction = 68,
  kKilnTypeArray = 69,
  kKilnTypeMap = 70,
  kKilnTypeShape = 71,
  kKilnTypeTensor = 72,
  kKilnTypeModule = 73,
  kKilnTypeDynObjectBegin = 128
} KilnTypeIndex;

/* ------------------------------------------------------------------------------------------ */
/* Objects                                                                                      */
/* ------------------------------------------------------------------------------------------ */

/*!
 * \brief Header of every object. The reference count is updated with atomic read-modify-write
 * operations (the C++ wrappers do it inline); when it drops to zero, `deleter(self)` frees the
 * object. An object is created with a count of 1, owned by its creator.
 */
typedef struct KilnObject {
  uint64_t ref_count;
  int32_t type_index;
  uint32_t reserved; /* zero; room for flags such as weak references */
  void (*deleter)(struct KilnObject* self);
} KilnObject;

typedef KilnObject* KilnObjectHandle;

/*! \brief A borrowed view of bytes; `data` need not be NUL-terminated. */
typedef struct {
  const char* data;
  size_t size;
} KilnByteArray;

/*!
 * \brief The value that crosses the ABI: 16 bytes, a type index and a payload.
 * An "owning" KilnAny holds one reference to v_obj when type_index >= kKilnTypeStaticObjectBegin.
 */
typedef struct {
  int32_t type_index;
  uint32_t zero_padding; /* zero; reserved for a small-string length */
  union {
    int64_t v_int64;
    double v_float64;
    void* v_ptr;
    const char* v_c_str;
    KilnObjectHandle v_obj;
    DLDataType v_dtype;
    DLDevice v_device;
    char v_bytes[8];
  };
} KilnAny;

/*! \brief String and Bytes objects: the header followed by the bytes (NUL-terminated). */
typedef struct {
  KilnObject header;
  KilnByteArray bytes;
} KilnStringObject;

/*! \brief Shape object: an immutable array of int64 extents. */
typedef struct {
  KilnObject header;
  const int64_t* data;
  int64_t size;
} KilnShapeObject;

/*! \brief Array object: an immutable sequence of owning KilnAny. */
typedef struct {
  KilnObject header;
  KilnAny* data;
  int64_t size;
  int64_t capacity;
} KilnArrayObject;

/*! \brief New reference count += 1. Never fails. */
KILN_FFI_API void kiln_object_inc_ref(KilnObjectHandle obj);
/*! \brief Reference count -= 1; frees the object when it reaches zero. Never fails. */
KILN_FFI_API void kiln_object_dec_ref(KilnObjectHandle obj);

/* ------------------------------------------------------------------------------------------ */
/* Run-time type information                                                                    */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
  int32_t type_index;
  int32_t depth; /* 0 for kKilnTypeObject, parent depth + 1 otherwise */
  KilnByteArray type_key;
  /* ancestors[i] is the type index of the ancestor at depth i (i < depth), so
   * "is T an instance of U" is ancestors[U.depth] == U.type_index: one load, no loop. */
  const int32_t* ancestors;
} KilnTypeInfo;

/*!
 * \brief Get or allocate the type index of `type_key`, child of `parent_type_index`.
 * Registering an existing key returns its index; registering it with another parent fails.
 * Static types are pre-registered by libkiln_ffi.
 */
KILN_FFI_API int kiln_type_register(const char* type_key, int32_t parent_type_index,
                                    int32_t* out_type_index);
/*! \brief Index of a registered key; fails with KeyError if unknown. */
KILN_FFI_API int kiln_type_key_to_index(const char* type_key, int32_t* out_type_index);
/*! \brief Borrowed pointer to the type's info, valid for the life of the process. */
KILN_FFI_API int kiln_type_get_info(int32_t type_index, const KilnTypeInfo** out_info);

/* ------------------------------------------------------------------------------------------ */
/* Functions                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/*!
 * \brief The one calling convention. `args` are borrowed; on success `*result` is an owning
 * value the caller must release (it starts as kKilnTypeNone). Returns 0, or -1 with the error in
 * the thread-local slot.
 */
typedef int (*KilnSafeCall)(void* self, const KilnAny* args, int32_t num_args, KilnAny* result);

/*!
 * \brief Function object: the header, then the call entry. `self` passed to safe_call is the
 * function object itself, so implementations keep their state after this struct.
 */
typedef struct {
  KilnObject header;
  KilnSafeCall safe_call;
} KilnFunctionObject;

/*!
 * \brief Wrap a C callback as a Function object (new reference). `resource` is passed back as
 * `self` to `safe_call`; `resource_deleter` (may be NULL) runs when the Function is freed.
 */
KILN_FFI_API int kiln_function_create(void* resource, KilnSafeCall safe_call,
                                      void (*resource_deleter)(void* resource),
                                      KilnObjectHandle* out_func);
/*! \brief Call a Function object. Same contract as KilnSafeCall. */
KILN_FFI_API int kiln_function_call(KilnObjectHandle func, const KilnAny* args, int32_t num_args,
                                    KilnAny* result);

/* ------------------------------------------------------------------------------------------ */
/* Global function registry (thread-safe)                                                      */
/* ------------------------------------------------------------------------------------------ */

/*! \brief Flags for kiln_func_set_global. */
#define KILN_FUNC_OVERRIDE 1

/*!
 * \brief Register `func` (borrowed; the registry takes its own reference) under `name`.
 * `owner` names who registers it (a DSO path, "python:<module>"); NULL means the DSO that
 * contains the caller's code, or, while a plugin initializes, that plugin's path. A name that
 * exists fails with KeyError naming both owners unless `flags` has KILN_FUNC_OVERRIDE.
 */
KILN_FFI_API int kiln_func_set_global(const char* name, KilnObjectHandle func, int32_t flags,
                                      const char* owner);
/*! \brief New reference to the function, or *out_func = NULL when no such name exists. */
KILN_FFI_API int kiln_func_get_global(const char* name, KilnObjectHandle* out_func);
/*!
 * \brief New reference to the function; fails with KeyError when the name is unknown, suggesting
 * the registered names closest to it.
 */
KILN_FFI_API int kiln_func_get_global_required(const char* name, KilnObjectHandle* out_func);
/*! \brief Owner of a registered name (borrowed, valid until the name is removed), or NULL. */
KILN_FFI_API int kiln_func_get_global_owner(const char* name, const char** out_owner);
/*! \brief Remove a name; fails with KeyError if it does not exist. */
KILN_FFI_API int kiln_func_remove_global(const char* name);
/*! \brief New reference to an Array of String holding every registered name, sorted. */
KILN_FFI_API int kiln_func_list_global(KilnObjectHandle* out_array);

/* ------------------------------------------------------------------------------------------ */
/* Errors                                                                                       */
/* ------------------------------------------------------------------------------------------ */

/*!
 * \brief Error object: a kind ("TypeError", "ValueError", ...), a message and a context chain,
 * one line per frame the error passed through ("while running transform.FuseOps on @main",
 * "Python traceback: ..."), innermost first.
 */
typedef struct {
  KilnObject header;
  KilnByteArray kind;
  KilnByteArray message;
  KilnByteArray context;
} KilnErrorObject;

/*! \brief New Error object (new reference); `context` may be NULL. */
KILN_FFI_API int kiln_error_create(const char* kind, const char* message, const char* context,
                                   KilnObjectHandle* out_error);
/*! \brief Store `error` (the slot takes a new reference) as this thread's raised error. */
KILN_FFI_API void kiln_error_set_raised(KilnObjectHandle error);
/*! \brief Raise a new error from C strings; returns -1 so callers can `return kiln_error_...`. */
KILN_FFI_API int kiln_error_set_raised_from_cstr(const char* kind, const char* message);
/*!
 * \brief Move this thread's raised error out (new reference; the slot is emptied). If none was
 * raised, *out_error is an InternalError saying so, never NULL.
 */
KILN_FFI_API void kiln_error_move_from_raised(KilnObjectHandle* out_error);

/* ------------------------------------------------------------------------------------------ */
/* Strings, bytes, shapes                                                                      */
/* ------------------------------------------------------------------------------------------ */

/*! \brief New String object (new reference) holding a copy of data[0:size]. */
KILN_FFI_API int kiln_string_create(const char* data, size_t size, KilnObjectHandle* out);
/*! \brief New Bytes object (new reference) holding a copy of data[0:size]. */
KILN_FFI_API int kiln_bytes_create(const char* data, size_t size, KilnObjectHandle* out);
/*! \brief New Shape object (new reference) holding a copy of data[0:ndim]. */
KILN_FFI_API int kiln_shape_create(const int64_t* data, int64_t ndim, KilnObjectHandle* out);
/*!
 * \brief New Array object (new reference) holding new references to each of items[0:size]
 * (inline values are copied; kKilnTypeRawStr and kKilnTypeByteArrayPtr become String/Bytes).
 */
KILN_FFI_API int kiln_array_create(const KilnAny* items, int64_t size, KilnObjectHandle* out);

/* ------------------------------------------------------------------------------------------ */
/* Tensors (DLPack)                                                                             */
/* ------------------------------------------------------------------------------------------ */

/*!
 * \brief Tensor object: the header followed by a DLTensor, so any DLPack consumer can read it.
 * `shape` and `strides` point into the object; `strides` is NULL for a compact row-major tensor.
 */
typedef struct {
  KilnObject header;
  DLTensor dl_tensor;
} KilnTensorObject;

/*!
 * \brief New Tensor (new reference) over the memory of `managed`, without copying. The Tensor
 * takes ownership of `managed` and calls its deleter when it is freed. On failure the caller
 * keeps ownership.
 */
KILN_FFI_API int kiln_tensor_from_dlpack(DLManagedTensor* managed, KilnObjectHandle* out);
/*!
 * \brief New DLManagedTensor over the tensor's memory, without copying; it holds a reference to
 * the tensor until the consumer calls its deleter.
 */
KILN_FFI_API int kiln_tensor_to_dlpack(KilnObjectHandle tensor, DLManagedTensor** out);

/* ------------------------------------------------------------------------------------------ */
/* Versions and plugins                                                                         */
/* ------------------------------------------------------------------------------------------ */

/*! \brief The ABI version this libkiln_ffi.so implements. */
KILN_FFI_API void kiln_abi_version(int32_t* out_major, int32_t* out_minor);

/*! \brief What the host gives a plugin's entry point. */
typedef struct {
  size_t struct_size;
  int32_t abi_major;
  int32_t abi_minor;
  const char* plugin_path; /* absolute path of the DSO being loaded */
} KilnHostApi;

/*!
 * \brief What a plugin's entry point fills in. The entry point must not register anything:
 * the host checks `abi_major` first and only then calls `register_all`, which flushes the
 * registrations that the plugin's static initializers collected.
 */
typedef struct {
  size_t struct_size; /* set by the host to sizeof(KilnPluginInfo) as the host knows it */
  int32_t abi_major;
  int32_t abi_minor;
  const char* name;    /* static string owned by the plugin */
  const char* version; /* static string owned by the plugin */
  int (*register_all)(void);
} KilnPluginInfo;

/*! \brief Name of the one symbol every plugin exports (generated by KILN_PLUGIN). */
#define KILN_PLUGIN_ENTRY_SYMBOL "kiln_plugin_init"
typedef int (*KilnPluginInitFn)(const KilnHostApi* host, KilnPluginInfo* info);

/*!
 * \brief Load a plugin DSO (RTLD_LOCAL), check its ABI and let it register. Loading a file
 * that is already loaded is a no-op. On failure nothing it registered stays registered.
 * `*out_info` (may be NULL) receives a new reference to a Map describing the plugin.
 */
KILN_FFI_API int kiln_plugin_load(const char* path, KilnObjectHandle* out_info);

#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
static_assert(sizeof(KilnAny) == 16, "KilnAny must be 16 bytes");
static_assert(offsetof(KilnAny, v_int64) == 8, "KilnAny payload must start at byte 8");
static_assert(sizeof(KilnObject) == 24, "KilnObject header must be 24 bytes");
#else
_Static_assert(sizeof(KilnAny) == 16, "KilnAny must be 16 bytes");
_Static_assert(offsetof(KilnAny, v_int64) == 8, "KilnAny payload must start at byte 8");
_Static_assert(sizeof(KilnObject) == 24, "KilnObject header must be 24 bytes");
#endif

#endif /* KILN_FFI_C_API_H_ */

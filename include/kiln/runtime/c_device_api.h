/*
 * The device API of the C ABI: what a device backend (libkiln_runtime_<name>.so) implements so
 * the runtime can allocate, copy and synchronize on its devices.
 *
 * A backend registers one static KilnDeviceApi per device kind as the global function
 * "device_api.<name>" (name from kiln_device_name: "cpu", "cuda", "opencl", ...), which returns
 * a pointer to it (kKilnTypeOpaquePtr). There is no other registry: a backend that is not loaded
 * simply has no "device_api.<name>", and the device reports exist = false.
 *
 * Same rules as c_api.h: plain C, append-only, struct_size first, 0 / -1 returns with the error
 * in the thread-local slot.
 */
#ifndef KILN_RUNTIME_C_DEVICE_API_H_
#define KILN_RUNTIME_C_DEVICE_API_H_

#include <kiln/ffi/c_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/*! \brief Attributes a device API answers through get_attr. */
typedef enum {
  kKilnDeviceAttrExist = 0,               /* bool: the device can be used; never fails */
  kKilnDeviceAttrName = 1,                /* str: "NVIDIA H100", "pthread-..." */
  kKilnDeviceAttrTotalMemory = 2,         /* int: bytes */
  kKilnDeviceAttrComputeVersion = 3,      /* str: "9.0" for CUDA, "OpenCL 3.0" */
  kKilnDeviceAttrMaxThreadsPerBlock = 4,  /* int */
  kKilnDeviceAttrMultiProcessorCount = 5, /* int: SMs, compute units, cores */
  kKilnDeviceAttrDriverVersion = 6,       /* str */
  kKilnDeviceAttrDeviceCount = 7          /* int: devices of this kind (device_id ignored) */
} KilnDeviceAttr;

/*! \brief A backend's stream (CUDA stream, OpenCL queue); NULL is the default stream. */
typedef void* KilnStreamHandle;

typedef struct {
  size_t struct_size;
  /*! \brief Passed back as the first argument of every entry. */
  void* self;
  /*!
   * \brief Writes an owning value to `out`; kKilnTypeNone when the attribute is not known.
   * kKilnDeviceAttrExist never fails: a missing driver or device answers false.
   */
  int (*get_attr)(void* self, int32_t device_id, int32_t attr, KilnAny* out);
  /*! \brief Allocates `nbytes` aligned to `alignment` on the device; the caller frees it. */
  int (*alloc)(void* self, int32_t device_id, size_t nbytes, size_t alignment, void** out_ptr);
  int (*free)(void* self, int32_t device_id, void* ptr);
  /*!
   * \brief Copies `from` into `to` (same shape and dtype, compact). One side is memory of this
   * device kind, the other is this kind or the CPU. Asynchronous on `stream`.
   */
  int (*copy)(void* self, const DLTensor* from, DLTensor* to, KilnStreamHandle stream);
  int (*stream_create)(void* self, int32_t device_id, KilnStreamHandle* out_stream);
  int (*stream_free)(void* self, int32_t device_id, KilnStreamHandle stream);
  /*! \brief Waits until everything queued on `stream` (NULL: the default stream) is done. */
  int (*stream_sync)(void* self, int32_t device_id, KilnStreamHandle stream);
} KilnDeviceApi;

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_C_DEVICE_API_H_ */

/*!
 * \file kiln/runtime/tile_callback.h
 * \brief A function that generated code hands to a hand-written kernel, which calls it back on
 * each tile of its output it has finished: how a generated epilogue runs while the tile is still
 * in cache (docs/design.md §29). A C header: generated C and the C++ kernels share it.
 */
#ifndef KILN_RUNTIME_TILE_CALLBACK_H_
#define KILN_RUNTIME_TILE_CALLBACK_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  /*! \brief Called with the tile's bounds (a GEMM passes row0, rows, col0, cols) and `closure`;
   * returns 0, or -1 with an error raised (kiln_error_set_raised_from_cstr). */
  int (*fn)(const int64_t* bounds, void* closure);
  void* closure;
} KilnTileCallback;

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_TILE_CALLBACK_H_ */

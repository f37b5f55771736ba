// NumPy's .npy files (format 1.0-3.0, little-endian, C order), so `kilnc run` takes inputs from
// and writes outputs for numpy without a conversion step.
#ifndef KILN_TOOLS_KILNC_NPY_H_
#define KILN_TOOLS_KILNC_NPY_H_

#include <kiln/ffi/tensor.h>

#include <string>

namespace kilnc {

/// The array in `path` as a CPU tensor. ValueError naming the file for anything it cannot read
/// (not .npy, Fortran order, big-endian, an unsupported dtype, truncated data).
kiln::Tensor ReadNpy(const std::string& path);

/// Writes a compact CPU tensor as .npy (format 1.0).
void WriteNpy(const std::string& path, const kiln::Tensor& tensor);

}  // namespace kilnc

#endif  // KILN_TOOLS_KILNC_NPY_H_

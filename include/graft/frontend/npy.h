/// \file
/// NumPy .npy files (format versions 1.0 to 3.0, little-endian, C order) for
/// the CLI's --input and --output-dir.
#pragma once

#include <string>

#include "graft/core/tensor.h"

namespace graft::frontend {

/// Reads an .npy file. Rejects, with Error(invalid_argument) naming the file,
/// a header that lies about the data size, Fortran order, big-endian data,
/// unsupported dtypes and overflowing shapes.
Tensor load_npy(const std::string& path);
/// The same from an .npy file's bytes in memory (a member of an .npz
/// archive); errors name it `what`.
Tensor parse_npy(const std::string& bytes, const std::string& what);
/// Writes an .npy file (version 1.0). Throws Error(io) on failure.
void save_npy(const Tensor& tensor, const std::string& path);

}  // namespace graft::frontend

/// \file
/// NumPy .npz archives (np.savez and np.savez_compressed): the training
/// data of `graft train`, one array per model input.
#pragma once

#include <map>
#include <string>

#include "graft/core/tensor.h"

namespace graft::training {

/// Reads every member "<name>.npy" of the .npz archive at `path` as the
/// array `name` (frontend::parse_npy). Throws Error(io) when the file cannot
/// be read, invalid_argument naming the file and the member when it is not
/// a zip archive, a member is not an .npy file (or a bad one), a name is
/// repeated, or a member is larger than 16 GiB.
std::map<std::string, Tensor> load_npz(const std::string& path);

}  // namespace graft::training

/// \file
/// Printing what a compiled artifact holds (graft info, graft compile).
#pragma once

#include <string>

#include "graft/runtime/artifact.h"

namespace graft::cli {

/// Prints the header (format, graft version, architecture, CPU features),
/// inputs and outputs, section sizes, nodes per backend and every module.
void print_artifact_info(const std::string& path, const runtime::ArtifactInfo& info);

}  // namespace graft::cli

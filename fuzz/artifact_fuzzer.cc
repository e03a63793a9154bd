// Fuzzes compiled artifacts (.graft files) as `graft run model.graft` reads
// them (docs/artifact-format.md): restored into a Session, then run once on
// small inputs within a memory limit and a deadline.
//
// Each input is loaded twice: as it is (what a damaged file meets: the size
// and checksum checks), then with its recorded size and SHA-256 made right
// again (what a hostile or buggy writer's file meets: every parser past the
// checksum). Without the second load nearly every mutation would stop at
// the checksum.
#include <cstring>
#include <string>

#include "../src/runtime/artifact_checksum.h"
#include "../src/runtime/artifact_format.h"
#include "fuzz_support.h"
#include "graft/runtime/artifact.h"

namespace {

namespace af = graft::runtime::artifact_format;

/// `bytes` with the header's file size and the closing checksum recomputed,
/// or "" when they are too short to hold a header and a checksum or name a
/// format version this graft cannot checksum.
std::string with_checksum_restamped(std::string_view bytes) {
  if (bytes.size() < graft::runtime::kArtifactHeaderSize + graft::runtime::kArtifactChecksumSize) return {};
  std::string fixed(bytes);
  uint32_t version;
  std::memcpy(&version, fixed.data() + af::kVersionOffset, sizeof version);
  if (version == 0 || version > graft::runtime::kArtifactFormatVersion) return {};
  uint64_t size = fixed.size();
  std::memcpy(fixed.data() + af::kFileSizeOffset, &size, sizeof size);
  size_t covered = fixed.size() - graft::runtime::kArtifactChecksumSize;
  auto digest = af::artifact_checksum(reinterpret_cast<const uint8_t*>(fixed.data()), covered, version);
  std::memcpy(fixed.data() + covered, digest.data(), digest.size());
  return fixed;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  graft::fuzz::prepare_fuzzing_process();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (!graft::runtime::has_artifact_magic(bytes)) return -1;  // ONNX bytes are onnx_model_fuzzer's
  graft::fuzz::expect_graft_errors([&] { graft::fuzz::load_plan_and_run(bytes); });
  std::string restamped = with_checksum_restamped(bytes);
  if (!restamped.empty() && restamped != bytes)
    graft::fuzz::expect_graft_errors([&] { graft::fuzz::load_plan_and_run(restamped); });
  return 0;
}

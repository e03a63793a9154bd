/// \file
/// Where a tensor lives or a node runs.
#pragma once

#include <cstdint>
#include <string>

namespace graft {

/// Kind of device. Device plugins (OpenCL, CUDA) add their memory behind this tag.
enum class DeviceType : int32_t { cpu = 0, cuda = 1, opencl = 2 };

/// A device type and an ordinal, e.g. cuda:1.
struct Device {
  DeviceType type = DeviceType::cpu;
  int32_t id = 0;
  bool operator==(const Device&) const = default;
};

/// "cpu:0", "cuda:1".
std::string to_string(const Device& device);

}  // namespace graft

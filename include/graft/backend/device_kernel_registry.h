/// \file
/// What the per-node device backends (OpenCL, CUDA) share about creating a
/// node's kernel: the request a kernel factory sees (the node's concrete
/// types and constant inputs), and the registry of kernels by op, whose
/// support checks are also the backend's op-support checkers for the
/// partitioner (partition/op_support.h), so the partition report gives the
/// reason for every node a device refuses.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graft/core/error.h"
#include "graft/core/shape.h"
#include "graft/core/tensor.h"
#include "graft/ir/graph.h"
#include "graft/ir/op_schema.h"
#include "graft/partition/op_support.h"

namespace graft::backend {

/// The concrete type of one node input or output as a device kernel sees it.
struct DeviceValueType {
  DType dtype = DType::undefined;  ///< undefined for an absent optional input
  Shape shape;
  int64_t numel() const { return shape_numel(shape); }
};

/// What a kernel factory sees when it creates a node's kernel.
struct DeviceKernelRequest {
  const ir::Node& node;
  std::vector<DeviceValueType> inputs;   ///< per node input
  std::vector<DeviceValueType> outputs;  ///< per node output
  /// Per node input: its value when it is a constant of the graph (a
  /// Constant node: weights, shapes, axes), else null. Kernels read
  /// attributes-as-inputs (Reshape's shape, Slice's starts) from here; a
  /// constant the kernel reads on the device arrives as an enqueue input like
  /// any other (uploaded once by the module).
  std::vector<const Tensor*> constants;
};

/// The request for `node` of a graph whose value types are concrete (throws
/// invalid_argument naming the value when one is not).
DeviceKernelRequest make_device_kernel_request(const ir::Node& node);

/// Why no device kernel takes `node`, whatever its op: a sequence or
/// optional value, a shape not known at plan time; "" when none of these.
std::string device_kernel_precheck(const ir::Node& node);

/// A device backend's kernels by op (`Kernel`: the backend's node-kernel
/// interface). Each op registers once, at static initialization, with a
/// support check (why the request cannot run, "" when it can) and a factory.
template <typename Kernel>
class DeviceKernelRegistry {
 public:
  using Support = std::string (*)(const DeviceKernelRequest& request);
  using Factory = std::unique_ptr<Kernel> (*)(const DeviceKernelRequest& request);
  struct Registration {
    Support support = nullptr;
    Factory factory = nullptr;
  };

  /// Why the backend can run no kernel at all (CUDA without NVRTC), or "".
  using Unavailable = std::string (*)();

  /// `backend`: the backend's name ("opencl"), under which the op-support
  /// checkers register; `display_name` ("OpenCL") names it in reasons;
  /// `unavailable`, when given, is asked before each kernel's own check.
  DeviceKernelRegistry(std::string backend, std::string display_name, Unavailable unavailable = nullptr)
      : backend_(std::move(backend)), display_name_(std::move(display_name)), unavailable_(unavailable) {}

  /// Registers the kernel of `op` and the backend's op-support checker for
  /// it; a second kernel for one op aborts start-up.
  bool add(ir::OpId op, Support support, Factory factory) {
    auto [it, inserted] = kernels_.emplace(op, Registration{support, factory});
    GRAFT_CHECK(inserted, "a second ", display_name_, " kernel for ", ir::op_schema(op).qualified_name());
    partition::register_op_support(backend_, ir::op_schema(op).qualified_name(), [this](const ir::Node& node) {
      std::string why = support_of(node);
      return why.empty() ? partition::Support::yes() : partition::Support::no(why);
    });
    return true;
  }

  /// The registration of `op`, or null when the backend has no kernel for it.
  const Registration* find(ir::OpId op) const {
    auto it = kernels_.find(op);
    return it == kernels_.end() ? nullptr : &it->second;
  }

  /// Why `node` cannot run on the device ("no OpenCL kernel for Einsum",
  /// "an input shape not known at plan time", the kernel's own reason), or "".
  std::string support_of(const ir::Node& node) const {
    const Registration* kernel = find(node.op());
    if (!kernel) return "no " + display_name_ + " kernel for " + node.op_type();
    if (std::string why = device_kernel_precheck(node); !why.empty()) return why;
    if (unavailable_)
      if (std::string why = unavailable_(); !why.empty()) return why;
    return kernel->support(make_device_kernel_request(node));
  }

  /// The kernel of a node support_of() accepts.
  std::unique_ptr<Kernel> create(const ir::Node& node) const {
    const Registration* kernel = find(node.op());
    GRAFT_CHECK(kernel, "no ", display_name_, " kernel for ", node.describe());
    return kernel->factory(make_device_kernel_request(node));
  }

 private:
  std::string backend_, display_name_;
  Unavailable unavailable_ = nullptr;
  std::map<ir::OpId, Registration> kernels_;
};

}  // namespace graft::backend

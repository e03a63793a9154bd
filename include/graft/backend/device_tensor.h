/// \file
/// Tensors in device memory: a Tensor whose device() is not the CPU views a
/// Storage holding a DeviceBuffer from the device's caching pool (its data()
/// is the device handle, a cl_mem on OpenCL). Host code never reads such a
/// tensor's bytes: copy_to_host is the explicit way back.
///
///   std::shared_ptr<DeviceQueue> queue = api.create_queue(0);
///   Tensor x = make_device_tensor(DType::float32, {2, 3}, Device{DeviceType::opencl, 0}, queue);
///   api.copy_to_device(*queue, device_buffer(x), 0, host.raw_data(), host.nbytes());
///   Tensor back = copy_to_host(x, *queue);   // waits for the queue
#pragma once

#include <memory>

#include "graft/backend/device_api.h"
#include "graft/core/tensor.h"

namespace graft::backend {

/// A new tensor of `dtype` and `shape` on `device`, its memory from the
/// device's pool. When the last Tensor viewing it is destroyed, the memory
/// goes back to the pool after the work queued on `queue` so far has
/// finished (DeviceAPI::release_after), so a value may die while `queue`
/// still reads it. The tensor keeps `queue` alive.
Tensor make_device_tensor(DType dtype, const Shape& shape, Device device, std::shared_ptr<DeviceQueue> queue);
/// A tensor of `dtype` and `shape` owning `buffer` (weights a module keeps
/// resident): the memory goes back to the pool when the tensor is destroyed,
/// so the caller has waited for the work that reads it.
Tensor adopt_device_buffer(DType dtype, const Shape& shape, DeviceBuffer buffer);
/// The DeviceBuffer behind a device tensor (for copies through its
/// DeviceAPI). Throws invalid_argument for a host tensor or one not made by
/// make_device_tensor / adopt_device_buffer.
const DeviceBuffer& device_buffer(const Tensor& tensor);
/// The device handle of a device tensor (a cl_mem on OpenCL); null for one of 0 bytes.
void* device_handle(const Tensor& tensor);
/// A host copy of device tensor `tensor`, queued on `queue` after its earlier
/// work; waits for the queue. A host tensor is returned as it is.
Tensor copy_to_host(const Tensor& tensor, DeviceQueue& queue);

}  // namespace graft::backend

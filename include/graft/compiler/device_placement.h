/// \file
/// Device placement (DESIGN.md section 8): after partitioning, every node a
/// device backend took runs on that device (Node::device), and each value
/// that crosses a device boundary goes through one explicit copy node:
/// graft.CopyToDevice before the first device reader, graft.CopyToHost before
/// host readers and graph outputs. A value passed from one device node to
/// another on the same device is never copied, so consecutive device
/// subgraphs form one segment that keeps its values on the device.
#pragma once

#include "graft/ir/graph.h"
#include "graft/partition/report.h"

namespace graft::compiler {

/// Places the nodes of `graph` (partitioned: Node::backend set) on their
/// backend's device, with id `device_id` for device backends, and inserts the
/// copies, recording each in `report` (may be null). Returns the number of
/// copies inserted. Idempotent: a placed graph gets no second copies.
size_t place_on_devices(ir::Graph& graph, int device_id, partition::PartitionReport* report);

}  // namespace graft::compiler

#include "graft/frontend/onnx_tensor.h"

#include "tensor_proto.h"

namespace graft::frontend {

Tensor load_tensor_pb(const std::string& path, std::string* name) {
  std::string bytes = read_file_bytes(path, size_t{2} << 30);
  onnx::TensorProto proto;
  if (bytes.empty() || !proto.ParseFromString(bytes))
    fail(ErrorKind::invalid_model, path, ": not a valid ONNX TensorProto file");
  if (name) *name = proto.name();
  return tensor_from_proto(proto, path, "");
}

}  // namespace graft::frontend

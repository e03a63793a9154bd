/* consumer.cc's twin in C, through the C API (graft/capi/c_api.h): loads the
 * model named on its command line, runs it on ones (symbolic dimensions 1)
 * and prints the first output's shape and sum in consumer.cc's words, which
 * tests/install/install_test.sh compares. Built against the installed
 * package as C11, once with CMake (a C-only project, tests/install/c/) and
 * once with pkg-config. */
#include <stdio.h>
#include <stdlib.h>

#include "graft/capi/c_api.h"

static int failed(graft_status* status) {
  if (!status) return 0;
  fprintf(stderr, "c_consumer: %s: %s\n", graft_error_kind_name(graft_status_kind(status)),
          graft_status_message(status));
  graft_status_release(status);
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: c_consumer MODEL.onnx\n");
    return 2;
  }
  graft_session_options* options = NULL;
  graft_session* session = NULL;
  if (failed(graft_session_options_create(&options)) || failed(graft_session_options_set_threads(options, 2)) ||
      failed(graft_session_create_from_path(argv[1], options, &session))) {
    graft_session_options_release(options);
    return 1;
  }
  graft_session_options_release(options);

  size_t num_inputs = 0, num_outputs = 0;
  if (failed(graft_session_input_count(session, &num_inputs)) ||
      failed(graft_session_output_count(session, &num_outputs)) || num_inputs > 16 || num_outputs > 16)
    return 1;
  graft_tensor* inputs[16] = {NULL};
  graft_tensor* outputs[16] = {NULL};
  int rc = 1;
  for (size_t i = 0; i < num_inputs; ++i) {
    const int64_t* declared = NULL;
    int64_t rank = 0;
    int64_t dims[16];
    void* data = NULL;
    size_t bytes = 0;
    if (failed(graft_session_input_shape(session, i, &declared, &rank)) || rank < 0 || rank > 16) goto done;
    for (int64_t d = 0; d < rank; ++d) dims[d] = declared[d] >= 0 ? declared[d] : 1;
    if (failed(graft_tensor_create(GRAFT_DTYPE_FLOAT32, dims, (size_t)rank, &inputs[i])) ||
        failed(graft_tensor_data(inputs[i], &data)) || failed(graft_tensor_byte_size(inputs[i], &bytes)))
      goto done;
    for (size_t e = 0; e < bytes / sizeof(float); ++e) ((float*)data)[e] = 1.0f;
  }
  if (failed(graft_session_run(session, (const graft_tensor* const*)inputs, num_inputs, outputs, num_outputs)))
    goto done;
  {
    graft_dtype dtype;
    size_t rank = 0, bytes = 0;
    const int64_t* dims = NULL;
    void* data = NULL;
    if (failed(graft_tensor_dtype(outputs[0], &dtype)) || failed(graft_tensor_rank(outputs[0], &rank)) ||
        failed(graft_tensor_dims(outputs[0], &dims)) || failed(graft_tensor_data(outputs[0], &data)) ||
        failed(graft_tensor_byte_size(outputs[0], &bytes)) || dtype != GRAFT_DTYPE_FLOAT32)
      goto done;
    double sum = 0;
    for (size_t e = 0; e < bytes / sizeof(float); ++e) sum += ((const float*)data)[e];
    printf("output %s[", graft_dtype_name(dtype));
    for (size_t d = 0; d < rank; ++d) printf(d ? ",%lld" : "%lld", (long long)dims[d]);
    printf("] sum %.6g\n", sum);
    rc = 0;
  }
done:
  for (size_t i = 0; i < 16; ++i) {
    graft_tensor_release(inputs[i]);
    graft_tensor_release(outputs[i]);
  }
  graft_session_release(session);
  return rc;
}

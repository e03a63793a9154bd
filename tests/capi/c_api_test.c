/* graft's C API from C (compiled as C11): CTest `c_api`, after the fixture
 * `c_api_reference` has written DIR/mlp.onnx, DIR/mlp.graft, DIR/input.bin
 * and the C++ API's output DIR/output.bin.
 *
 * Runs the model from a path and from bytes (ONNX and artifact), with
 * graft-owned and caller-owned inputs and outputs, compares every result with
 * the C++ API's, and calls every function with bad arguments: each must
 * return a status of the right kind whose message names what is wrong.
 *
 * usage: c_api_tests DIR */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef __STDC_NO_THREADS__
#include <threads.h>
#endif

#include "graft/capi/c_api.h"

static int checks = 0;
static int failures = 0;

#define CHECK(cond)                                                         \
  do {                                                                      \
    ++checks;                                                               \
    if (!(cond)) {                                                          \
      ++failures;                                                           \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                       \
  } while (0)

/* The call must succeed. */
#define OK(call) expect_ok((call), #call, __LINE__)
/* The call must fail with `kind` and a message containing `needle`. */
#define FAILS(call, kind, needle) expect_error((call), #call, kind, needle, __LINE__)

static int expect_ok(graft_status* status, const char* what, int line) {
  ++checks;
  if (status == NULL) return 1;
  ++failures;
  fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, line, what, graft_error_kind_name(graft_status_kind(status)),
          graft_status_message(status));
  graft_status_release(status);
  return 0;
}

static void expect_error(graft_status* status, const char* what, graft_error_kind kind, const char* needle, int line) {
  ++checks;
  if (status == NULL) {
    ++failures;
    fprintf(stderr, "%s:%d: %s succeeded; expected %s\n", __FILE__, line, what, graft_error_kind_name(kind));
    return;
  }
  const char* message = graft_status_message(status);
  if (graft_status_kind(status) != kind || message == NULL || strstr(message, needle) == NULL) {
    ++failures;
    fprintf(stderr, "%s:%d: %s: got %s \"%s\"; expected %s with \"%s\"\n", __FILE__, line, what,
            graft_error_kind_name(graft_status_kind(status)), message ? message : "(null)",
            graft_error_kind_name(kind), needle);
  }
  graft_status_release(status);
}

/* The whole file, malloc'ed (the caller frees it); exits when it cannot be read. */
static unsigned char* read_file(const char* dir, const char* name, size_t* size) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE* f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s (run the fixture c_api_reference first)\n", path);
    exit(2);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char* bytes = malloc(n > 0 ? (size_t)n : 1);
  if (!bytes || fread(bytes, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(2);
  }
  fclose(f);
  *size = (size_t)n;
  return bytes;
}

static float* input_values;  /* [2,784] */
static float* reference;     /* [2,10]: the C++ API's output */
static const int64_t input_dims[2] = {2, 784};
static const int64_t output_dims[2] = {2, 10};

/* The output equals the C++ API's. */
static int matches_reference(const float* values) {
  for (int i = 0; i < 20; ++i)
    if (!(fabsf(values[i] - reference[i]) <= 1e-4f * (1.0f + fabsf(reference[i])))) {
      fprintf(stderr, "output[%d] = %.9g, the C++ API gave %.9g\n", i, values[i], reference[i]);
      return 0;
    }
  return 1;
}

/* Describes the MLP: one input "input" float32 [-1,784], one output "output" float32 [-1,10]. */
static void check_description(const graft_session* session, int64_t batch) {
  size_t count = 0;
  const char* name = NULL;
  graft_dtype dtype = GRAFT_DTYPE_UNDEFINED;
  const int64_t* dims = NULL;
  int64_t rank = 0;
  if (OK(graft_session_input_count(session, &count))) CHECK(count == 1);
  if (OK(graft_session_output_count(session, &count))) CHECK(count == 1);
  if (OK(graft_session_input_name(session, 0, &name))) CHECK(strcmp(name, "input") == 0);
  if (OK(graft_session_output_name(session, 0, &name))) CHECK(strcmp(name, "output") == 0);
  if (OK(graft_session_input_dtype(session, 0, &dtype))) CHECK(dtype == GRAFT_DTYPE_FLOAT32);
  if (OK(graft_session_output_dtype(session, 0, &dtype))) CHECK(dtype == GRAFT_DTYPE_FLOAT32);
  if (OK(graft_session_input_shape(session, 0, &dims, &rank))) {
    CHECK(rank == 2);
    if (rank == 2) CHECK(dims[0] == batch && dims[1] == 784);
  }
  if (OK(graft_session_output_shape(session, 0, &dims, &rank))) {
    CHECK(rank == 2);
    if (rank == 2) CHECK(dims[0] == batch && dims[1] == 10);
  }
  /* The symbolic dimension is named; a known one is not. */
  if (OK(graft_session_input_dim_name(session, 0, 0, &name))) CHECK(strcmp(name, batch < 0 ? "batch" : "") == 0);
  if (OK(graft_session_input_dim_name(session, 0, 1, &name))) CHECK(strcmp(name, "") == 0);
  if (OK(graft_session_output_dim_name(session, 0, 0, &name))) CHECK(strcmp(name, batch < 0 ? "batch" : "") == 0);
}

/* Runs `session` with a graft-owned input and with a caller-owned one,
 * into graft-owned and caller-owned outputs; each result must match. */
static void check_runs(const graft_session* session) {
  /* A graft-owned input, filled through its data pointer. */
  graft_tensor* input = NULL;
  if (!OK(graft_tensor_create(GRAFT_DTYPE_FLOAT32, input_dims, 2, &input))) return;
  void* data = NULL;
  size_t bytes = 0;
  OK(graft_tensor_data(input, &data));
  OK(graft_tensor_byte_size(input, &bytes));
  CHECK(bytes == sizeof(float) * 2 * 784);
  CHECK(data != NULL);
  if (data) memcpy(data, input_values, bytes);

  graft_tensor* output = NULL;
  const graft_tensor* inputs[1] = {input};
  if (OK(graft_session_run(session, inputs, 1, &output, 1))) {
    graft_dtype dtype = GRAFT_DTYPE_UNDEFINED;
    size_t rank = 0;
    const int64_t* dims = NULL;
    void* values = NULL;
    OK(graft_tensor_dtype(output, &dtype));
    OK(graft_tensor_rank(output, &rank));
    OK(graft_tensor_dims(output, &dims));
    OK(graft_tensor_byte_size(output, &bytes));
    OK(graft_tensor_data(output, &values));
    CHECK(dtype == GRAFT_DTYPE_FLOAT32);
    CHECK(rank == 2 && dims != NULL && dims[0] == 2 && dims[1] == 10);
    CHECK(bytes == 20 * sizeof(float));
    CHECK(values != NULL && matches_reference(values));
    graft_tensor_release(output);
  }

  /* A caller-owned input (no copy) and a caller-owned output. */
  float* own_input = malloc(sizeof(float) * 2 * 784);
  float own_output[20];
  memcpy(own_input, input_values, sizeof(float) * 2 * 784);
  graft_tensor* borrowed = NULL;
  graft_tensor* into = NULL;
  if (OK(graft_tensor_create_over(GRAFT_DTYPE_FLOAT32, input_dims, 2, own_input, sizeof(float) * 2 * 784, &borrowed)) &&
      OK(graft_tensor_create_over(GRAFT_DTYPE_FLOAT32, output_dims, 2, own_output, sizeof own_output, &into))) {
    void* seen = NULL;
    OK(graft_tensor_data(borrowed, &seen));
    CHECK(seen == own_input);  /* no copy */
    const graft_tensor* borrowed_inputs[1] = {borrowed};
    graft_tensor* const outputs[1] = {into};
    memset(own_output, 0, sizeof own_output);
    if (OK(graft_session_run_into(session, borrowed_inputs, 1, outputs, 1))) CHECK(matches_reference(own_output));
    if (OK(graft_session_run(session, borrowed_inputs, 1, &output, 1))) {
      void* values = NULL;
      OK(graft_tensor_data(output, &values));
      CHECK(values != NULL && values != (void*)own_input && matches_reference(values));
      graft_tensor_release(output);
    }
  }
  graft_tensor_release(into);
  graft_tensor_release(borrowed);
  free(own_input);
  graft_tensor_release(input);
}

static void test_versions(void) {
  const char* version = graft_version();
  CHECK(version != NULL && strcmp(version, GRAFT_VERSION) == 0);
  CHECK(graft_c_api_version() == GRAFT_C_API_VERSION);
  CHECK(graft_artifact_format_version() >= 4);
  CHECK(strcmp(graft_error_kind_name(GRAFT_ERROR_INVALID_MODEL), "invalid_model") == 0);
  CHECK(strcmp(graft_error_kind_name(GRAFT_ERROR_UNSUPPORTED), "unsupported") == 0);
  CHECK(strcmp(graft_error_kind_name(GRAFT_ERROR_INVALID_ARGUMENT), "invalid_argument") == 0);
  CHECK(strcmp(graft_error_kind_name(GRAFT_ERROR_IO), "io") == 0);
  CHECK(strcmp(graft_error_kind_name(GRAFT_ERROR_INTERNAL), "internal") == 0);
  CHECK(strcmp(graft_error_kind_name(GRAFT_ERROR_RESOURCE_EXHAUSTED), "resource_exhausted") == 0);
  CHECK(strcmp(graft_error_kind_name(GRAFT_ERROR_CANCELLED), "cancelled") == 0);
  CHECK(strcmp(graft_error_kind_name((graft_error_kind)42), "unknown") == 0);
  CHECK(strcmp(graft_dtype_name(GRAFT_DTYPE_FLOAT32), "float32") == 0);
  CHECK(strcmp(graft_dtype_name(GRAFT_DTYPE_INT64), "int64") == 0);
  CHECK(strcmp(graft_dtype_name((graft_dtype)99), "unknown") == 0);
  CHECK(graft_dtype_size(GRAFT_DTYPE_FLOAT32) == 4);
  CHECK(graft_dtype_size(GRAFT_DTYPE_FLOAT16) == 2);
  CHECK(graft_dtype_size(GRAFT_DTYPE_BOOL) == 1);
  CHECK(graft_dtype_size(GRAFT_DTYPE_STRING) == 0);
  CHECK(graft_dtype_size((graft_dtype)-3) == 0);
  /* A NULL status reads as nothing; releasing NULL handles does nothing. */
  CHECK(strcmp(graft_status_message(NULL), "") == 0);
  CHECK(graft_status_kind(NULL) == GRAFT_ERROR_INTERNAL);
  graft_status_release(NULL);
  graft_session_release(NULL);
  graft_session_options_release(NULL);
  graft_tensor_release(NULL);
}

static void test_options_errors(void) {
  graft_session_options* options = NULL;
  FAILS(graft_session_options_create(NULL), GRAFT_ERROR_INVALID_ARGUMENT, "graft_session_options_create: out is NULL");
  if (!OK(graft_session_options_create(&options))) return;
  FAILS(graft_session_options_set_threads(NULL, 2), GRAFT_ERROR_INVALID_ARGUMENT, "options is NULL");
  FAILS(graft_session_options_set_threads(options, -1), GRAFT_ERROR_INVALID_ARGUMENT, "-1 threads is out of range");
  FAILS(graft_session_options_set_threads(options, 5000), GRAFT_ERROR_INVALID_ARGUMENT, "5000 threads is out of range");
  OK(graft_session_options_set_threads(options, 0));
  OK(graft_session_options_set_threads(options, 1024));
  FAILS(graft_session_options_set_backends(NULL, "ref"), GRAFT_ERROR_INVALID_ARGUMENT, "options is NULL");
  FAILS(graft_session_options_set_backends(options, "nosuch"), GRAFT_ERROR_INVALID_ARGUMENT, "unknown backend 'nosuch'");
  FAILS(graft_session_options_set_backends(options, "fuse,nosuch"), GRAFT_ERROR_INVALID_ARGUMENT,
        "unknown backend 'nosuch'");
  FAILS(graft_session_options_set_backends(options, "fuse,,ref"), GRAFT_ERROR_INVALID_ARGUMENT, "empty backend name");
  FAILS(graft_session_options_set_backends(options, "fuse,"), GRAFT_ERROR_INVALID_ARGUMENT, "empty backend name");
  OK(graft_session_options_set_backends(options, "fuse,ref"));
  OK(graft_session_options_set_backends(options, ""));
  OK(graft_session_options_set_backends(options, NULL));
  FAILS(graft_session_options_set_fusion(NULL, 1), GRAFT_ERROR_INVALID_ARGUMENT, "options is NULL");
  OK(graft_session_options_set_fusion(options, 0));
  FAILS(graft_session_options_set_device(NULL, "cpu"), GRAFT_ERROR_INVALID_ARGUMENT, "options is NULL");
  FAILS(graft_session_options_set_device(options, "gpu"), GRAFT_ERROR_INVALID_ARGUMENT, "device 'gpu'");
  FAILS(graft_session_options_set_device(options, "opencl:x"), GRAFT_ERROR_INVALID_ARGUMENT, "opencl:x");
  OK(graft_session_options_set_device(options, "opencl:0"));
  OK(graft_session_options_set_device(options, NULL));
  FAILS(graft_session_options_set_max_memory(NULL, 1), GRAFT_ERROR_INVALID_ARGUMENT, "options is NULL");
  OK(graft_session_options_set_max_memory(options, 1u << 30));
  graft_session_options_release(options);
}

static void test_load_errors(const char* dir, const unsigned char* onnx, size_t onnx_size, const unsigned char* artifact,
                             size_t artifact_size) {
  graft_session* session = NULL;
  char path[4096];
  FAILS(graft_session_create_from_path(NULL, NULL, &session), GRAFT_ERROR_INVALID_ARGUMENT, "path is NULL");
  FAILS(graft_session_create_from_path("", NULL, &session), GRAFT_ERROR_INVALID_ARGUMENT, "path is empty");
  snprintf(path, sizeof path, "%s/mlp.onnx", dir);
  FAILS(graft_session_create_from_path(path, NULL, NULL), GRAFT_ERROR_INVALID_ARGUMENT, "out is NULL");
  snprintf(path, sizeof path, "%s/no-such-model.onnx", dir);
  FAILS(graft_session_create_from_path(path, NULL, &session), GRAFT_ERROR_IO, "no-such-model.onnx");
  snprintf(path, sizeof path, "%s/no-such-model.graft", dir);
  FAILS(graft_session_create_from_path(path, NULL, &session), GRAFT_ERROR_IO, "no-such-model.graft");
  /* A file that is not a model. */
  snprintf(path, sizeof path, "%s/input.bin", dir);
  FAILS(graft_session_create_from_path(path, NULL, &session), GRAFT_ERROR_INVALID_MODEL, "input.bin");

  static const char garbage[] = "this is not an ONNX model, nor an artifact";
  FAILS(graft_session_create_from_bytes(garbage, sizeof garbage, NULL, &session), GRAFT_ERROR_INVALID_MODEL,
        "<ONNX bytes>");
  FAILS(graft_session_create_from_bytes(NULL, 10, NULL, &session), GRAFT_ERROR_INVALID_ARGUMENT, "data");
  FAILS(graft_session_create_from_bytes(onnx, 0, NULL, &session), GRAFT_ERROR_INVALID_MODEL, "size 0");
  FAILS(graft_session_create_from_bytes(onnx, onnx_size, NULL, NULL), GRAFT_ERROR_INVALID_ARGUMENT, "out is NULL");
  /* Cut short: the ONNX bytes in the middle of the weights, the artifact before its checksum. */
  FAILS(graft_session_create_from_bytes(onnx, onnx_size / 2, NULL, &session), GRAFT_ERROR_INVALID_MODEL,
        "<ONNX bytes>");
  FAILS(graft_session_create_from_bytes(artifact, artifact_size - 7, NULL, &session), GRAFT_ERROR_INVALID_MODEL,
        "<artifact bytes>");
  /* The artifact's magic and format version followed by garbage; and a
   * format version from the future. */
  unsigned char fake[256];
  memset(fake, 0x5a, sizeof fake);
  memcpy(fake, artifact, 12);
  FAILS(graft_session_create_from_bytes(fake, sizeof fake, NULL, &session), GRAFT_ERROR_INVALID_MODEL,
        "<artifact bytes>");
  memset(fake + 8, 0x5a, 4);
  FAILS(graft_session_create_from_bytes(fake, sizeof fake, NULL, &session), GRAFT_ERROR_UNSUPPORTED,
        "built by a newer graft");
  CHECK(session == NULL);  /* no failure wrote it */
}

static void test_session_errors(graft_session* session) {
  size_t count = 0;
  const char* name = NULL;
  graft_dtype dtype = GRAFT_DTYPE_UNDEFINED;
  const int64_t* dims = NULL;
  int64_t rank = 0;
  FAILS(graft_session_input_count(NULL, &count), GRAFT_ERROR_INVALID_ARGUMENT, "session is NULL");
  FAILS(graft_session_input_count(session, NULL), GRAFT_ERROR_INVALID_ARGUMENT, "out is NULL");
  FAILS(graft_session_output_count(NULL, &count), GRAFT_ERROR_INVALID_ARGUMENT, "session is NULL");
  FAILS(graft_session_output_count(session, NULL), GRAFT_ERROR_INVALID_ARGUMENT, "out is NULL");
  FAILS(graft_session_input_name(NULL, 0, &name), GRAFT_ERROR_INVALID_ARGUMENT, "session is NULL");
  FAILS(graft_session_input_name(session, 1, &name), GRAFT_ERROR_INVALID_ARGUMENT, "input index 1 is out of range");
  FAILS(graft_session_input_name(session, 0, NULL), GRAFT_ERROR_INVALID_ARGUMENT, "out is NULL");
  FAILS(graft_session_output_name(session, 5, &name), GRAFT_ERROR_INVALID_ARGUMENT, "output index 5 is out of range");
  FAILS(graft_session_output_name(session, 0, NULL), GRAFT_ERROR_INVALID_ARGUMENT, "out is NULL");
  FAILS(graft_session_input_dtype(NULL, 0, &dtype), GRAFT_ERROR_INVALID_ARGUMENT, "session is NULL");
  FAILS(graft_session_input_dtype(session, 3, &dtype), GRAFT_ERROR_INVALID_ARGUMENT, "out of range");
  FAILS(graft_session_output_dtype(session, 0, NULL), GRAFT_ERROR_INVALID_ARGUMENT, "out is NULL");
  FAILS(graft_session_input_shape(session, 0, NULL, &rank), GRAFT_ERROR_INVALID_ARGUMENT, "dims is NULL");
  FAILS(graft_session_input_shape(session, 0, &dims, NULL), GRAFT_ERROR_INVALID_ARGUMENT, "rank is NULL");
  FAILS(graft_session_output_shape(session, 1, &dims, &rank), GRAFT_ERROR_INVALID_ARGUMENT, "out of range");
  FAILS(graft_session_output_shape(NULL, 0, &dims, &rank), GRAFT_ERROR_INVALID_ARGUMENT, "session is NULL");
  FAILS(graft_session_input_dim_name(NULL, 0, 0, &name), GRAFT_ERROR_INVALID_ARGUMENT, "session is NULL");
  FAILS(graft_session_input_dim_name(session, 1, 0, &name), GRAFT_ERROR_INVALID_ARGUMENT, "input index 1");
  FAILS(graft_session_input_dim_name(session, 0, 2, &name), GRAFT_ERROR_INVALID_ARGUMENT,
        "dimension 2 of 'input' is out of range (rank 2)");
  FAILS(graft_session_output_dim_name(session, 0, 0, NULL), GRAFT_ERROR_INVALID_ARGUMENT, "out is NULL");
}

static void test_tensor_errors(void) {
  graft_tensor* tensor = NULL;
  const int64_t dims[2] = {2, 3};
  const int64_t negative[2] = {2, -3};
  float buffer[6];
  FAILS(graft_tensor_create(GRAFT_DTYPE_FLOAT32, dims, 2, NULL), GRAFT_ERROR_INVALID_ARGUMENT, "out is NULL");
  FAILS(graft_tensor_create(GRAFT_DTYPE_STRING, dims, 2, &tensor), GRAFT_ERROR_INVALID_ARGUMENT, "dtype 8 (string)");
  FAILS(graft_tensor_create(GRAFT_DTYPE_UNDEFINED, dims, 2, &tensor), GRAFT_ERROR_INVALID_ARGUMENT, "dtype 0");
  FAILS(graft_tensor_create((graft_dtype)99, dims, 2, &tensor), GRAFT_ERROR_INVALID_ARGUMENT, "dtype 99");
  FAILS(graft_tensor_create(GRAFT_DTYPE_FLOAT32, negative, 2, &tensor), GRAFT_ERROR_INVALID_ARGUMENT,
        "dimension 1 is -3");
  FAILS(graft_tensor_create(GRAFT_DTYPE_FLOAT32, NULL, 2, &tensor), GRAFT_ERROR_INVALID_ARGUMENT, "dims");
  FAILS(graft_tensor_create_over(GRAFT_DTYPE_FLOAT32, dims, 2, buffer, sizeof buffer - 4, &tensor),
        GRAFT_ERROR_INVALID_ARGUMENT, "byte_size 20 for float32[2,3], which takes 24 bytes");
  FAILS(graft_tensor_create_over(GRAFT_DTYPE_FLOAT32, dims, 2, buffer, sizeof buffer + 4, &tensor),
        GRAFT_ERROR_INVALID_ARGUMENT, "byte_size 28");
  FAILS(graft_tensor_create_over(GRAFT_DTYPE_FLOAT32, dims, 2, NULL, sizeof buffer, &tensor),
        GRAFT_ERROR_INVALID_ARGUMENT, "data");
  FAILS(graft_tensor_create_over(GRAFT_DTYPE_FLOAT32, dims, 2, (char*)buffer + 1, sizeof buffer, &tensor),
        GRAFT_ERROR_INVALID_ARGUMENT, "not aligned");
  FAILS(graft_tensor_create_over(GRAFT_DTYPE_COMPLEX64, dims, 2, buffer, sizeof buffer, &tensor),
        GRAFT_ERROR_INVALID_ARGUMENT, "dtype 14");
  FAILS(graft_tensor_create_over(GRAFT_DTYPE_FLOAT32, dims, 2, buffer, sizeof buffer, NULL),
        GRAFT_ERROR_INVALID_ARGUMENT, "out is NULL");
  CHECK(tensor == NULL);

  /* Accessors of a NULL tensor, and NULL out-pointers. */
  graft_dtype dtype;
  size_t size;
  const int64_t* dims_out;
  void* data;
  FAILS(graft_tensor_dtype(NULL, &dtype), GRAFT_ERROR_INVALID_ARGUMENT, "tensor is NULL");
  FAILS(graft_tensor_rank(NULL, &size), GRAFT_ERROR_INVALID_ARGUMENT, "tensor is NULL");
  FAILS(graft_tensor_dims(NULL, &dims_out), GRAFT_ERROR_INVALID_ARGUMENT, "tensor is NULL");
  FAILS(graft_tensor_data(NULL, &data), GRAFT_ERROR_INVALID_ARGUMENT, "tensor is NULL");
  FAILS(graft_tensor_byte_size(NULL, &size), GRAFT_ERROR_INVALID_ARGUMENT, "tensor is NULL");
  if (OK(graft_tensor_create_over(GRAFT_DTYPE_FLOAT32, dims, 2, buffer, sizeof buffer, &tensor))) {
    FAILS(graft_tensor_dtype(tensor, NULL), GRAFT_ERROR_INVALID_ARGUMENT, "graft_tensor_dtype: out is NULL");
    FAILS(graft_tensor_rank(tensor, NULL), GRAFT_ERROR_INVALID_ARGUMENT, "graft_tensor_rank: out is NULL");
    FAILS(graft_tensor_dims(tensor, NULL), GRAFT_ERROR_INVALID_ARGUMENT, "graft_tensor_dims: out is NULL");
    FAILS(graft_tensor_data(tensor, NULL), GRAFT_ERROR_INVALID_ARGUMENT, "graft_tensor_data: out is NULL");
    FAILS(graft_tensor_byte_size(tensor, NULL), GRAFT_ERROR_INVALID_ARGUMENT, "graft_tensor_byte_size: out is NULL");
    graft_tensor_release(tensor);
  }
  /* A scalar (rank 0, dims NULL) and an empty tensor are fine. */
  if (OK(graft_tensor_create(GRAFT_DTYPE_INT64, NULL, 0, &tensor))) {
    size_t rank = 9;
    OK(graft_tensor_rank(tensor, &rank));
    OK(graft_tensor_byte_size(tensor, &size));
    CHECK(rank == 0 && size == 8);
    graft_tensor_release(tensor);
  }
  const int64_t empty_dims[2] = {0, 5};
  if (OK(graft_tensor_create_over(GRAFT_DTYPE_FLOAT32, empty_dims, 2, NULL, 0, &tensor))) {
    OK(graft_tensor_byte_size(tensor, &size));
    CHECK(size == 0);
    graft_tensor_release(tensor);
  }
}

static void test_run_errors(graft_session* session) {
  graft_tensor* input = NULL;
  graft_tensor* wrong_dtype = NULL;
  graft_tensor* wrong_shape = NULL;
  graft_tensor* wrong_rank = NULL;
  graft_tensor* output = NULL;
  graft_tensor* small_output = NULL;
  graft_tensor* int_output = NULL;
  const int64_t dims_783[2] = {2, 783};
  const int64_t dims_1d[1] = {1568};
  const int64_t dims_2_9[2] = {2, 9};
  OK(graft_tensor_create(GRAFT_DTYPE_FLOAT32, input_dims, 2, &input));
  OK(graft_tensor_create(GRAFT_DTYPE_INT64, input_dims, 2, &wrong_dtype));
  OK(graft_tensor_create(GRAFT_DTYPE_FLOAT32, dims_783, 2, &wrong_shape));
  OK(graft_tensor_create(GRAFT_DTYPE_FLOAT32, dims_1d, 1, &wrong_rank));
  OK(graft_tensor_create(GRAFT_DTYPE_FLOAT32, dims_2_9, 2, &small_output));
  OK(graft_tensor_create(GRAFT_DTYPE_INT32, output_dims, 2, &int_output));
  const graft_tensor* inputs[2] = {input, input};
  const graft_tensor* null_input[1] = {NULL};
  const graft_tensor* int_input[1] = {wrong_dtype};
  const graft_tensor* shape_input[1] = {wrong_shape};
  const graft_tensor* rank_input[1] = {wrong_rank};
  graft_tensor* outputs[2] = {NULL, NULL};

  FAILS(graft_session_run(NULL, inputs, 1, outputs, 1), GRAFT_ERROR_INVALID_ARGUMENT, "session is NULL");
  FAILS(graft_session_run(session, inputs, 2, outputs, 1), GRAFT_ERROR_INVALID_ARGUMENT,
        "2 inputs given, the model has 1");
  FAILS(graft_session_run(session, inputs, 0, outputs, 1), GRAFT_ERROR_INVALID_ARGUMENT,
        "0 inputs given, the model has 1");
  FAILS(graft_session_run(session, NULL, 1, outputs, 1), GRAFT_ERROR_INVALID_ARGUMENT, "inputs is NULL");
  FAILS(graft_session_run(session, null_input, 1, outputs, 1), GRAFT_ERROR_INVALID_ARGUMENT,
        "inputs[0] ('input') is NULL");
  FAILS(graft_session_run(session, inputs, 1, outputs, 2), GRAFT_ERROR_INVALID_ARGUMENT,
        "room for 2 outputs given, the model has 1");
  FAILS(graft_session_run(session, inputs, 1, NULL, 1), GRAFT_ERROR_INVALID_ARGUMENT, "outputs is NULL");
  FAILS(graft_session_run(session, int_input, 1, outputs, 1), GRAFT_ERROR_INVALID_ARGUMENT, "input");
  FAILS(graft_session_run(session, shape_input, 1, outputs, 1), GRAFT_ERROR_INVALID_ARGUMENT, "input");
  FAILS(graft_session_run(session, rank_input, 1, outputs, 1), GRAFT_ERROR_INVALID_ARGUMENT, "input");
  CHECK(outputs[0] == NULL && outputs[1] == NULL);  /* no failure wrote them */

  graft_tensor* const no_output[1] = {NULL};
  graft_tensor* const small[1] = {small_output};
  graft_tensor* const ints[1] = {int_output};
  FAILS(graft_session_run_into(NULL, inputs, 1, small, 1), GRAFT_ERROR_INVALID_ARGUMENT, "session is NULL");
  FAILS(graft_session_run_into(session, inputs, 1, NULL, 1), GRAFT_ERROR_INVALID_ARGUMENT, "outputs is NULL");
  FAILS(graft_session_run_into(session, inputs, 1, no_output, 1), GRAFT_ERROR_INVALID_ARGUMENT,
        "outputs[0] ('output') is NULL");
  FAILS(graft_session_run_into(session, inputs, 1, small, 0), GRAFT_ERROR_INVALID_ARGUMENT,
        "room for 0 outputs given");
  FAILS(graft_session_run_into(session, inputs, 1, small, 1), GRAFT_ERROR_INVALID_ARGUMENT,
        "outputs[0] ('output') is float32[2,9], the run produced float32[2,10]");
  FAILS(graft_session_run_into(session, inputs, 1, ints, 1), GRAFT_ERROR_INVALID_ARGUMENT,
        "outputs[0] ('output') is int32[2,10], the run produced float32[2,10]");
  FAILS(graft_session_run_into(session, int_input, 1, small, 1), GRAFT_ERROR_INVALID_ARGUMENT, "input");

  graft_tensor_release(input);
  graft_tensor_release(wrong_dtype);
  graft_tensor_release(wrong_shape);
  graft_tensor_release(wrong_rank);
  graft_tensor_release(output);
  graft_tensor_release(small_output);
  graft_tensor_release(int_output);
}

/* Outputs that are an input passed through, twice, and a weight: each is the
 * caller's own memory, shared with nothing (writing one changes nothing else). */
static void test_passthrough(const char* dir) {
  char path[4096];
  graft_session* session = NULL;
  snprintf(path, sizeof path, "%s/passthrough.onnx", dir);
  if (!OK(graft_session_create_from_path(path, NULL, &session))) return;
  size_t count = 0;
  if (OK(graft_session_output_count(session, &count))) CHECK(count == 3);
  float x[6] = {1, 2, 3, 4, 5, 6};
  const int64_t dims[2] = {2, 3};
  graft_tensor* input = NULL;
  graft_tensor* outputs[3] = {NULL, NULL, NULL};
  if (OK(graft_tensor_create_over(GRAFT_DTYPE_FLOAT32, dims, 2, x, sizeof x, &input))) {
    const graft_tensor* inputs[1] = {input};
    for (int run = 0; run < 2; ++run) {
      if (!OK(graft_session_run(session, inputs, 1, outputs, 3))) break;
      float* y = NULL;
      float* y2 = NULL;
      float* c = NULL;
      OK(graft_tensor_data(outputs[0], (void**)&y));
      OK(graft_tensor_data(outputs[1], (void**)&y2));
      OK(graft_tensor_data(outputs[2], (void**)&c));
      CHECK(y != NULL && y2 != NULL && c != NULL && y != x && y2 != x && y != y2);
      if (y && y2 && c) {
        CHECK(y[0] == 1 && y[5] == 6 && y2[0] == 1 && y2[5] == 6);
        CHECK(c[0] == 1 && c[1] == 2 && c[2] == 3);  /* the weight, unchanged by the run before */
        y[0] = 100;
        c[0] = 100;
        CHECK(x[0] == 1 && y2[0] == 1);
      }
      for (int i = 0; i < 3; ++i) {
        graft_tensor_release(outputs[i]);
        outputs[i] = NULL;
      }
    }
    graft_tensor_release(input);
  }
  graft_session_release(session);
}

/* A model whose output is a sequence: described, but not passed through the C API. */
static void test_sequence_output(const char* dir) {
  char path[4096];
  graft_session* session = NULL;
  snprintf(path, sizeof path, "%s/sequence.onnx", dir);
  if (!OK(graft_session_create_from_path(path, NULL, &session))) return;
  const int64_t* dims = NULL;
  int64_t rank = 0;
  const char* name = NULL;
  FAILS(graft_session_output_shape(session, 0, &dims, &rank), GRAFT_ERROR_UNSUPPORTED,
        "'s' is a sequence or an optional");
  FAILS(graft_session_output_dim_name(session, 0, 0, &name), GRAFT_ERROR_UNSUPPORTED, "'s' is a sequence");
  const int64_t shape[2] = {2, 3};
  graft_tensor* input = NULL;
  graft_tensor* output = NULL;
  if (OK(graft_tensor_create(GRAFT_DTYPE_FLOAT32, shape, 2, &input))) {
    const graft_tensor* inputs[1] = {input};
    FAILS(graft_session_run(session, inputs, 1, &output, 1), GRAFT_ERROR_UNSUPPORTED,
          "output 's' is sequence<float32>");
    CHECK(output == NULL);
    graft_tensor_release(input);
  }
  graft_session_release(session);
}

#ifndef __STDC_NO_THREADS__
/* Runs on one session from several threads at once, each with its own tensors. */
static int run_in_thread(void* arg) {
  const graft_session* session = arg;
  int good = 1;
  for (int run = 0; run < 5 && good; ++run) {
    graft_tensor* input = NULL;
    graft_tensor* output = NULL;
    void* data = NULL;
    graft_status* status = graft_tensor_create(GRAFT_DTYPE_FLOAT32, input_dims, 2, &input);
    if (!status) status = graft_tensor_data(input, &data);
    if (!status) {
      memcpy(data, input_values, sizeof(float) * 2 * 784);
      const graft_tensor* inputs[1] = {input};
      status = graft_session_run(session, inputs, 1, &output, 1);
    }
    if (!status) status = graft_tensor_data(output, &data);
    good = !status && matches_reference(data);
    graft_status_release(status);
    graft_tensor_release(output);
    graft_tensor_release(input);
  }
  return good;
}

static void test_threads(const char* dir) {
  char path[4096];
  graft_session* session = NULL;
  snprintf(path, sizeof path, "%s/mlp.onnx", dir);
  if (!OK(graft_session_create_from_path(path, NULL, &session))) return;
  thrd_t threads[4];
  int started = 0;
  for (int i = 0; i < 4; ++i)
    if (thrd_create(&threads[i], run_in_thread, session) == thrd_success) ++started;
  CHECK(started == 4);
  for (int i = 0; i < started; ++i) {
    int good = 0;
    thrd_join(threads[i], &good);
    CHECK(good);
  }
  graft_session_release(session);
}
#endif

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: c_api_tests DIR (written by c_api_reference)\n");
    return 2;
  }
  const char* dir = argv[1];
  size_t size = 0, onnx_size = 0, artifact_size = 0;
  input_values = (float*)read_file(dir, "input.bin", &size);
  if (size != sizeof(float) * 2 * 784) return fprintf(stderr, "input.bin: %zu bytes\n", size), 2;
  reference = (float*)read_file(dir, "output.bin", &size);
  if (size != sizeof(float) * 2 * 10) return fprintf(stderr, "output.bin: %zu bytes\n", size), 2;
  unsigned char* onnx = read_file(dir, "mlp.onnx", &onnx_size);
  unsigned char* artifact = read_file(dir, "mlp.graft", &artifact_size);

  test_versions();
  test_options_errors();
  test_tensor_errors();
  test_load_errors(dir, onnx, onnx_size, artifact, artifact_size);

  char path[4096];
  graft_session* session = NULL;
  graft_session_options* options = NULL;

  /* From a path, default options (as the C++ reference ran). */
  snprintf(path, sizeof path, "%s/mlp.onnx", dir);
  if (OK(graft_session_create_from_path(path, NULL, &session))) {
    check_description(session, -1);
    check_runs(session);
    test_session_errors(session);
    test_run_errors(session);
    graft_session_release(session);
    session = NULL;
  }

  /* From ONNX bytes, with options; the options may go before the session. */
  if (OK(graft_session_options_create(&options))) {
    OK(graft_session_options_set_threads(options, 2));
    OK(graft_session_options_set_backends(options, "fuse,ref"));
    OK(graft_session_options_set_fusion(options, 1));
    if (OK(graft_session_create_from_bytes(onnx, onnx_size, options, &session))) {
      graft_session_options_release(options);
      options = NULL;
      check_description(session, -1);
      check_runs(session);
      graft_session_release(session);
      session = NULL;
    }
    graft_session_options_release(options);
    options = NULL;
  }

  /* Fusion off, one thread. */
  if (OK(graft_session_options_create(&options))) {
    OK(graft_session_options_set_threads(options, 1));
    OK(graft_session_options_set_fusion(options, 0));
    if (OK(graft_session_create_from_path(path, options, &session))) {
      check_runs(session);
      graft_session_release(session);
      session = NULL;
    }
    graft_session_options_release(options);
    options = NULL;
  }

  /* On the OpenCL device when there is one (PoCL in CI): the same outputs.
   * Without one, creating the session says why. */
  if (OK(graft_session_options_create(&options))) {
    OK(graft_session_options_set_device(options, "opencl"));
    graft_status* status = graft_session_create_from_path(path, options, &session);
    if (status == NULL) {
      check_runs(session);
      graft_session_release(session);
      session = NULL;
    } else {
      CHECK(graft_status_kind(status) == GRAFT_ERROR_UNSUPPORTED);
      CHECK(strstr(graft_status_message(status), "opencl:0") != NULL);
      graft_status_release(status);
    }
    graft_session_options_release(options);
    options = NULL;
  }

  /* A compiled artifact, from its path and from its bytes: the batch is 2. */
  snprintf(path, sizeof path, "%s/mlp.graft", dir);
  if (OK(graft_session_create_from_path(path, NULL, &session))) {
    check_description(session, 2);
    check_runs(session);
    graft_session_release(session);
    session = NULL;
  }
  if (OK(graft_session_create_from_bytes(artifact, artifact_size, NULL, &session))) {
    check_description(session, 2);
    check_runs(session);
    /* The artifact is compiled for batch 2: batch 1 is refused. */
    const int64_t one[2] = {1, 784};
    graft_tensor* input = NULL;
    graft_tensor* output = NULL;
    if (OK(graft_tensor_create(GRAFT_DTYPE_FLOAT32, one, 2, &input))) {
      const graft_tensor* inputs[1] = {input};
      FAILS(graft_session_run(session, inputs, 1, &output, 1), GRAFT_ERROR_INVALID_ARGUMENT, "input");
      graft_tensor_release(input);
    }
    graft_session_release(session);
    session = NULL;
  }

  /* The artifact's header holds the format version this graft writes. */
  uint32_t format = 0;
  memcpy(&format, artifact + 8, sizeof format);
  CHECK(format == (uint32_t)graft_artifact_format_version());

  test_passthrough(dir);
  test_sequence_output(dir);
#ifndef __STDC_NO_THREADS__
  test_threads(dir);
#endif

  free(onnx);
  free(artifact);
  free(input_values);
  free(reference);
  printf("c_api: %d checks, %d failed\n", checks, failures);
  return failures == 0 ? 0 : 1;
}

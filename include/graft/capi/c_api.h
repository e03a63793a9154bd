/* graft's C API: load a model, describe its inputs and outputs, run it.
 *
 * For programs in C and for bindings in other languages (the C++ API is
 * graft/frontend/load_model.h). Compiles as C11 and as C++; holds no C++
 * types, and no exception crosses it: every entry point catches everything.
 *
 * Where it lives: the `capi` component (include/graft/capi/, src/capi/), the
 * top layer of the tree, above the frontend facade it is built on
 * (docs/design-notes.md "Components and layers", scripts/check_layers.py).
 * Include it as "graft/capi/c_api.h"; link libgraft (graft::graft, or
 * `pkg-config --libs graft`). docs/embedding.md "From C" shows a use.
 *
 * Conventions, true of every function below unless it says otherwise:
 *
 * - Errors. A function that can fail returns `graft_status*`: NULL on
 *   success, else a status object that the CALLER OWNS and releases with
 *   graft_status_release(). It carries a kind (graft_error_kind, the C form
 *   of graft::ErrorKind) and a message naming what is wrong. On failure no
 *   out-parameter is written.
 * - Handles. graft_session, graft_tensor, graft_session_options and
 *   graft_status are opaque. Whatever a `_create` function writes to its
 *   `out` parameter the caller owns and releases with the matching
 *   `_release` function, once; each `_release` accepts NULL and does nothing.
 * - Borrowed pointers. Strings and dimension arrays a getter returns are
 *   owned by the handle they were read from and stay valid until that handle
 *   is released; the caller never frees them.
 * - Arguments. A NULL handle, a NULL out-pointer or an index out of range is
 *   an invalid_argument status, never a crash.
 * - Threads. graft_session_run() and graft_session_run_into() may be called
 *   on one session from several threads at once (each with its own tensors);
 *   every other handle is used by one thread at a time.
 */
#ifndef GRAFT_CAPI_C_API_H_
#define GRAFT_CAPI_C_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this interface: raised when a function's signature or
 * meaning changes. A program compiled against GRAFT_C_API_VERSION N runs
 * with a library whose graft_c_api_version() is N. */
#define GRAFT_C_API_VERSION 1

/* Opaque handles. */
typedef struct graft_session graft_session;
typedef struct graft_session_options graft_session_options;
typedef struct graft_tensor graft_tensor;
typedef struct graft_status graft_status;

/* The kind of an error; the same categories as graft::ErrorKind. */
typedef enum graft_error_kind {
  GRAFT_ERROR_INVALID_MODEL = 1,    /* the model or artifact is malformed or inconsistent */
  GRAFT_ERROR_UNSUPPORTED = 2,      /* valid input graft cannot run (an op, a dtype, a feature) */
  GRAFT_ERROR_INVALID_ARGUMENT = 3, /* a value the caller passed is wrong */
  GRAFT_ERROR_IO = 4,               /* a file could not be read or written */
  GRAFT_ERROR_INTERNAL = 5,         /* a bug inside graft */
  GRAFT_ERROR_RESOURCE_EXHAUSTED = 6, /* a memory limit was reached, or memory ran out */
  GRAFT_ERROR_CANCELLED = 7,        /* a run was cancelled or passed its deadline */
  /* Not kinds: they make the enum span int in C and C++ alike, so that any
   * int a caller passes is a value of it (graft answers "unknown"). */
  GRAFT_ERROR_KIND_INT_MIN_ = -2147483647 - 1,
  GRAFT_ERROR_KIND_INT_MAX_ = 2147483647
} graft_error_kind;

/* Element types; the values are ONNX's TensorProto.DataType (and graft::DType). */
typedef enum graft_dtype {
  GRAFT_DTYPE_UNDEFINED = 0,
  GRAFT_DTYPE_FLOAT32 = 1,
  GRAFT_DTYPE_UINT8 = 2,
  GRAFT_DTYPE_INT8 = 3,
  GRAFT_DTYPE_UINT16 = 4,
  GRAFT_DTYPE_INT16 = 5,
  GRAFT_DTYPE_INT32 = 6,
  GRAFT_DTYPE_INT64 = 7,
  GRAFT_DTYPE_STRING = 8, /* never in a tensor: graft does not store strings */
  GRAFT_DTYPE_BOOL = 9,   /* one byte per element, 0 or 1 */
  GRAFT_DTYPE_FLOAT16 = 10,
  GRAFT_DTYPE_FLOAT64 = 11,
  GRAFT_DTYPE_UINT32 = 12,
  GRAFT_DTYPE_UINT64 = 13,
  GRAFT_DTYPE_COMPLEX64 = 14,  /* never in a tensor */
  GRAFT_DTYPE_COMPLEX128 = 15, /* never in a tensor */
  GRAFT_DTYPE_BFLOAT16 = 16,
  /* Not dtypes: they make the enum span int in C and C++ alike, so that any
   * int a caller passes is a value of it (graft refuses it by name). */
  GRAFT_DTYPE_INT_MIN_ = -2147483647 - 1,
  GRAFT_DTYPE_INT_MAX_ = 2147483647
} graft_dtype;

/* ---- Versions and names ------------------------------------------------ */

/* graft's version, "MAJOR.MINOR.PATCH". A static string: never freed. */
const char* graft_version(void);
/* The GRAFT_C_API_VERSION the library was built with. */
int graft_c_api_version(void);
/* The compiled-artifact (.graft) format this graft writes, and the newest it
 * reads: it reads every format from 1 up to this one, and refuses a newer
 * one as unsupported (docs/artifact-format.md). */
int graft_artifact_format_version(void);
/* "invalid_model", "unsupported", "invalid_argument", "io", "internal";
 * "unknown" for another value. A static string: never freed. */
const char* graft_error_kind_name(graft_error_kind kind);
/* "float32", "int64", "bool", ...; "unknown" for a value not in graft_dtype.
 * A static string: never freed. */
const char* graft_dtype_name(graft_dtype dtype);
/* Bytes per element: 0 for UNDEFINED, STRING, the complex types and values
 * not in graft_dtype (none of which a tensor holds). */
size_t graft_dtype_size(graft_dtype dtype);

/* ---- Errors ------------------------------------------------------------ */

/* The kind of a failure. `status` must not be NULL (returns
 * GRAFT_ERROR_INTERNAL if it is). */
graft_error_kind graft_status_kind(const graft_status* status);
/* The message: names the argument, file, input or node at fault. Owned by
 * `status`, valid until it is released. Never NULL ("" for a NULL status). */
const char* graft_status_message(const graft_status* status);
/* Releases a status returned by any function of this API. NULL: nothing. */
void graft_status_release(graft_status* status);

/* ---- Session options --------------------------------------------------- */

/* New options with graft's defaults: threads from GRAFT_NUM_THREADS or the
 * number of cores, backends from GRAFT_BACKENDS or every available one,
 * fusion from GRAFT_FUSION or on. The caller owns `*out` and releases it with
 * graft_session_options_release(); it may be released as soon as the
 * sessions made with it are created (they copy what they need). */
graft_status* graft_session_options_create(graft_session_options** out);
/* Intra-op threads, 1..1024, or 0 for the default. Other values:
 * invalid_argument. */
graft_status* graft_session_options_set_threads(graft_session_options* options, int threads);
/* Backends in priority order as a comma-separated list of names ("dnnl,fuse");
 * "" or NULL restores the default. Each name must be a registered backend
 * (invalid_argument naming it and listing the available ones otherwise);
 * an empty name ("dnnl,,ref") is invalid_argument too. `backends` is copied. */
graft_status* graft_session_options_set_backends(graft_session_options* options, const char* backends);
/* Pointwise fusion: nonzero on, 0 off. */
graft_status* graft_session_options_set_fusion(graft_session_options* options, int enabled);
/* The device to run on: "cpu" (the default), "opencl", "opencl:1". A device
 * puts its backend first; what it does not take runs on the CPU backends,
 * with copies at the boundaries; inputs and outputs stay host tensors. A
 * malformed name is invalid_argument; an unavailable device fails when the
 * session is created (unsupported, saying why). NULL or "" restores "cpu". */
graft_status* graft_session_options_set_device(graft_session_options* options, const char* device);
/* Bytes a run's intermediate values may hold at once; an allocation past it
 * fails the run with GRAFT_ERROR_RESOURCE_EXHAUSTED (the session stays
 * usable). 0: no limit. Default: GRAFT_MAX_MEMORY, else physical memory. */
graft_status* graft_session_options_set_max_memory(graft_session_options* options, uint64_t bytes);
/* Releases options. NULL: nothing. */
void graft_session_options_release(graft_session_options* options);

/* ---- Sessions ---------------------------------------------------------- */

/* Loads the model at `path` (a NUL-terminated file name, copied): a compiled
 * artifact (.graft) when the file is named so or starts with the artifact
 * magic, else an ONNX model, which is imported, optimized, partitioned and
 * compiled. `options` may be NULL (defaults); it is read, not kept. The caller
 * owns `*out` and releases it with graft_session_release(). Errors: io (the
 * file cannot be read), invalid_model, unsupported (naming every op graft
 * cannot run), invalid_argument (options). */
graft_status* graft_session_create_from_path(const char* path, const graft_session_options* options,
                                             graft_session** out);
/* The same from `size` bytes at `data`, which the caller owns and may free
 * as soon as this returns (graft copies what it keeps). Artifact bytes are
 * recognized by their magic; other bytes are read as an ONNX model, which
 * may not refer to external data files. */
graft_status* graft_session_create_from_bytes(const void* data, size_t size, const graft_session_options* options,
                                              graft_session** out);
/* Releases a session. Every graft_session_run() on it must have returned.
 * Tensors it returned stay valid (the caller owns them). NULL: nothing. */
void graft_session_release(graft_session* session);

/* The number of model inputs / outputs. */
graft_status* graft_session_input_count(const graft_session* session, size_t* out);
graft_status* graft_session_output_count(const graft_session* session, size_t* out);
/* The name of input / output `index` (0-based): a NUL-terminated string
 * owned by the session, valid until it is released. */
graft_status* graft_session_input_name(const graft_session* session, size_t index, const char** out);
graft_status* graft_session_output_name(const graft_session* session, size_t index, const char** out);
/* The element type of input / output `index` (of its items, for a sequence). */
graft_status* graft_session_input_dtype(const graft_session* session, size_t index, graft_dtype* out);
graft_status* graft_session_output_dtype(const graft_session* session, size_t index, graft_dtype* out);
/* The declared shape of input / output `index`: `*rank` dimensions at
 * `*dims`, each an extent >= 0 or -1 for a symbolic or unknown one. A value
 * whose rank is unknown has `*rank` -1 and `*dims` NULL. `*dims` is owned by
 * the session and valid until it is released. Inputs and outputs that are
 * sequences or optionals (which this API cannot pass) are unsupported. */
graft_status* graft_session_input_shape(const graft_session* session, size_t index, const int64_t** dims,
                                        int64_t* rank);
graft_status* graft_session_output_shape(const graft_session* session, size_t index, const int64_t** dims,
                                         int64_t* rank);
/* The symbolic name of dimension `dim` of input / output `index` ("batch"),
 * or "" when the dimension is known or unnamed: a NUL-terminated string owned
 * by the session, valid until it is released. `dim` must be below the rank
 * graft_session_*_shape reports (invalid_argument otherwise, and for a value
 * of unknown rank). */
graft_status* graft_session_input_dim_name(const graft_session* session, size_t index, size_t dim, const char** out);
graft_status* graft_session_output_dim_name(const graft_session* session, size_t index, size_t dim, const char** out);

/* Runs the model on `num_inputs` tensors, one per input in input order
 * (graft_session_input_count; their dtypes and shapes must fit the declared
 * ones: invalid_argument naming the input otherwise). Inputs are read, not
 * kept, and stay owned by the caller. On success writes `num_outputs` (which
 * must equal graft_session_output_count) new tensors to outputs[0..], each
 * owned by the caller and released with graft_tensor_release(); on failure
 * writes none. Each output owns its memory, shared with nothing else (not
 * with an input or a weight the model passes through: those are copied), so
 * writing it changes nothing else. Safe to call from several threads on one
 * session. */
graft_status* graft_session_run(const graft_session* session, const graft_tensor* const* inputs, size_t num_inputs,
                                graft_tensor** outputs, size_t num_outputs);
/* Like graft_session_run(), but the results are written into tensors the
 * caller provides (graft_tensor_create_over() over its own buffers, or any
 * other tensor): outputs[i] must already have output i's dtype and the exact
 * shape this run produces (invalid_argument naming the output otherwise, and
 * then no output is written). The outputs stay owned by the caller. The
 * results are computed in graft's buffers and copied into these. */
graft_status* graft_session_run_into(const graft_session* session, const graft_tensor* const* inputs,
                                     size_t num_inputs, graft_tensor* const* outputs, size_t num_outputs);

/* ---- Tensors ----------------------------------------------------------- */

/* A dense row-major tensor of `rank` dimensions `dims` (each >= 0; `dims`
 * may be NULL when rank is 0), zero-filled, in memory graft allocates
 * (64-byte aligned) and frees on graft_tensor_release(). `dims` is copied.
 * The caller owns `*out`. */
graft_status* graft_tensor_create(graft_dtype dtype, const int64_t* dims, size_t rank, graft_tensor** out);
/* A tensor over the caller's buffer, without a copy: `data` must hold
 * exactly `byte_size` bytes = element count * graft_dtype_size(dtype)
 * (invalid_argument otherwise) and be aligned to the element size. The
 * caller owns the buffer and keeps it alive, unchanged while a run reads it,
 * until the tensor is released; graft never frees it. `data` may be NULL
 * only when byte_size is 0. The caller owns `*out`. */
graft_status* graft_tensor_create_over(graft_dtype dtype, const int64_t* dims, size_t rank, void* data,
                                       size_t byte_size, graft_tensor** out);
/* Releases a tensor (and, when graft allocated it, its memory; another tensor
 * sharing that memory keeps it alive). NULL: nothing. */
void graft_tensor_release(graft_tensor* tensor);

/* The element type. */
graft_status* graft_tensor_dtype(const graft_tensor* tensor, graft_dtype* out);
/* The number of dimensions. */
graft_status* graft_tensor_rank(const graft_tensor* tensor, size_t* out);
/* The dimensions: `rank` extents, owned by the tensor and valid until it is
 * released (NULL for rank 0). */
graft_status* graft_tensor_dims(const graft_tensor* tensor, const int64_t** out);
/* The first element, row-major, `graft_tensor_byte_size` bytes: memory owned
 * by the tensor (or by the caller, for graft_tensor_create_over), valid
 * until the tensor is released; the caller may write it. May be NULL for a
 * tensor of no elements. */
graft_status* graft_tensor_data(graft_tensor* tensor, void** out);
/* element count * element size. */
graft_status* graft_tensor_byte_size(const graft_tensor* tensor, size_t* out);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* GRAFT_CAPI_C_API_H_ */

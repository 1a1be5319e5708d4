/* opencl_errors.c: the OpenCL backend's one table of OpenCL and CLBlast error codes, with their
 * names and the gpar status each maps to. */
#include "opencl_internal.h"

/* Errors: one table of OpenCL and CLBlast codes -> (name, gpar status). CLBlast's codes reuse
 * the OpenCL values where they mean the same thing, so one table serves both.
 * X(code, name, status) */
#define GPAR__CL_ERRORS(X)                                                      \
  X(0, "CL_SUCCESS", GPAR_OK)                                                   \
  X(-1, "CL_DEVICE_NOT_FOUND", GPAR_ENODEV)                                     \
  X(-2, "CL_DEVICE_NOT_AVAILABLE", GPAR_ENODEV)                                 \
  X(-3, "CL_COMPILER_NOT_AVAILABLE", GPAR_EBACKEND)                             \
  X(-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE", GPAR_EDEVMEM)                       \
  X(-5, "CL_OUT_OF_RESOURCES", GPAR_EDEVMEM)                                    \
  X(-6, "CL_OUT_OF_HOST_MEMORY", GPAR_ENOMEM)                                   \
  X(-7, "CL_PROFILING_INFO_NOT_AVAILABLE", GPAR_EBACKEND)                       \
  X(-8, "CL_MEM_COPY_OVERLAP", GPAR_EINVAL)                                     \
  X(-9, "CL_IMAGE_FORMAT_MISMATCH", GPAR_EBACKEND)                              \
  X(-10, "CL_IMAGE_FORMAT_NOT_SUPPORTED", GPAR_EBACKEND)                        \
  X(-11, "CL_BUILD_PROGRAM_FAILURE", GPAR_EBACKEND)                             \
  X(-12, "CL_MAP_FAILURE", GPAR_EBACKEND)                                       \
  X(-13, "CL_MISALIGNED_SUB_BUFFER_OFFSET", GPAR_EINVAL)                        \
  X(-14, "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST", GPAR_EBACKEND)         \
  X(-15, "CL_COMPILE_PROGRAM_FAILURE", GPAR_EBACKEND)                           \
  X(-16, "CL_LINKER_NOT_AVAILABLE", GPAR_EBACKEND)                              \
  X(-17, "CL_LINK_PROGRAM_FAILURE", GPAR_EBACKEND)                              \
  X(-18, "CL_DEVICE_PARTITION_FAILED", GPAR_EBACKEND)                           \
  X(-19, "CL_KERNEL_ARG_INFO_NOT_AVAILABLE", GPAR_EBACKEND)                     \
  X(-30, "CL_INVALID_VALUE", GPAR_EINVAL)                                       \
  X(-31, "CL_INVALID_DEVICE_TYPE", GPAR_EINVAL)                                 \
  X(-32, "CL_INVALID_PLATFORM", GPAR_EINVAL)                                    \
  X(-33, "CL_INVALID_DEVICE", GPAR_ENODEV)                                      \
  X(-34, "CL_INVALID_CONTEXT", GPAR_EBACKEND)                                   \
  X(-35, "CL_INVALID_QUEUE_PROPERTIES", GPAR_EBACKEND)                          \
  X(-36, "CL_INVALID_COMMAND_QUEUE", GPAR_EBACKEND)                             \
  X(-37, "CL_INVALID_HOST_PTR", GPAR_EINVAL)                                    \
  X(-38, "CL_INVALID_MEM_OBJECT", GPAR_EINVAL)                                  \
  X(-39, "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR", GPAR_EBACKEND)                   \
  X(-40, "CL_INVALID_IMAGE_SIZE", GPAR_EBACKEND)                                \
  X(-41, "CL_INVALID_SAMPLER", GPAR_EBACKEND)                                   \
  X(-42, "CL_INVALID_BINARY", GPAR_EBACKEND)                                    \
  X(-43, "CL_INVALID_BUILD_OPTIONS", GPAR_EBACKEND)                             \
  X(-44, "CL_INVALID_PROGRAM", GPAR_EBACKEND)                                   \
  X(-45, "CL_INVALID_PROGRAM_EXECUTABLE", GPAR_EBACKEND)                        \
  X(-46, "CL_INVALID_KERNEL_NAME", GPAR_EBACKEND)                               \
  X(-47, "CL_INVALID_KERNEL_DEFINITION", GPAR_EBACKEND)                         \
  X(-48, "CL_INVALID_KERNEL", GPAR_EBACKEND)                                    \
  X(-49, "CL_INVALID_ARG_INDEX", GPAR_EBACKEND)                                 \
  X(-50, "CL_INVALID_ARG_VALUE", GPAR_EBACKEND)                                 \
  X(-51, "CL_INVALID_ARG_SIZE", GPAR_EBACKEND)                                  \
  X(-52, "CL_INVALID_KERNEL_ARGS", GPAR_EBACKEND)                               \
  X(-53, "CL_INVALID_WORK_DIMENSION", GPAR_EBACKEND)                            \
  X(-54, "CL_INVALID_WORK_GROUP_SIZE", GPAR_EBACKEND)                           \
  X(-55, "CL_INVALID_WORK_ITEM_SIZE", GPAR_EBACKEND)                            \
  X(-56, "CL_INVALID_GLOBAL_OFFSET", GPAR_EBACKEND)                             \
  X(-57, "CL_INVALID_EVENT_WAIT_LIST", GPAR_EBACKEND)                           \
  X(-58, "CL_INVALID_EVENT", GPAR_EBACKEND)                                     \
  X(-59, "CL_INVALID_OPERATION", GPAR_EBACKEND)                                 \
  X(-60, "CL_INVALID_GL_OBJECT", GPAR_EBACKEND)                                 \
  X(-61, "CL_INVALID_BUFFER_SIZE", GPAR_EINVAL)                                 \
  X(-62, "CL_INVALID_MIP_LEVEL", GPAR_EBACKEND)                                 \
  X(-63, "CL_INVALID_GLOBAL_WORK_SIZE", GPAR_EBACKEND)                          \
  X(-64, "CL_INVALID_PROPERTY", GPAR_EBACKEND)                                  \
  X(-65, "CL_INVALID_IMAGE_DESCRIPTOR", GPAR_EBACKEND)                          \
  X(-66, "CL_INVALID_COMPILER_OPTIONS", GPAR_EBACKEND)                          \
  X(-67, "CL_INVALID_LINKER_OPTIONS", GPAR_EBACKEND)                            \
  X(-68, "CL_INVALID_DEVICE_PARTITION_COUNT", GPAR_EBACKEND)                    \
  X(-1001, "CL_PLATFORM_NOT_FOUND_KHR", GPAR_ENODEV)                            \
  X(-1024, "CLBlastNotImplemented", GPAR_ENOTSUP)                               \
  X(-1022, "CLBlastInvalidMatrixA", GPAR_EINVAL)                                \
  X(-1021, "CLBlastInvalidMatrixB", GPAR_EINVAL)                                \
  X(-1020, "CLBlastInvalidMatrixC", GPAR_EINVAL)                                \
  X(-1019, "CLBlastInvalidVectorX", GPAR_EINVAL)                                \
  X(-1018, "CLBlastInvalidVectorY", GPAR_EINVAL)                                \
  X(-1017, "CLBlastInvalidDimension", GPAR_EINVAL)                              \
  X(-1016, "CLBlastInvalidLeadDimA", GPAR_EINVAL)                               \
  X(-1015, "CLBlastInvalidLeadDimB", GPAR_EINVAL)                               \
  X(-1014, "CLBlastInvalidLeadDimC", GPAR_EINVAL)                               \
  X(-1013, "CLBlastInvalidIncrementX", GPAR_EINVAL)                             \
  X(-1012, "CLBlastInvalidIncrementY", GPAR_EINVAL)                             \
  X(-1011, "CLBlastInsufficientMemoryA", GPAR_EINVAL)                           \
  X(-1010, "CLBlastInsufficientMemoryB", GPAR_EINVAL)                           \
  X(-1009, "CLBlastInsufficientMemoryC", GPAR_EINVAL)                           \
  X(-1008, "CLBlastInsufficientMemoryX", GPAR_EINVAL)                           \
  X(-1007, "CLBlastInsufficientMemoryY", GPAR_EINVAL)                           \
  X(-2050, "CLBlastInsufficientMemoryTemp", GPAR_EBACKEND)                      \
  X(-2049, "CLBlastInvalidBatchCount", GPAR_EINVAL)                             \
  X(-2048, "CLBlastInvalidOverrideKernel", GPAR_EBACKEND)                       \
  X(-2047, "CLBlastMissingOverrideParameter", GPAR_EBACKEND)                    \
  X(-2046, "CLBlastInvalidLocalMemUsage", GPAR_EBACKEND)                        \
  X(-2045, "CLBlastNoHalfPrecision", GPAR_ENOTSUP)                              \
  X(-2044, "CLBlastNoDoublePrecision", GPAR_ENOTSUP)                            \
  X(-2043, "CLBlastInvalidVectorScalar", GPAR_EINVAL)                           \
  X(-2042, "CLBlastInsufficientMemoryScalar", GPAR_EINVAL)                      \
  X(-2041, "CLBlastDatabaseError", GPAR_EBACKEND)                               \
  X(-2040, "CLBlastUnknownError", GPAR_EBACKEND)                                \
  X(-2039, "CLBlastUnexpectedError", GPAR_EBACKEND)

/* Name and gpar status of an OpenCL / CLBlast code (unknown codes: "CL_UNKNOWN_ERROR"). */
const char *gpar__cl_name(cl_int err, int *status) {
  switch (err) {
#define GPAR__CL_CASE(code, name, st) \
  case code:                          \
    *status = st;                     \
    return name;
    GPAR__CL_ERRORS(GPAR__CL_CASE)
#undef GPAR__CL_CASE
  default:
    *status = GPAR_EBACKEND;
    return "CL_UNKNOWN_ERROR";
  }
}

/* Record "call: CL_NAME (code)" for the calling thread and return the mapped gpar status. */
int gpar__cl_fail(const char *call, cl_int err) {
  int st;
  const char *name = gpar__cl_name(err, &st);
  if (st == GPAR_OK) st = GPAR_EBACKEND; /* a call that "failed" with CL_SUCCESS: never expected */
  return gpar__errorf(st, "%s: %s (%d)", call, name, (int)err);
}

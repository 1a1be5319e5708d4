/* api.h: the api layer, the public calls that build ops and the kinds they build: transfers
 * (transfer.c: gpar_copy, gpar_write, gpar_read), BLAS (blas.c, blas_vec.c, sharing the operand
 * checks of blas_operands.c through blas_operands.h), fills (fill.c), user functions
 * (submit.c); buffers (buffers.c), waits (waits.c) and queries (query.c). Each call checks
 * every argument before anything is enqueued, picks the device and lane that runs it, declares
 * its read and write sets and hands the op to the engine (engine/engine.h). */
#ifndef GPAR_CORE_API_H
#define GPAR_CORE_API_H

#include "engine/engine.h"

/* GPAR_EINVAL for 0 bytes, GPAR_ERANGE when [off, off + bytes) leaves b (message names what). */
GPAR__HIDDEN int gpar__check_range(const gpar__buf *b, size_t off, size_t bytes, const char *what);
/* Add the ops of a copy (gpar_copy's checks; a staged copy's legs and its pinned slots) to a
 * submission, for calls made of several ops (staged collectives). On failure the caller
 * discards the submission. */
GPAR__HIDDEN int gpar__copy_build(gpar_engine *eng, gpar_buffer dst, size_t dst_off, gpar_buffer src, size_t src_off,
                                  size_t bytes, gpar__batch *sub);
/* The end of every op call: submit op (gpar__op_submit: in synchronous mode, its status once it
 * has run). */
GPAR__HIDDEN int gpar__api_submit(gpar__op *op);

#endif

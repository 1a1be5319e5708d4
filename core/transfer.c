/* transfer.c: the public calls that move data: gpar_copy between any two buffers (direct, or
 * staged through pinned host chunks when two devices have no direct path), gpar_write from user
 * memory (staged, so the caller may reuse its memory at once) and gpar_read into user memory
 * (pinned chunks copied out while the next chunk is in flight). Each checks every argument
 * before anything is enqueued. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Chunk size of staged transfers (pageable reads, copies between devices without a direct
 * path): large enough for full copy bandwidth, small enough that the two legs overlap. */
#define GPAR__CHUNK ((size_t)8 << 20)
#define GPAR__STAGE_SLOTS 4
/* gpar_read into pageable memory is bound by the host memcpy out of the staging chunks (one
 * thread: ~5 GB/s on the H200 host; 8.3 GB/s with 8 threads into never-touched pages). Measured
 * there (bench/probes/p2_pageable.c, warm destination, GB/s for 64 / 256 MB reads): 4 slots and
 * 8 copy-out threads: 16 MB chunks 32.2 / 31.6, 4 MB chunks 35.5 / 26.5; 4 MB x 2 slots x 8
 * threads 20.9 / 19.8; 4 threads ~20-22. So 4 slots of 16 MB (less the pool's header, to fill
 * its size class exactly) and up to 8 copy-out parts. */
#define GPAR__READ_CHUNK (((size_t)16 << 20) - GPAR__PIN_HEADER)
#define GPAR__READ_SLOTS 4
#define GPAR__READ_PARTS 8
#define GPAR__STAGED 1 /* copy_locked: no direct path, stage it */

/* ---------------------------------------------------------------- copies */

/* Choose where a copy between two buffers runs. 0: direct; 1: must be staged through host. */
static int plan_copy_locked(gpar_engine *eng, gpar__buf *d, gpar__buf *s, gpar__op *op) {
  gpar__copy_args *c = &op->u.copy;
  if (d->host_memory && s->host_memory) {
    op->dev = eng->host_dev;
    op->lane = GPAR__LANE_COMPUTE;
    c->kind = GPAR__COPY_H2H;
    op->name = "copy_h2h";
  } else if (s->host_memory) {
    op->dev = d->dev;
    op->lane = GPAR__LANE_H2D;
    c->kind = GPAR__COPY_H2D;
    op->name = "copy_h2d";
  } else if (d->host_memory) {
    op->dev = s->dev;
    op->lane = GPAR__LANE_D2H;
    c->kind = GPAR__COPY_D2H;
    op->name = "copy_d2h";
  } else if (d->dev == s->dev) {
    op->dev = s->dev;
    op->lane = GPAR__LANE_PEER;
    c->kind = GPAR__COPY_D2D;
    op->name = "copy_d2d";
  } else if (d->dev->ops == s->dev->ops && s->dev->ops->peer_ok &&
             s->dev->ops->peer_ok(s->dev->be, s->dev->bidx, d->dev->bidx)) {
    op->dev = s->dev;
    op->lane = GPAR__LANE_PEER;
    c->kind = GPAR__COPY_PEER;
    c->peer = d->dev->bdev;
    op->name = "copy_peer";
  } else {
    return 1;
  }
  c->dst = d->mem;
  c->src = s->mem;
  return 0;
}

/* A copy between two devices with no direct path (different backends, or no peer access):
 * chunk by chunk through a ring of pinned host buffers; a chunk's device-to-host leg overlaps
 * the previous chunk's host-to-device leg, and reusing a slot waits for its last reader. */
/* Check and submit a direct copy; GPAR__STAGED when it must be staged. */
static int copy_locked(gpar_engine *eng, gpar_buffer dst, size_t dst_off, gpar_buffer src, size_t src_off,
                       size_t bytes, gpar__op **sync) {
  gpar__buf *d, *s;
  int st;
  if ((st = gpar__buf_get_locked(eng, dst, &d)) || (st = gpar__buf_get_locked(eng, src, &s)) ||
      (st = gpar__check_range(d, dst_off, bytes, "gpar_copy destination")) ||
      (st = gpar__check_range(s, src_off, bytes, "gpar_copy source")))
    return st;
  if (d == s && dst_off < src_off + bytes && src_off < dst_off + bytes)
    return gpar__errorf(GPAR_EALIAS, "gpar_copy: source and destination ranges overlap in one buffer");
  gpar__op *op = gpar__op_build_locked(eng, GPAR__OP_COPY, NULL, 0, NULL);
  if (!op) return GPAR_ENOMEM;
  if (plan_copy_locked(eng, d, s, op)) {
    gpar__op_discard_locked(eng, op);
    return GPAR__STAGED;
  }
  op->u.copy.dst_off = dst_off;
  op->u.copy.src_off = src_off;
  op->u.copy.bytes = bytes;
  if ((st = gpar__op_access_locked(eng, op, s, GPAR__READ)) || (st = gpar__op_access_locked(eng, op, d, GPAR__WRITE)))
    return st;
  return gpar__submit_locked(eng, op, sync);
}

static int copy_call(gpar_engine *eng, gpar_buffer dst, size_t dst_off, gpar_buffer src, size_t src_off, size_t bytes);

/* A copy between two devices with no direct path (different backends, or no peer access):
 * chunk by chunk through a ring of pinned host buffers; a chunk's device-to-host leg overlaps
 * the previous chunk's host-to-device leg, and reusing a slot waits for its last reader. */
static int staged_copy(gpar_engine *eng, gpar_buffer dst, size_t dst_off, gpar_buffer src, size_t src_off,
                       size_t bytes) {
  size_t chunk = bytes < GPAR__CHUNK ? bytes : GPAR__CHUNK;
  size_t nchunks = (bytes + chunk - 1) / chunk;
  int nslots = nchunks < GPAR__STAGE_SLOTS ? (int)nchunks : GPAR__STAGE_SLOTS;
  gpar_buffer slot[GPAR__STAGE_SLOTS];
  int st = GPAR_OK;
  for (int i = 0; i < nslots && st == GPAR_OK; i++)
    if ((st = gpar__buffer_create(eng, GPAR_HOST, chunk, &slot[i]))) nslots = i;
  if (nslots > 0) st = GPAR_OK; /* fewer slots only means less overlap between the legs */
  for (size_t i = 0; i < nchunks && st == GPAR_OK; i++) {
    size_t off = i * chunk, len = bytes - off < chunk ? bytes - off : chunk;
    st = copy_call(eng, slot[i % (size_t)nslots], 0, src, src_off + off, len);
    if (st == GPAR_OK) st = copy_call(eng, dst, dst_off + off, slot[i % (size_t)nslots], 0, len);
  }
  for (int i = 0; i < nslots; i++) gpar__buffer_release(slot[i]);
  return st;
}

static int copy_call(gpar_engine *eng, gpar_buffer dst, size_t dst_off, gpar_buffer src, size_t src_off, size_t bytes) {
  gpar__op *sync = NULL;
  pthread_mutex_lock(&eng->mu);
  int st = copy_locked(eng, dst, dst_off, src, src_off, bytes, &sync);
  pthread_mutex_unlock(&eng->mu);
  if (st == GPAR__STAGED) return staged_copy(eng, dst, dst_off, src, src_off, bytes);
  return gpar__sync_wait(eng, st, sync);
}

GPAR_API int gpar_copy(gpar_buffer dst, size_t dst_off, gpar_buffer src, size_t src_off, size_t bytes) {
  int st;
  gpar_engine *eng = gpar__engine_enter_buf(dst, &st);
  if (!eng) return st;
  st = copy_call(eng, dst, dst_off, src, src_off, bytes);
  gpar__engine_leave(eng);
  return st;
}

/* ---------------------------------------------------------------- write */

/* Check a transfer's buffer and range; *host: whether its memory is host memory. */
static int transfer_check(gpar_engine *eng, gpar_buffer h, size_t off, const void *user_ptr, size_t bytes,
                          const char *what, int *host) {
  gpar__buf *b;
  pthread_mutex_lock(&eng->mu);
  int st = gpar__buf_get_locked(eng, h, &b);
  if (st == GPAR_OK) st = gpar__check_range(b, off, bytes, what);
  if (st == GPAR_OK) *host = b->host_memory;
  pthread_mutex_unlock(&eng->mu);
  if (st == GPAR_OK && !user_ptr) st = gpar__errorf(GPAR_EINVAL, "%s: user pointer is NULL", what);
  return st;
}

/* Submit one staged chunk of a write. The staging becomes the op's (freed at its retirement,
 * or by a refused submit); on an earlier failure it is freed here. */
static int write_chunk_locked(gpar_engine *eng, gpar_buffer dst, size_t off, void *staging, size_t len,
                              gpar__op **sync) {
  gpar__buf *b;
  gpar__op *op = NULL;
  int st = gpar__buf_get_locked(eng, dst, &b); /* released meanwhile by another thread? */
  if (st == GPAR_OK) {
    int host = b->host_memory;
    op = gpar__op_build_locked(eng, GPAR__OP_COPY, host ? eng->host_dev : b->dev,
                               host ? GPAR__LANE_COMPUTE : GPAR__LANE_H2D, host ? "write_h2h" : "write_h2d");
    if (!op) st = GPAR_ENOMEM;
  }
  if (st == GPAR_OK) {
    op->u.copy = (gpar__copy_args){b->host_memory ? GPAR__COPY_H2H : GPAR__COPY_H2D, b->mem, off, staging, 0, len, NULL};
    st = gpar__op_access_locked(eng, op, b, GPAR__WRITE);
  }
  if (st) {
    gpar__pinned_free(&eng->pinned, staging);
    return st;
  }
  op->staging = staging;
  return gpar__submit_locked(eng, op, sync);
}

/* The user's data is staged in pinned memory so the caller may reuse its memory at once. A
 * device destination is written chunk by chunk: staging chunk i+1 overlaps chunk i's
 * host-to-device copy. A chunk that cannot be staged stops the write with its error (the
 * chunks before it are already submitted). */
static int write_call(gpar_engine *eng, gpar_buffer dst, size_t off, const void *user_ptr, size_t bytes) {
  int host, st = transfer_check(eng, dst, off, user_ptr, bytes, "gpar_write", &host);
  if (st) return st;
  size_t chunk = host ? bytes : GPAR__CHUNK;
  for (size_t done = 0; done < bytes && st == GPAR_OK; done += chunk) {
    size_t len = bytes - done < chunk ? bytes - done : chunk;
    void *staging;
    gpar__op *sync = NULL;
    if ((st = gpar__pinned_alloc(eng, len, &staging))) return st;
    memcpy(staging, (const char *)user_ptr + done, len);
    pthread_mutex_lock(&eng->mu);
    st = write_chunk_locked(eng, dst, off + done, staging, len, &sync);
    pthread_mutex_unlock(&eng->mu);
    st = gpar__sync_wait(eng, st, sync);
  }
  return st;
}

GPAR_API int gpar_write(gpar_buffer dst, size_t off, const void *user_ptr, size_t bytes) {
  int st;
  gpar_engine *eng = gpar__engine_enter_buf(dst, &st);
  if (!eng) return st;
  st = write_call(eng, dst, off, user_ptr, bytes);
  gpar__engine_leave(eng);
  return st;
}

/* ---------------------------------------------------------------- read */

/* One chunk of a read: src+off -> dst (a host pointer), on the host or the source's D2H lane.
 * *out: the op with a reference for gpar__wait_op. */
static int read_chunk_locked(gpar_engine *eng, gpar__buf *b, size_t off, void *dst, size_t len, gpar__op **out) {
  int host = b->host_memory;
  gpar__op *op = gpar__op_build_locked(eng, GPAR__OP_COPY, host ? eng->host_dev : b->dev,
                                       host ? GPAR__LANE_COMPUTE : GPAR__LANE_D2H, host ? "read_h2h" : "read_d2h");
  *out = NULL;
  if (!op) return GPAR_ENOMEM;
  op->u.copy = (gpar__copy_args){host ? GPAR__COPY_H2H : GPAR__COPY_D2H, dst, 0, b->mem, off, len, NULL};
  op->reported = 1;
  int st = gpar__op_access_locked(eng, op, b, GPAR__READ);
  if (st == GPAR_OK) st = gpar__op_submit_locked(eng, op, 1);
  if (st == GPAR_OK) *out = op;
  return st;
}

/* Copy a staged chunk into (pageable) user memory: one thread's memcpy reaches ~5 GB/s into
 * malloc memory on the H200 machine, a tenth of the copy engine's rate, so large chunks are
 * split between the calling thread and up to GPAR__READ_PARTS - 1 CPU workers (as many as the
 * host backend has threads). The parts are internal ops on the CPU device with no buffers, so
 * they order against nothing. */
static void copy_out(gpar_engine *eng, char *dst, const char *src, size_t len) {
  enum { MAX_PARTS = GPAR__READ_PARTS };
  const size_t min_part = (size_t)1 << 20;
  int parts = eng->cfg.host_threads < MAX_PARTS ? eng->cfg.host_threads : MAX_PARTS;
  if (len / min_part < (size_t)parts) parts = (int)(len / min_part);
  if (parts <= 1 || gpar__in_op) {
    memcpy(dst, src, len);
    return;
  }
  size_t part = (len + (size_t)parts - 1) / (size_t)parts;
  gpar__op *ops[MAX_PARTS] = {0};
  pthread_mutex_lock(&eng->mu);
  for (int p = 1; p < parts; p++) { /* part 0 is the caller's */
    size_t o = (size_t)p * part, n = len - o < part ? len - o : part;
    if (!(ops[p] = gpar__op_build_locked(eng, GPAR__OP_COPY, eng->host_dev, GPAR__LANE_COMPUTE, "read_copy_out"))) break;
    ops[p]->u.copy = (gpar__copy_args){GPAR__COPY_H2H, dst, o, (void *)src, o, n, NULL};
    ops[p]->reported = 1;
    if (gpar__op_submit(eng, ops[p], 1)) ops[p] = NULL; /* refused: the caller copies it */
  }
  pthread_mutex_unlock(&eng->mu);
  memcpy(dst, src, part);
  for (int p = 1; p < parts; p++) {
    size_t o = (size_t)p * part, n = len - o < part ? len - o : part;
    if (ops[p])
      gpar__wait_op(eng, ops[p]);
    else
      memcpy(dst + o, src + o, n);
  }
}

/* Start a read (engine lock held): a host buffer's single chunk goes straight into user
 * memory (*op); a device buffer is pinned by pending++ (*dev_buf) so a concurrent release
 * cannot free it while its chunks are staged. */
static int read_begin_locked(gpar_engine *eng, gpar_buffer src, size_t off, void *user_ptr, size_t bytes,
                             gpar__op **op, gpar__buf **dev_buf) {
  gpar__buf *b;
  int st = gpar__buf_get_locked(eng, src, &b);
  if (st == GPAR_OK) st = gpar__check_range(b, off, bytes, "gpar_read");
  if (st == GPAR_OK && !user_ptr) st = gpar__errorf(GPAR_EINVAL, "gpar_read: user pointer is NULL");
  if (st == GPAR_OK && gpar__in_op) st = gpar__errorf(GPAR_EDEADLK, "gpar_read called from inside an operation");
  if (st == GPAR_OK && gpar__graph_recording(eng))
    st = gpar__errorf(GPAR_ERECORDING, "gpar_read called while this thread records a graph");
  if (st) return st;
  if (b->host_memory) return read_chunk_locked(eng, b, off, user_ptr, bytes, op);
  b->pending++;
  *dev_buf = b;
  return GPAR_OK;
}

/* A device buffer: device-to-host into pinned chunks, each copied out while the next chunk is
 * in flight. */
static int read_device(gpar_engine *eng, gpar__buf *b, size_t off, void *user_ptr, size_t bytes) {
  size_t chunk = bytes < GPAR__READ_CHUNK ? bytes : GPAR__READ_CHUNK;
  size_t nchunks = (bytes + chunk - 1) / chunk;
  int nslots = nchunks < GPAR__READ_SLOTS ? (int)nchunks : GPAR__READ_SLOTS, st = GPAR_OK;
  void *slot[GPAR__READ_SLOTS];
  gpar__op *pending[GPAR__READ_SLOTS] = {0};
  for (int i = 0; i < nslots; i++)
    if ((st = gpar__pinned_alloc(eng, chunk, &slot[i]))) {
      nslots = i;
      break;
    }
  if (nslots > 0) st = GPAR_OK; /* fewer slots (a pinned limit) only means less overlap */
  size_t submitted = 0;
  for (size_t i = 0; i < nchunks && st == GPAR_OK; i++) {
    pthread_mutex_lock(&eng->mu);
    for (; submitted < nchunks && submitted < i + (size_t)nslots && st == GPAR_OK; submitted++) {
      size_t o = submitted * chunk, len = bytes - o < chunk ? bytes - o : chunk;
      st = read_chunk_locked(eng, b, off + o, slot[submitted % (size_t)nslots], len, &pending[submitted % (size_t)nslots]);
    }
    pthread_mutex_unlock(&eng->mu);
    if (st) break;
    gpar__op *op = pending[i % (size_t)nslots];
    pending[i % (size_t)nslots] = NULL;
    if ((st = gpar__wait_op(eng, op))) break;
    size_t o = i * chunk, len = bytes - o < chunk ? bytes - o : chunk;
    copy_out(eng, (char *)user_ptr + o, slot[i % (size_t)nslots], len);
  }
  for (int i = 0; i < nslots; i++) /* chunks still in flight after a failure */
    if (pending[i]) gpar__wait_op(eng, pending[i]);
  for (int i = 0; i < nslots; i++) gpar__pinned_free(&eng->pinned, slot[i]);
  pthread_mutex_lock(&eng->mu);
  if (--b->pending == 0 && b->released) gpar__buf_free_locked(eng, b);
  pthread_mutex_unlock(&eng->mu);
  return st;
}

GPAR_API int gpar_read(gpar_buffer src, size_t off, void *user_ptr, size_t bytes) {
  int st;
  gpar_engine *eng = gpar__engine_enter_buf(src, &st);
  if (!eng) return st;
  gpar__op *op = NULL;
  gpar__buf *dev_buf = NULL;
  pthread_mutex_lock(&eng->mu);
  st = read_begin_locked(eng, src, off, user_ptr, bytes, &op, &dev_buf);
  pthread_mutex_unlock(&eng->mu);
  if (st == GPAR_OK) st = op ? gpar__wait_op(eng, op) : read_device(eng, dev_buf, off, user_ptr, bytes);
  gpar__engine_leave(eng);
  return st;
}

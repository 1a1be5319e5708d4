/* transfer.c: the public calls that move data: gpar_copy between any two buffers (direct, or
 * staged through pinned host chunks when two devices have no direct path), gpar_write from user
 * memory (staged, so the caller may reuse its memory at once) and gpar_read into user memory
 * (pinned chunks copied out while the next chunk is in flight). Each checks every argument
 * before anything is enqueued, and builds all of its ops before it submits them as one
 * submission (gpar__batch): a transfer applies whole or not at all, and no other thread's op
 * comes between two of its chunks. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

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
#define GPAR__STAGED 1 /* copy_direct: no direct path, stage it */

/* ---------------------------------------------------------------- the copy kinds */

_Static_assert(sizeof(gpar__copy_args) <= GPAR__OP_PAYLOAD, "copy arguments fit an op's payload");

static int copy_run(gpar__device *dev, gpar__op *op) {
  int st = gpar__fault(dev->eng, GPAR__FAULT_COPY);
  if (st) return st;
  return dev->ops->copy(dev->bdev, op->lane, gpar__op_args(op));
}

/* CUDA cannot capture a peer copy without peer access (backend graph_copy_ok). */
static int copy_capturable(const gpar__op *op) {
  const gpar__backend_ops *ops = op->dev->ops;
  return !ops->graph_copy_ok || ops->graph_copy_ok(op->dev->bdev, gpar__op_cargs(op));
}

/* Host-to-device copies read host memory: on a backend that reads it at enqueue they wait for
 * their producers to retire (GPAR__KIND_READS_HOST_AT_ENQUEUE). */
static const gpar__op_kind kind_h2d = {
    .name = "copy_h2d", .run = copy_run, .capturable = copy_capturable, .flags = GPAR__KIND_READS_HOST_AT_ENQUEUE};
static const gpar__op_kind kind_d2h = {.name = "copy_d2h", .run = copy_run, .capturable = copy_capturable};
static const gpar__op_kind kind_d2d = {.name = "copy_d2d", .run = copy_run, .capturable = copy_capturable};
static const gpar__op_kind kind_peer = {.name = "copy_peer", .run = copy_run, .capturable = copy_capturable};
static const gpar__op_kind kind_h2h = {.name = "copy_h2h", .run = copy_run, .capturable = copy_capturable};

/* A new copy op of args->kind on the device and lane that run it. */
static gpar__op *copy_op_new(gpar_engine *eng, gpar__device *dev, const gpar__copy_args *args) {
  static const struct { const gpar__op_kind *kind; int lane; } by_kind[] = {
      [GPAR__COPY_H2D] = {&kind_h2d, GPAR__LANE_H2D},   [GPAR__COPY_D2H] = {&kind_d2h, GPAR__LANE_D2H},
      [GPAR__COPY_D2D] = {&kind_d2d, GPAR__LANE_PEER},  [GPAR__COPY_PEER] = {&kind_peer, GPAR__LANE_PEER},
      [GPAR__COPY_H2H] = {&kind_h2h, GPAR__LANE_COMPUTE}};
  gpar__op *op = gpar__op_new(eng, by_kind[args->kind].kind, dev, by_kind[args->kind].lane);
  if (op) *(gpar__copy_args *)gpar__op_args(op) = *args;
  return op;
}

/* ---------------------------------------------------------------- copies */

/* Where a copy between two buffers runs: *dev and c->kind (c->peer); 1 when it must be staged
 * through host memory (two devices without a direct path). */
static int plan_copy(gpar_engine *eng, const gpar__buf *d, const gpar__buf *s, gpar__device **dev, gpar__copy_args *c) {
  if (d->host_memory && s->host_memory) {
    *dev = eng->host_dev;
    c->kind = GPAR__COPY_H2H;
  } else if (s->host_memory) {
    *dev = d->dev;
    c->kind = GPAR__COPY_H2D;
  } else if (d->host_memory) {
    *dev = s->dev;
    c->kind = GPAR__COPY_D2H;
  } else if (d->dev == s->dev) {
    *dev = s->dev;
    c->kind = GPAR__COPY_D2D;
  } else if (d->dev->ops == s->dev->ops && s->dev->ops->peer_ok &&
             s->dev->ops->peer_ok(s->dev->be, s->dev->bidx, d->dev->bidx)) {
    *dev = s->dev;
    c->kind = GPAR__COPY_PEER;
    c->peer = d->dev->bdev;
  } else {
    return 1;
  }
  c->dst = d->mem;
  c->src = s->mem;
  return 0;
}

/* Check a direct copy and add it to the submission; GPAR__STAGED when it must be staged. */
static int copy_direct(gpar_engine *eng, gpar_buffer dst, size_t dst_off, gpar_buffer src, size_t src_off,
                       size_t bytes, gpar__batch *sub) {
  gpar__buf *d = NULL, *s = NULL;
  gpar__device *dev = NULL;
  gpar__copy_args c = {.dst_off = dst_off, .src_off = src_off, .bytes = bytes};
  int st;
  if ((st = gpar__buf_get(eng, dst, &d)) || (st = gpar__buf_get(eng, src, &s)) ||
      (st = gpar__check_range(d, dst_off, bytes, "gpar_copy destination")) ||
      (st = gpar__check_range(s, src_off, bytes, "gpar_copy source")))
    ;
  else if (d == s && dst_off < src_off + bytes && src_off < dst_off + bytes)
    st = gpar__errorf(GPAR_EALIAS, "gpar_copy: source and destination ranges overlap in one buffer");
  else if (plan_copy(eng, d, s, &dev, &c))
    st = GPAR__STAGED;
  gpar__op *op = st == GPAR_OK ? copy_op_new(eng, dev, &c) : NULL;
  if (st == GPAR_OK) st = gpar__batch_add(sub, op);
  if (st != GPAR_OK) {
    if (d) gpar__buf_put(d);
    if (s) gpar__buf_put(s);
    return st;
  }
  st = gpar__op_use(op, s, GPAR__READ);
  if (st == GPAR_OK)
    st = gpar__op_use(op, d, GPAR__WRITE);
  else
    gpar__buf_put(d);
  return st; /* on failure the caller discards the submission, and the op with it */
}

/* A copy between two devices with no direct path (different backends, or no peer access):
 * chunk by chunk through a ring of pinned host buffers; a chunk's device-to-host leg overlaps
 * the previous chunk's host-to-device leg, and reusing a slot waits for its last reader. The
 * legs hold the slots; their handles go at once. */
static int staged_copy(gpar_engine *eng, gpar_buffer dst, size_t dst_off, gpar_buffer src, size_t src_off,
                       size_t bytes, gpar__batch *sub) {
  size_t chunk = bytes < GPAR__CHUNK ? bytes : GPAR__CHUNK;
  size_t nchunks = (bytes + chunk - 1) / chunk;
  int nslots = nchunks < GPAR__STAGE_SLOTS ? (int)nchunks : GPAR__STAGE_SLOTS;
  gpar_buffer slot[GPAR__STAGE_SLOTS];
  int st = GPAR_OK;
  for (int i = 0; i < nslots && st == GPAR_OK; i++)
    if ((st = gpar__buf_create(eng, GPAR_HOST, chunk, &slot[i]))) nslots = i;
  if (nslots > 0) st = GPAR_OK; /* fewer slots only means less overlap between the legs */
  for (size_t i = 0; i < nchunks && st == GPAR_OK; i++) {
    size_t off = i * chunk, len = bytes - off < chunk ? bytes - off : chunk;
    st = copy_direct(eng, slot[i % (size_t)nslots], 0, src, src_off + off, len, sub);
    if (st == GPAR_OK) st = copy_direct(eng, dst, dst_off + off, slot[i % (size_t)nslots], 0, len, sub);
  }
  for (int i = 0; i < nslots; i++) gpar__buf_release(eng, slot[i]);
  return st;
}

int gpar__copy_build(gpar_engine *eng, gpar_buffer dst, size_t dst_off, gpar_buffer src, size_t src_off, size_t bytes,
                     gpar__batch *sub) {
  int st = copy_direct(eng, dst, dst_off, src, src_off, bytes, sub);
  return st == GPAR__STAGED ? staged_copy(eng, dst, dst_off, src, src_off, bytes, sub) : st;
}

/* Submit what a call built, or discard it all when building failed. */
static int submit_built(gpar__batch *sub, int st, int flags) {
  if (st == GPAR_OK) return gpar__batch_submit(sub, flags);
  gpar__batch_discard(sub);
  return st;
}

GPAR_API int gpar_copy(gpar_buffer dst, size_t dst_off, gpar_buffer src, size_t src_off, size_t bytes) {
  int st;
  gpar_engine *eng = gpar__engine_enter_buf(dst, &st);
  if (!eng) return st;
  gpar__batch sub;
  gpar__batch_init(&sub);
  st = submit_built(&sub, gpar__copy_build(eng, dst, dst_off, src, src_off, bytes, &sub), 0);
  gpar__engine_leave(eng);
  return st;
}

/* ---------------------------------------------------------------- write */

/* Check a transfer's buffer and range; *host: whether its memory is host memory. */
static int transfer_check(gpar_engine *eng, gpar_buffer h, size_t off, const void *user_ptr, size_t bytes,
                          const char *what, int *host) {
  gpar__buf *b;
  int st = gpar__buf_get(eng, h, &b);
  if (st) return st;
  st = gpar__check_range(b, off, bytes, what);
  *host = b->host_memory;
  gpar__buf_put(b);
  if (st == GPAR_OK && !user_ptr) st = gpar__errorf(GPAR_EINVAL, "%s: user pointer is NULL", what);
  return st;
}

/* One staged chunk of a write, added to the submission. The staging becomes the op's (freed when
 * it retires or is discarded); when no op takes it, it is freed here. */
static int write_chunk(gpar_engine *eng, gpar_buffer dst, size_t off, void *staging, size_t len, gpar__batch *sub) {
  gpar__buf *b;
  int st = gpar__buf_get(eng, dst, &b); /* released meanwhile by another thread? */
  if (st) {
    gpar__pinned_free(eng->pinned, staging);
    return st;
  }
  gpar__copy_args c = {b->host_memory ? GPAR__COPY_H2H : GPAR__COPY_H2D, b->mem, off, staging, 0, len, NULL};
  gpar__op *op = copy_op_new(eng, b->host_memory ? eng->host_dev : b->dev, &c);
  if (op) op->owned_pinned = staging;
  else gpar__pinned_free(eng->pinned, staging);
  if ((st = gpar__batch_add(sub, op)) != GPAR_OK) {
    gpar__buf_put(b);
    return st;
  }
  return gpar__op_use(op, b, GPAR__WRITE);
}

/* The user's data is staged in pinned memory so the caller may reuse its memory at once. A
 * device destination is written chunk by chunk: staging chunk i+1 overlaps chunk i's
 * host-to-device copy. Every chunk is staged before any is submitted: a chunk that cannot be
 * staged fails the write with nothing applied. */
static int write_call(gpar_engine *eng, gpar_buffer dst, size_t off, const void *user_ptr, size_t bytes) {
  int host, st = transfer_check(eng, dst, off, user_ptr, bytes, "gpar_write", &host);
  if (st) return st;
  size_t chunk = host ? bytes : GPAR__CHUNK;
  gpar__batch sub;
  gpar__batch_init(&sub);
  for (size_t done = 0; done < bytes && st == GPAR_OK; done += chunk) {
    size_t len = bytes - done < chunk ? bytes - done : chunk;
    void *staging;
    if ((st = gpar__pinned_alloc(eng, len, &staging))) break;
    memcpy(staging, (const char *)user_ptr + done, len);
    st = write_chunk(eng, dst, off + done, staging, len, &sub);
  }
  return submit_built(&sub, st, 0);
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

/* A copy of len bytes from b+off to the host pointer dst, on the host or on b's D2H lane, that
 * reads b; added to the submission. */
static int read_op(gpar_engine *eng, gpar__buf *b, size_t off, void *dst, size_t len, gpar__batch *sub, gpar__op **out) {
  int host = b->host_memory;
  gpar__copy_args c = {host ? GPAR__COPY_H2H : GPAR__COPY_D2H, dst, 0, b->mem, off, len, NULL};
  gpar__op *op = copy_op_new(eng, host ? eng->host_dev : b->dev, &c);
  int st = gpar__batch_add(sub, op);
  if (st != GPAR_OK) return st;
  gpar__buf_ref(b); /* the op's own reference */
  if (out) *out = op;
  return gpar__op_use(op, b, GPAR__READ);
}

/* Copy a staged chunk into (pageable) user memory: one thread's memcpy reaches ~5 GB/s into
 * malloc memory on the H200 machine, a tenth of the copy engine's rate, so large chunks are
 * split into up to GPAR__READ_PARTS ops on the CPU device (as many as it has workers), each a
 * reader of the slot. */
static int copy_out_ops(gpar_engine *eng, gpar__buf *slot, char *dst, size_t len, gpar__batch *sub) {
  const size_t min_part = (size_t)1 << 20;
  int parts = eng->cfg.host_threads < GPAR__READ_PARTS ? eng->cfg.host_threads : GPAR__READ_PARTS, st = GPAR_OK;
  if (len / min_part < (size_t)parts) parts = (int)(len / min_part);
  if (parts < 1) parts = 1;
  size_t part = (len + (size_t)parts - 1) / (size_t)parts;
  for (size_t o = 0; o < len && st == GPAR_OK; o += part) {
    gpar__copy_args c = {GPAR__COPY_H2H, dst, o, slot->mem, o, len - o < part ? len - o : part, NULL};
    gpar__op *op = copy_op_new(eng, eng->host_dev, &c);
    if ((st = gpar__batch_add(sub, op)) != GPAR_OK) break;
    gpar__buf_ref(slot);
    st = gpar__op_use(op, slot, GPAR__READ);
  }
  return st;
}

/* Pinned slots for a device read: up to GPAR__READ_SLOTS (at least one; fewer, a pinned limit,
 * only means less overlap), with their handles; *n of them. */
static int read_slots(gpar_engine *eng, size_t chunk, int want, gpar_buffer *slot, gpar__buf **sb, int *n) {
  int st = GPAR_OK;
  *n = 0;
  while (*n < want && (st = gpar__buf_create(eng, GPAR_HOST, chunk, &slot[*n])) == GPAR_OK) {
    if ((st = gpar__buf_get(eng, slot[*n], &sb[*n])) != GPAR_OK) {
      gpar__buf_release(eng, slot[*n]);
      break;
    }
    (*n)++;
  }
  return *n > 0 ? GPAR_OK : st;
}

/* A device buffer (the caller holds a reference on b, so a concurrent release cannot free it
 * meanwhile): device-to-host into pinned slots, each copied out by CPU ops while the next chunks
 * are in flight. All the chunks are one submission, linked at once behind b's last writer, so
 * the read sees one version of b whatever other threads submit meanwhile; the caller waits. */
static int read_device(gpar_engine *eng, gpar__buf *b, size_t off, void *user_ptr, size_t bytes) {
  size_t chunk = bytes < GPAR__READ_CHUNK ? bytes : GPAR__READ_CHUNK;
  size_t nchunks = (bytes + chunk - 1) / chunk;
  gpar_buffer slot[GPAR__READ_SLOTS];
  gpar__buf *sb[GPAR__READ_SLOTS];
  int nslots, st = read_slots(eng, chunk, nchunks < GPAR__READ_SLOTS ? (int)nchunks : GPAR__READ_SLOTS, slot, sb,
                              &nslots);
  if (st != GPAR_OK) return st;
  gpar__batch sub;
  gpar__batch_init(&sub);
  for (size_t i = 0; i < nchunks && st == GPAR_OK; i++) {
    gpar__buf *s = sb[i % (size_t)nslots];
    size_t o = i * chunk, len = bytes - o < chunk ? bytes - o : chunk;
    gpar__op *op = NULL;
    if ((st = read_op(eng, b, off + o, s->mem, len, &sub, &op)) != GPAR_OK) break;
    gpar__buf_ref(s);
    if ((st = gpar__op_use(op, s, GPAR__WRITE)) == GPAR_OK) st = copy_out_ops(eng, s, (char *)user_ptr + o, len, &sub);
  }
  for (int i = 0; i < nslots; i++) {
    gpar__buf_put(sb[i]);
    gpar__buf_release(eng, slot[i]); /* freed once the ops are done with it */
  }
  return submit_built(&sub, st, GPAR__SUBMIT_WAIT);
}

GPAR_API int gpar_read(gpar_buffer src, size_t off, void *user_ptr, size_t bytes) {
  int st;
  gpar_engine *eng = gpar__engine_enter_buf(src, &st);
  if (!eng) return st;
  gpar__buf *b = NULL;
  if ((st = gpar__buf_get(eng, src, &b)) == GPAR_OK && (st = gpar__check_range(b, off, bytes, "gpar_read")) == GPAR_OK) {
    gpar__batch sub;
    gpar__batch_init(&sub);
    if (!user_ptr)
      st = gpar__errorf(GPAR_EINVAL, "gpar_read: user pointer is NULL");
    else if (gpar__in_op)
      st = gpar__errorf(GPAR_EDEADLK, "gpar_read called from inside an operation");
    else if (gpar__sink_active(eng))
      st = gpar__errorf(GPAR_ERECORDING, "gpar_read called while this thread records a graph");
    else if (b->host_memory) /* one chunk straight into user memory */
      st = submit_built(&sub, read_op(eng, b, off, user_ptr, bytes, &sub, NULL), GPAR__SUBMIT_WAIT);
    else
      st = read_device(eng, b, off, user_ptr, bytes);
  }
  if (b) gpar__buf_put(b);
  gpar__engine_leave(eng);
  return st;
}

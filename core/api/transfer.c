/* transfer.c: the public calls that move data: gpar_copy between any two buffers (direct, or
 * staged through pinned host chunks when two devices have no direct path), gpar_write from user
 * memory (staged, so the caller may reuse its memory at once) and gpar_read into user memory
 * (pinned chunks copied out while the next chunk is in flight). Each checks every argument
 * before anything is enqueued. */
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

/* Check and submit a direct copy; GPAR__STAGED when it must be staged. */
static int copy_direct(gpar_engine *eng, gpar_buffer dst, size_t dst_off, gpar_buffer src, size_t src_off,
                       size_t bytes) {
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
  if (st != GPAR_OK) {
    if (d) gpar__buf_put(d);
    if (s) gpar__buf_put(s);
    return st;
  }
  gpar__op *op = copy_op_new(eng, dev, &c);
  if (!op) {
    gpar__buf_put(d);
    gpar__buf_put(s);
    return GPAR_ENOMEM;
  }
  st = gpar__op_use(op, s, GPAR__READ);
  if (st == GPAR_OK)
    st = gpar__op_use(op, d, GPAR__WRITE);
  else
    gpar__buf_put(d);
  if (st != GPAR_OK) {
    gpar__op_discard(op);
    return st;
  }
  return gpar__api_submit(op);
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
  int legs = 0; /* legs submitted */
  for (int i = 0; i < nslots && st == GPAR_OK; i++)
    if ((st = gpar__buf_create(eng, GPAR_HOST, chunk, &slot[i]))) nslots = i;
  if (nslots > 0) st = GPAR_OK; /* fewer slots only means less overlap between the legs */
  for (size_t i = 0; i < nchunks && st == GPAR_OK; i++) {
    size_t off = i * chunk, len = bytes - off < chunk ? bytes - off : chunk;
    st = copy_call(eng, slot[i % (size_t)nslots], 0, src, src_off + off, len);
    if (st == GPAR_OK) legs++, st = copy_call(eng, dst, dst_off + off, slot[i % (size_t)nslots], 0, len);
    if (st == GPAR_OK) legs++;
  }
  /* A recording must not keep the legs already taken as if the copy had succeeded. */
  if (st != GPAR_OK && legs) gpar__sink_call_failed(eng, st);
  for (int i = 0; i < nslots; i++) gpar__buf_release(eng, slot[i]);
  return st;
}

static int copy_call(gpar_engine *eng, gpar_buffer dst, size_t dst_off, gpar_buffer src, size_t src_off, size_t bytes) {
  int st = copy_direct(eng, dst, dst_off, src, src_off, bytes);
  return st == GPAR__STAGED ? staged_copy(eng, dst, dst_off, src, src_off, bytes) : st;
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
  int st = gpar__buf_get(eng, h, &b);
  if (st) return st;
  st = gpar__check_range(b, off, bytes, what);
  *host = b->host_memory;
  gpar__buf_put(b);
  if (st == GPAR_OK && !user_ptr) st = gpar__errorf(GPAR_EINVAL, "%s: user pointer is NULL", what);
  return st;
}

/* Submit one staged chunk of a write. The staging becomes the op's (freed when it retires or is
 * discarded); on an earlier failure it is freed here. */
static int write_chunk(gpar_engine *eng, gpar_buffer dst, size_t off, void *staging, size_t len) {
  gpar__buf *b;
  int st = gpar__buf_get(eng, dst, &b); /* released meanwhile by another thread? */
  if (st) {
    gpar__pinned_free(eng->pinned, staging);
    return st;
  }
  gpar__copy_args c = {b->host_memory ? GPAR__COPY_H2H : GPAR__COPY_H2D, b->mem, off, staging, 0, len, NULL};
  gpar__op *op = copy_op_new(eng, b->host_memory ? eng->host_dev : b->dev, &c);
  if (!op) {
    gpar__buf_put(b);
    gpar__pinned_free(eng->pinned, staging);
    return GPAR_ENOMEM;
  }
  op->owned_pinned = staging;
  if ((st = gpar__op_use(op, b, GPAR__WRITE))) {
    gpar__op_discard(op);
    return st;
  }
  return gpar__api_submit(op);
}

/* The user's data is staged in pinned memory so the caller may reuse its memory at once. A
 * device destination is written chunk by chunk: staging chunk i+1 overlaps chunk i's
 * host-to-device copy. A chunk that cannot be staged stops the write with its error (the
 * chunks before it are already submitted; a recording thread's graph is told, and fails). */
static int write_call(gpar_engine *eng, gpar_buffer dst, size_t off, const void *user_ptr, size_t bytes) {
  int host, st = transfer_check(eng, dst, off, user_ptr, bytes, "gpar_write", &host);
  if (st) return st;
  size_t chunk = host ? bytes : GPAR__CHUNK, sent = 0;
  for (size_t done = 0; done < bytes && st == GPAR_OK; done += chunk) {
    size_t len = bytes - done < chunk ? bytes - done : chunk;
    void *staging;
    if ((st = gpar__pinned_alloc(eng, len, &staging))) break;
    memcpy(staging, (const char *)user_ptr + done, len);
    if ((st = write_chunk(eng, dst, off + done, staging, len)) == GPAR_OK) sent++;
  }
  if (st != GPAR_OK && sent) gpar__sink_call_failed(eng, st); /* some chunks went before it */
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

/* One chunk of a read: b+off -> dst (a host pointer), on the host or the source's D2H lane.
 * *out: the op with a reference for gpar__op_wait. */
static int read_chunk(gpar_engine *eng, gpar__buf *b, size_t off, void *dst, size_t len, gpar__op **out) {
  int host = b->host_memory;
  gpar__copy_args c = {host ? GPAR__COPY_H2H : GPAR__COPY_D2H, dst, 0, b->mem, off, len, NULL};
  gpar__op *op = copy_op_new(eng, host ? eng->host_dev : b->dev, &c);
  *out = NULL;
  if (!op) return GPAR_ENOMEM;
  op->reported = 1;
  gpar__buf_ref(b); /* the op's own reference */
  int st = gpar__op_use(op, b, GPAR__READ);
  if (st != GPAR_OK) {
    gpar__op_discard(op);
    return st;
  }
  return gpar__op_submit(op, GPAR__SUBMIT_KEEP, out);
}

/* Copy a staged chunk into (pageable) user memory: one thread's memcpy reaches ~5 GB/s into
 * malloc memory on the H200 machine, a tenth of the copy engine's rate, so large chunks are
 * split between the calling thread and up to GPAR__READ_PARTS - 1 CPU workers (as many as the
 * host backend has threads). The parts are ops on the CPU device with no buffers, so they
 * order against nothing. */
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
  for (int p = 1; p < parts; p++) { /* part 0 is the caller's */
    size_t o = (size_t)p * part, n = len - o < part ? len - o : part;
    gpar__copy_args c = {GPAR__COPY_H2H, dst, o, (void *)src, o, n, NULL};
    gpar__op *op = copy_op_new(eng, eng->host_dev, &c);
    if (!op) break;
    op->reported = 1;
    if (gpar__op_submit(op, GPAR__SUBMIT_KEEP, &ops[p])) ops[p] = NULL; /* refused: the caller copies it */
  }
  memcpy(dst, src, part);
  for (int p = 1; p < parts; p++) {
    size_t o = (size_t)p * part, n = len - o < part ? len - o : part;
    if (ops[p])
      gpar__op_wait(ops[p]);
    else
      memcpy(dst + o, src + o, n);
  }
}

/* A device buffer (the caller holds a reference on b, so a concurrent release cannot free it
 * meanwhile): device-to-host into pinned chunks, each copied out while the next chunk is in
 * flight. */
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
    for (; submitted < nchunks && submitted < i + (size_t)nslots && st == GPAR_OK; submitted++) {
      size_t o = submitted * chunk, len = bytes - o < chunk ? bytes - o : chunk;
      st = read_chunk(eng, b, off + o, slot[submitted % (size_t)nslots], len, &pending[submitted % (size_t)nslots]);
    }
    if (st) break;
    gpar__op *op = pending[i % (size_t)nslots];
    pending[i % (size_t)nslots] = NULL;
    if ((st = gpar__op_wait(op))) break;
    size_t o = i * chunk, len = bytes - o < chunk ? bytes - o : chunk;
    copy_out(eng, (char *)user_ptr + o, slot[i % (size_t)nslots], len);
  }
  for (int i = 0; i < nslots; i++) /* chunks still in flight after a failure */
    if (pending[i]) gpar__op_wait(pending[i]);
  for (int i = 0; i < nslots; i++) gpar__pinned_free(eng->pinned, slot[i]);
  return st;
}

GPAR_API int gpar_read(gpar_buffer src, size_t off, void *user_ptr, size_t bytes) {
  int st;
  gpar_engine *eng = gpar__engine_enter_buf(src, &st);
  if (!eng) return st;
  gpar__buf *b = NULL;
  gpar__op *op = NULL;
  if ((st = gpar__buf_get(eng, src, &b)) == GPAR_OK && (st = gpar__check_range(b, off, bytes, "gpar_read")) == GPAR_OK) {
    if (!user_ptr)
      st = gpar__errorf(GPAR_EINVAL, "gpar_read: user pointer is NULL");
    else if (gpar__in_op)
      st = gpar__errorf(GPAR_EDEADLK, "gpar_read called from inside an operation");
    else if (gpar__sink_active(eng))
      st = gpar__errorf(GPAR_ERECORDING, "gpar_read called while this thread records a graph");
    else if (b->host_memory) /* one chunk straight into user memory */
      st = (st = read_chunk(eng, b, off, user_ptr, bytes, &op)) == GPAR_OK ? gpar__op_wait(op) : st;
    else
      st = read_device(eng, b, off, user_ptr, bytes);
  }
  if (b) gpar__buf_put(b);
  gpar__engine_leave(eng);
  return st;
}

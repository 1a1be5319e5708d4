/* ops.c: the public operations (copy, write, read, fill, GEMM, user functions). Each one checks
 * every argument before anything is enqueued, picks the device and lane that runs it, declares
 * its read and write sets, and hands it to the engine (engine.c). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Chunk size of staged transfers (pageable reads, copies between devices without a direct
 * path): large enough for full copy bandwidth, small enough that the two legs overlap. */
#define GPAR__CHUNK ((size_t)8 << 20)
#define GPAR__STAGE_SLOTS 4

/* Resolve the n handles of one op; all must belong to one engine. On success the engine lock
 * is held and *eng_out is set. */
static int resolve(const gpar_buffer *h, gpar__buf **b, int n, gpar_engine **eng_out) {
  int st = gpar__buf_lookup(h[0], &b[0], eng_out);
  if (st) return st;
  for (int i = 1; i < n; i++)
    if ((st = gpar__buf_get_locked(*eng_out, h[i], &b[i]))) {
      pthread_mutex_unlock(&(*eng_out)->mu);
      return st;
    }
  return GPAR_OK;
}

static int check_range(const gpar__buf *b, size_t off, size_t bytes, const char *what) {
  if (bytes == 0) return gpar__errorf(GPAR_EINVAL, "%s: size is 0", what);
  if (off > b->bytes || bytes > b->bytes - off)
    return gpar__errorf(GPAR_ERANGE, "%s: range [%zu, +%zu) exceeds the buffer's %zu bytes", what, off, bytes,
                        b->bytes);
  return GPAR_OK;
}

/* Submit a built op (engine lock held, released here). In synchronous mode, or with wait,
 * returns only after the op has retired, with its status. */
static int submit_unlock(gpar_engine *eng, gpar__op *op, int wait) {
  wait = (wait || eng->cfg.synchronous) && !gpar__in_op && !gpar__graph_recording(eng);
  int st = gpar__op_submit(eng, op, wait);
  pthread_mutex_unlock(&eng->mu);
  return wait && st == GPAR_OK ? gpar__wait_op(eng, op) : st;
}

static gpar__op *new_op(gpar_engine *eng, int kind, gpar__device *dev, int lane, const char *name) {
  gpar__op *op = gpar__op_new(eng);
  if (!op) {
    gpar__errorf(GPAR_ENOMEM, "out of host memory for an operation");
    return NULL;
  }
  op->kind = kind;
  op->dev = dev;
  op->lane = lane;
  op->name = name;
  return op;
}

static int add_access(gpar_engine *eng, gpar__op *op, gpar__buf *b, int mode) {
  if (gpar__op_add_access(op, b, mode) == GPAR_OK) return GPAR_OK;
  gpar__op_discard(eng, op);
  pthread_mutex_unlock(&eng->mu);
  return gpar__errorf(GPAR_ENOMEM, "out of host memory for an operation");
}

/* ---------------------------------------------------------------- copies */

/* Choose where a copy between two buffers runs. 0: direct; 1: must be staged through host. */
static int plan_copy(gpar_engine *eng, gpar__buf *d, gpar__buf *s, gpar__op *op) {
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
static int do_copy(gpar_buffer dst, size_t dst_off, gpar_buffer src, size_t src_off, size_t bytes);

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
    st = do_copy(slot[i % (size_t)nslots], 0, src, src_off + off, len);
    if (st == GPAR_OK) st = do_copy(dst, dst_off + off, slot[i % (size_t)nslots], 0, len);
  }
  for (int i = 0; i < nslots; i++) gpar__buffer_release(slot[i]);
  return st;
}

static int do_copy(gpar_buffer dst, size_t dst_off, gpar_buffer src, size_t src_off, size_t bytes) {
  gpar_buffer h[2] = {dst, src};
  gpar__buf *b[2];
  gpar_engine *eng;
  int st = resolve(h, b, 2, &eng);
  if (st) return st;
  if ((st = check_range(b[0], dst_off, bytes, "gpar_copy destination")) ||
      (st = check_range(b[1], src_off, bytes, "gpar_copy source"))) {
    pthread_mutex_unlock(&eng->mu);
    return st;
  }
  if (b[0] == b[1] && dst_off < src_off + bytes && src_off < dst_off + bytes) {
    pthread_mutex_unlock(&eng->mu);
    return gpar__errorf(GPAR_EALIAS, "gpar_copy: source and destination ranges overlap in one buffer");
  }
  gpar__op *op = new_op(eng, GPAR__OP_COPY, NULL, 0, NULL);
  if (!op) {
    pthread_mutex_unlock(&eng->mu);
    return GPAR_ENOMEM;
  }
  if (plan_copy(eng, b[0], b[1], op)) {
    gpar__op_discard(eng, op);
    pthread_mutex_unlock(&eng->mu);
    return staged_copy(eng, dst, dst_off, src, src_off, bytes);
  }
  op->u.copy.dst_off = dst_off;
  op->u.copy.src_off = src_off;
  op->u.copy.bytes = bytes;
  if ((st = add_access(eng, op, b[1], GPAR__READ)) || (st = add_access(eng, op, b[0], GPAR__WRITE))) return st;
  return submit_unlock(eng, op, 0);
}

static int do_write(gpar_buffer dst, size_t off, const void *user_ptr, size_t bytes) {
  gpar__buf *b;
  gpar_engine *eng;
  int st = gpar__buf_lookup(dst, &b, &eng);
  if (st) return st;
  st = check_range(b, off, bytes, "gpar_write");
  if (st == GPAR_OK && !user_ptr) st = gpar__errorf(GPAR_EINVAL, "gpar_write: user pointer is NULL");
  int host = b->host_memory;
  pthread_mutex_unlock(&eng->mu);
  if (st) return st;
  /* The user's data is staged in pinned memory so the caller may reuse its memory at once.
   * A device destination is written chunk by chunk: staging chunk i+1 overlaps chunk i's
   * host-to-device copy. A chunk that cannot be staged stops the write with its error (the
   * chunks before it are already submitted). */
  size_t chunk = host ? bytes : GPAR__CHUNK;
  for (size_t done = 0; done < bytes; done += chunk) {
    size_t len = bytes - done < chunk ? bytes - done : chunk;
    void *staging;
    if ((st = gpar__pinned_alloc(eng, len, &staging))) return st;
    memcpy(staging, (const char *)user_ptr + done, len);
    if ((st = gpar__buf_lookup(dst, &b, &eng))) { /* released meanwhile by another thread */
      gpar__pinned_free(&eng->pinned, staging);
      return st;
    }
    gpar__op *op = new_op(eng, GPAR__OP_COPY, host ? eng->host_dev : b->dev,
                          host ? GPAR__LANE_COMPUTE : GPAR__LANE_H2D, host ? "write_h2h" : "write_h2d");
    if (!op) {
      pthread_mutex_unlock(&eng->mu);
      gpar__pinned_free(&eng->pinned, staging);
      return GPAR_ENOMEM;
    }
    op->u.copy = (gpar__copy_args){host ? GPAR__COPY_H2H : GPAR__COPY_H2D, b->mem, off + done, staging, 0, len, NULL};
    if ((st = add_access(eng, op, b, GPAR__WRITE))) {
      gpar__pinned_free(&eng->pinned, staging);
      return st;
    }
    op->staging = staging; /* freed when the op retires, or by a refused submit */
    if ((st = submit_unlock(eng, op, 0))) return st;
  }
  return GPAR_OK;
}

/* One chunk of a read: src+off -> dst (a host pointer), on the host or the source's D2H lane.
 * Engine lock held. *out: the op with a reference for gpar__wait_op. */
static int submit_read_chunk(gpar_engine *eng, gpar__buf *b, size_t off, void *dst, size_t len, gpar__op **out) {
  int host = b->host_memory;
  gpar__op *op = new_op(eng, GPAR__OP_COPY, host ? eng->host_dev : b->dev,
                        host ? GPAR__LANE_COMPUTE : GPAR__LANE_D2H, host ? "read_h2h" : "read_d2h");
  *out = NULL;
  if (!op) return GPAR_ENOMEM;
  op->u.copy = (gpar__copy_args){host ? GPAR__COPY_H2H : GPAR__COPY_D2H, dst, 0, b->mem, off, len, NULL};
  op->reported = 1;
  if (gpar__op_add_access(op, b, GPAR__READ)) {
    gpar__op_discard(eng, op);
    return gpar__errorf(GPAR_ENOMEM, "out of host memory for an operation");
  }
  int st = gpar__op_submit(eng, op, 1);
  if (st == GPAR_OK) *out = op;
  return st;
}

/* Copy a staged chunk into (pageable) user memory: one thread's memcpy reaches ~6 GB/s into
 * malloc memory on the H200 machine, a tenth of the copy engine's rate, so large chunks are
 * split between the calling thread and CPU workers. The parts are internal ops on the CPU
 * device with no buffers, so they order against nothing. */
static void copy_out(gpar_engine *eng, char *dst, const char *src, size_t len) {
  enum { MAX_PARTS = 4 };
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
    if (!(ops[p] = new_op(eng, GPAR__OP_COPY, eng->host_dev, GPAR__LANE_COMPUTE, "read_copy_out"))) break;
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

static int do_read(gpar_buffer src, size_t off, void *user_ptr, size_t bytes) {
  gpar__buf *b;
  gpar_engine *eng;
  int st = gpar__buf_lookup(src, &b, &eng);
  if (st) return st;
  st = check_range(b, off, bytes, "gpar_read");
  if (st == GPAR_OK && !user_ptr) st = gpar__errorf(GPAR_EINVAL, "gpar_read: user pointer is NULL");
  if (st == GPAR_OK && gpar__in_op) st = gpar__errorf(GPAR_EDEADLK, "gpar_read called from inside an operation");
  if (st == GPAR_OK && gpar__graph_recording(eng))
    st = gpar__errorf(GPAR_ERECORDING, "gpar_read called while this thread records a graph");
  if (st) {
    pthread_mutex_unlock(&eng->mu);
    return st;
  }
  if (b->host_memory) { /* the CPU copies straight into user memory */
    gpar__op *op;
    st = submit_read_chunk(eng, b, off, user_ptr, bytes, &op);
    pthread_mutex_unlock(&eng->mu);
    return st == GPAR_OK ? gpar__wait_op(eng, op) : st;
  }
  /* A device buffer: device-to-host into pinned chunks, each copied out while the next chunk
   * is in flight. The buffer is pinned by pending++ so a concurrent release cannot free it. */
  size_t chunk = bytes < GPAR__CHUNK ? bytes : GPAR__CHUNK;
  size_t nchunks = (bytes + chunk - 1) / chunk;
  int nslots = nchunks < GPAR__STAGE_SLOTS ? (int)nchunks : GPAR__STAGE_SLOTS;
  void *slot[GPAR__STAGE_SLOTS];
  gpar__op *pending[GPAR__STAGE_SLOTS] = {0};
  b->pending++;
  pthread_mutex_unlock(&eng->mu);
  for (int i = 0; i < nslots; i++)
    if ((st = gpar__pinned_alloc(eng, chunk, &slot[i]))) {
      nslots = i;
      break;
    }
  size_t submitted = 0;
  for (size_t i = 0; i < nchunks && st == GPAR_OK; i++) {
    pthread_mutex_lock(&eng->mu);
    for (; submitted < nchunks && submitted < i + (size_t)nslots; submitted++) {
      size_t o = submitted * chunk, len = bytes - o < chunk ? bytes - o : chunk;
      gpar__op *op;
      if ((st = submit_read_chunk(eng, b, off + o, slot[submitted % (size_t)nslots], len, &op))) break;
      pending[submitted % (size_t)nslots] = op;
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

static int do_fill(gpar_buffer dst, size_t off, size_t bytes, unsigned char value) {
  gpar__buf *b;
  gpar_engine *eng;
  int st = gpar__buf_lookup(dst, &b, &eng);
  if (st) return st;
  if ((st = check_range(b, off, bytes, "gpar_fill"))) {
    pthread_mutex_unlock(&eng->mu);
    return st;
  }
  gpar__op *op = new_op(eng, GPAR__OP_FILL, b->host_memory ? eng->host_dev : b->dev, GPAR__LANE_COMPUTE, "fill");
  if (!op) {
    pthread_mutex_unlock(&eng->mu);
    return GPAR_ENOMEM;
  }
  op->u.fill.mem = b->mem;
  op->u.fill.off = off;
  op->u.fill.bytes = bytes;
  op->u.fill.value = value;
  if ((st = add_access(eng, op, b, GPAR__WRITE))) return st;
  return submit_unlock(eng, op, 0);
}

/* ---------------------------------------------------------------- GEMM */

/* Element range [first, last) of a column-major rows x cols matrix with leading dimension ld
 * at element offset off; 0 on overflow. */
static int matrix_extent(size_t off, int rows, int cols, int ld, size_t *end) {
  size_t e = (size_t)(cols - 1) * (size_t)ld;
  if (cols > 1 && e / (size_t)(cols - 1) != (size_t)ld) return 0;
  if (e > SIZE_MAX - (size_t)rows || e + (size_t)rows > SIZE_MAX - off) return 0;
  *end = off + e + (size_t)rows;
  return 1;
}

static int gemm_submit(int elem, gpar_trans ta, gpar_trans tb, int m, int n, int k, double alpha,
                       gpar_buffer a, size_t a_off, int lda, gpar_buffer bb, size_t b_off, int ldb, double beta,
                       gpar_buffer c, size_t c_off, int ldc) {
  const char *fn = elem == 4 ? "gpar_sgemm" : "gpar_dgemm";
  if ((ta != GPAR_NO_TRANS && ta != GPAR_TRANS) || (tb != GPAR_NO_TRANS && tb != GPAR_TRANS))
    return gpar__errorf(GPAR_EINVAL, "%s: transpose flag is neither GPAR_NO_TRANS nor GPAR_TRANS", fn);
  if (m < 0 || n < 0 || k < 0) return gpar__errorf(GPAR_EINVAL, "%s: negative dimension (m=%d n=%d k=%d)", fn, m, n, k);
  int ar = ta == GPAR_NO_TRANS ? m : k, ac = ta == GPAR_NO_TRANS ? k : m;
  int br = tb == GPAR_NO_TRANS ? k : n, bc = tb == GPAR_NO_TRANS ? n : k;
  if (lda < (ar > 1 ? ar : 1)) return gpar__errorf(GPAR_EINVAL, "%s: lda=%d < max(1, %d)", fn, lda, ar);
  if (ldb < (br > 1 ? br : 1)) return gpar__errorf(GPAR_EINVAL, "%s: ldb=%d < max(1, %d)", fn, ldb, br);
  if (ldc < (m > 1 ? m : 1)) return gpar__errorf(GPAR_EINVAL, "%s: ldc=%d < max(1, %d)", fn, ldc, m);
  gpar_buffer h[3] = {c, a, bb};
  gpar__buf *b[3];
  gpar_engine *eng;
  int st = resolve(h, b, 3, &eng);
  if (st) return st;
  size_t end[3] = {0, 0, 0};
  const size_t off[3] = {c_off, a_off, b_off};
  const int rows[3] = {m, ar, br}, cols[3] = {n, ac, bc}, ld[3] = {ldc, lda, ldb};
  const char *nm[3] = {"C", "A", "B"};
  int empty = m == 0 || n == 0;
  for (int i = 0; i < 3 && st == GPAR_OK; i++) {
    if (rows[i] == 0 || cols[i] == 0) { /* no element read (k == 0, m == 0, n == 0): BLAS view, */
      end[i] = off[i];                    /* the offset is still an argument and must lie in the buffer */
      if (off[i] > b[i]->bytes / (size_t)elem)
        st = gpar__errorf(GPAR_ERANGE, "%s: matrix %s (%dx%d) offset %zu is past its buffer of %zu elements", fn, nm[i],
                          rows[i], cols[i], off[i], b[i]->bytes / (size_t)elem);
      continue;
    }
    if (!matrix_extent(off[i], rows[i], cols[i], ld[i], &end[i]) || end[i] > b[i]->bytes / (size_t)elem)
      st = gpar__errorf(GPAR_ERANGE, "%s: matrix %s (%dx%d, ld %d, offset %zu) exceeds its buffer of %zu elements", fn,
                        nm[i], rows[i], cols[i], ld[i], off[i], b[i]->bytes / (size_t)elem);
  }
  for (int i = 1; i < 3 && st == GPAR_OK; i++)
    if (b[i] == b[0] && end[i] > off[i] && end[0] > off[0] && off[i] < end[0] && off[0] < end[i])
      st = gpar__errorf(GPAR_EALIAS, "%s: C overlaps %s", fn, nm[i]);
  for (int i = 1; i < 3 && st == GPAR_OK; i++)
    if (b[i]->host_memory != b[0]->host_memory || (!b[0]->host_memory && b[i]->dev != b[0]->dev))
      st = gpar__errorf(GPAR_EINVAL, "%s: %s is not on C's device (GEMM runs on C's device)", fn, nm[i]);
  if (st || empty) { /* m or n zero: nothing to compute (BLAS quick return) */
    pthread_mutex_unlock(&eng->mu);
    return st;
  }
  gpar__op *op = new_op(eng, GPAR__OP_GEMM, b[0]->host_memory ? eng->host_dev : b[0]->dev, GPAR__LANE_COMPUTE,
                        elem == 4 ? "sgemm" : "dgemm");
  if (!op) {
    pthread_mutex_unlock(&eng->mu);
    return GPAR_ENOMEM;
  }
  op->u.gemm = (gpar__gemm_args){elem, ta, tb, m, n, k, alpha, beta, b[1]->mem, a_off, lda,
                                 b[2]->mem, b_off, ldb, b[0]->mem, c_off, ldc, 0};
  if ((st = add_access(eng, op, b[1], GPAR__READ)) || (st = add_access(eng, op, b[2], GPAR__READ)) ||
      (st = add_access(eng, op, b[0], beta == 0.0 ? GPAR__WRITE : GPAR__READ | GPAR__WRITE)))
    return st;
  return submit_unlock(eng, op, 0);
}

/* Enter C's engine around gemm_submit. */
static int gemm_call(int elem, gpar_trans ta, gpar_trans tb, int m, int n, int k, double alpha, gpar_buffer a,
                     size_t a_off, int lda, gpar_buffer b, size_t b_off, int ldb, double beta, gpar_buffer c,
                     size_t c_off, int ldc) {
  int st;
  gpar_engine *eng = gpar__engine_enter_buf(c, &st);
  if (!eng) return st;
  st = gemm_submit(elem, ta, tb, m, n, k, alpha, a, a_off, lda, b, b_off, ldb, beta, c, c_off, ldc);
  gpar__engine_leave(eng);
  return st;
}

GPAR_API int gpar_sgemm(gpar_trans trans_a, gpar_trans trans_b, int m, int n, int k, float alpha, gpar_buffer a,
                        size_t a_off, int lda, gpar_buffer b, size_t b_off, int ldb, float beta, gpar_buffer c,
                        size_t c_off, int ldc) {
  return gemm_call(4, trans_a, trans_b, m, n, k, alpha, a, a_off, lda, b, b_off, ldb, beta, c, c_off, ldc);
}

GPAR_API int gpar_dgemm(gpar_trans trans_a, gpar_trans trans_b, int m, int n, int k, double alpha, gpar_buffer a,
                        size_t a_off, int lda, gpar_buffer b, size_t b_off, int ldb, double beta, gpar_buffer c,
                        size_t c_off, int ldc) {
  return gemm_call(8, trans_a, trans_b, m, n, k, alpha, a, a_off, lda, b, b_off, ldb, beta, c, c_off, ldc);
}

/* ---------------------------------------------------------------- user functions */

static int do_submit(gpar_engine *eng, int dev, gpar_user_fn fn, void *arg, const gpar_buffer *reads, int nreads,
                  const gpar_buffer *writes, int nwrites) {
  int st;
  if (!fn) return gpar__errorf(GPAR_EINVAL, "gpar_submit: fn is NULL");
  if (nreads < 0 || nwrites < 0 || (nreads && !reads) || (nwrites && !writes))
    return gpar__errorf(GPAR_EINVAL, "gpar_submit: bad read/write set (%d reads at %p, %d writes at %p)", nreads,
                        (const void *)reads, nwrites, (const void *)writes);
  if (dev != GPAR_HOST && (dev < 0 || dev >= eng->ndev))
    return gpar__errorf(GPAR_ENODEV, "gpar_submit: device %d does not exist (%d devices)", dev, eng->ndev);
  pthread_mutex_lock(&eng->mu);
  gpar__op *op = new_op(eng, GPAR__OP_USER, dev == GPAR_HOST ? eng->host_dev : eng->devs[dev], GPAR__LANE_COMPUTE,
                        "user");
  if (!op) {
    pthread_mutex_unlock(&eng->mu);
    return GPAR_ENOMEM;
  }
  op->u.user.fn = fn;
  op->u.user.arg = arg;
  for (int i = 0; i < nreads + nwrites; i++) {
    gpar__buf *b;
    int w = i >= nreads;
    if ((st = gpar__buf_get_locked(eng, w ? writes[i - nreads] : reads[i], &b))) {
      gpar__op_discard(eng, op);
      pthread_mutex_unlock(&eng->mu);
      return st;
    }
    if ((st = add_access(eng, op, b, w ? GPAR__WRITE : GPAR__READ))) return st;
  }
  return submit_unlock(eng, op, 0);
}

/* ---------------------------------------------------------------- entry points */
/* Each public call enters the engine its first handle names (gpar__engine_enter_buf), so a
 * concurrent gpar_shutdown frees nothing while the call is inside. */

GPAR_API int gpar_copy(gpar_buffer dst, size_t dst_off, gpar_buffer src, size_t src_off, size_t bytes) {
  int st;
  gpar_engine *eng = gpar__engine_enter_buf(dst, &st);
  if (!eng) return st;
  st = do_copy(dst, dst_off, src, src_off, bytes);
  gpar__engine_leave(eng);
  return st;
}

GPAR_API int gpar_write(gpar_buffer dst, size_t off, const void *user_ptr, size_t bytes) {
  int st;
  gpar_engine *eng = gpar__engine_enter_buf(dst, &st);
  if (!eng) return st;
  st = do_write(dst, off, user_ptr, bytes);
  gpar__engine_leave(eng);
  return st;
}

GPAR_API int gpar_read(gpar_buffer src, size_t off, void *user_ptr, size_t bytes) {
  int st;
  gpar_engine *eng = gpar__engine_enter_buf(src, &st);
  if (!eng) return st;
  st = do_read(src, off, user_ptr, bytes);
  gpar__engine_leave(eng);
  return st;
}

GPAR_API int gpar_fill(gpar_buffer dst, size_t off, size_t bytes, unsigned char value) {
  int st;
  gpar_engine *eng = gpar__engine_enter_buf(dst, &st);
  if (!eng) return st;
  st = do_fill(dst, off, bytes, value);
  gpar__engine_leave(eng);
  return st;
}

GPAR_API int gpar_submit(gpar_engine *e, int dev, gpar_user_fn fn, void *arg, const gpar_buffer *reads, int nreads,
                         const gpar_buffer *writes, int nwrites) {
  int st;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  st = do_submit(eng, dev, fn, arg, reads, nreads, writes, nwrites);
  gpar__engine_leave(eng);
  return st;
}

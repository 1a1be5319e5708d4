/* mpi_submit.c: one operation's engine work through MPI, all of it or (as far as this rank's
 * communication goes) none: host memory for each buffer range (the buffer itself when host code
 * can touch it, else a GPAR_HOST staging buffer; every staging buffer is made before anything is
 * queued); the copies into the staging buffers; one CPU op (mpi_ops.c) that reads and writes the
 * ranges and writes the communicator's token; the copies back. The op waits at its gate until
 * every part is submitted; when a part fails to submit, the op communicates nothing and fails. */
#include <stdlib.h>

#include "mpi_internal.h"

/* A send only reads its buffer, a receive only writes it, a collective does both. */
int gpar__mpi_submit(gpar__mpi_ctx *c, gpar__mpi_job *j, const gpar_buffer *bufs, const size_t *offs_bytes,
                     size_t bytes, const int *in, int out, int reads, int writes) {
  int n = j->n, st = GPAR_OK, submitted = 0;
  gpar_buffer *rw = calloc((size_t)n + 1, sizeof *rw), *stage = calloc((size_t)n, sizeof *stage);
  if (!rw || !stage) st = gpar__mpi_fail(GPAR_ENOMEM, "out of host memory");
  for (int i = 0; i < n && st == GPAR_OK; i++) {
    int dev = GPAR_HOST;
    gpar_buffer_query(bufs[i], NULL, &dev);
    char *hp = dev == GPAR_HOST || dev == c->host_dev ? gpar_buffer_host_ptr(bufs[i]) : NULL;
    if (hp) {
      rw[i] = bufs[i];
      j->ptrs[i] = hp + offs_bytes[i];
      continue;
    }
    if ((st = gpar_buffer_create(c->eng, GPAR_HOST, bytes, &stage[i]))) break;
    rw[i] = stage[i];
    j->ptrs[i] = gpar_buffer_host_ptr(stage[i]);
  }
  for (int i = 0; i < n && st == GPAR_OK; i++)
    if (stage[i].id && in[i]) st = gpar_copy(stage[i], 0, bufs[i], offs_bytes[i], bytes);
  if (st == GPAR_OK) {
    rw[n] = c->token;
    st = gpar_submit(c->eng, GPAR_HOST, gpar__mpi_job_run, j, rw, reads ? n : 0, writes ? rw : rw + n,
                     writes ? n + 1 : 1);
    submitted = st == GPAR_OK;
  }
  for (int i = 0; i < n && st == GPAR_OK && out; i++)
    if (stage[i].id) st = gpar_copy(bufs[i], offs_bytes[i], stage[i], 0, bytes);
  atomic_store(&j->gate, st == GPAR_OK ? GPAR__GATE_SEALED : GPAR__GATE_CANCELLED);
  if (!submitted) atomic_store(&j->done, 1);
  for (int i = 0; stage && i < n; i++)
    if (stage[i].id) gpar_buffer_release(stage[i]); /* freed once their ops are done */
  free(rw);
  free(stage);
  return st;
}

int gpar__mpi_collective_staged(gpar__mpi_ctx *c, const gpar_coll *a) {
  gpar__mpi_job *j = gpar__mpi_coll_job_new(c, a);
  if (!j) return GPAR_ENOMEM;
  size_t blocks = a->kind >= GPAR_COLL_REDUCE_SCATTER ? (size_t)c->nmembers : 1;
  size_t bytes = a->count * blocks * j->esize;
  size_t *offb = malloc(sizeof *offb * (size_t)c->nlocal);
  int *in = malloc(sizeof *in * (size_t)c->nlocal);
  if (!offb || !in) {
    free(offb);
    free(in);
    atomic_store(&j->done, 1);
    return gpar__mpi_fail(GPAR_ENOMEM, "out of host memory");
  }
  for (int i = 0; i < c->nlocal; i++) {
    offb[i] = a->offs[i] * j->esize;
    in[i] = a->kind != GPAR_COLL_BROADCAST || c->first + i == a->root;
  }
  int st = gpar__mpi_submit(c, j, a->bufs, offb, bytes, in, 1, 1, 1);
  free(offb);
  free(in);
  return st;
}

/* mpi_abandoned.c: requests that timed out and that MPI did not cancel. Such a request may still
 * read or write its memory when a late rank joins. It stays here, with its memory, until
 * MPI_Test says it is complete: tested by every later libgpar_mpi call and op, by
 * gpar_comm_destroy, and at MPI_Finalize (an attribute of MPI_COMM_SELF). The MPI communicator
 * of a destroyed gpar communicator is freed once none of its requests is here any more. What is
 * still here at MPI_Finalize stays allocated (reachable from this list) for the life of the
 * process. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "mpi_internal.h"

typedef struct lost {
  struct lost *next;
  MPI_Request req;
  void *mem;
  gpar__mpi_commref *ref;
} lost;

static pthread_mutex_t lost_mu = PTHREAD_MUTEX_INITIALIZER;
static lost *lost_list;
static atomic_int lost_count;
static atomic_int mpi_finalizing; /* MPI_Finalize has begun: no more MPI calls from here */

void gpar__mpi_lost_sweep(void) {
  if (atomic_load(&lost_count) == 0 || atomic_load(&mpi_finalizing)) return;
  pthread_mutex_lock(&lost_mu);
  for (lost **p = &lost_list; *p;) {
    lost *l = *p;
    int flag = 0;
    if (gpar__mpi_test(&l->req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) flag = 1; /* failed: MPI let go of it */
    if (!flag) {
      p = &l->next;
      continue;
    }
    *p = l->next;
    atomic_fetch_sub(&lost_count, 1);
    free(l->mem);
    if (--l->ref->pending == 0 && l->ref->released) {
      gpar__mpi_comm_free(&l->ref->mc);
      free(l->ref);
    }
    free(l);
  }
  pthread_mutex_unlock(&lost_mu);
}

/* Out of host memory for an entry: the memory is never freed (MPI may still use it). */
static void *lost_unrecorded[64]; /* kept reachable, never freed */
static atomic_int lost_nunrecorded;

void gpar__mpi_lost_add(gpar__mpi_commref *ref, MPI_Request req, void *mem) {
  lost *l = malloc(sizeof *l);
  if (!l) {
    int k = atomic_fetch_add(&lost_nunrecorded, 1);
    if (k < 64) lost_unrecorded[k] = mem;
    return;
  }
  l->req = req;
  l->mem = mem;
  l->ref = ref;
  pthread_mutex_lock(&lost_mu);
  l->next = lost_list;
  lost_list = l;
  ref->pending++;
  atomic_fetch_add(&lost_count, 1);
  pthread_mutex_unlock(&lost_mu);
}

void gpar__mpi_commref_release(gpar__mpi_commref *ref) {
  pthread_mutex_lock(&lost_mu);
  ref->released = 1;
  int now = ref->pending == 0;
  pthread_mutex_unlock(&lost_mu);
  if (now) {
    gpar__mpi_comm_free(&ref->mc);
    free(ref);
  }
}

static int at_finalize(MPI_Comm comm, int keyval, void *attr, void *extra) {
  (void)comm, (void)keyval, (void)attr, (void)extra;
  gpar__mpi_lost_sweep();
  atomic_store(&mpi_finalizing, 1);
  return MPI_SUCCESS;
}

/* MPI deletes MPI_COMM_SELF's attributes first at MPI_Finalize. */
void gpar__mpi_finalize_hook(void) {
  static pthread_mutex_t hook_mu = PTHREAD_MUTEX_INITIALIZER;
  static int set;
  pthread_mutex_lock(&hook_mu);
  int kv = MPI_KEYVAL_INVALID;
  if (!set && MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, at_finalize, &kv, NULL) == MPI_SUCCESS) {
    set = MPI_Comm_set_attr(MPI_COMM_SELF, kv, NULL) == MPI_SUCCESS;
    MPI_Comm_free_keyval(&kv); /* freed by MPI once the attribute is deleted */
  }
  pthread_mutex_unlock(&hook_mu);
}

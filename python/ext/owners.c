/* owners.c: giving imported memory back to its owner under the GIL. libgpar calls
 * gpy_owner_release from one of its threads once a released import's last op is done; it must
 * neither block nor call libgpar there (gpar_buffer_import), so it queues the owner and asks
 * the interpreter for a pending call; the queue drains under the GIL then, or at the next call
 * into the module. Lock: owners_mu, taken alone (no libgpar call and no Python call inside). */
#include "pygpar.h"

#include <pthread.h>
#include <stdlib.h>

static pthread_mutex_t owners_mu = PTHREAD_MUTEX_INITIALIZER;
static gpy_owner *owners_head;

static int drain_pending(void *unused) {
  (void)unused;
  gpy_owners_drain();
  return 0;
}

void gpy_owner_release(void *arg) {
  gpy_owner *o = arg;
  pthread_mutex_lock(&owners_mu);
  int first = owners_head == NULL;
  o->next = owners_head;
  owners_head = o;
  pthread_mutex_unlock(&owners_mu);
  if (first) (void)Py_AddPendingCall(drain_pending, NULL); /* a full queue: the next call drains */
}

void gpy_owners_drain(void) {
  pthread_mutex_lock(&owners_mu);
  gpy_owner *o = owners_head;
  owners_head = NULL;
  pthread_mutex_unlock(&owners_mu);
  while (o) {
    gpy_owner *next = o->next;
    o->fn(o->ctx);
    free(o);
    o = next;
  }
}

static PyObject *py_drain(PyObject *self, PyObject *args) {
  gpy_owners_drain();
  Py_RETURN_NONE;
}

PyMethodDef gpy_owner_methods[] = {
    {"drain", py_drain, METH_NOARGS, "Give imported memory whose buffers are done back to its owners now."},
    {NULL, NULL, 0, NULL}};

/* kind.c: the op kinds of kernel launches, interned per kernel name so that traces name the
 * kernel, and what a launch op does when it runs. On a GPU the op enqueues the launch on the
 * compute lane (kernel_launch). On the host device it spreads the launch's groups over the CPU
 * workers: the op submits one helper op per other worker, and it and the helpers claim runs of
 * groups from one counter until none is left; the op then waits only for runs other workers have
 * claimed and are running, never for a helper that has not started (a helper that starts late
 * finds nothing left and ends), so no worker ever waits for work that waits for it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernel.h"

/* ---------------------------------------------------------------- the launch op */


static const gpar__karg *klaunch_args(const gpar__klaunch *L) { return L->nargs <= GPAR__KL_INLINE ? L->inl : L->more; }

/* The host's spreading of one launch: claimed in runs of `chunk` groups. */
typedef struct kspread {
  atomic_int refs;   /* the launching op's and one per helper op */
  atomic_ulong next; /* the next run to claim */
  atomic_ulong done; /* runs finished */
  unsigned long nruns;
  uint64_t chunk;
  gpar__device *dev;
  void *module;
  gpar__kernel_launch l; /* its args live in the launching op, which outlives every claimed run */
} kspread;

static void spread_unref(kspread *s) {
  if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1) free(s);
}

/* Run the runs this thread claims. */
static void spread_work(kspread *s) {
  for (unsigned long r; (r = atomic_fetch_add_explicit(&s->next, 1, memory_order_relaxed)) < s->nruns;) {
    gpar__kernel_launch l = s->l;
    l.first = r * s->chunk;
    l.count = s->l.count - l.first >= s->chunk ? s->chunk : s->l.count - l.first;
    s->dev->ops->kernel_launch(s->dev->bdev, GPAR__LANE_COMPUTE, s->module, &l); /* the host's never fails */
    atomic_fetch_add_explicit(&s->done, 1, memory_order_release);
  }
}

static int helper_run(gpar__device *dev, gpar__op *op) {
  (void)dev;
  spread_work(*(kspread **)gpar__op_args(op));
  return GPAR_OK;
}
static void helper_release(gpar__op *op) { spread_unref(*(kspread **)gpar__op_args(op)); }
static const gpar__op_kind kind_helper = {.name = "kernel_helper", .run = helper_run, .release = helper_release};

/* Run l over the host device's workers (the calling worker is one of them). */
static int host_spread(gpar__device *dev, void *module, const gpar__kernel_launch *l) {
  int workers = dev->nthreads > 0 ? dev->nthreads : 1;
  uint64_t chunk = l->count / ((uint64_t)workers * 8);
  if (chunk < 1) chunk = 1;
  unsigned long nruns = (unsigned long)(l->count / chunk + (l->count % chunk != 0)); /* no count + chunk: it may wrap */
  int helpers = nruns - 1 < (unsigned long)(workers - 1) ? (int)(nruns - 1) : workers - 1;
  if (helpers == 0) return dev->ops->kernel_launch(dev->bdev, GPAR__LANE_COMPUTE, module, l);
  kspread *s = malloc(sizeof *s);
  if (!s) return dev->ops->kernel_launch(dev->bdev, GPAR__LANE_COMPUTE, module, l);
  atomic_init(&s->refs, 1 + helpers);
  atomic_init(&s->next, 0);
  atomic_init(&s->done, 0);
  s->nruns = nruns;
  s->chunk = chunk;
  s->dev = dev;
  s->module = module;
  s->l = *l;
  for (int h = 0; h < helpers; h++) {
    gpar__op *op = gpar__op_new(dev->eng, &kind_helper, dev, GPAR__LANE_COMPUTE);
    if (!op) { /* fewer helpers: this worker does more */
      spread_unref(s);
      continue;
    }
    *(kspread **)gpar__op_args(op) = s;
    gpar__op_submit(op, 0); /* refused (never while this op is in flight): discarded, released */
  }
  spread_work(s);
  while (atomic_load_explicit(&s->done, memory_order_acquire) < nruns) gpar__spin_yield(); /* claimed runs end soon */
  spread_unref(s);
  return GPAR_OK;
}

static int klaunch_run(gpar__device *dev, gpar__op *op) {
  const gpar__klaunch *L = gpar__op_args(op);
  gpar__kernel_launch l = {{L->groups[0], L->groups[1], L->groups[2]}, {L->size[0], L->size[1], L->size[2]},
                           0, (uint64_t)L->groups[0] * L->groups[1] * L->groups[2], /* fits: launch.c checked */
                           L->nargs, L->k->params, klaunch_args(L), !op->need_event};
  if (dev->ops->ordered_by_events) return dev->ops->kernel_launch(dev->bdev, op->lane, L->e->module, &l);
  return host_spread(dev, L->e->module, &l);
}

static void klaunch_release(gpar__op *op) {
  gpar__klaunch *L = gpar__op_args(op);
  free(L->more);
  gpar__kernel_unref(L->k);
}

/* ---------------------------------------------------------------- kinds, one per name */

struct gpar__kkind {
  gpar__kkind *next;
  gpar__op_kind kind;
  char name[]; /* "kernel:NAME" */
};

const gpar__op_kind *gpar__klaunch_kind(gpar__kstate *ks, const char *name) {
  size_t len = strlen(name) + 8;
  gpar__kkind *fresh = malloc(sizeof *fresh + len), *found = NULL;
  if (fresh) {
    snprintf(fresh->name, len, "kernel:%s", name);
    fresh->kind = (gpar__op_kind){.name = fresh->name, .run = klaunch_run, .release = klaunch_release};
  }
  pthread_mutex_lock(&ks->mu);
  for (gpar__kkind *q = ks->kinds; q && !found; q = q->next)
    if (!strcmp(q->name + 7, name)) found = q;
  if (!found && fresh) {
    fresh->next = ks->kinds;
    ks->kinds = found = fresh;
    fresh = NULL;
  }
  pthread_mutex_unlock(&ks->mu);
  free(fresh);
  return found ? &found->kind : NULL;
}

void gpar__klaunch_kinds_free(gpar__kstate *ks) {
  for (gpar__kkind *q = ks->kinds, *n; q; q = n) {
    n = q->next;
    free(q);
  }
  ks->kinds = NULL;
}

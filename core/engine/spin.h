/* spin.h: the spin lock of the engine's short critical sections (a few loads and stores: a
 * buffer's last writer and readers, an op's consumer list). It spins, then yields to the
 * scheduler. The ground floor of engine/: it uses nothing of the engine. */
#ifndef GPAR_CORE_ENGINE_SPIN_H
#define GPAR_CORE_ENGINE_SPIN_H

#include <sched.h>
#include <stdatomic.h>

typedef struct gpar__spin {
  atomic_int held;
} gpar__spin;

/* A pause for a spinning core (x86); nothing elsewhere. */
static inline void gpar__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* Give the core to another thread (spinners on a machine with fewer cores than threads). */
static inline void gpar__spin_yield(void) { sched_yield(); }

static inline void gpar__spin_lock(gpar__spin *s) {
  for (int n = 0;; n++) {
    if (!atomic_load_explicit(&s->held, memory_order_relaxed) &&
        !atomic_exchange_explicit(&s->held, 1, memory_order_acquire))
      return;
    if (n < 100)
      gpar__cpu_relax();
    else
      gpar__spin_yield();
  }
}

static inline void gpar__spin_unlock(gpar__spin *s) { atomic_store_explicit(&s->held, 0, memory_order_release); }

#endif

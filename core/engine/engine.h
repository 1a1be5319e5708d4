/* engine.h: the engine layer, the bottom of core/ above backend.h, and its map. Engines and their
 * devices, buffers and their handles, ops and the dependency engine that orders them by the
 * buffers they declare, the threads that run them, waits, the pinned pool, traces and fault
 * injection (the clock is core/clock.c, below: backend.h). The engine runs ops through their kind's table (op.h) and never names a
 * kind: the layers above define the kinds and build ops through the calls of these headers.
 * The layers above include this header; the files of engine/ include only the headers of their
 * own floor and the floors below.
 *
 * Layers (core/README.md has the whole map): backend.h < engine/ < api/ < graph/, comm/ <
 * lifecycle/. A file includes headers of its own layer and the ones below only (tests/layers.sh
 * checks it, and checks with nm that no object calls up).
 *
 * The floors of engine/, bottom first; a file uses only files listed before it (tests/layers.sh
 * checks the includes and, with nm, the calls; a header stands where its .c file does):
 * Layers (bottom first): spin.h handle.c registry.c fault.c device.h inflight.c pinned.c buffer.c op.c queue.c lanes.c trace.c deps.c wait.c policy.c complete.c dispatch.c
 *   spin.h      the spin lock
 *   handle.c    handle tables ({slot, serial}, never-reused serials, references)
 *   registry.c  the engine object, its slots and serials, calls entering an engine (registry.h)
 *   fault.c     fault injection
 *   device.h    a device: backend handles, ready queue, threads
 *   inflight.c  ops in flight (epoch counts), wake-ups, the first failure
 *   pinned.c    the pinned host pool
 *   buffer.c    buffers and their handles
 *   op.c        ops and their kinds: allocation, accesses, building, outcomes
 *   queue.c     ready queues
 *   lanes.c     the compute lane of each GPU op, the dispatcher thread of each lane
 *   trace.c     traces and the host-time breakdown
 *   deps.c      submitting: linking, release, retirement, failure propagation
 *   wait.c      waits for ops, buffers, everything, the drain
 *   policy.c    how a submission runs: recorded, threaded or synchronous (the way in)
 *   complete.c  GPU completion threads
 *   dispatch.c  CPU workers and GPU dispatchers
 *
 * Submissions. A call that needs several ops builds them all (policy.h: gpar__batch), then
 * submits them as one submission: they are counted in flight together (all, or none once the
 * drain has closed the engine) and linked together under the locks of the union of their
 * buffers, taken in address order (deps.c link_ops), so no other thread's op comes between two
 * of them on any buffer: a graph launch's parts, a collective's members, a staged collective's
 * copies and reduction, the chunks of gpar_write, gpar_read and a staged gpar_copy.
 *
 * Lock order, every lock of core/ (outer before inner; "->" marks what may be taken while the
 * line above is held). The engine has no global lock: dependency state lives with each buffer
 * and op (deps.c), counts are atomics.
 *   c->issue_mu (comm/)        one collective's ops issued whole; the engine's locks below may be
 *                              taken while it is held (submitting, and waiting in synchronous mode)
 *   b->lock (spin)             a buffer's last writer and readers; several at once only while a
 *                              submission is linked: its buffers', in address order (link_ops)
 *     -> op->lock (spin)       an op's consumer list, its dispatched and retired states, its
 *                              status once consumers may read it, a waiter's mark; one at a time
 *        -> q->mu              a ready queue's overflow list and sleepers (making a consumer ready)
 *   eng->wait_mu               sleeping waiters, wait_all's epochs, the first error
 *     -> op->lock (spin)       a waiter marks the op it sleeps on (wait.c)
 *   eng->buf_mu                buffer slots and their free list; held alone
 *   eng->trace_mu              trace records and breakdown sums; held alone
 *   dev->cmu                   completion FIFOs of a GPU device; held alone
 *     -> backend locks         event queries under it
 *   eng->pinned->mu            pinned pool; held alone
 *     -> backend locks         host_alloc / host_free under the pool lock
 *   dev->shared_mu (OpenCL)    a device's shared cl_kernels while their arguments are set and they
 *                              are enqueued (several compute lanes only; backends/opencl/opencl_table.c);
 *                              taken by a lane's dispatcher with no lock of core/ held
 *     -> backend locks         CLBlast's cold lock, the conversion program's build lock
 *   gpar__registry_mu          engine slots; held alone (registry.c)
 *   table->mu                  a handle table's growth and free list (handle.c); held alone
 *   ks->mu (kernel/)           an engine's kernel builds, kinds and device targets; held alone
 *   states_mu (array/kernels.c) the engines' tables of array kernels, their limits; held alone
 * Locks of the layers above (graph/, comm/, kernel/, array/) are never held while calling into the engine,
 * except as their headers state. Every lock is taken and released in one function (link_ops
 * takes and releases its buffers' locks together); a function that needs a lock held on entry
 * ends in _locked. */
#ifndef GPAR_CORE_ENGINE_H
#define GPAR_CORE_ENGINE_H

#include "engine/spin.h"
#include "engine/handle.h"
#include "engine/registry.h"
#include "engine/fault.h"
#include "engine/device.h"
#include "engine/inflight.h"
#include "engine/pinned.h"
#include "engine/buffer.h"
#include "engine/op.h"
#include "engine/queue.h"
#include "engine/lanes.h"
#include "engine/trace.h"
#include "engine/deps.h"
#include "engine/wait.h"
#include "engine/policy.h"

#endif

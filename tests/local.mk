# tests/local.mk: every test of `make check` but the MPI ones (tests/mpi/local.mk), grouped by
# the layer it guards (core/README.md), each with a line on what it guards. Programs speak TAP
# (tests/tap.h, tests/testutil.h) through automake's tap-driver.sh and arm a watchdog
# (GPAR_TEST_TIMEOUT, 120 s). GPAR_TEST_SEED repeats a randomised run (dag, threads, host_gemm,
# conformance); GPAR_TEST_EXPECT="host opencl:2" makes a test bail out naming an expected device
# that is missing; GPAR_STRESS_SCALE (stress, contention), GPAR_SOAK_OPS / GPAR_SOAK_DEV_OPS
# (soak) and GPAR_CYCLES (engine_cycles) make the long tests longer.
#
# Order: the programs of GPAR_TAP_TESTS run first (in parallel under make -j), then tests/oom
# (it fills whole devices), then the benchmarks (tests/bench/), alone; the rules are at the end
# of the benchmarks' group. A new test program joins GPAR_TAP_TESTS in the group of the layer it
# guards, with a line on what it guards.

GPAR_TAP_TESTS =
check_PROGRAMS += $(GPAR_TAP_TESTS)
TESTS += $(GPAR_TAP_TESTS)
GPAR_TEST_HDRS = tests/tap.h tests/testutil.h
# Every test program links libgpar (and libm); a program that needs more says so in its _LDADD.
LDADD = libgpar.la -lm
# Wrappers (oom, the shell tests, the benchmarks) end in .tap: their .log files come from a
# suffix rule, which may carry dependencies (the order above).
TEST_EXTENSIONS = .tap
TAP_LOG_DRIVER = $(LOG_DRIVER)
TAP_LOG_COMPILER = $(SHELL)

# PoCL gives two CPU OpenCL devices when POCL_DEVICES is not set already (multi-device paths
# run on machines without a GPU); diagnostics about absent backends stay quiet.
AM_TESTS_ENVIRONMENT = POCL_DEVICES="$${POCL_DEVICES-pthread pthread}"; export POCL_DEVICES; \
	GPAR_QUIET="$${GPAR_QUIET-1}"; export GPAR_QUIET;
# Sanitizer suppressions (vendor libraries only), read by .ci/run and tests/mpi/run.sh.
EXTRA_DIST += tests/lsan.supp tests/tsan.supp

# ---------------------------------------------------------------- base (core/backend.h, error.c, clock.c)
# clock: gpar_now is the monotonic clock in seconds (bracketed by CLOCK_MONOTONIC readings),
# without an engine, never going back in one thread or in four at once.
GPAR_TAP_TESTS += tests/clock
tests_clock_SOURCES = tests/clock.c $(GPAR_TEST_HDRS)

# ---------------------------------------------------------------- engine (core/engine/)
# engine: RAW/WAR/WAW order, concurrent readers, deferred release, failure propagation, waits
# inside ops, shutdown with pending work, synchronous mode, counters (CPU device, gpar_submit).
GPAR_TAP_TESTS += tests/engine
tests_engine_SOURCES = tests/engine.c $(GPAR_TEST_HDRS)
# dag: random DAGs of ops leave every buffer as a sequential replay in submit order does,
# threaded, synchronous and across every device.
GPAR_TAP_TESTS += tests/dag
tests_dag_SOURCES = tests/dag.c $(GPAR_TEST_HDRS)
# threads: several submitting threads on shared and private buffers lose and reorder no op;
# waits from many threads all return.
GPAR_TAP_TESTS += tests/threads
tests_threads_SOURCES = tests/threads.c $(GPAR_TEST_HDRS)
# contention: 16 submitting threads against 16 CPU workers on shared buffers, two-buffer ops
# linked in opposite orders (no cycle), exact values. In the TSan list of .ci/run.
GPAR_TAP_TESTS += tests/contention
tests_contention_SOURCES = tests/contention.c $(GPAR_TEST_HDRS)
# runs, atomicity, races: the engine without its global lock as safe as the one with it: runs
# that close in bounded time whatever other lanes do (an event device: PoCL here); calls made of
# several ops applied whole, ordered whole against other threads' calls, whole or refused at
# shutdown; statuses written under the op's lock, readers that leave in O(1), wake-ups and handle
# slots under races. In the TSan list of .ci/run (its status test needs an event device).
GPAR_TAP_TESTS += tests/runs tests/atomicity tests/races
tests_runs_SOURCES = tests/runs.c $(GPAR_TEST_HDRS)
tests_atomicity_SOURCES = tests/atomicity.c $(GPAR_TEST_HDRS)
tests_races_SOURCES = tests/races.c $(GPAR_TEST_HDRS)
# handles: released, foreign and shut-down handles refused forever, also at the end of the
# serial counters; forged handles never reach the engine's tokens.
GPAR_TAP_TESTS += tests/handles
tests_handles_SOURCES = tests/handles.c $(GPAR_TEST_HDRS)
# breakdown: the per-op host-time breakdown (gpar_breakdown_get) counts only while tracing, one
# measurement per retired op, phases that add up.
GPAR_TAP_TESTS += tests/breakdown
tests_breakdown_SOURCES = tests/breakdown.c $(GPAR_TEST_HDRS)

# ---------------------------------------------------------------- api (core/api/)
# badinput: each invalid call returns its exact status with a new message, enqueues nothing and
# leaves the engine working, on every device.
GPAR_TAP_TESTS += tests/badinput
tests_badinput_SOURCES = tests/badinput.c $(GPAR_TEST_HDRS)
# host_gemm: sgemm and dgemm on the CPU device and GPAR_HOST buffers against a triple loop
# (sizes, transposes, alpha/beta, leading dimensions, offsets); bytes outside C untouched.
GPAR_TAP_TESTS += tests/host_gemm
tests_host_gemm_SOURCES = tests/host_gemm.c $(GPAR_TEST_HDRS)
# conformance: one body on every device of every backend: transfers in every direction and
# pair, fills, GEMMs against a reference, cross-lane and cross-device order, injected faults.
GPAR_TAP_TESTS += tests/conformance
tests_conformance_SOURCES = tests/conformance.c $(GPAR_TEST_HDRS)
# blas_rules: alpha == 0 or k == 0 reads neither A nor B (C = beta * C), beta == 0 makes C
# write-only, rows past m untouched, on every device.
GPAR_TAP_TESTS += tests/blas_rules
tests_blas_rules_SOURCES = tests/blas_rules.c $(GPAR_TEST_HDRS)

# blas_sweep: an sblat3-style sweep of the strided-batched, mixed-precision, GEMV and level-1 calls on every
# device against a double reference; element conversions and collectives of every element type.
GPAR_TAP_TESTS += tests/blas_sweep
tests_blas_sweep_SOURCES = tests/blas_sweep.c $(GPAR_TEST_HDRS)
GPAR_TAP_TESTS += tests/dtypes tests/comm_dtypes
tests_dtypes_SOURCES = tests/dtypes.c $(GPAR_TEST_HDRS)
tests_comm_dtypes_SOURCES = tests/comm_dtypes.c $(GPAR_TEST_HDRS)

# ---------------------------------------------------------------- graph (core/graph/)
# graph: a recorded sequence replayed equals it run eagerly, on every device and across devices;
# failures inside a launch and from failed inputs reach what they reach eagerly.
GPAR_TAP_TESTS += tests/graph
tests_graph_SOURCES = tests/graph.c $(GPAR_TEST_HDRS)
# graph_branches: a recorded graph keeps independent branches on different lanes (the same values
# as eager, its parts' branches, the CUDA graph's edges).
GPAR_TAP_TESTS += tests/graph_branches
tests_graph_branches_SOURCES = tests/graph_branches.c tests/kernel_util.h $(GPAR_TEST_HDRS)

# ---------------------------------------------------------------- comm (core/comm/)
# comm: every collective, type and reduction on host + PoCL device sets against a sequential
# reference; program and issue order; MAX/MIN with NaN; failures reach the written buffers.
GPAR_TAP_TESTS += tests/comm
tests_comm_SOURCES = tests/comm.c tests/comm_ref.h $(GPAR_TEST_HDRS)

# ---------------------------------------------------------------- kernel (core/kernel/)
# kernel: conformance on every device of every backend, errors, caches, the engine
# (dependencies, graphs, lifetimes), a CUDA device fault. Shared helpers in tests/kernel_util.h.
GPAR_KERNEL_TESTS = tests/kernel tests/kernel_errors tests/kernel_cache tests/kernel_engine tests/kernel_cuda_fault \
  tests/kernel_host_threads
GPAR_TAP_TESTS += $(GPAR_KERNEL_TESTS)
tests_kernel_SOURCES = tests/kernel.c tests/kernel_util.h $(GPAR_TEST_HDRS)
tests_kernel_errors_SOURCES = tests/kernel_errors.c tests/kernel_util.h $(GPAR_TEST_HDRS)
tests_kernel_cache_SOURCES = tests/kernel_cache.c tests/kernel_util.h $(GPAR_TEST_HDRS)
# kernel_reads: no build reads a file outside its cache key: the spellings a plain scan missed,
# refused or never stale on any device; the host compiler's -MD guard; a build with fds 0-2 closed.
GPAR_TAP_TESTS += tests/kernel_reads
tests_kernel_reads_SOURCES = tests/kernel_reads.c tests/kernel_util.h $(GPAR_TEST_HDRS)
# kernel_cache_trust: disk cache entries and folders of other users, links, FIFOs; #include refused.
GPAR_TAP_TESTS += tests/kernel_cache_trust
tests_kernel_cache_trust_SOURCES = tests/kernel_cache_trust.c tests/kernel_cache_fmt.h tests/kernel_util.h $(GPAR_TEST_HDRS)
tests_kernel_engine_SOURCES = tests/kernel_engine.c tests/kernel_util.h $(GPAR_TEST_HDRS)
tests_kernel_cuda_fault_SOURCES = tests/kernel_cuda_fault.c tests/kernel_util.h $(GPAR_TEST_HDRS)
# fresh threads launching kernels with GPAR_HOST operands (no CUDA context current in them yet)
tests_kernel_host_threads_SOURCES = tests/kernel_host_threads.c tests/kernel_util.h $(GPAR_TEST_HDRS)
tests_kernel_host_threads_LDADD = libgpar.la -lpthread
# kernel_args: launches back to back with some arguments changed (a backend's argument cache).
GPAR_TAP_TESTS += tests/kernel_args
tests_kernel_args_SOURCES = tests/kernel_args.c tests/kernel_util.h $(GPAR_TEST_HDRS)
# kernel_sigchld: host kernels build and fail as they should in a process that ignores SIGCHLD.
GPAR_TAP_TESTS += tests/kernel_sigchld
tests_kernel_sigchld_SOURCES = tests/kernel_sigchld.c $(GPAR_TEST_HDRS)
# Names a build would trip over (keywords, the dialect's and the backends' names, built-ins,
# macros), refused at create with the column, for kernels and maps alike; grids whose group or
# work-item count overflows 64 bits, refused at launch.
GPAR_TAP_TESTS += tests/kernel_names
tests_kernel_names_SOURCES = tests/kernel_names.c tests/kernel_util.h $(GPAR_TEST_HDRS)
# f16 <-> f32 bits, NaNs included, the same on every device (kernels, maps, array ops) as on the host.
GPAR_TAP_TESTS += tests/f16_bits
tests_f16_bits_SOURCES = tests/f16_bits.c tests/kernel_util.h $(GPAR_TEST_HDRS)

# ---------------------------------------------------------------- array (core/array/)
# array: conformance on every device against a plain reference; array_badinput: bad input refused
# with nothing queued.
GPAR_TAP_TESTS += tests/array
tests_array_SOURCES = tests/array.c tests/array_ref.h $(GPAR_TEST_HDRS)
GPAR_TAP_TESTS += tests/array_badinput
tests_array_badinput_SOURCES = tests/array_badinput.c $(GPAR_TEST_HDRS)
# array_prepare: gpar_array_prepare builds every kernel a training step's array calls need, on
# every device (the step then builds nothing); bad input refused with nothing built.
GPAR_TAP_TESTS += tests/array_prepare
tests_array_prepare_SOURCES = tests/array_prepare.c $(GPAR_TEST_HDRS)
# array_train: the training step's loss (tools/train/) against a plain-C reference on every
# device and split across all of them.
GPAR_TAP_TESTS += tests/array_train
tests_array_train_SOURCES = tests/array_train.c $(GPAR_TEST_HDRS)
tests_array_train_LDADD = tools/train/libgpar_train.la libgpar.la -lm
# Every array op, map and BLAS-1/GEMV call with its operands in one buffer: disjoint ranges right.
GPAR_TAP_TESTS += tests/array_alias
tests_array_alias_SOURCES = tests/array_alias.c tests/array_ref.h $(GPAR_TEST_HDRS)

# ---------------------------------------------------------------- backends (backends/)
# backend_status: an absent device is not an error: quiet unless named, the reason kept by
# gpar_backend_status, device counts that add up.
GPAR_TAP_TESTS += tests/backend_status
tests_backend_status_SOURCES = tests/backend_status.c $(GPAR_TEST_HDRS)
# pinned_mix: GPAR_HOST memory with every backend open, for each way of providing it (who
# allocates, who registers), copies between GPAR_HOST and every device.
GPAR_TAP_TESTS += tests/pinned_mix
tests_pinned_mix_SOURCES = tests/pinned_mix.c $(GPAR_TEST_HDRS)
# cuda_gemm_lt: CUDA GEMMs through cached cublasLt plans equal cublasSgemm/Dgemm and a double
# reference (transposes, odd lds, offsets, TF32, more shapes than the cache). Skips without CUDA.
GPAR_TAP_TESTS += tests/cuda_gemm_lt
tests_cuda_gemm_lt_SOURCES = tests/cuda_gemm_lt.c $(GPAR_TEST_HDRS)
# cuda_nccl_abort: a stuck NCCL collective is aborted after GPAR_COMM_TIMEOUT (2 s in the test)
# and fails with GPAR_ETIMEDOUT. Two CUDA devices and NCCL (GPAR_TEST_HAVE_NCCL: the build has
# NCCL); skips without them.
GPAR_TAP_TESTS += tests/cuda_nccl_abort
tests_cuda_nccl_abort_SOURCES = tests/cuda_nccl_abort.c $(GPAR_TEST_HDRS)
if HAVE_NCCL
tests_cuda_nccl_abort_CPPFLAGS = $(AM_CPPFLAGS) -DGPAR_TEST_HAVE_NCCL=1
else
# Defined in both branches: automake gives the program its own objects either way, and without
# this they would compile without AM_CPPFLAGS (no -I include) in every build without NCCL.
tests_cuda_nccl_abort_CPPFLAGS = $(AM_CPPFLAGS)
endif

# ---------------------------------------------------------------- lifetimes and reliability
# shutdown: gpar_shutdown racing work still arriving: nested submissions drained before
# anything is freed, a submitting thread sees GPAR_OK or GPAR_ESHUTDOWN. Under TSan in .ci/run.
GPAR_TAP_TESTS += tests/shutdown
tests_shutdown_SOURCES = tests/shutdown.c $(GPAR_TEST_HDRS)
# graph_lifetime: stale, foreign and destroyed graph handles refused forever; destroy waits for
# the launches in flight. The three lifetime tests pass under ASan and TSan too (.ci/run).
GPAR_TAP_TESTS += tests/graph_lifetime
tests_graph_lifetime_SOURCES = tests/graph_lifetime.c $(GPAR_TEST_HDRS)
# buffer_import: another library's memory as a buffer (gpar_buffer_import) on every device; the
# owner's release waits for the ops queued on it; refusals register nothing.
GPAR_TAP_TESTS += tests/buffer_import
tests_buffer_import_SOURCES = tests/buffer_import.c $(GPAR_TEST_HDRS)
# comm_lifetime: destroyed communicator handles refused forever, destroy from inside an op
# refused (GPAR_EDEADLK), communicators left at shutdown reclaimed.
GPAR_TAP_TESTS += tests/comm_lifetime
tests_comm_lifetime_SOURCES = tests/comm_lifetime.c tests/comm_transport.h $(GPAR_TEST_HDRS)
# lifetime_races: collectives and check-only calls racing gpar_comm_destroy and gpar_shutdown.
GPAR_TAP_TESTS += tests/lifetime_races
tests_lifetime_races_SOURCES = tests/lifetime_races.c tests/comm_transport.h $(GPAR_TEST_HDRS)
# engine_cycles: memory stays flat over many engine lifetimes that each ran an OpenCL GEMM
# (CLBlast's program cache); GPAR_CYCLES=1000 for the full run. Skips without OpenCL.
GPAR_TAP_TESTS += tests/engine_cycles
tests_engine_cycles_SOURCES = tests/engine_cycles.c $(GPAR_TEST_HDRS)
# faults: every gpar_fault_inject kind at positions 1-3 of a chain, on every device and on
# copies between device pairs: where the status lands.
GPAR_TAP_TESTS += tests/faults
tests_faults_SOURCES = tests/faults.c $(GPAR_TEST_HDRS)
# stress: 8 threads submit, wait and release at random on every device; contents equal a
# sequential replay of each thread's log.
GPAR_TAP_TESTS += tests/stress
tests_stress_SOURCES = tests/stress.c $(GPAR_TEST_HDRS)
# soak: 1M+ ops of random small DAGs on the CPU device with flat RSS and no growth in pools,
# events or buffers; smaller soaks per GPU and OpenCL device.
GPAR_TAP_TESTS += tests/soak
tests_soak_SOURCES = tests/soak.c $(GPAR_TEST_HDRS)
# oom: real out-of-memory (device buffers past a device's memory, GPUs filled, every device under
# an RLIMIT_AS cap, the pinned pool at its limit) fails cleanly and the engine goes on. It fills
# whole GPUs, so under `make -j check` it runs alone: after every other program, before the
# benchmarks, through a generated .tap wrapper.
check_PROGRAMS += tests/oom
TESTS += tests/oom.tap
CLEANFILES += tests/oom.tap
tests_oom_SOURCES = tests/oom.c $(GPAR_TEST_HDRS)
tests/oom.tap: Makefile
	$(AM_V_GEN)$(MKDIR_P) tests && echo '#!/bin/sh' > $@ && echo 'exec ./tests/oom "$$@"' >> $@
tests/oom.log: $(GPAR_TAP_TESTS:=.log)
# valgrind.sh BUILDDIR (from .ci/run): memcheck over engine, badinput, dag and faults.
EXTRA_DIST += tests/valgrind.sh
# make fuzz: the API fuzzer (tests/fuzz/api_fuzz.c, libFuzzer + ASan + UBSan against the
# library sources, built by tests/fuzz/run.sh) replays tests/fuzz/corpus and fuzzes FUZZ_SECONDS
# per backend set (host; host + OpenCL when built); it says so when clang cannot.
FUZZ_SECONDS = 600
fuzz:
	$(SHELL) $(top_srcdir)/tests/fuzz/run.sh $(top_srcdir) tests/fuzz $(FUZZ_SECONDS)
.PHONY: fuzz
EXTRA_DIST += tests/fuzz/run.sh tests/fuzz/api_fuzz.c tests/fuzz/corpus tests/fuzz/replay.sh tests/fuzz/replay_main.c \
	tests/fuzz/sources.sh tests/fuzz/found

# lanes: compute lanes per GPU (gpar_config.lanes 1, 2, 4): the config kept, independent ops
# spread over the lanes, a consumer on another lane sees its producers (OpenCL, CUDA devices).
GPAR_TAP_TESTS += tests/lanes
tests_lanes_SOURCES = tests/lanes.c $(GPAR_TEST_HDRS)
# lanes_matrix: tests/dag, faults, contention, graph and graph_branches at the default lanes and
# with GPAR_LANES=1, 2 and 4.
TESTS += tests/lanes_matrix.tap
CLEANFILES += tests/lanes_matrix.tap tests/lanes-matrix.*.out
EXTRA_DIST += tests/lanes-matrix.sh
tests/lanes_matrix.tap: Makefile
	$(AM_V_GEN)$(MKDIR_P) tests && echo '#!/bin/sh' > $@ && \
	  echo 'exec $(SHELL) "$(abs_top_srcdir)/tests/lanes-matrix.sh" "$(abs_top_builddir)"' >> $@

# ---------------------------------------------------------------- conventions
# layers: core/ in layers: includes, symbols (nm over the built objects), an engine that names
# no kind of op (tests/layers.sh says what it checks).
TESTS += tests/layers.tap
CLEANFILES += tests/layers.tap
EXTRA_DIST += tests/layers.sh
tests/layers.tap: Makefile
	$(AM_V_GEN)$(MKDIR_P) tests && echo '#!/bin/sh' > $@ && \
	  echo 'exec $(SHELL) "$(abs_top_srcdir)/tests/layers.sh" "$(abs_top_srcdir)" "$(abs_top_builddir)"' >> $@
# kernel_reserved: every macro the kernel compilers define (clang's OpenCL C, the C11 headers) is
# refused as a kernel's or map's name (tests/kernel-reserved.sh).
TESTS += tests/kernel_reserved.tap
CLEANFILES += tests/kernel_reserved.tap
EXTRA_DIST += tests/kernel-reserved.sh
tests/kernel_reserved.tap: Makefile
	$(AM_V_GEN)$(MKDIR_P) tests && echo '#!/bin/sh' > $@ && \
	  echo 'CC="$(CC)" exec $(SHELL) "$(abs_top_srcdir)/tests/kernel-reserved.sh" "$(abs_top_builddir)"' >> $@
# docs: README.md names every GPAR_* variable the library reads and stays short; gpar.h has its
# contents and banners and no transport declaration; gpar-kernel(7) renders (tests/docs.sh).
TESTS += tests/docs.tap
CLEANFILES += tests/docs.tap
EXTRA_DIST += tests/docs.sh
tests/docs.tap: Makefile
	$(AM_V_GEN)$(MKDIR_P) tests && echo '#!/bin/sh' > $@ && \
	  echo 'exec $(SHELL) "$(abs_top_srcdir)/tests/docs.sh" "$(abs_top_srcdir)"' >> $@
# installed_header: gpar.h as installed compiles cleanly as C99, C11 and C++ (-Wall -Wextra
# -pedantic -Werror), through a wrapper that hands the script configure's C compiler.
TESTS += tests/installed_header.tap
CLEANFILES += tests/installed_header.tap
EXTRA_DIST += tests/installed-header.sh
tests/installed_header.tap: Makefile
	$(AM_V_GEN)$(MKDIR_P) tests && echo '#!/bin/sh' > $@ && \
	  echo 'CC="$(CC)" exec $(SHELL) "$(abs_top_srcdir)/tests/installed-header.sh" "$(abs_top_srcdir)/include"' >> $@
# configure-with-cuda.sh (from .ci/run: it runs configure a few times): --with-cuda=DIR takes
# the toolkit from DIR only. static-link.sh (from .ci/run): `pkg-config --static --libs gpar`
# links a program against an installed libgpar.a.
EXTRA_DIST += tests/configure-with-cuda.sh tests/static-link.sh

# ---------------------------------------------------------------- benchmarks (last, alone)
# The chapter's two experiments, small here and full size in `make bench` (tools/local.mk):
# multi_device (SGEMM loops on every device of one backend and type, alone and all at once:
# results checked, timing bounded on GPUs only) and copy_overlap (results copied to pinned host
# memory while later GEMMs run). sweep.tap: a tiny gpar-bench sweep on CPU devices (records,
# chart, report; no timings). overhead.tap: gpar-bench overhead's records and refusals.
# engine_ab.tap: the before/after machinery of bench/engine-gpu.sh, engine-table.py and
# overhead-ab.py on the host group. No timing is asserted on CPUs.
BENCH_TESTS = tests/bench/multi_device tests/bench/copy_overlap
check_PROGRAMS += $(BENCH_TESTS)
TESTS += tests/bench/multi_device.tap tests/bench/copy_overlap.tap tests/bench/sweep.tap \
	tests/bench/overhead.tap tests/bench/engine_ab.tap
EXTRA_DIST += tests/bench/multi_device.tap tests/bench/copy_overlap.tap tests/bench/sweep.tap \
	tests/bench/overhead.tap tests/bench/engine_ab.tap
tests_bench_multi_device_SOURCES = tests/bench/multi_device.c
tests_bench_copy_overlap_SOURCES = tests/bench/copy_overlap.c
# The timing tests run alone, after every other test, so no other test shares their devices
# under `make -j check` (automake orders tests by dependencies between their .log files).
tests/bench/multi_device.log: $(GPAR_TAP_TESTS:=.log) tests/bench/sweep.log tests/bench/overhead.log \
	tests/bench/engine_ab.log
tests/bench/multi_device.log: tests/oom.log
tests/bench/copy_overlap.log: tests/bench/multi_device.log
tests/bench/sweep.log: tools/gpar-bench$(EXEEXT) tools/gpar-info$(EXEEXT)
tests/bench/overhead.log: tools/gpar-bench$(EXEEXT)
tests/bench/engine_ab.log: tools/gpar-bench$(EXEEXT)
clean-local: clean-sweep-test
clean-sweep-test:
	rm -rf tests/bench/sweep.d tests/bench/overhead.d tests/bench/engine_ab.d
.PHONY: clean-sweep-test
# gpar-bench batched and gemm-ex: their records and refusals at tiny sizes (no timings asserted).
TESTS += tests/bench/blas.tap
EXTRA_DIST += tests/bench/blas.tap
tests/bench/blas.log: tools/gpar-bench$(EXEEXT)
clean-local: clean-blas-bench-test
clean-blas-bench-test:
	rm -rf tests/bench/blas.d
.PHONY: clean-blas-bench-test
# gpar-bench lanes: its records, lane counts and refusals at tiny sizes (no timings asserted).
TESTS += tests/bench/lanes.tap
EXTRA_DIST += tests/bench/lanes.tap
tests/bench/lanes.log: tools/gpar-bench$(EXEEXT)
clean-local: clean-lanes-bench-test
clean-lanes-bench-test:
	rm -rf tests/bench/lanes.d
.PHONY: clean-lanes-bench-test


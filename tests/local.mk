# tests/local.mk: TAP test programs (owned by the tests work; the lead adds nothing here).
# Each program prints TAP on stdout and arms a watchdog (tests/tap.h: GPAR_TEST_TIMEOUT, 120 s).
# GPAR_TEST_SEED repeats a randomised run (dag, threads, host_gemm, conformance).
GPAR_TAP_TESTS = tests/engine tests/dag tests/threads tests/badinput tests/host_gemm \
	tests/conformance
check_PROGRAMS += $(GPAR_TAP_TESTS)
TESTS += $(GPAR_TAP_TESTS)

GPAR_TEST_HDRS = tests/tap.h tests/testutil.h
tests_engine_SOURCES = tests/engine.c $(GPAR_TEST_HDRS)
tests_engine_LDADD = libgpar.la
tests_dag_SOURCES = tests/dag.c $(GPAR_TEST_HDRS)
tests_dag_LDADD = libgpar.la
tests_threads_SOURCES = tests/threads.c $(GPAR_TEST_HDRS)
tests_threads_LDADD = libgpar.la
tests_badinput_SOURCES = tests/badinput.c $(GPAR_TEST_HDRS)
tests_badinput_LDADD = libgpar.la
tests_host_gemm_SOURCES = tests/host_gemm.c $(GPAR_TEST_HDRS)
tests_host_gemm_LDADD = libgpar.la -lm
tests_conformance_SOURCES = tests/conformance.c $(GPAR_TEST_HDRS)
tests_conformance_LDADD = libgpar.la -lm

# PoCL gives two CPU OpenCL devices when POCL_DEVICES is not set already (multi-device paths
# run on machines without a GPU); diagnostics about absent backends stay quiet.
AM_TESTS_ENVIRONMENT = POCL_DEVICES="$${POCL_DEVICES-pthread pthread}"; export POCL_DEVICES; \
	GPAR_QUIET="$${GPAR_QUIET-1}"; export GPAR_QUIET;

# Reliability tests (issue 7): injected faults, concurrency stress, soak, real out-of-memory.
# GPAR_STRESS_SCALE and GPAR_SOAK_OPS / GPAR_SOAK_DEV_OPS make stress and soak longer.
# They join GPAR_TAP_TESTS so the benchmarks (tools/local.mk) still run after every test.
GPAR_TAP_TESTS += tests/faults tests/stress tests/soak
tests_faults_SOURCES = tests/faults.c $(GPAR_TEST_HDRS)
tests_faults_LDADD = libgpar.la
tests_stress_SOURCES = tests/stress.c $(GPAR_TEST_HDRS)
tests_stress_LDADD = libgpar.la
tests_soak_SOURCES = tests/soak.c $(GPAR_TEST_HDRS)
tests_soak_LDADD = libgpar.la
# Op graphs (issue 14): record once, replay many.
GPAR_TAP_TESTS += tests/graph
tests_graph_SOURCES = tests/graph.c $(GPAR_TEST_HDRS)
tests_graph_LDADD = libgpar.la -lm

# GPAR_HOST memory with every backend open (issue 12): each way of providing pinned memory.
GPAR_TAP_TESTS += tests/pinned_mix
tests_pinned_mix_SOURCES = tests/pinned_mix.c $(GPAR_TEST_HDRS)
tests_pinned_mix_LDADD = libgpar.la

# oom fills whole GPUs, so under `make -j check` it runs alone: after every other test and
# before the benchmarks. It goes through a generated .tap wrapper, whose .log comes from a
# suffix rule that may carry dependencies (as tests/bench/*.tap do).
check_PROGRAMS += tests/oom
TESTS += tests/oom.tap
CLEANFILES += tests/oom.tap
tests_oom_SOURCES = tests/oom.c $(GPAR_TEST_HDRS)
tests_oom_LDADD = libgpar.la
tests/oom.tap: Makefile
	$(AM_V_GEN)$(MKDIR_P) tests && echo '#!/bin/sh' > $@ && echo 'exec ./tests/oom "$$@"' >> $@
tests/oom.log: $(GPAR_TAP_TESTS:=.log)
tests/bench/multi_device.log: tests/oom.log
# Valgrind memcheck over a subset (called from .ci/run: tests/valgrind.sh BUILDDIR).
EXTRA_DIST += tests/valgrind.sh

# The API fuzzer (issue 16): tests/fuzz/api_fuzz.c, built by tests/fuzz/run.sh with clang's
# libFuzzer + ASan + UBSan against the library sources, replays tests/fuzz/corpus and fuzzes
# FUZZ_SECONDS per backend set (host; host + OpenCL when built). Says so when clang cannot.
FUZZ_SECONDS = 600
fuzz:
	$(SHELL) $(top_srcdir)/tests/fuzz/run.sh $(top_srcdir) tests/fuzz $(FUZZ_SECONDS)
.PHONY: fuzz
EXTRA_DIST += tests/fuzz/run.sh tests/fuzz/api_fuzz.c tests/fuzz/corpus tests/fuzz/replay.sh tests/fuzz/replay_main.c \
	tests/fuzz/sources.sh tests/fuzz/found
# Collectives on one process (issue 15): host + PoCL device sets against a reference.
GPAR_TAP_TESTS += tests/comm
tests_comm_SOURCES = tests/comm.c tests/comm_ref.h $(GPAR_TEST_HDRS)
tests_comm_LDADD = libgpar.la -lm

# libgpar_mpi across ranks (issues 15, 21): mpirun -np 2 and -np 3 on this host (tests/mpi/run.sh,
# which also passes the sanitizer suppressions of tests/lsan.supp and tests/tsan.supp to the
# ranks); they skip when MPI is not built. nccl-np*.tap need CUDA GPUs (they skip without them).
TESTS += tests/mpi/np2.tap tests/mpi/np3.tap tests/mpi/faults-np2.tap tests/mpi/faults-np3.tap \
	tests/mpi/nccl-np1.tap tests/mpi/nccl-np2.tap
EXTRA_DIST += tests/mpi/run.sh tests/mpi/np2.tap tests/mpi/np3.tap tests/mpi/comm_mpi.c \
	tests/mpi/faults-np2.tap tests/mpi/faults-np3.tap tests/mpi/faults_mpi.c \
	tests/mpi/nccl-np1.tap tests/mpi/nccl-np2.tap tests/mpi/nccl_mpi.c tests/mpi/run-gpu.sh tests/tsan.supp
if HAVE_MPI
check_PROGRAMS += tests/mpi/comm_mpi tests/mpi/faults_mpi tests/mpi/nccl_mpi
tests_mpi_comm_mpi_SOURCES = tests/mpi/comm_mpi.c tests/comm_ref.h $(GPAR_TEST_HDRS)
tests_mpi_comm_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_mpi_comm_mpi_LDADD = libgpar_mpi.la libgpar.la $(MPI_LIBS) -lm
tests_mpi_faults_mpi_SOURCES = tests/mpi/faults_mpi.c $(GPAR_TEST_HDRS)
tests_mpi_faults_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_mpi_faults_mpi_LDADD = libgpar_mpi.la libgpar.la $(MPI_LIBS)
tests_mpi_nccl_mpi_SOURCES = tests/mpi/nccl_mpi.c $(GPAR_TEST_HDRS)
tests_mpi_nccl_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_mpi_nccl_mpi_LDADD = libgpar_mpi.la libgpar.la $(MPI_LIBS)
endif
# CUDA GEMMs through cached cublasLt plans vs cublasSgemm/Dgemm (issue 11); skips without a CUDA device.
GPAR_TAP_TESTS += tests/cuda_gemm_lt
tests_cuda_gemm_lt_SOURCES = tests/cuda_gemm_lt.c $(GPAR_TEST_HDRS)
tests_cuda_gemm_lt_LDADD = libgpar.la -lm

# ---- Portable kernels (gpar_kernel_*): conformance on every device of every backend, errors,
# caches, the engine (dependencies, graphs, lifetimes), a CUDA device fault. Shared helpers in
# tests/kernel_util.h.
GPAR_KERNEL_TESTS = tests/kernel tests/kernel_errors tests/kernel_cache tests/kernel_engine tests/kernel_cuda_fault
GPAR_TAP_TESTS += $(GPAR_KERNEL_TESTS)
tests_kernel_SOURCES = tests/kernel.c tests/kernel_util.h $(GPAR_TEST_HDRS)
tests_kernel_LDADD = libgpar.la -lm
tests_kernel_errors_SOURCES = tests/kernel_errors.c tests/kernel_util.h $(GPAR_TEST_HDRS)
tests_kernel_errors_LDADD = libgpar.la
tests_kernel_cache_SOURCES = tests/kernel_cache.c tests/kernel_util.h $(GPAR_TEST_HDRS)
tests_kernel_cache_LDADD = libgpar.la
tests_kernel_engine_SOURCES = tests/kernel_engine.c tests/kernel_util.h $(GPAR_TEST_HDRS)
tests_kernel_engine_LDADD = libgpar.la
tests_kernel_cuda_fault_SOURCES = tests/kernel_cuda_fault.c tests/kernel_util.h $(GPAR_TEST_HDRS)
tests_kernel_cuda_fault_LDADD = libgpar.la
# ---- end of the kernel tests

# ---- Array ops (core/array/): conformance on every device, bad input, the training step ----
GPAR_TAP_TESTS += tests/array
tests_array_SOURCES = tests/array.c tests/array_ref.h $(GPAR_TEST_HDRS)
tests_array_LDADD = libgpar.la -lm
GPAR_TAP_TESTS += tests/array_badinput
tests_array_badinput_SOURCES = tests/array_badinput.c $(GPAR_TEST_HDRS)
tests_array_badinput_LDADD = libgpar.la
GPAR_TAP_TESTS += tests/array_train
tests_array_train_SOURCES = tests/array_train.c $(GPAR_TRAIN_SOURCES) $(GPAR_TEST_HDRS)
tests_array_train_LDADD = libgpar.la -lm
# ---- end of the array ops ----

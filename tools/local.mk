# tools/local.mk: gpar-info and gpar-bench, the benchmark TAP tests (tests/bench/) and
# `make bench`, which runs the chapter's experiments at full size.

bin_PROGRAMS += tools/gpar-info tools/gpar-bench

tools_gpar_info_SOURCES = tools/gpar-info.c
tools_gpar_info_LDADD = libgpar.la

# gpar-bench links the raw vendor baselines of the backends configure found (tools/raw.h:
# weak symbols, NULL when a file is not built) and OpenBLAS for the host baseline.
tools_gpar_bench_SOURCES = tools/gpar-bench.c tools/bench_common.h tools/bench_exp.c \
	tools/bench_gemm.c tools/bench_trace.c tools/raw.h tools/bench_comm.c tools/raw_nccl.h
TOOLS_RAW_CPPFLAGS =
TOOLS_RAW_LIBS =
if HAVE_CUDA
tools_gpar_bench_SOURCES += tools/raw_cuda.c
TOOLS_RAW_CPPFLAGS += $(CUDA_CPPFLAGS)
TOOLS_RAW_LIBS += $(CUDA_LDFLAGS) $(CUDA_LIBS)
endif
if HAVE_NCCL
tools_gpar_bench_SOURCES += tools/raw_nccl.c
TOOLS_RAW_CPPFLAGS += $(NCCL_CPPFLAGS)
TOOLS_RAW_LIBS += $(NCCL_LDFLAGS) $(NCCL_LIBS)
endif
if HAVE_OPENCL
tools_gpar_bench_SOURCES += tools/raw_opencl.c
TOOLS_RAW_CPPFLAGS += $(OPENCL_CFLAGS) -DCL_TARGET_OPENCL_VERSION=120
TOOLS_RAW_LIBS += $(OPENCL_LIBS)
endif
EXTRA_DIST += tools/raw_cuda.c tools/raw_opencl.c tools/raw_nccl.c
tools_gpar_bench_CPPFLAGS = $(AM_CPPFLAGS) $(OPENBLAS_CFLAGS) $(TOOLS_RAW_CPPFLAGS)
tools_gpar_bench_LDADD = libgpar.la $(TOOLS_RAW_LIBS) $(OPENBLAS_LIBS) -lm

# The chapter's two experiments as TAP tests: small in `make check`, full size in `make bench`.
# They run through tests/bench/*.tap wrappers so their .log files come from a suffix rule, which
# lets the dependencies at the end of this file order them after every other test.
BENCH_TESTS = tests/bench/multi_device tests/bench/copy_overlap
check_PROGRAMS += $(BENCH_TESTS)
TESTS += tests/bench/multi_device.tap tests/bench/copy_overlap.tap
EXTRA_DIST += tests/bench/multi_device.tap tests/bench/copy_overlap.tap
TEST_EXTENSIONS = .tap
TAP_LOG_DRIVER = $(LOG_DRIVER)
TAP_LOG_COMPILER = $(SHELL)
tests_bench_multi_device_SOURCES = tests/bench/multi_device.c
tests_bench_multi_device_LDADD = libgpar.la
tests_bench_copy_overlap_SOURCES = tests/bench/copy_overlap.c
tests_bench_copy_overlap_LDADD = libgpar.la

# make bench: the TAP tests at full size (GPU: 4000^3 x 50), then gpar-bench's multi-device and
# copy-overlap with the raw baseline and an SVG timeline of the overlap. Choose a backend with
# e.g. `make bench BENCH_FLAGS="--backend opencl --raw --repeat 5"`; PoCL's two CPU devices:
# `POCL_DEVICES="pthread pthread" make bench`.
BENCH_FLAGS = --raw --repeat 3
BENCH_TIMEOUT = 1800
bench: tools/gpar-bench$(EXEEXT) tests/bench/multi_device$(EXEEXT) tests/bench/copy_overlap$(EXEEXT)
	GPAR_BENCH_FULL=1 GPAR_TEST_TIMEOUT=$(BENCH_TIMEOUT) ./tests/bench/multi_device$(EXEEXT)
	GPAR_BENCH_FULL=1 GPAR_TEST_TIMEOUT=$(BENCH_TIMEOUT) ./tests/bench/copy_overlap$(EXEEXT)
	./tools/gpar-bench$(EXEEXT) multi-device $(BENCH_FLAGS) --json bench-multi-device.json
	./tools/gpar-bench$(EXEEXT) copy-overlap $(BENCH_FLAGS) --json bench-copy-overlap.json \
		--trace bench-copy-overlap.trace.json --svg bench-copy-overlap.svg
.PHONY: bench
CLEANFILES += bench-multi-device.json bench-copy-overlap.json bench-copy-overlap.trace.json \
	bench-copy-overlap.svg

# The timing tests run alone, after every other test, so no other test shares their devices
# under `make -j check` (automake orders tests by dependencies between their .log files).
tests/bench/multi_device.log: $(GPAR_TAP_TESTS:=.log)
tests/bench/copy_overlap.log: tests/bench/multi_device.log

# gpar-bench-mpi: allreduce across MPI ranks (issue 15), libgpar_mpi next to MPI_Allreduce (host)
# or a raw ncclAllReduce loop across ranks (cuda).
EXTRA_DIST += tools/bench_mpi.c tools/raw_nccl_mpi.c
if HAVE_MPI
bin_PROGRAMS += tools/gpar-bench-mpi
tools_gpar_bench_mpi_SOURCES = tools/bench_mpi.c tools/raw_nccl.h
tools_gpar_bench_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tools_gpar_bench_mpi_LDADD = libgpar_mpi.la libgpar.la $(MPI_LIBS)
if HAVE_NCCL
tools_gpar_bench_mpi_SOURCES += tools/raw_nccl_mpi.c
tools_gpar_bench_mpi_CPPFLAGS += $(CUDA_CPPFLAGS) $(NCCL_CPPFLAGS)
tools_gpar_bench_mpi_LDADD += $(CUDA_LDFLAGS) $(NCCL_LDFLAGS) $(NCCL_LIBS) $(CUDA_LIBS)
endif
endif

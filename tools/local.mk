# tools/local.mk: gpar-info, gpar-bench and gpar-bench-mpi, their man pages, and `make bench`,
# which runs the chapter's experiments at full size (their TAP tests, tests/bench/, are listed in
# tests/local.mk with the other tests).

bin_PROGRAMS += tools/gpar-info tools/gpar-bench

# The training step of Dive into Deep Learning's "Training on Multiple GPUs" (tools/train/: the
# model, its data and initial weights, on the public API only), one convenience library that
# `gpar-bench train`, tests/array_train and examples/train link.
noinst_LTLIBRARIES += tools/train/libgpar_train.la
tools_train_libgpar_train_la_SOURCES = tools/train/train_mlp.h tools/train/train_mlp.c tools/train/train_data.c

tools_gpar_info_SOURCES = tools/gpar-info.c
tools_gpar_info_LDADD = libgpar.la

# gpar-bench links the raw vendor baselines of the backends configure found (tools/raw/raw.h:
# weak symbols, NULL when a file is not built) and OpenBLAS for the host baseline.
# Rooms: tools/README.md. Files by layer: gpar-bench.c (main, options, the run's record) calls the subcommands
# (bench_exp, bench_gemm, bench_overhead, bench_sweep, bench_report, bench_comm), which call the
# shared helpers below them (bench_devices, bench_json, bench_meta, bench_chart, bench_trace,
# bench_common) and the raw loops (raw_*.c); nothing calls back up into gpar-bench.c.
tools_gpar_bench_SOURCES = tools/bench/gpar-bench.c \
	tools/bench/bench_exp.c tools/bench/bench_gemm.c tools/bench/bench_overhead.c tools/bench/bench_kernel.c tools/bench/bench_sweep.c \
	tools/bench/bench_report.c tools/bench/bench_comm.c tools/bench/bench_blas.c \
	tools/bench/bench_devices.c tools/bench/bench_json.c tools/bench/bench_meta.c tools/bench/bench_chart.c \
	tools/bench/bench_trace.c tools/bench/bench_common.c tools/bench/bench_common.h \
	tools/raw/raw.h tools/raw/raw_host.c tools/raw/raw_nccl.h tools/raw/raw_blas.h tools/raw/raw_blas_host.c tools/raw/raw_kernel.h \
	tools/raw/raw_kernel_host.c tools/bench/bench_lanes.c tools/bench/bench_branches.c tools/raw/raw_branches.h tools/raw/raw_lanes.h tools/raw/raw_lanes_team.c tools/bench/bench_array.c tools/bench/bench_train.c tools/raw/raw_array.h tools/raw/raw_array_host.c
TOOLS_RAW_CPPFLAGS =
TOOLS_RAW_LIBS =
if HAVE_CUDA
tools_gpar_bench_SOURCES += tools/raw/raw_cuda.c tools/raw/raw_blas_cuda.c
TOOLS_RAW_CPPFLAGS += $(CUDA_CPPFLAGS)
TOOLS_RAW_LIBS += $(CUDA_LDFLAGS) $(CUDA_LIBS)
endif
# The hand-written CUDA kernel loops (gpar-bench kernel, array) link NVRTC (libgpar itself only
# loads it at run time).
if HAVE_NVRTC_LINK
tools_gpar_bench_SOURCES += tools/raw/raw_kernel_cuda.c tools/raw/raw_array_cuda.c tools/raw/raw_lanes_cuda.c \
	tools/raw/raw_branches_cuda.c
TOOLS_RAW_LIBS += -lnvrtc
endif
if HAVE_NCCL
tools_gpar_bench_SOURCES += tools/raw/raw_nccl.c
TOOLS_RAW_CPPFLAGS += $(NCCL_CPPFLAGS)
TOOLS_RAW_LIBS += $(NCCL_LDFLAGS) $(NCCL_LIBS)
endif
if HAVE_OPENCL
tools_gpar_bench_SOURCES += tools/raw/raw_opencl.c tools/raw/raw_blas_opencl.c tools/raw/raw_kernel_opencl.c tools/raw/raw_array_opencl.c
tools_gpar_bench_SOURCES += tools/raw/raw_lanes_opencl.c
TOOLS_RAW_CPPFLAGS += $(OPENCL_CFLAGS) -DCL_TARGET_OPENCL_VERSION=120
TOOLS_RAW_LIBS += $(OPENCL_LIBS)
endif
EXTRA_DIST += tools/raw/raw_cuda.c tools/raw/raw_opencl.c tools/raw/raw_nccl.c tools/raw/raw_blas_cuda.c tools/raw/raw_blas_opencl.c \
	tools/raw/raw_kernel_cuda.c tools/raw/raw_kernel_opencl.c tools/raw/raw_array_cuda.c tools/raw/raw_array_opencl.c \
	tools/raw/raw_lanes_cuda.c tools/raw/raw_lanes_opencl.c tools/raw/raw_branches_cuda.c
# `gpar-bench report` reads JSON with jansson; without it the subcommand says it was not built.
if HAVE_JANSSON
TOOLS_RAW_CPPFLAGS += -DGPAR_HAVE_JANSSON=1 $(JANSSON_CFLAGS)
TOOLS_RAW_LIBS += $(JANSSON_LIBS)
endif
tools_gpar_bench_CPPFLAGS = $(AM_CPPFLAGS) -Itools -I$(top_srcdir)/tools $(OPENBLAS_CFLAGS) $(TOOLS_RAW_CPPFLAGS)
tools_gpar_bench_LDADD = tools/train/libgpar_train.la libgpar.la $(TOOLS_RAW_LIBS) $(OPENBLAS_LIBS) -lm

# The commit that benchmark records carry: in a tarball the .tarball-version that `make dist`
# wrote (first: a tarball may sit inside some other git tree), else `git describe` of the source
# tree at build time, else "unknown". Rewritten only when it changes.
nodist_tools_gpar_bench_SOURCES = tools/bench_git.h
BUILT_SOURCES = tools/bench_git.h
CLEANFILES += tools/bench_git.h
GPAR_GIT_DESCRIBE = cat $(srcdir)/.tarball-version 2>/dev/null || \
	(cd $(srcdir) && git describe --always --dirty 2>/dev/null) || echo unknown
tools/bench_git.h: FORCE
	@$(MKDIR_P) tools; v=`$(GPAR_GIT_DESCRIBE)`; \
	echo "#define GPAR_GIT_COMMIT \"$$v\"" > $@.tmp; \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
FORCE:
.PHONY: FORCE
dist-hook:
	@v=`$(GPAR_GIT_DESCRIBE)`; echo "$$v" > $(distdir)/.tarball-version

# Man pages from --help and --version (help2man), shipped in the tarball so that a build without
# help2man still installs them; they are regenerated when the tool's source changes (the built
# tool is an order-only prerequisite, GNU make: built first, its time stamp not compared).
dist_man1_MANS = man/gpar-bench.1 man/gpar-info.1
EXTRA_DIST += bench/sweep-gpu.sh tools/mkman.sh man/gpar-bench.h2m man/gpar-info.h2m
# The GPU-machine scripts run from the tarball's tree that .gpu/gpu-check.sh builds (and
# tests/bench/engine_ab.tap runs the engine ones in `make check`).
EXTRA_DIST += bench/check-gpu.sh bench/reliability-gpu.sh bench/ab-gpu.sh bench/engine-gpu.sh bench/engine-table.py bench/overhead-ab.py \
	bench/breakdown-trace.py bench/run-comm-gpu.sh bench/kernel-gpu.sh bench/kernel-table.py
# The array ops' and the training step's GPU call, and the training step's PyTorch peer.
EXTRA_DIST += bench/train-gpu.sh bench/train_torch.py
GPAR_MKMAN = $(SHELL) $(top_srcdir)/tools/mkman.sh '$(HELP2MAN)' '$(PACKAGE_VERSION)'
man/gpar-bench.1: $(top_srcdir)/tools/bench/gpar-bench.c $(top_srcdir)/man/gpar-bench.h2m $(top_srcdir)/configure.ac \
		| tools/gpar-bench$(EXEEXT)
	$(AM_V_GEN)$(MKDIR_P) man && $(GPAR_MKMAN) tools/gpar-bench$(EXEEXT) $@ "benchmark libgpar next to the raw vendor loop" \
		$(top_srcdir)/man/gpar-bench.h2m
man/gpar-info.1: $(top_srcdir)/tools/gpar-info.c $(top_srcdir)/man/gpar-info.h2m $(top_srcdir)/configure.ac \
		| tools/gpar-info$(EXEEXT)
	$(AM_V_GEN)$(MKDIR_P) man && $(GPAR_MKMAN) tools/gpar-info$(EXEEXT) $@ "list libgpar's devices and their peer access" \
		$(top_srcdir)/man/gpar-info.h2m

# make bench: the TAP tests at full size (GPU: 4000^3 x 50), then gpar-bench's multi-device and
# copy-overlap with the raw baseline and an SVG timeline of the overlap, then the report for this
# machine: a sweep over op sizes of every device group of every backend (SWEEP_FLAGS, e.g.
# --backend opencl or --sizes 64,256,1024) and `gpar-bench report` on it, in bench-report/
# (report.md with its charts; needs jansson). Choose a backend for the first part with e.g.
# `make bench BENCH_FLAGS="--backend opencl --raw --repeat 5"`; PoCL's two CPU devices:
# `POCL_DEVICES="pthread pthread" make bench`.
BENCH_FLAGS = --raw --repeat 3
SWEEP_FLAGS =
BENCH_TIMEOUT = 1800
bench: tools/gpar-bench$(EXEEXT) tests/bench/multi_device$(EXEEXT) tests/bench/copy_overlap$(EXEEXT)
	GPAR_BENCH_FULL=1 GPAR_TEST_TIMEOUT=$(BENCH_TIMEOUT) ./tests/bench/multi_device$(EXEEXT)
	GPAR_BENCH_FULL=1 GPAR_TEST_TIMEOUT=$(BENCH_TIMEOUT) ./tests/bench/copy_overlap$(EXEEXT)
	./tools/gpar-bench$(EXEEXT) multi-device $(BENCH_FLAGS) --json bench-multi-device.json
	./tools/gpar-bench$(EXEEXT) copy-overlap $(BENCH_FLAGS) --json bench-copy-overlap.json \
		--trace bench-copy-overlap.trace.json --svg bench-copy-overlap.svg
	$(MAKE) $(AM_MAKEFLAGS) bench-report
bench-report: tools/gpar-bench$(EXEEXT)
	$(MKDIR_P) bench-report
	./tools/gpar-bench$(EXEEXT) sweep $(SWEEP_FLAGS) --json bench-report/sweep.json --svg bench-report/sweep.svg
	runs=bench-report/sweep.json; for f in bench-multi-device.json bench-copy-overlap.json; do \
		if test -f $$f; then runs="$$runs $$f"; fi; done; \
	./tools/gpar-bench$(EXEEXT) report $$runs --outdir bench-report > bench-report/report.md
	@echo "report: bench-report/report.md"
.PHONY: bench bench-report
CLEANFILES += bench-multi-device.json bench-copy-overlap.json bench-copy-overlap.trace.json \
	bench-copy-overlap.svg
clean-local: clean-bench-report
clean-bench-report:
	rm -rf bench-report
.PHONY: clean-bench-report

# gpar-bench-mpi: allreduce across MPI ranks, libgpar_mpi next to MPI_Allreduce (host)
# or a raw ncclAllReduce loop across ranks (cuda).
EXTRA_DIST += tools/bench/bench_mpi.c tools/raw/raw_nccl_mpi.c
if HAVE_MPI
bin_PROGRAMS += tools/gpar-bench-mpi
tools_gpar_bench_mpi_SOURCES = tools/bench/bench_mpi.c tools/raw/raw_nccl.h
tools_gpar_bench_mpi_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tools $(MPI_CFLAGS)
tools_gpar_bench_mpi_LDADD = libgpar_mpi.la libgpar.la $(MPI_LIBS)
if HAVE_NCCL
tools_gpar_bench_mpi_SOURCES += tools/raw/raw_nccl_mpi.c
tools_gpar_bench_mpi_CPPFLAGS += $(CUDA_CPPFLAGS) $(NCCL_CPPFLAGS)
tools_gpar_bench_mpi_LDADD += $(CUDA_LDFLAGS) $(NCCL_LDFLAGS) $(NCCL_LIBS) $(CUDA_LIBS)
endif
endif

# mpi/local.mk: libgpar_mpi, built when configure found MPI (m4/gpar_mpi.m4). It uses libgpar's
# public API only; with NCCL also found, collectives of all-CUDA communicators go through NCCL
# across ranks. mpi/mpi_internal.h lists its files, bottom layer first.
GPAR_MPI_SOURCES = mpi/mpi_internal.h mpi/mpi_errors.c mpi/mpi_calls.c mpi/mpi_abandoned.c mpi/mpi_workers.c \
	mpi/mpi_jobs.c mpi/mpi_wait.c mpi/mpi_ops.c mpi/mpi_submit.c mpi/mpi_p2p.c mpi/mpi_comm.c
EXTRA_DIST += include/gpar_mpi.h $(GPAR_MPI_SOURCES) mpi/mpi_nccl.c mpi/mpi_nonccl.c gpar_mpi.pc.in
if HAVE_MPI
lib_LTLIBRARIES += libgpar_mpi.la
include_HEADERS += include/gpar_mpi.h
pkgconfig_DATA += gpar_mpi.pc
libgpar_mpi_la_SOURCES = $(GPAR_MPI_SOURCES)
libgpar_mpi_la_CPPFLAGS = $(AM_CPPFLAGS) -DGPAR_BUILDING $(MPI_CFLAGS)
libgpar_mpi_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
libgpar_mpi_la_LIBADD = libgpar.la $(MPI_LIBS) -lm
libgpar_mpi_la_LDFLAGS = -version-info $(GPAR_LT_VERSION) -no-undefined -Wl,--no-undefined
if HAVE_NCCL
libgpar_mpi_la_SOURCES += mpi/mpi_nccl.c
libgpar_mpi_la_CPPFLAGS += $(CUDA_CPPFLAGS) $(NCCL_CPPFLAGS)
libgpar_mpi_la_LIBADD += $(NCCL_LIBS) $(CUDA_LIBS)
libgpar_mpi_la_LDFLAGS += $(CUDA_LDFLAGS) $(NCCL_LDFLAGS)
else
libgpar_mpi_la_SOURCES += mpi/mpi_nonccl.c
endif
endif
EXTRA_DIST += bench/run-comm-gpu.sh

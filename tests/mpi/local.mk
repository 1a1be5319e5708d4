# tests/mpi/local.mk: the tests of libgpar_mpi across ranks: mpirun -np 2 and -np 3 on this host
# through tests/mpi/run.sh, which also passes the sanitizer suppressions of tests/lsan.supp and
# tests/tsan.supp to the ranks; they skip when MPI is not built. np*.tap: collectives and
# send/receive against a reference (comm_mpi); faults-np*.tap: timeouts, late ranks and MPI's limits
# (faults_mpi); nccl-np*.tap: the NCCL path, concurrent collectives on 1 rank x 2 GPUs and the
# watchdog's abort on 2 ranks x 1 GPU (nccl_mpi; they skip without CUDA GPUs). The programs share tests/mpi/mpi_test.h.
# lifetime-np2.tap: a communicator destroyed while send, recv, set_timeout and info_get use it (lifetime_mpi).
# Included by Makefile.am after tests/local.mk (GPAR_TEST_HDRS).
TESTS += tests/mpi/np2.tap tests/mpi/np3.tap tests/mpi/faults-np2.tap tests/mpi/faults-np3.tap \
	tests/mpi/nccl-np1.tap tests/mpi/nccl-np2.tap
TESTS += tests/mpi/lifetime-np2.tap
EXTRA_DIST += tests/mpi/lifetime-np2.tap tests/mpi/lifetime_mpi.c
EXTRA_DIST += tests/mpi/run.sh tests/mpi/np2.tap tests/mpi/np3.tap tests/mpi/comm_mpi.c tests/mpi/mpi_test.h \
	tests/mpi/faults-np2.tap tests/mpi/faults-np3.tap tests/mpi/faults_mpi.c \
	tests/mpi/nccl-np1.tap tests/mpi/nccl-np2.tap tests/mpi/nccl_mpi.c tests/mpi/run-gpu.sh
if HAVE_MPI
check_PROGRAMS += tests/mpi/comm_mpi tests/mpi/faults_mpi tests/mpi/nccl_mpi
tests_mpi_comm_mpi_SOURCES = tests/mpi/comm_mpi.c tests/mpi/mpi_test.h tests/comm_ref.h $(GPAR_TEST_HDRS)
tests_mpi_comm_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_mpi_comm_mpi_LDADD = libgpar_mpi.la libgpar.la $(MPI_LIBS) -lm
tests_mpi_faults_mpi_SOURCES = tests/mpi/faults_mpi.c tests/mpi/mpi_test.h $(GPAR_TEST_HDRS)
tests_mpi_faults_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_mpi_faults_mpi_LDADD = libgpar_mpi.la libgpar.la $(MPI_LIBS)
tests_mpi_nccl_mpi_SOURCES = tests/mpi/nccl_mpi.c tests/mpi/mpi_test.h $(GPAR_TEST_HDRS)
tests_mpi_nccl_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_mpi_nccl_mpi_LDADD = libgpar_mpi.la libgpar.la $(MPI_LIBS)
check_PROGRAMS += tests/mpi/lifetime_mpi
tests_mpi_lifetime_mpi_SOURCES = tests/mpi/lifetime_mpi.c tests/mpi/mpi_test.h $(GPAR_TEST_HDRS)
tests_mpi_lifetime_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_mpi_lifetime_mpi_LDADD = libgpar_mpi.la libgpar.la $(MPI_LIBS)
# It defines gpar_buffer_query over libgpar's (found with dlsym(RTLD_NEXT)); a static libgpar.a
# defines it too, so that link needs this (the test then skips: nothing to interpose on).
tests_mpi_lifetime_mpi_LDFLAGS = -Wl,--allow-multiple-definition
endif

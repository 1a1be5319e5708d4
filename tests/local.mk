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

# tests/core.mk: tests of the core's engine lifecycle and handles (issue 16): shutdown racing
# submissions, stale handles at the serial counters' end, GEMM operand ranges.
GPAR_TAP_TESTS += tests/shutdown tests/handles tests/breakdown
tests_shutdown_SOURCES = tests/shutdown.c $(GPAR_TEST_HDRS)
tests_shutdown_LDADD = libgpar.la
tests_handles_SOURCES = tests/handles.c $(GPAR_TEST_HDRS)
tests_handles_LDADD = libgpar.la
tests_breakdown_SOURCES = tests/breakdown.c $(GPAR_TEST_HDRS)
tests_breakdown_LDADD = libgpar.la

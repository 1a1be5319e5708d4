# tests/core.mk: tests of the core: engine lifecycle and handles: shutdown racing
# submissions, stale handles at the serial counters' end, GEMM operand ranges.
GPAR_TAP_TESTS += tests/shutdown tests/handles tests/breakdown
tests_shutdown_SOURCES = tests/shutdown.c $(GPAR_TEST_HDRS)
tests_shutdown_LDADD = libgpar.la
tests_handles_SOURCES = tests/handles.c $(GPAR_TEST_HDRS)
tests_handles_LDADD = libgpar.la
tests_breakdown_SOURCES = tests/breakdown.c $(GPAR_TEST_HDRS)
tests_breakdown_LDADD = libgpar.la
# The layers of core/ (issue 19): includes, symbols (nm over the built objects) and an engine
# that names no kind of op. tests/layers.sh says what it checks.
TESTS += tests/layers.tap
CLEANFILES += tests/layers.tap
EXTRA_DIST += tests/layers.sh
tests/layers.tap: Makefile
	$(AM_V_GEN)$(MKDIR_P) tests && echo '#!/bin/sh' > $@ && \
	  echo 'exec $(SHELL) "$(abs_top_srcdir)/tests/layers.sh" "$(abs_top_srcdir)" "$(abs_top_builddir)"' >> $@
# Many submitting threads against many workers on shared buffers (issue 20): exact values,
# two-buffer ops linked by two threads in opposite orders. In the TSan list of .ci/run.
GPAR_TAP_TESTS += tests/contention
tests_contention_SOURCES = tests/contention.c $(GPAR_TEST_HDRS)
tests_contention_LDADD = libgpar.la
# The engine without its global lock, as safe as the one with it: runs that close in bounded time
# whatever other lanes do (an event device: PoCL here); calls made of several ops applied whole,
# ordered whole against other threads' calls, whole or refused at shutdown; statuses written
# under the op's lock, readers that leave in O(1), wake-ups and handle slots under races. In the
# TSan list of .ci/run (races names its tests; its status test needs an event device).
GPAR_TAP_TESTS += tests/runs tests/atomicity tests/races
tests_runs_SOURCES = tests/runs.c $(GPAR_TEST_HDRS)
tests_runs_LDADD = libgpar.la
tests_atomicity_SOURCES = tests/atomicity.c $(GPAR_TEST_HDRS)
tests_atomicity_LDADD = libgpar.la
tests_races_SOURCES = tests/races.c $(GPAR_TEST_HDRS)
tests_races_LDADD = libgpar.la

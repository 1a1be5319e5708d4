# tests/conventions.mk: tests of the conventions a user relies on (issue 13 item 4): the BLAS
# rule on every device, the installed header, configure's --with-cuda, memory over many
# engine lifetimes. Kept apart from tests/local.mk (owned by the tests work) so both can change.
# They join GPAR_TAP_TESTS (tests/local.mk), so they run before oom and the benchmarks.
GPAR_TAP_TESTS += tests/blas_rules tests/backend_status tests/engine_cycles
tests_blas_rules_SOURCES = tests/blas_rules.c $(GPAR_TEST_HDRS)
tests_blas_rules_LDADD = libgpar.la
tests_backend_status_SOURCES = tests/backend_status.c $(GPAR_TEST_HDRS)
tests_backend_status_LDADD = libgpar.la
# Memory over many engine lifetimes with OpenCL GEMMs (issue 16 finding 3); GPAR_CYCLES=1000 for
# the full run.
tests_engine_cycles_SOURCES = tests/engine_cycles.c $(GPAR_TEST_HDRS)
tests_engine_cycles_LDADD = libgpar.la
# --with-cuda=DIR takes the toolkit from DIR only: a script that runs configure a few times
# (seconds each), called from .ci/run rather than make check.
EXTRA_DIST += tests/configure-with-cuda.sh
# pkg-config --static --libs gpar is complete: a script that builds and installs libgpar.a in a
# scratch prefix and links a program with exactly those flags (called from .ci/run).
EXTRA_DIST += tests/static-link.sh
# The installed header compiles cleanly as C99, C11 and C++ (-Wall -Wextra -pedantic -Werror),
# through a generated .tap wrapper that hands the script configure's C compiler.
TESTS += tests/installed_header.tap
CLEANFILES += tests/installed_header.tap
EXTRA_DIST += tests/installed-header.sh
tests/installed_header.tap: Makefile
	$(AM_V_GEN)$(MKDIR_P) tests && echo '#!/bin/sh' > $@ && \
	  echo 'CC="$(CC)" exec $(SHELL) "$(abs_top_srcdir)/tests/installed-header.sh" "$(abs_top_srcdir)/include"' >> $@

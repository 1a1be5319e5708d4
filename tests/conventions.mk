# tests/conventions.mk: tests of the conventions a user relies on (issue 13 item 4): the BLAS
# rule on every device, the installed header, configure's --with-cuda, memory over many
# engine lifetimes. Kept apart from tests/local.mk (owned by the tests work) so both can change.
GPAR_CONV_TESTS = tests/blas_rules
check_PROGRAMS += $(GPAR_CONV_TESTS)
TESTS += $(GPAR_CONV_TESTS)
tests_blas_rules_SOURCES = tests/blas_rules.c $(GPAR_TEST_HDRS)
tests_blas_rules_LDADD = libgpar.la
# --with-cuda=DIR takes the toolkit from DIR only: a script that runs configure a few times
# (seconds each), called from .ci/run rather than make check.
EXTRA_DIST += tests/configure-with-cuda.sh
# pkg-config --static --libs gpar is complete: a script that builds and installs libgpar.a in a
# scratch prefix and links a program with exactly those flags (called from .ci/run).
EXTRA_DIST += tests/static-link.sh

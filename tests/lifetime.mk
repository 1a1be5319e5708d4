# tests/lifetime.mk: tests of object lifetimes and handles (issue 19 items 1-6, issue 21 items 13
# and 14): graph and communicator handles that are stale, foreign or destroyed; destroy from inside
# an op; collectives and check-only calls racing gpar_shutdown; shutdown reclaiming what an engine
# leaves. Each must also pass under ASan and TSan (.ci/run runs them in its TSan list).
GPAR_TAP_TESTS += tests/graph_lifetime tests/comm_lifetime tests/lifetime_races
tests_graph_lifetime_SOURCES = tests/graph_lifetime.c $(GPAR_TEST_HDRS)
tests_graph_lifetime_LDADD = libgpar.la
tests_comm_lifetime_SOURCES = tests/comm_lifetime.c tests/comm_transport.h $(GPAR_TEST_HDRS)
tests_comm_lifetime_LDADD = libgpar.la
tests_lifetime_races_SOURCES = tests/lifetime_races.c tests/comm_transport.h $(GPAR_TEST_HDRS)
tests_lifetime_races_LDADD = libgpar.la

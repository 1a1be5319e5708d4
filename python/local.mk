# python/local.mk: the Python front. _gpar (python/ext/, a C extension on Python's stable ABI
# 3.9) is a libtool module installed in pyexecdir; the gpar package (python/gpar/, Python) in
# pythondir builds arrays, kernels and graphs on it. Built when configure found Python >= 3.9
# with its headers (m4/gpar_python.m4). tests/python/ runs in make check through
# tests/python-tap.sh, which points PYTHONPATH at this build.
# (not GPAR_*_SOURCES: tests/fuzz/sources.sh reads those as the library's own)
PY_EXT_SOURCES = python/ext/pygpar.h python/ext/dlpack.h python/ext/module.c python/ext/errors.c python/ext/owners.c \
	python/ext/engine.c python/ext/buffer.c python/ext/dlpack.c python/ext/kernel.c python/ext/blas.c \
	python/ext/graph.c python/ext/comm.c
GPAR_PY_PACKAGE = python/gpar/__init__.py python/gpar/_engine.py python/gpar/_array.py python/gpar/_kernel.py \
	python/gpar/_ops.py python/gpar/_comm.py
GPAR_PY_TESTS = tests/python/test_arrays.py tests/python/test_dlpack.py tests/python/test_kernels.py \
	tests/python/test_errors.py tests/python/test_lifetimes.py tests/python/test_examples.py \
	tests/python/test_bench.py tests/python/test_collectives.py \
	tests/python/test_train.py tests/python/test_cuda_peers.py
GPAR_PY_EXAMPLES = examples/python/chapter.py examples/python/train.py examples/python/kernel_inplace.py \
	examples/python/README.md
EXTRA_DIST += $(PY_EXT_SOURCES) $(GPAR_PY_PACKAGE) $(GPAR_PY_TESTS) $(GPAR_PY_EXAMPLES) tests/python/tap.py \
	tests/python-tap.sh bench/python-bench.py bench/python-train.py

if HAVE_PYTHON
pyexec_LTLIBRARIES = python/_gpar.la
python__gpar_la_SOURCES = $(PY_EXT_SOURCES)
python__gpar_la_CPPFLAGS = $(AM_CPPFLAGS) $(PYTHON_CPPFLAGS)
python__gpar_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden -fno-strict-aliasing
python__gpar_la_LDFLAGS = -module -avoid-version -shared -export-symbols-regex '^PyInit__gpar$$'
python__gpar_la_LIBADD = libgpar.la
gpardir = $(pythondir)/gpar
gpar_PYTHON = $(GPAR_PY_PACKAGE)

# One TAP wrapper per test file (they run in parallel), each running it with this build's module.
GPAR_PY_TAPS = $(GPAR_PY_TESTS:.py=.tap)
TESTS += $(GPAR_PY_TAPS)
CLEANFILES += $(GPAR_PY_TAPS)
$(GPAR_PY_TAPS): Makefile python/_gpar.la
	$(AM_V_GEN)$(MKDIR_P) tests/python && echo '#!/bin/sh' > $@ && \
	  echo 'PYTHON="$(PYTHON)" exec $(SHELL) "$(abs_top_srcdir)/tests/python-tap.sh" "$(abs_top_srcdir)" "$(abs_top_builddir)" "$(abs_top_srcdir)/$(@:.tap=.py)"' >> $@
endif

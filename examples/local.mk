# examples/local.mk: the example programs (examples/README.md says what each shows). `make`
# builds them; `make check` runs each once at a small size through tests/examples.tap, a wrapper
# made here that prints one TAP line per example: exit status 0 is ok, 77 a skip (nothing here
# can run it, e.g. no device builds kernels), anything else not ok, with the example's output as
# TAP comments in tests/examples.log.

GPAR_EXAMPLES = examples/chapter examples/kernel examples/map examples/graph examples/collective examples/train
noinst_PROGRAMS += $(GPAR_EXAMPLES)
EXTRA_DIST += examples/README.md
examples_chapter_LDADD = libgpar.la
examples_kernel_LDADD = libgpar.la
examples_map_LDADD = libgpar.la -lm
examples_graph_LDADD = libgpar.la
examples_collective_LDADD = libgpar.la
# The training step itself is tools/train/ (libgpar_train.la, tools/local.mk).
examples_train_LDADD = tools/train/libgpar_train.la libgpar.la

# What `make check` runs: each example's name and arguments, one quoted word each, small sizes.
GPAR_EXAMPLES_CHECK = 'chapter 128 20' kernel map graph collective \
	'train --all --steps 3 --hidden 32 --batch 24 --every 1'
TESTS += tests/examples.tap
CLEANFILES += tests/examples.tap examples/*.out
tests/examples.tap: Makefile
	$(AM_V_GEN)$(MKDIR_P) tests && { \
	  echo '#!/bin/sh'; \
	  echo '# Made by examples/local.mk: each example once, one TAP line each.'; \
	  echo 'n=0'; \
	  echo 'run() {'; \
	  echo '  n=$$((n + 1))'; \
	  echo '  "./examples/$$@" > "examples/$$1.out" 2>&1; rc=$$?'; \
	  echo '  sed "s/^/# /" "examples/$$1.out"'; \
	  echo '  case $$rc in'; \
	  echo '  0) echo "ok $$n - examples/$$*" ;;'; \
	  echo '  77) echo "ok $$n - examples/$$* # SKIP" ;;'; \
	  echo '  *) echo "not ok $$n - examples/$$* (exit status $$rc)" ;;'; \
	  echo '  esac'; \
	  echo '}'; \
	  for r in $(GPAR_EXAMPLES_CHECK); do echo "run $$r"; done; \
	  echo 'echo "1..$$n"'; \
	} > $@
tests/examples.log: $(GPAR_EXAMPLES:=$(EXEEXT))
# Before tests/oom (it fills whole devices) and so before the benchmarks after it, which run alone
# (tests/local.mk).
tests/oom.log: tests/examples.log

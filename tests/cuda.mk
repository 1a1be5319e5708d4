# tests/cuda.mk: tests of the CUDA backend that need GPUs (issue 21 item 11); each skips wholly
# without its devices. They join GPAR_TAP_TESTS (tests/local.mk), so they run before oom and the
# benchmarks.
# A stuck NCCL collective is aborted after GPAR_COMM_TIMEOUT (2 s in the test): two CUDA devices
# and NCCL; GPAR_TEST_HAVE_NCCL tells the test that the build has NCCL.
GPAR_TAP_TESTS += tests/cuda_nccl_abort
tests_cuda_nccl_abort_SOURCES = tests/cuda_nccl_abort.c $(GPAR_TEST_HDRS)
tests_cuda_nccl_abort_LDADD = libgpar.la
if HAVE_NCCL
tests_cuda_nccl_abort_CPPFLAGS = $(AM_CPPFLAGS) -DGPAR_TEST_HAVE_NCCL=1
else
# Defined in both branches: automake gives the program its own objects either way, and without
# this they would compile without AM_CPPFLAGS (no -I include) in every build without NCCL.
tests_cuda_nccl_abort_CPPFLAGS = $(AM_CPPFLAGS)
endif

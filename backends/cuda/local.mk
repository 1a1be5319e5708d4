# backends/cuda/local.mk: the CUDA backend (plain C over cudart + cuBLAS + cublasLt, and NCCL when
# found), built when configure found the toolkit. Sources in layer order, bottom first
# (cuda_internal.h lists the layers).
CUDA_SOURCES = backends/cuda/cuda_internal.h backends/cuda/cuda_errors.c backends/cuda/cuda_device.c \
	backends/cuda/cuda_memory.c backends/cuda/cuda_events.c backends/cuda/cuda_blas_lt.c \
	backends/cuda/cuda_blas_cublas.c backends/cuda/cuda_graph.c backends/cuda/cuda_table.c
EXTRA_DIST += $(CUDA_SOURCES) backends/cuda/cuda_nccl.c backends/cuda/cuda_kernel.c
if HAVE_CUDA
noinst_LTLIBRARIES += libgpar_cuda.la
libgpar_cuda_la_SOURCES = $(CUDA_SOURCES)
libgpar_cuda_la_CPPFLAGS = $(LIB_CPPFLAGS) $(CUDA_CPPFLAGS)
libgpar_cuda_la_CFLAGS = $(LIB_CFLAGS)
libgpar_la_LIBADD += libgpar_cuda.la $(CUDA_LIBS)
libgpar_la_LDFLAGS += $(CUDA_LDFLAGS)
# Kernels through NVRTC (loaded at run time), when configure found its header (m4/gpar_nvrtc.m4).
if HAVE_NVRTC
libgpar_cuda_la_SOURCES += backends/cuda/cuda_kernel.c
libgpar_cuda_la_CPPFLAGS += $(NVRTC_CPPFLAGS)
endif
# NCCL collectives (issue 15), when configure found NCCL (m4/gpar_nccl.m4).
if HAVE_NCCL
libgpar_cuda_la_SOURCES += backends/cuda/cuda_nccl.c
libgpar_cuda_la_CPPFLAGS += $(NCCL_CPPFLAGS)
libgpar_la_LIBADD += $(NCCL_LIBS)
libgpar_la_LDFLAGS += $(NCCL_LDFLAGS)
endif
endif

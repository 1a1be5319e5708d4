# backends/opencl/local.mk: the OpenCL backend (ICD loader + CLBlast), built when configure found
# both through pkg-config.
OPENCL_SOURCES = backends/opencl/opencl_internal.h backends/opencl/opencl_errors.c \
	backends/opencl/opencl_blas_kernels.c backends/opencl/opencl_blas_clblast.c backends/opencl/opencl_blas_vec.c \
	backends/opencl/opencl_kernel.c backends/opencl/opencl_contexts.c backends/opencl/opencl_probe.c \
	backends/opencl/opencl_device.c backends/opencl/opencl_memory.c backends/opencl/opencl_copy.c \
	backends/opencl/opencl_events.c backends/opencl/opencl_table.c
EXTRA_DIST += $(OPENCL_SOURCES)
if HAVE_OPENCL
noinst_LTLIBRARIES += libgpar_opencl.la
libgpar_opencl_la_SOURCES = $(OPENCL_SOURCES)
libgpar_opencl_la_CPPFLAGS = $(LIB_CPPFLAGS) $(OPENCL_CFLAGS) -DCL_TARGET_OPENCL_VERSION=120
libgpar_opencl_la_CFLAGS = $(LIB_CFLAGS)
libgpar_la_LIBADD += libgpar_opencl.la $(OPENCL_LIBS)
endif

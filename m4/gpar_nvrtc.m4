# gpar_nvrtc.m4: CUDA kernels (gpar_kernel_*) are compiled by NVRTC, which libgpar loads with
# dlopen at the first kernel build (libnvrtc.so.13, then .12, then libnvrtc.so; GPAR_NVRTC names
# another), so libgpar never links it and runs where it is absent (such builds say so). At build
# time it needs NVRTC's header (nvrtc.h, for the types of the calls it looks up) and the
# runtime's context-independent loading (cudaLibraryLoadData, CUDA 12 and later), both from the
# CUDA toolkit's folder. Without them the CUDA backend is built without kernels.
# Sets NVRTC_CPPFLAGS (the toolkit's library folder, tried after the plain SONAME),
# gpar_nvrtc_status and the HAVE_NVRTC conditional.
AC_DEFUN([GPAR_CHECK_NVRTC], [
gpar_have_nvrtc=no
gpar_nvrtc_status="no (no CUDA backend)"
AS_IF([test "x$gpar_have_cuda" = xyes], [
  gpar_save_CPPFLAGS=$CPPFLAGS
  CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"
  gpar_nvrtc_status="no (no nvrtc.h in $gpar_cuda_dir/include: CUDA kernels are left out)"
  AS_IF([test -f "$gpar_cuda_dir/include/nvrtc.h"], [
    AC_CHECK_DECL([cudaLibraryLoadData], [
      gpar_have_nvrtc=yes
      gpar_nvrtc_status="yes (nvrtc.h; libnvrtc is loaded at the first kernel build)"
    ], [gpar_nvrtc_status="no (cudaLibraryLoadData is not declared: CUDA 12 or later is needed for CUDA kernels)"],
    [[#include <cuda_runtime_api.h>]])
  ])
  CPPFLAGS=$gpar_save_CPPFLAGS
])
NVRTC_CPPFLAGS="-DGPAR_NVRTC_DIR=\\\"$gpar_cuda_libdir\\\""
AC_SUBST([NVRTC_CPPFLAGS])
AM_CONDITIONAL([HAVE_NVRTC], [test "x$gpar_have_nvrtc" = xyes])
])

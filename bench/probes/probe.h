/* probe.h: shared helpers of the standalone GPU probes in bench/probes (timing, stats,
 * OpenCL device choice). Not part of the library build. */
#ifndef PROBE_H
#define PROBE_H
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Line-buffered stdout, so a probe killed by run.sh's timeout still shows what it printed. */
__attribute__((constructor)) static void probe_linebuf(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
}

static inline double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v in place; gives median, min, max. */
static inline void stats(double *v, int n, double *med, double *mn, double *mx)
{
    if (n <= 0) { *med = *mn = *mx = 0; return; }
    qsort(v, (size_t)n, sizeof *v, cmp_dbl);
    *mn = v[0];
    *mx = v[n - 1];
    *med = (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static inline int env_int(const char *name, int dflt)
{
    const char *s = getenv(name);
    return (s && *s) ? atoi(s) : dflt;
}

#ifdef PROBE_WITH_OPENCL
#include <CL/cl.h>
/* Picks the OpenCL platform: PROBE_CL_PLATFORM (substring of its name) if set, else the first
 * whose name has "NVIDIA", else the first platform with a device. Fills up to max devices. */
static inline cl_platform_id probe_cl_platform(cl_device_id *devs, cl_uint max, cl_uint *ndev)
{
    cl_platform_id plats[16];
    cl_uint np = 0;
    *ndev = 0;
    if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS || np == 0) return NULL;
    const char *want = getenv("PROBE_CL_PLATFORM");
    int pick = -1;
    for (cl_uint i = 0; i < np && pick < 0; i++) {
        char name[256] = "";
        clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (want && *want ? strstr(name, want) != NULL : strstr(name, "NVIDIA") != NULL) pick = (int)i;
    }
    if (pick < 0) pick = 0;
    if (clGetDeviceIDs(plats[pick], CL_DEVICE_TYPE_ALL, max, devs, ndev) != CL_SUCCESS) *ndev = 0;
    if (*ndev > max) *ndev = max;
    return plats[pick];
}

static inline void probe_cl_describe(cl_platform_id p, cl_device_id d, const char *tag)
{
    char pn[256] = "", dn[256] = "";
    clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof pn, pn, NULL);
    clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof dn, dn, NULL);
    cl_uint bus = 0;
    /* CL_DEVICE_PCI_BUS_ID_NV (cl_nv_device_attribute_query); fails quietly elsewhere. */
    int have_bus = clGetDeviceInfo(d, 0x4008, sizeof bus, &bus, NULL) == CL_SUCCESS;
    if (have_bus) printf("%s OpenCL: %s / %s (pci bus %u)\n", tag, pn, dn, bus);
    else printf("%s OpenCL: %s / %s\n", tag, pn, dn);
}
#endif

#endif

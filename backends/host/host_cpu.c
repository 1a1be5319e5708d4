/* host_cpu.c: the CPU's description, read from /proc/cpuinfo (the device info of host_backend.c,
 * the kernel target of host_kernel.c). */
#include <stdio.h>
#include <string.h>

#include "host_internal.h"

void gpar__host_cpuinfo(const char *key, char *out, size_t n) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[4096]; /* the flags line is long */
  size_t klen = strlen(key);
  if (!f) return;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, key, klen)) {
      char *v = strchr(line, ':');
      if (v) {
        v += 1 + (v[1] == ' ');
        v[strcspn(v, "\n")] = 0;
        snprintf(out, n, "%s", v);
      }
      break;
    }
  fclose(f);
}

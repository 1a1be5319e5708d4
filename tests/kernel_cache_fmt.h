/* kernel_cache_fmt.h: the kernels' disk cache format's hash (core/kernel/disk.c), for the cache
 * tests that write an entry whose payload matches its checksum (seed 2) on purpose. */
#ifndef GPAR_TESTS_KERNEL_CACHE_FMT_H
#define GPAR_TESTS_KERNEL_CACHE_FMT_H

#include <stdint.h>
#include <string.h>

static inline uint64_t kc_fmt_mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* gpar__khash of n bytes at b with seed. */
static inline uint64_t kc_fmt_hash(const unsigned char *b, size_t n, uint64_t seed) {
  uint64_t h = kc_fmt_mix(seed ^ (uint64_t)n), w;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    memcpy(&w, b + i, 8);
    h = (h ^ (w * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
  }
  w = 0;
  memcpy(&w, b + i, n - i);
  return kc_fmt_mix(h ^ w);
}

#endif

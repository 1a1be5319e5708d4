/* replay_main.c: a main() for api_fuzz.c without libFuzzer, so the corpus can be replayed with
 * any C compiler (gcc on a GPU machine) and under tools such as compute-sanitizer or valgrind.
 * Usage: api_replay FILE_OR_DIR...; prints one line per input set and exits 0 when all ran; an
 * input that aborts (an oracle violation) is named on stderr. */
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char current[4096]; /* the input running, for on_abort */

static void on_abort(int sig) {
  static const char pre[] = "api_replay: the input that failed: ";
  (void)!write(2, pre, sizeof pre - 1);
  (void)!write(2, current, strlen(current));
  (void)!write(2, "\n", 1);
  signal(sig, SIG_DFL);
  raise(sig);
}

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  snprintf(current, sizeof current, "%s", path);
  static uint8_t buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  LLVMFuzzerTestOneInput(buf, n);
  return 1;
}

int main(int argc, char **argv) {
  long runs = 0;
  signal(SIGABRT, on_abort);
  gpar_engine *eng = NULL; /* name the devices the replay covers (GPAR_BACKENDS applies) */
  if (gpar_init(&eng, NULL) == GPAR_OK) {
    int n = gpar_device_count(eng);
    for (int d = 0; d < n; d++) {
      gpar_device_props p;
      if (gpar_device_info(eng, d, &p) == GPAR_OK) printf("api_replay: device %d: %s %s\n", d, p.backend, p.name);
    }
    gpar_shutdown(eng);
  }
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "api_replay: cannot stat %s\n", argv[i]);
      return 2;
    }
    if (!S_ISDIR(st.st_mode)) {
      runs += run_file(argv[i]);
      continue;
    }
    DIR *d = opendir(argv[i]);
    struct dirent *e;
    while (d && (e = readdir(d))) {
      char p[4096];
      if (e->d_name[0] == '.') continue;
      snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
      runs += run_file(p);
    }
    if (d) closedir(d);
  }
  printf("api_replay: %ld inputs ran, no oracle violation\n", runs);
  return 0;
}

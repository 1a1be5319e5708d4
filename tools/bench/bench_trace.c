/* bench_trace.c: reads the Chrome trace-event JSON the core writes (one event per line) and draws
 * a self-contained SVG timeline: one row per device and lane, one rectangle per op. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

#define LABEL_CHARS 56 /* longest row label, about 370 px at 12 px sans-serif */

typedef struct tr_event {
  int pid, tid, color;
  int row, sub; /* row of (pid, tid); sub-row when ops of one lane overlap in time */
  double ts, dur; /* microseconds */
  char name[48];
} tr_event;

typedef struct tr_row {
  int pid, tid;
  int nsub, y, h; /* sub-rows (stacked overlapping ops), top and height in px */
  char label[160];
} tr_row;

typedef struct tr_name { /* process or thread name from "ph":"M" lines */
  int pid, tid, is_thread;
  char name[128];
} tr_name;

/* Find `"key":` at nesting depth 1 of the object starting at p (a '{'); returns the first
 * character of the value, or NULL. Strings and nested objects/arrays are skipped properly. */
static const char *find_key(const char *p, const char *end, const char *key) {
  size_t klen = strlen(key);
  int depth = 0;
  for (; p < end; p++) {
    char c = *p;
    if (c == '"') {
      const char *s = p + 1, *q = s;
      while (q < end && *q != '"') q += (*q == '\\') ? 2 : 1;
      if (q >= end) return NULL;
      if (depth == 1 && (size_t)(q - s) == klen && !memcmp(s, key, klen)) {
        const char *v = q + 1;
        while (v < end && (*v == ' ' || *v == '\t')) v++;
        if (v < end && *v == ':') {
          v++;
          while (v < end && (*v == ' ' || *v == '\t')) v++;
          return v;
        }
      }
      p = q;
    } else if (c == '{' || c == '[') {
      depth++;
    } else if (c == '}' || c == ']') {
      if (--depth <= 0) return NULL;
    }
  }
  return NULL;
}

/* The next '{' after the object starting at obj when obj holds an event ("ph"), else the next
 * '{' after obj itself (so an enclosing {"traceEvents":[ is entered). */
static const char *next_object(const char *obj, const char *end) {
  if (find_key(obj, end, "ph")) {
    int depth = 0;
    const char *p = obj;
    for (; p < end; p++) {
      if (*p == '"') {
        for (p++; p < end && *p != '"'; p += (*p == '\\') ? 2 : 1) {
        }
      } else if (*p == '{' || *p == '[') {
        depth++;
      } else if ((*p == '}' || *p == ']') && --depth == 0) {
        break;
      }
    }
    if (p >= end) return NULL;
    return memchr(p, '{', (size_t)(end - p));
  }
  return memchr(obj + 1, '{', (size_t)(end - obj - 1));
}

/* Copy the JSON string value at v into out (escapes simplified). 0 on success. */
static int get_string(const char *v, const char *end, char *out, size_t len) {
  if (!v || v >= end || *v != '"') return -1;
  size_t o = 0;
  for (v++; v < end && *v != '"'; v++) {
    char c = *v;
    if (c == '\\' && v + 1 < end) {
      v++;
      switch (*v) {
      case 'n': c = ' '; break;
      case 't': c = ' '; break;
      case 'u': c = '?'; v += (end - v > 4) ? 4 : 0; break;
      default: c = *v;
      }
    }
    if (o + 1 < len) out[o++] = c;
  }
  out[o] = 0;
  return 0;
}

static int get_number(const char *v, double *out) {
  if (!v) return -1;
  char *e;
  double d = strtod(v, &e);
  if (e == v) return -1;
  *out = d;
  return 0;
}

static void xml_text(FILE *f, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '&': fputs("&amp;", f); break;
    case '"': fputs("&quot;", f); break;
    default: fputc(*s, f);
    }
  }
}

static const char *const palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
#define NPALETTE (int)(sizeof palette / sizeof palette[0])

static int cmp_event(const void *a, const void *b) {
  const tr_event *x = a, *y = b;
  if (x->row != y->row) return (x->row > y->row) - (x->row < y->row);
  return (x->ts > y->ts) - (x->ts < y->ts);
}

static int cmp_row(const void *a, const void *b) {
  const tr_row *x = a, *y = b;
  if (x->pid != y->pid) return (x->pid > y->pid) - (x->pid < y->pid);
  return (x->tid > y->tid) - (x->tid < y->tid);
}

/* A "nice" tick step (1, 2 or 5 x 10^k) giving about `want` ticks over range. */
static double nice_step(double range, int want) {
  double raw = range / want, p = pow(10.0, floor(log10(raw))), m = raw / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

int bench_trace_to_svg(const char *trace_path, const char *svg_path, const char *title, double from_us, double to_us) {
  FILE *in = fopen(trace_path, "r");
  if (!in) {
    fprintf(stderr, "gpar-bench: trace %s: %s (was tracing written?)\n", trace_path, strerror(errno));
    return -1;
  }
  size_t ecap = 1024, ecount = 0, ncap = 16, ncount = 0, skipped = 0;
  tr_event *ev = malloc(ecap * sizeof *ev);
  tr_name *names = malloc(ncap * sizeof *names);
  char *line = NULL;
  size_t lcap = 0;
  ssize_t llen;
  char cnames[32][48];
  int ncolors = 0, rc = -1;
  const size_t max_events = 500000;
  if (!ev || !names) goto out;

  while ((llen = getline(&line, &lcap, in)) > 0) {
    const char *end = line + llen;
    /* Normally one event per line; a line may also start with {"traceEvents":[ or hold several
     * events: take every object that has a "ph" member. */
    for (const char *obj = strchr(line, '{'); obj; obj = next_object(obj, end)) {
    if (!find_key(obj, end, "ph")) continue;
    char ph[8], name[128];
    if (get_string(find_key(obj, end, "ph"), end, ph, sizeof ph) != 0) continue;
    if (get_string(find_key(obj, end, "name"), end, name, sizeof name) != 0) name[0] = 0;
    double pid = 0, tid = 0;
    get_number(find_key(obj, end, "pid"), &pid);
    get_number(find_key(obj, end, "tid"), &tid);
    if (!strcmp(ph, "M")) {
      int is_thread = !strcmp(name, "thread_name");
      if (!is_thread && strcmp(name, "process_name")) continue;
      const char *args = find_key(obj, end, "args");
      char val[128];
      if (!args || *args != '{' || get_string(find_key(args, end, "name"), end, val, sizeof val))
        continue;
      if (ncount == ncap) {
        tr_name *nn = realloc(names, 2 * ncap * sizeof *names);
        if (!nn) goto out;
        names = nn;
        ncap *= 2;
      }
      tr_name *t = &names[ncount++];
      t->pid = (int)pid;
      t->tid = (int)tid;
      t->is_thread = is_thread;
      snprintf(t->name, sizeof t->name, "%s", val);
    } else if (!strcmp(ph, "X")) {
      double ts, dur;
      if (get_number(find_key(obj, end, "ts"), &ts) || get_number(find_key(obj, end, "dur"), &dur))
        continue;
      if (from_us < to_us && (ts + dur < from_us || ts > to_us)) continue; /* outside the window */
      if (ecount >= max_events) {
        skipped++;
        continue;
      }
      if (ecount == ecap) {
        tr_event *ne = realloc(ev, 2 * ecap * sizeof *ev);
        if (!ne) goto out;
        ev = ne;
        ecap *= 2;
      }
      tr_event *e = &ev[ecount++];
      e->pid = (int)pid;
      e->tid = (int)tid;
      e->ts = ts;
      e->dur = dur < 0 ? 0 : dur;
      snprintf(e->name, sizeof e->name, "%.47s", name);
      e->color = -1;
      for (int c = 0; c < ncolors; c++)
        if (!strcmp(cnames[c], e->name)) e->color = c;
      if (e->color < 0) {
        e->color = ncolors < 32 ? ncolors : 31;
        if (ncolors < 32) snprintf(cnames[ncolors++], sizeof cnames[0], "%s", e->name);
      }
    }
    }
  }

  /* Rows: distinct (pid, tid) of the events, sorted. */
  tr_row *rows = malloc((ecount + 1) * sizeof *rows);
  size_t nrows = 0;
  if (!rows) goto out;
  double t0 = INFINITY, t1 = -INFINITY;
  for (size_t i = 0; i < ecount; i++) {
    size_t r = 0;
    while (r < nrows && (rows[r].pid != ev[i].pid || rows[r].tid != ev[i].tid)) r++;
    if (r == nrows) {
      rows[nrows].pid = ev[i].pid;
      rows[nrows].tid = ev[i].tid;
      nrows++;
    }
    if (ev[i].ts < t0) t0 = ev[i].ts;
    if (ev[i].ts + ev[i].dur > t1) t1 = ev[i].ts + ev[i].dur;
  }
  qsort(rows, nrows, sizeof *rows, cmp_row);
  int label_chars = 10, stacked = 0;
  /* Each event's row; then, per row in time order, the first sub-row free at its start. A lane
   * runs its ops in order, so overlap inside one lane means concurrent host workers or start
   * times taken at enqueue; either way stacking shows every op instead of hiding some. */
  for (size_t i = 0; i < ecount; i++) {
    size_t r = 0;
    while (rows[r].pid != ev[i].pid || rows[r].tid != ev[i].tid) r++;
    ev[i].row = (int)r;
  }
  qsort(ev, ecount, sizeof *ev, cmp_event);
  enum { MAXSUB = 8 };
  for (size_t r = 0, i = 0; r < nrows; r++) {
    double ends[MAXSUB];
    int nsub = 1;
    for (int k = 0; k < MAXSUB; k++) ends[k] = -INFINITY;
    for (; i < ecount && ev[i].row == (int)r; i++) {
      int k = 0, best = 0;
      while (k < nsub && ends[k] > ev[i].ts + 0.5) k++;
      if (k == nsub && nsub < MAXSUB) nsub++;
      if (k >= MAXSUB) { /* all taken: the one free soonest */
        for (int q = 1; q < MAXSUB; q++)
          if (ends[q] < ends[best]) best = q;
        k = best;
      }
      ev[i].sub = k;
      if (ev[i].ts + ev[i].dur > ends[k]) ends[k] = ev[i].ts + ev[i].dur;
    }
    rows[r].nsub = nsub;
    if (nsub > 1) stacked = 1;
  }
  for (size_t r = 0; r < nrows; r++) {
    const char *pn = NULL, *tn = NULL;
    for (size_t k = 0; k < ncount; k++) {
      if (names[k].pid != rows[r].pid) continue;
      if (!names[k].is_thread) pn = names[k].name;
      else if (names[k].tid == rows[r].tid) tn = names[k].name;
    }
    char pb[24], tb[24], pshort[LABEL_CHARS + 1];
    snprintf(pb, sizeof pb, "device %d", rows[r].pid);
    snprintf(tb, sizeof tb, "lane %d", rows[r].tid);
    if (!pn) pn = pb;
    if (!tn) tn = tb;
    /* Keep the lane name whole; shorten the device name to fit the label column. */
    int room = LABEL_CHARS - 3 - (int)strlen(tn);
    if (room < 8) room = 8; /* <= LABEL_CHARS: fits pshort */
    size_t pl = strlen(pn);
    if ((int)pl > room) {
      memcpy(pshort, pn, (size_t)room - 3);
      memcpy(pshort + room - 3, "...", 4);
    } else {
      memcpy(pshort, pn, pl + 1);
    }
    snprintf(rows[r].label, sizeof rows[r].label, "%.*s / %.*s", LABEL_CHARS, pshort, 40, tn);
    if ((int)strlen(rows[r].label) > label_chars) label_chars = (int)strlen(rows[r].label);
  }
  if (ecount == 0) {
    t0 = 0;
    t1 = 1;
  }
  if (t1 <= t0) t1 = t0 + 1;

  FILE *f = fopen(svg_path, "w");
  if (!f) {
    fprintf(stderr, "gpar-bench: %s: %s\n", svg_path, strerror(errno));
    free(rows);
    goto out;
  }
  const int W = 1400, L = 16 + (int)(label_chars * 6.6), RM = 20, TOP = 56, RH = 24, GAP = 6;
  const double PW = W - L - RM, scale = PW / (t1 - t0); /* px per us */
  int plot_h = 0;
  for (size_t r = 0; r < nrows; r++) {
    rows[r].y = TOP + plot_h;
    rows[r].h = rows[r].nsub > 1 ? 4 + 10 * rows[r].nsub : RH;
    plot_h += rows[r].h + GAP;
  }
  int axis_y = TOP + plot_h + 4;
  int legend_y = axis_y + 40, H = legend_y + 20 * ((ncolors + 5) / 6) + 16;
  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
             "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n",
          W, H, W, H);
  fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"10\" y=\"22\" "
             "font-size=\"15\" font-weight=\"bold\">");
  xml_text(f, title ? title : "libgpar timeline");
  fprintf(f, "</text>\n<text x=\"10\" y=\"42\" fill=\"#555\">%zu ops, %.3f ms from first start to "
             "last end; one row per device and lane%s%s</text>\n",
          ecount, (t1 - t0) / 1000.0,
          stacked ? "; ops that overlap in time within one lane are stacked" : "",
          skipped ? " (events beyond the first 500000 left out)" : "");

  /* Grid and time axis (ms). */
  double step = nice_step((t1 - t0) / 1000.0, 10);
  for (double ms = 0; ms <= (t1 - t0) / 1000.0 + 1e-9; ms += step) {
    double x = L + ms * 1000.0 * scale;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e4e4e4\"/>\n", x, TOP - 4,
            x, axis_y);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#333\">%g</text>\n", x,
            axis_y + 16, ms);
  }
  fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#333\">time (ms)</text>\n",
          L + (int)PW / 2, axis_y + 32);

  /* Rows. */
  for (size_t r = 0; r < nrows; r++) {
    int y = rows[r].y;
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%d\" fill=\"%s\"/>\n", L, y, PW, rows[r].h,
            (r & 1) ? "#fafafa" : "#f2f2f2");
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", L - 8, y + rows[r].h / 2 + 4);
    xml_text(f, rows[r].label);
    fprintf(f, "</text>\n");
  }
  int titles = ecount <= 20000; /* hover text only where the file stays small */
  for (size_t i = 0; i < ecount; i++) {
    const tr_row *row = &rows[ev[i].row];
    int subh = (row->h - 4) / row->nsub;
    double x = L + (ev[i].ts - t0) * scale, w = ev[i].dur * scale;
    if (w < 0.5) w = 0.5;
    fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
               "stroke=\"white\" stroke-width=\"0.3\"",
            x, row->y + 2 + ev[i].sub * subh, w, subh - (row->nsub > 1 ? 1 : 0),
            palette[ev[i].color % NPALETTE]);
    if (titles) {
      fprintf(f, "><title>");
      xml_text(f, ev[i].name);
      fprintf(f, ": %.3f ms, start %.3f ms</title></rect>\n", ev[i].dur / 1000.0,
              (ev[i].ts - t0) / 1000.0);
    } else {
      fprintf(f, "/>\n");
    }
  }

  /* Legend. */
  for (int c = 0; c < ncolors; c++) {
    int x = 10 + (c % 6) * 220, y = legend_y + (c / 6) * 20;
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\"/>\n", x, y - 11,
            palette[c % NPALETTE]);
    fprintf(f, "<text x=\"%d\" y=\"%d\">", x + 20, y);
    xml_text(f, cnames[c]);
    fprintf(f, "</text>\n");
  }
  fprintf(f, "</svg>\n");
  int bad = ferror(f);
  if (fclose(f) != 0 || bad) {
    fprintf(stderr, "gpar-bench: writing %s failed\n", svg_path);
  } else {
    rc = 0;
    if (ecount == 0) fprintf(stderr, "gpar-bench: trace %s holds no complete (\"X\") events\n", trace_path);
  }
  free(rows);

out:
  if (rc != 0 && (!ev || !names)) fprintf(stderr, "gpar-bench: out of memory reading the trace\n");
  fclose(in);
  free(line);
  free(ev);
  free(names);
  return rc;
}

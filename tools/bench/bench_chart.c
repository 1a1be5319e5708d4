/* bench_chart.c: the sweep chart, a hand-written SVG: three panels against op size (log axis:
 * multi-device time ratio with the crossover marked, per-op time, copy-overlap ratio to ideal)
 * and a legend panel; one colour per run, solid = libgpar, dashed = the raw vendor loop. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench_common.h"

#define W 1200

static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                     "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
#define NCOLORS (int)(sizeof colors / sizeof colors[0])

typedef struct panel {
  double x0, y0, w, h;    /* plot area, px */
  double xmin, xmax;      /* log2 of op size */
  double ymin, ymax;      /* data units (log10 when logy) */
  int logy;
} panel;

enum { M_OP, M_MD, M_CO }; /* which metric a panel shows */

int bench_crossover(const bench_series *s, int raw) {
  int x = 0;
  for (int i = s->npt - 1; i >= 0; i--) {
    double r = raw ? s->pt[i].md_raw_ratio : s->pt[i].md_ratio;
    if (isnan(r) || r > s->ndev / BENCH_PAYS) break;
    x = s->pt[i].n;
  }
  return s->ndev > 1 ? x : 0;
}

static double metric(const bench_point *p, int m, int raw) {
  switch (m) {
  case M_OP: return raw ? p->op_raw_us : p->op_us;
  case M_MD: return raw ? p->md_raw_ratio : p->md_ratio;
  default: return raw ? p->co_raw_ratio : p->co_ratio;
  }
}

static void xml_text(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '&')
      fputs("&amp;", f);
    else if (*s == '<')
      fputs("&lt;", f);
    else if (*s == '>')
      fputs("&gt;", f);
    else
      fputc(*s, f);
  }
}

static void text(FILE *f, double x, double y, const char *anchor, const char *style, const char *s) {
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" %s>", x, y, anchor, style ? style : "");
  xml_text(f, s);
  fputs("</text>\n", f);
}

static double px(const panel *p, double n) { return p->x0 + (log2(n) - p->xmin) / (p->xmax - p->xmin) * p->w; }

static double py(const panel *p, double v) {
  double y = p->logy ? log10(v) : v;
  return p->y0 + p->h - (y - p->ymin) / (p->ymax - p->ymin) * p->h;
}

/* A 1-2-5 step giving about `want` intervals over span. */
static double nice_step(double span, int want) {
  double raw = span / want, mag = pow(10, floor(log10(raw))), r = raw / mag;
  return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
}

/* Microseconds as "20 us", "5 ms", "1 s". */
static void fmt_us(char *buf, size_t len, double us) {
  if (us >= 1e6)
    snprintf(buf, len, "%g s", us * 1e-6);
  else if (us >= 1e3)
    snprintf(buf, len, "%g ms", us * 1e-3);
  else
    snprintf(buf, len, "%g \xc2\xb5s", us);
}

static void axes(FILE *f, const panel *p, const char *title, const char *ylabel) {
  fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fff\" stroke=\"#444\"/>\n",
          p->x0, p->y0, p->w, p->h);
  char buf[64];
  /* x: every power of two */
  for (int e = (int)ceil(p->xmin); e <= (int)floor(p->xmax); e++) {
    double x = px(p, pow(2, e));
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n", x, p->y0, x,
            p->y0 + p->h);
    snprintf(buf, sizeof buf, "%d", 1 << e);
    text(f, x, p->y0 + p->h + 16, "middle", "class=\"tick\"", buf);
  }
  text(f, p->x0 + p->w / 2, p->y0 + p->h + 34, "middle", "class=\"axis\"",
       "op size n: one n\xc3\x97n\xc3\x97n SGEMM (log scale)");
  /* y */
  if (p->logy) {
    for (int e = (int)floor(p->ymin); e <= (int)ceil(p->ymax); e++)
      for (int k = 1; k <= 5; k += (k == 1 ? 1 : 3)) { /* 1, 2, 5 x 10^e */
        double v = k * pow(10, e), ly = log10(v);
        if (ly < p->ymin - 1e-9 || ly > p->ymax + 1e-9) continue;
        double y = py(p, v);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n", p->x0, y,
                p->x0 + p->w, y, k == 1 ? "#d0d0d0" : "#ececec");
        if (k != 1 && p->ymax - p->ymin > 3) continue; /* wide ranges: label decades only */
        fmt_us(buf, sizeof buf, v);
        text(f, p->x0 - 6, y + 4, "end", "class=\"tick\"", buf);
      }
  } else {
    double step = nice_step(p->ymax - p->ymin, 6);
    for (double v = ceil(p->ymin / step) * step; v <= p->ymax + 1e-9; v += step) {
      double y = py(p, v);
      fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n", p->x0, y,
              p->x0 + p->w, y);
      snprintf(buf, sizeof buf, "%g", fabs(v) < 1e-12 ? 0.0 : v);
      text(f, p->x0 - 6, y + 4, "end", "class=\"tick\"", buf);
    }
  }
  text(f, p->x0, p->y0 - 26, "start", "class=\"ptitle\"", title);
  fprintf(f, "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" text-anchor=\"middle\" class=\"axis\">",
          p->x0 - 46, p->y0 + p->h / 2);
  xml_text(f, ylabel);
  fputs("</text>\n", f);
}

/* A horizontal reference line; its label (drawn later, over the data) at the right end. */
static void hline(FILE *f, const panel *p, double v, const char *color) {
  double y = py(p, v);
  if (y < p->y0 || y > p->y0 + p->h) return;
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.5\" "
             "stroke-dasharray=\"2,3\"/>\n",
          p->x0, y, p->x0 + p->w, y, color);
}

/* Its tag in the margin right of the plot, where no data goes. */
static void hline_label(FILE *f, const panel *p, double v, const char *color, const char *label) {
  double y = py(p, v);
  if (y < p->y0 || y > p->y0 + p->h) return;
  char style[80];
  snprintf(style, sizeof style, "class=\"ref\" fill=\"%s\" font-weight=\"bold\"", color);
  text(f, p->x0 + p->w + 5, y + 4, "start", style, label);
}

/* A line under the panel title saying what the reference lines mean. */
static void subtitle(FILE *f, const panel *p, const char *s) { text(f, p->x0, p->y0 - 8, "start", "class=\"note\"", s); }

static void series_line(FILE *f, const panel *p, const bench_series *s, int m, int raw, const char *color) {
  int open = 0;
  for (int i = 0; i < s->npt; i++) {
    double v = metric(&s->pt[i], m, raw);
    if (isnan(v) || (p->logy && v <= 0)) {
      if (open) fputs("\"/>\n", f);
      open = 0;
      continue;
    }
    if (!open)
      fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", color,
              raw ? " stroke-dasharray=\"7,4\"" : "");
    fprintf(f, "%.1f,%.1f ", px(p, s->pt[i].n), py(p, v));
    open = 1;
  }
  if (open) fputs("\"/>\n", f);
  for (int i = 0; i < s->npt; i++) {
    double v = metric(&s->pt[i], m, raw);
    if (isnan(v) || (p->logy && v <= 0)) continue;
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\" stroke=\"%s\" stroke-width=\"1.5\"/>\n",
            px(p, s->pt[i].n), py(p, v), raw ? "#fff" : color, color);
  }
}

/* y range of a metric over every series (and the reference values given). */
static void yrange(const bench_series *s, int ns, int m, double lo, double hi, double *ymin, double *ymax) {
  *ymin = lo;
  *ymax = hi;
  for (int k = 0; k < ns; k++)
    for (int i = 0; i < s[k].npt; i++)
      for (int raw = 0; raw < 2; raw++) {
        double v = metric(&s[k].pt[i], m, raw);
        if (isnan(v) || isinf(v)) continue;
        if (v < *ymin) *ymin = v;
        if (v > *ymax) *ymax = v;
      }
}

int bench_chart_svg(const char *path, const char *title, const bench_series *s, int ns) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "gpar-bench: %s: %s\n", path, strerror(errno));
    return -1;
  }
  int nmin = 1 << 30, nmax = 1, maxdev = 1, mindev = 1 << 30;
  for (int k = 0; k < ns; k++) {
    for (int i = 0; i < s[k].npt; i++) {
      if (s[k].pt[i].n < nmin) nmin = s[k].pt[i].n;
      if (s[k].pt[i].n > nmax) nmax = s[k].pt[i].n;
    }
    if (s[k].ndev > maxdev) maxdev = s[k].ndev;
    if (s[k].ndev < mindev) mindev = s[k].ndev;
  }
  if (nmin > nmax) nmin = nmax;
  double xmin = log2(nmin) - 0.3, xmax = log2(nmax) + 0.3;

  int H = 900 + (ns > 4 ? (ns - 4) * 44 : 0); /* room for the legend */
  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
             "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
             "<style>.title{font-size:19px;font-weight:bold}.sub{font-size:13px;fill:#444}"
             ".ptitle{font-size:15px;font-weight:bold}.axis{font-size:12px;fill:#333}"
             ".tick{font-size:11px;fill:#555}.ref{font-size:11px}.leg{font-size:13px}"
             ".note{font-size:12px;fill:#333}</style>\n"
             "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
          W, H, W, H);
  text(f, 24, 30, "start", "class=\"title\"", title);
  text(f, 24, 52, "start", "class=\"sub\"",
       "Solid lines: through libgpar. Dashed lines, open circles: the same loop written directly "
       "against the vendor API (raw). Lower is better in every panel.");

  /* Panel 1: multi-device time ratio (runs with one device have none). */
  panel p1 = {90, 120, 470, 290, xmin, xmax, 0, 0, 0};
  double lo, hi;
  bench_series multi[64];
  int nm = 0, mk[64];
  mindev = 1 << 30;
  for (int k = 0; k < ns && nm < 64; k++)
    if (s[k].ndev > 1) {
      mk[nm] = k;
      multi[nm++] = s[k];
      if (s[k].ndev < mindev) mindev = s[k].ndev;
    }
  yrange(multi, nm, M_MD, 0, (nm ? maxdev : 2) + 0.5, &lo, &hi);
  p1.ymin = 0;
  p1.ymax = hi * (nm <= 2 ? 1.05 : 1.15); /* room for the crossover markers */
  char buf[200];
  snprintf(buf, sizeof buf, "time, %s at once / one alone", maxdev == 2 ? "both devices" : "all devices");
  axes(f, &p1, "1. Multi-device: same work per device, all at once vs one", buf);
  if (nm == 0) {
    text(f, p1.x0 + p1.w / 2, p1.y0 + p1.h / 2, "middle", "class=\"leg\"", "no run with more than one device");
  } else {
    /* The region where N devices pay: below N. */
    double ybe = py(&p1, mindev);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#2ca02c\" fill-opacity=\"0.07\"/>\n",
            p1.x0, ybe, p1.w, p1.y0 + p1.h - ybe);
    hline(f, &p1, 1, "#2ca02c");
    for (int nd = 2; nd <= maxdev; nd++) hline(f, &p1, nd, "#b22222");
  }
  for (int m = 0; m < nm; m++)
    for (int raw = 1; raw >= 0; raw--) series_line(f, &p1, &multi[m], M_MD, raw, colors[mk[m] % NCOLORS]);
  /* Crossovers: with one or two runs, a vertical line where the curve goes below break-even for
   * good, labelled along it; with more, a triangle on the top edge (filled: libgpar, open: raw;
   * the legend names the sizes), since labels would pile up. */
  int lines = nm <= 2;
  double used_x[64];
  int nused = 0;
  for (int m = 0; m < nm; m++)
    for (int raw = 0; raw < 2; raw++) {
      int x = bench_crossover(&multi[m], raw);
      if (x <= 0) continue;
      double xx = px(&p1, x);
      const char *c = colors[mk[m] % NCOLORS];
      int twice = 0; /* markers already at this x */
      for (int u = 0; u < nused; u++) twice += fabs(used_x[u] - xx) < 1;
      if (nused < 64) used_x[nused++] = xx;
      if (!lines) { /* inside the top edge, stacked downwards */
        fprintf(f, "<path d=\"M%.1f,%.1f l-6,-10 h12 z\" fill=\"%s\" stroke=\"%s\" stroke-width=\"1.5\"/>\n",
                xx, p1.y0 + 13 + 12 * twice, raw ? "#fff" : c, c);
        continue;
      }
      fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.5\" "
                 "stroke-dasharray=\"%s\"/>\n",
              xx, p1.y0, xx, p1.y0 + p1.h, c, raw ? "1,3" : "5,3");
      /* Its label along it, reading upwards from the bottom; the second label at one x goes on
       * the other side. */
      int right = (xx < p1.x0 + p1.w - 16) != (twice > 0);
      snprintf(buf, sizeof buf, "%s pays from n=%d", raw ? "raw" : "libgpar", x);
      fprintf(f, "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" class=\"ref\" font-weight=\"bold\" "
                 "fill=\"%s\" stroke=\"#fff\" stroke-width=\"3\" paint-order=\"stroke\">",
              xx + (right ? 12 : -4), p1.y0 + p1.h - 6, c);
      xml_text(f, buf);
      fputs("</text>\n", f);
    }
  if (nm) {
    hline_label(f, &p1, 1, "#2ca02c", "ideal");
    for (int nd = 2; nd <= maxdev; nd++) {
      int used = 0;
      for (int m = 0; m < nm; m++) used |= multi[m].ndev == nd;
      if (!used) continue;
      snprintf(buf, sizeof buf, "no gain (%d)", nd);
      hline_label(f, &p1, nd, "#b22222", buf);
    }
    subtitle(f, &p1, "green: ideal = 1, N\xc3\x97 the work in the time of one; red: N = no gain, above it slower");
  }

  /* Panel 2: per-op time, log. */
  panel p2 = {715, 120, 445, 290, xmin, xmax, 0, 0, 1};
  yrange(s, ns, M_OP, 1e300, -1e300, &lo, &hi);
  if (lo > hi || lo <= 0) lo = hi = 1;
  p2.ymin = floor(log10(lo));
  p2.ymax = ceil(log10(hi));
  if (p2.ymax - p2.ymin < 1) p2.ymax = p2.ymin + 1;
  axes(f, &p2, "2. Time per GEMM, one device alone", "time per SGEMM (log scale)");
  subtitle(f, &p2, "the raw loop (dashed) is the floor; the gap to it is libgpar's cost per op");
  for (int k = 0; k < ns; k++)
    for (int raw = 1; raw >= 0; raw--) series_line(f, &p2, &s[k], M_OP, raw, colors[k % NCOLORS]);

  /* Panel 3: copy-overlap ratio to ideal. */
  panel p3 = {90, 530, 470, 290, xmin, xmax, 0, 0, 0};
  yrange(s, ns, M_CO, 1, 2, &lo, &hi);
  p3.ymin = lo < 0.55 ? floor((lo - 0.05) * 10) / 10 : 0.5;
  if (p3.ymin < 0) p3.ymin = 0;
  p3.ymax = hi * 1.05;
  axes(f, &p3, "3. Copy-overlap: GEMMs with each result copied to host", "time / ideal (max(run, copy) + one copy)");
  hline(f, &p3, 1, "#2ca02c");
  for (int k = 0; k < ns; k++)
    for (int raw = 1; raw >= 0; raw--) series_line(f, &p3, &s[k], M_CO, raw, colors[k % NCOLORS]);
  hline_label(f, &p3, 1, "#2ca02c", "ideal");
  subtitle(f, &p3, "green: ideal = 1, every copy hidden behind the GEMMs; above it, copies add time");

  /* Panel 4: legend and how to read. */
  double lx = 715, ly = 530;
  text(f, lx, ly - 24, "start", "class=\"ptitle\"", "Runs");
  for (int k = 0; k < ns; k++, ly += 44) {
    const char *c = colors[k % NCOLORS];
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2.5\"/>\n",
            lx, ly - 4, lx + 30, ly - 4, c);
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n", lx + 15, ly - 4, c);
    text(f, lx + 40, ly, "start", "class=\"leg\"", s[k].label);
    int x = bench_crossover(&s[k], 0), xr = bench_crossover(&s[k], 1);
    char a[32] = "not in this range", b[32] = "not in this range";
    if (x > 0) snprintf(a, sizeof a, "from n=%d", x);
    if (xr > 0) snprintf(b, sizeof b, "from n=%d", xr);
    if (s[k].ndev > 1)
      snprintf(buf, sizeof buf, "%d devices pay: libgpar %s; raw %s", s[k].ndev, a, b);
    else
      snprintf(buf, sizeof buf, "one device: panel 1 shows no multi-device run");
    text(f, lx + 40, ly + 17, "start", "class=\"note\"", buf);
  }
  ly += 6;
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" stroke-width=\"2\"/>\n",
          lx, ly - 4, lx + 30, ly - 4);
  text(f, lx + 40, ly, "start", "class=\"leg\"", "libgpar");
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" stroke-width=\"2\" "
             "stroke-dasharray=\"7,4\"/>\n<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"#fff\" stroke=\"#333\" "
             "stroke-width=\"1.5\"/>\n",
          lx + 105, ly - 4, lx + 135, ly - 4, lx + 120, ly - 4);
  text(f, lx + 145, ly, "start", "class=\"leg\"", "raw vendor loop (cuBLAS, CLBlast, OpenBLAS)");
  static const char *const notes[] = {
      "1: below the red line, N devices finish N\xc3\x97 the work sooner than one device",
      "   does 1\xc3\x97; vertical lines (or \xe2\x96\xbc on top: filled libgpar, open raw) mark",
      "   where they pay (\xe2\x89\xa5 5% sooner) from that size on.",
      "2: the raw loop's time is the floor; the gap is libgpar's cost per op.",
      "3: 1 = the copies run entirely while the GEMMs compute.",
      "Medians of repeated runs; each point is one size."};
  ly += 28;
  for (size_t i = 0; i < sizeof notes / sizeof notes[0]; i++, ly += 17)
    text(f, lx, ly, "start", "class=\"note\"", notes[i]);
  fputs("</svg>\n", f);
  int bad = ferror(f);
  if (fclose(f) != 0 || bad) {
    fprintf(stderr, "gpar-bench: writing %s failed\n", path);
    return -1;
  }
  return 0;
}

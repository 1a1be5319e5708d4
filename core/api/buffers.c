/* buffers.c: the public buffer calls (create, import, release, host pointer, native handle, size and
 * device) and the range check every op call shares. */
#include "api/api.h"

int gpar__check_range(const gpar__buf *b, size_t off, size_t bytes, const char *what) {
  if (bytes == 0) return gpar__errorf(GPAR_EINVAL, "%s: size is 0", what);
  if (off > b->bytes || bytes > b->bytes - off)
    return gpar__errorf(GPAR_ERANGE, "%s: range [%zu, +%zu) exceeds the buffer's %zu bytes", what, off, bytes,
                        b->bytes);
  return GPAR_OK;
}

GPAR_API int gpar_buffer_create(gpar_engine *e, int dev, size_t bytes, gpar_buffer *buf) {
  int st;
  if (buf) *buf = (gpar_buffer){0, 0};
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  if (!buf)
    st = gpar__errorf(GPAR_EINVAL, "gpar_buffer_create: buf is NULL");
  else
    st = gpar__buf_create(eng, dev, bytes, buf);
  gpar__engine_leave(eng);
  return st;
}

GPAR_API int gpar_buffer_import(gpar_engine *e, int dev, void *ptr, size_t bytes, void (*release)(void *arg),
                                void *arg, gpar_buffer *buf) {
  int st;
  if (buf) *buf = (gpar_buffer){0, 0};
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  if (!buf)
    st = gpar__errorf(GPAR_EINVAL, "gpar_buffer_import: buf is NULL");
  else
    st = gpar__buf_import(eng, dev, ptr, bytes, release, arg, buf);
  gpar__engine_leave(eng);
  return st;
}

GPAR_API int gpar_buffer_release(gpar_buffer handle) {
  int st;
  gpar_engine *eng = gpar__engine_enter_buf(handle, &st);
  if (!eng) return st;
  st = gpar__buf_release(eng, handle);
  gpar__engine_leave(eng);
  return st;
}

/* What the small queries read of a buffer. */
static int buf_peek(gpar_buffer handle, int *host, void **mem, size_t *bytes, int *dev) {
  int st;
  gpar_engine *eng = gpar__engine_enter_buf(handle, &st);
  if (!eng) return st;
  gpar__buf *b;
  if ((st = gpar__buf_get(eng, handle, &b)) == GPAR_OK) {
    *host = b->host_memory;
    *mem = b->mem;
    *bytes = b->bytes;
    *dev = b->dev ? b->dev->index : GPAR_HOST;
    gpar__buf_put(b);
  }
  gpar__engine_leave(eng);
  return st;
}

GPAR_API void *gpar_buffer_host_ptr(gpar_buffer handle) {
  int host, dev;
  void *mem;
  size_t bytes;
  if (buf_peek(handle, &host, &mem, &bytes, &dev)) return NULL;
  if (!host) gpar__errorf(GPAR_EINVAL, "gpar_buffer_host_ptr: buffer is not in host memory");
  return host ? mem : NULL;
}

GPAR_API void *gpar_buffer_native(gpar_buffer handle) {
  int host, dev;
  void *mem;
  size_t bytes;
  return buf_peek(handle, &host, &mem, &bytes, &dev) ? NULL : mem;
}

GPAR_API int gpar_buffer_query(gpar_buffer handle, size_t *bytes, int *dev) {
  int host, d;
  void *mem;
  size_t n;
  int st = buf_peek(handle, &host, &mem, &n, &d);
  if (st) return st;
  if (bytes) *bytes = n;
  if (dev) *dev = d;
  return GPAR_OK;
}

/* fill.c: gpar_fill and its kind: set a byte range of a buffer to one byte value on the
 * buffer's device (cudaMemsetAsync, clEnqueueFillBuffer, memset). */
#include "api/api.h"

typedef struct fill_args {
  void *mem;
  size_t off, bytes;
  unsigned char value;
} fill_args;
_Static_assert(sizeof(fill_args) <= GPAR__OP_PAYLOAD, "fill arguments fit an op's payload");

static int fill_run(gpar__device *dev, gpar__op *op) {
  const fill_args *f = gpar__op_args(op);
  int st = gpar__fault(dev->eng, GPAR__FAULT_FILL);
  if (st) return st;
  return dev->ops->fill(dev->bdev, op->lane, f->mem, f->off, f->bytes, f->value);
}

static const gpar__op_kind kind_fill = {.name = "fill", .run = fill_run};

GPAR_API int gpar_fill(gpar_buffer dst, size_t off, size_t bytes, unsigned char value) {
  int st;
  gpar_engine *eng = gpar__engine_enter_buf(dst, &st);
  if (!eng) return st;
  gpar__buf *b = NULL;
  if ((st = gpar__buf_get(eng, dst, &b)) == GPAR_OK && (st = gpar__check_range(b, off, bytes, "gpar_fill")) == GPAR_OK) {
    gpar__op *op = gpar__op_new(eng, &kind_fill, b->host_memory ? eng->host_dev : b->dev, GPAR__LANE_COMPUTE);
    if (!op) {
      st = GPAR_ENOMEM;
    } else {
      *(fill_args *)gpar__op_args(op) = (fill_args){b->mem, off, bytes, value};
      op->width = gpar__op_width((double)bytes, 65536); /* a block per 64 KiB */
      st = gpar__op_use(op, b, GPAR__WRITE);
      b = NULL; /* the op's now */
      if (st == GPAR_OK)
        st = gpar__api_submit(op);
      else
        gpar__op_discard(op);
    }
  }
  if (b) gpar__buf_put(b);
  gpar__engine_leave(eng);
  return st;
}

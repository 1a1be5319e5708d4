/* wait.h: the host's blocking points inside the engine (wait.c): waiting for one op (gpar_read,
 * synchronous mode), for the last writer of a buffer (gpar_wait), for everything submitted so
 * far (gpar_wait_all) and for nothing in flight (shutdown's drain). They sleep on the counts and
 * wake-ups of inflight.h. */
#ifndef GPAR_CORE_ENGINE_WAIT_H
#define GPAR_CORE_ENGINE_WAIT_H

#include "engine/op.h"

/* Wait until op has retired; drop the reference the caller held; its status (message set). */
GPAR__HIDDEN int gpar__op_wait(gpar__op *op);
/* Wait for the last writer of b (a reference the caller holds); the status it left on b. */
GPAR__HIDDEN int gpar__buf_wait(gpar_engine *eng, gpar__buf *b);
/* Wait until every op submitted before the call has retired; the first error since the last
 * such wait (reset). */
GPAR__HIDDEN int gpar__wait_all(gpar_engine *eng);
/* Wait until every op submitted before the call has retired; errors stay for the next. */
GPAR__HIDDEN void gpar__wait_submitted(gpar_engine *eng);
/* Wait until nothing is in flight, then close the engine to submissions (shutdown's drain);
 * the first error not yet reported. */
GPAR__HIDDEN int gpar__drain(gpar_engine *eng);

#endif

/* cli/dist_attach.h — the model handed to the distributed layer.
 *
 * Owns: the DistModel view of a GPT (distributed/dist.h knows none of
 * model/'s types) and the gradient hook installed on the model. */
#ifndef CLI_DIST_ATTACH_H
#define CLI_DIST_ATTACH_H

#include <stddef.h>

#include "distributed/dist.h"
#include "model/gpt.h"

/* Hand g to the distributed layer (its view, DistModel) and install the
 * layer's gradient hook when collectives are open. 0, or -1 with a
 * message. */
int dist_attach_gpt(Dist *d, GPT *g, char *err, size_t err_len);

#endif

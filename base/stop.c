/* base/stop.c — see stop.h. */
#include "stop.h"

static int (*stop_poll)(void);

void stop_set_poll(int (*poll)(void)) { stop_poll = poll; }

int stop_requested(void) { return stop_poll && stop_poll(); }

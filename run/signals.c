/* run/signals.c — see signals.h. */
#include "signals.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/stop.h"

/* The one global in the trainer: a signal handler can reach nothing else.
 * Only sig_atomic_t stores and async-signal-safe calls (write, _exit) are
 * made from the handler. */
static volatile sig_atomic_t pending_signal;

static void on_signal(int sig)
{
    if (pending_signal) {
        io_remove_live_temp();
        _exit(128 + sig);
    }
    pending_signal = sig;
    static const char msg[] = "\ntrain_gpt: signal received: stopping at the next block, or at "
                              "once while starting up (send it again to exit at once, saving "
                              "nothing)\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
}

int signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0) return -1;
    stop_set_poll(signals_pending); /* start-up's long loops poll it (base/stop.h) */
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    return sigaction(SIGXFSZ, &ign, NULL);
}

int signals_pending(void) { return pending_signal; }

/* base/signals.c — see signals.h. */
#include "signals.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/stop.h"

/* The one global state in the trainer: a signal handler can reach nothing
 * else. Only sig_atomic_t stores and async-signal-safe calls (write, _exit)
 * are made from the handler. pending_signal: the first stop signal of any
 * kind; insisted: a SIGINT or SIGTERM has come (the kinds whose repeat means
 * "now"). */
static volatile sig_atomic_t pending_signal, insisted;

static void say(const char *msg, size_t len)
{
    /* stderr may be the dead terminal or the closed pipe itself: EIO or
     * EPIPE then, ignored (a SIGPIPE it raises finds the stop recorded) */
    ssize_t ignored = write(STDERR_FILENO, msg, len);
    (void)ignored;
}

static void on_signal(int sig)
{
    int deliberate = sig == SIGINT || sig == SIGTERM;
    if (deliberate && insisted) {
        io_remove_live_temp();
        _exit(128 + sig);
    }
    if (deliberate) insisted = 1;
    if (pending_signal) return; /* a SIGHUP or SIGPIPE after any stop: already stopping */
    pending_signal = sig;
    static const char stop[] = "\ntrain_gpt: signal received: stopping at the next block, or at "
                               "once while starting up (send it again to exit at once, saving "
                               "nothing)\n";
    static const char hup[] = "\ntrain_gpt: hangup (SIGHUP: the terminal or session is gone): "
                              "stopping at the next block, saving as for SIGTERM (run under "
                              "nohup, tmux or screen to train on after a hangup)\n";
    static const char pipe_gone[] = "\ntrain_gpt: the reader of its output is gone (SIGPIPE): "
                                    "stopping at the next block, saving as for SIGTERM\n";
    if (sig == SIGHUP)
        say(hup, sizeof hup - 1);
    else if (sig == SIGPIPE)
        say(pipe_gone, sizeof pipe_gone - 1);
    else
        say(stop, sizeof stop - 1);
}

int signals_install(void)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0 ||
        sigaction(SIGPIPE, &sa, NULL) != 0)
        return -1;
    /* nohup (or a parent) ignoring SIGHUP asked to train on after a hangup:
     * that choice is kept */
    if (sigaction(SIGHUP, NULL, &old) != 0) return -1;
    if (old.sa_handler != SIG_IGN && sigaction(SIGHUP, &sa, NULL) != 0) return -1;
    stop_set_poll(signals_pending); /* start-up's long loops poll it (base/stop.h) */
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    return sigaction(SIGXFSZ, &ign, NULL);
}

int signals_pending(void) { return pending_signal; }

/* base/signals.c — see signals.h. */
#include "signals.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
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

/* From the first stop on, a write to a pipe or socket that nobody reads
 * must not hold the run: stdout's or stderr's open file is made
 * non-blocking, so a write that would block fails with EAGAIN and its text
 * is dropped (stdio discards a buffer it could not write). A write blocked
 * at this moment is restarted by SA_RESTART, and the restarted call sees
 * O_NONBLOCK: it returns at once. Terminals and files are left alone (a
 * terminal's flags are shared with the shell; a file never blocks).
 * fstat and fcntl are async-signal-safe. */
static void unblock_console(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) return;
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0 && !(fl & O_NONBLOCK)) (void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void on_signal(int sig)
{
    int deliberate = sig == SIGINT || sig == SIGTERM;
    unblock_console(STDOUT_FILENO);
    unblock_console(STDERR_FILENO);
    if (deliberate && insisted) {
        io_remove_live_temp();
        _exit(128 + sig);
    }
    if (deliberate) insisted = 1;
    if (pending_signal) return; /* a SIGHUP, SIGPIPE or SIGUSR after any stop: already stopping */
    pending_signal = sig;
    static const char stop[] = "\ntrain_gpt: signal received: stopping at the next block, or at "
                               "once while starting up (send it again to exit at once, saving "
                               "nothing)\n";
    static const char hup[] = "\ntrain_gpt: hangup (SIGHUP: the terminal or session is gone): "
                              "stopping at the next block, saving as for SIGTERM (run under "
                              "nohup, tmux or screen to train on after a hangup)\n";
    static const char pipe_gone[] = "\ntrain_gpt: the reader of its output is gone (SIGPIPE): "
                                    "stopping at the next block, saving as for SIGTERM\n";
    static const char usr[] = "\ntrain_gpt: SIGUSR1 or SIGUSR2 received (a scheduler's notice, as "
                              "Slurm's --signal=USR1@SECONDS): stopping at the next block, "
                              "saving as for SIGTERM\n";
    if (sig == SIGHUP)
        say(hup, sizeof hup - 1);
    else if (sig == SIGUSR1 || sig == SIGUSR2)
        say(usr, sizeof usr - 1);
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
    /* SA_RESTART: a read or write that the signal interrupts goes on, so
     * no file operation fails with EINTR because of a stop (a shard's read,
     * a save's write, a lock wait, MPI); the console's writes are the ones
     * that could block, and unblock_console makes their restart return. */
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0 ||
        sigaction(SIGPIPE, &sa, NULL) != 0 || sigaction(SIGUSR1, &sa, NULL) != 0 ||
        sigaction(SIGUSR2, &sa, NULL) != 0)
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

// C helpers Swift cannot call directly: a variadic call (prctl) and the wait(2) macros.
#ifndef SWITCHBACK_SYSTEM_H
#define SWITCHBACK_SYSTEM_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>

/// Wraps prctl(PR_SET_PDEATHSIG): the kernel sends `signal` to this process when its parent dies.
static inline int switchback_set_parent_death_signal(int signal) {
    return prctl(PR_SET_PDEATHSIG, (unsigned long)signal, 0, 0, 0);
}

static inline int switchback_exited(int status) { return WIFEXITED(status); }
static inline int switchback_exit_code(int status) { return WEXITSTATUS(status); }
static inline int switchback_signaled(int status) { return WIFSIGNALED(status); }
static inline int switchback_term_signal(int status) { return WTERMSIG(status); }

/// Starts `path` fully detached, without waiting for it: fork, `setsid(2)`, fork again, stdio
/// to /dev/null, nice 10, an empty signal mask, `execve(2)`; the middle process exits at once and is
/// reaped here, so the program is adopted by init (or the nearest subreaper) and never
/// becomes a zombie of the caller, which may go on to run an app for hours. Only
/// async-signal-safe calls run between fork and exec. Returns 0, or the errno of the first fork.
static inline int switchback_spawn_detached(const char *path, char *const argv[], char *const envp[]) {
    pid_t middle = fork();
    if (middle < 0) return errno;
    if (middle == 0) {
        if (setsid() < 0) _exit(1);
        pid_t program = fork();
        if (program != 0) _exit(program < 0 ? 1 : 0);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0); dup2(null, 1); dup2(null, 2);
            if (null > 2) close(null);
        }
        // A background job: let the app starting beside it have the CPU first.
        (void)nice(10);
        sigset_t empty;
        sigemptyset(&empty);
        sigprocmask(SIG_SETMASK, &empty, NULL);
        execve(path, argv, envp);
        _exit(127);
    }
    int status;
    while (waitpid(middle, &status, 0) < 0 && errno == EINTR) {}
    return 0;
}

#endif

// C helpers Swift cannot call directly: a variadic call (prctl) and the wait(2) macros.
#ifndef SWITCHBACK_SYSTEM_H
#define SWITCHBACK_SYSTEM_H

#include <signal.h>
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

#endif

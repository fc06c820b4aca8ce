// C helpers Swift cannot call directly: a variadic call (prctl), the wait(2) macros, and
// the sockaddr_un and control-message handling of sd_notify.
#ifndef SWITCHBACK_SYSTEM_H
#define SWITCHBACK_SYSTEM_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <spawn.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

/// pipe2(2) with O_CLOEXEC.
int switchback_pipe_cloexec(int fds[2]);
/// posix_spawn_file_actions_addclosefrom_np(3): the child closes every descriptor from `from` up.
int switchback_spawn_close_from(posix_spawn_file_actions_t *actions, int from);
/// 64 random bits from getrandom(2).
unsigned long long switchback_random64(void);
/// The path the C library was loaded from (dladdr(3) of one of its functions), or NULL.
const char *switchback_libc_path(void);

/// Wraps prctl(PR_SET_PDEATHSIG): the kernel sends `signal` to this process when its parent dies.
static inline int switchback_set_parent_death_signal(int signal) {
    return prctl(PR_SET_PDEATHSIG, (unsigned long)signal, 0, 0, 0);
}

/// Wraps pidfd_open(2) (syscall 434 on x86_64 and aarch64's generic table): a descriptor that
/// refers to the process `pid` is now, whatever pid it gets later; it polls readable once that
/// process has exited. Returns -1 with errno set (ESRCH: no such process).
static inline int switchback_pidfd_open(int pid) {
    return (int)syscall(434 /* SYS_pidfd_open */, pid, 0U);
}

static inline int switchback_exited(int status) { return WIFEXITED(status); }
static inline int switchback_exit_code(int status) { return WEXITSTATUS(status); }
static inline int switchback_signaled(int status) { return WIFSIGNALED(status); }
static inline int switchback_term_signal(int status) { return WTERMSIG(status); }

/// Starts the program open at `program` (a descriptor the caller checked) fully detached,
/// without waiting for it: fork, `setsid(2)`, fork again, stdio to /dev/null, `niceness` added
/// with nice(2) (10 for a background check; 0 for the hooks' deliverer, whose events people wait for), an
/// empty signal mask, `fexecve(3)` of that descriptor (so the file checked is the file run,
/// whatever its name holds by then); the middle process exits at once
/// and is reaped here, so the program is adopted by init (or the nearest subreaper) and never
/// becomes a zombie of the caller, which may go on to run an app for hours. Only
/// async-signal-safe calls run between fork and exec. Returns 0, or the errno of the first
/// fork. The program first sleeps `delay_ms` milliseconds (after
/// `setsid`, in the detached process, named `switchback-wait` meanwhile, with every descriptor
/// above 2 but `program` closed): a background job that must not start at the same instant across a fleet
/// (the remote check's splay, docs/remote.md "Scheduling").
static inline int switchback_spawn_detached_after(long delay_ms, int niceness, int program, char *const argv[], char *const envp[]) {
    pid_t middle = fork();
    if (middle < 0) return errno;
    if (middle == 0) {
        if (setsid() < 0) _exit(1);
        pid_t child = fork();
        if (child != 0) _exit(child < 0 ? 1 : 0);
        // The program's descriptor above the standard three, where the dup2s below leave it be.
        if (program <= 2) {
            program = fcntl(program, F_DUPFD_CLOEXEC, 3);
            if (program < 0) _exit(127);
        }
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0); dup2(null, 1); dup2(null, 2);
            if (null > 2) close(null);
        }
        // Nothing the caller left open but the program reaches the waiting process or the
        // program: a pipe or a listening socket held through the wait would outlive the app
        // that owns it.
        int closed = program == 3 ? 0 : (int)syscall(436 /* SYS_close_range */, 3U, (unsigned)program - 1, 0U);
        if (closed == 0) closed = (int)syscall(436 /* SYS_close_range */, (unsigned)program + 1, ~0U, 0U);
        if (closed != 0) {
            for (int fd = 3; fd < 1024; fd++) if (fd != program) close(fd);
        }
        // `ps -o comm`, top: what this process is while it waits (its arguments stay the caller's).
        (void)prctl(PR_SET_NAME, (unsigned long)"switchback-wait", 0, 0, 0);
        if (niceness != 0) (void)nice(niceness);
        sigset_t empty;
        sigemptyset(&empty);
        sigprocmask(SIG_SETMASK, &empty, NULL);
        if (delay_ms > 0) {
            struct timespec pause = { .tv_sec = delay_ms / 1000, .tv_nsec = (delay_ms % 1000) * 1000000L };
            while (nanosleep(&pause, &pause) < 0 && errno == EINTR) {}
        }
        fexecve(program, argv, envp);
        _exit(127);
    }
    int status;
    while (waitpid(middle, &status, 0) < 0 && errno == EINTR) {}
    return 0;
}

/// The signal that takes a supervised child out of its shared sockets' accept pool before it
/// is told to stop (CSwitchbackListen's `accept`): a real-time signal, which no default
/// runtime uses. The supervisor and its children are the same executable, so the same number.
static inline int switchback_drain_signal(void) { return SIGRTMIN + 4; }

/// A close-on-exec TCP socket (`nonblocking`: O_NONBLOCK too). Glibc's Swift overlay does
/// not offer SOCK_STREAM and SOCK_CLOEXEC in every build configuration.
static inline int switchback_stream_socket(int family, int nonblocking) {
    return socket(family, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);
}

/// A close-on-exec, non-blocking unix datagram socket.
static inline int switchback_datagram_socket(void) {
    return socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
}

/// Fills `address` from a NOTIFY_SOCKET value: a path, or `@name` in the abstract namespace.
/// Returns the address length, or 0 when the name is empty or too long.
static inline socklen_t switchback_unix_address(const char *name, struct sockaddr_un *address) {
    size_t length = strlen(name);
    if (length == 0 || length >= sizeof address->sun_path) return 0;
    memset(address, 0, sizeof *address);
    address->sun_family = AF_UNIX;
    memcpy(address->sun_path, name, length);
    if (address->sun_path[0] == '@') address->sun_path[0] = '\0';
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + length);
}

/// Receives one datagram on a socket with SO_PASSCRED set: its bytes into `buffer` and the
/// sender's pid (from the kernel, SCM_CREDENTIALS) into `pid` (0 when none came). Returns
/// the byte count, or -1 with errno.
static inline ssize_t switchback_receive_with_sender(int fd, void *buffer, size_t capacity, pid_t *pid) {
    struct iovec vector = { .iov_base = buffer, .iov_len = capacity };
    // struct ucred and SCM_CREDENTIALS (2) need _GNU_SOURCE, which would declare `environ`
    // a second time for Swift: the same layout, spelled out.
    struct credentials { pid_t pid; uid_t uid; gid_t gid; };
    union { struct cmsghdr header; char bytes[CMSG_SPACE(sizeof(struct credentials))]; } control;
    struct msghdr message = { .msg_iov = &vector, .msg_iovlen = 1, .msg_control = &control, .msg_controllen = sizeof control };
    *pid = 0;
    ssize_t count = recvmsg(fd, &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (count < 0) return -1;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == 2 /* SCM_CREDENTIALS */) {
            struct credentials credentials;
            memcpy(&credentials, CMSG_DATA(header), sizeof credentials);
            *pid = credentials.pid;
        } else if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS) {
            // Descriptors nobody asked for are closed, not leaked.
            size_t count_fds = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < count_fds; i++) {
                int passed;
                memcpy(&passed, CMSG_DATA(header) + i * sizeof(int), sizeof passed);
                close(passed);
            }
        }
    }
    return count;
}

#endif

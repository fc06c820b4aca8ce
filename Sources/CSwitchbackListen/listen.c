// See switchback_listen.h. Only the launcher links this file: its `bind`, `listen`, `accept`
// and `accept4` override the C library's for the app's library, because the launcher exports
// them (scripts/bundle links it with --export-dynamic-symbol=...) and the executable comes
// first in the dynamic linker's global search order. Without inherited sockets they are the
// C library's own functions (found with dlsym(RTLD_NEXT)), and nothing else: cancellation
// points as libc's are, with libc's errno.
#define _GNU_SOURCE
#include "switchback_listen.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

enum { MAX_INHERITED = 64 };

static struct inherited {
    int fd;
    struct sockaddr_storage address;
    socklen_t length;
} inherited[MAX_INHERITED];
static int inherited_count;
static int adopted_count;
/// The app's descriptors that `bind` made shared sockets (besides the inherited ones).
static int shared_fds[MAX_INHERITED];
static int shared_count;
static volatile sig_atomic_t draining;

// The C library's functions this file stands in front of, looked up on first use.
typedef int (*accept_function)(int, struct sockaddr *, socklen_t *);
typedef int (*accept4_function)(int, struct sockaddr *, socklen_t *, int);
typedef int (*bind_function)(int, const struct sockaddr *, socklen_t);
typedef int (*listen_function)(int, int);
static void *next_accept, *next_accept4, *next_bind, *next_listen;

static void *next_symbol(void **cache, const char *name) {
    void *found = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (found == NULL) {
        found = dlsym(RTLD_NEXT, name);
        __atomic_store_n(cache, found, __ATOMIC_RELEASE);
    }
    return found;
}

// Threads waiting in `accept` on a shared socket. The drain signal's handler wakes each with
// `kick_signal`, installed without SA_RESTART, so that a thread blocked in the kernel's
// accept returns EINTR, sees the drain and accepts nothing more. The drain signal itself
// keeps SA_RESTART: it reaches one arbitrary thread, whose own system calls it must not fail.
enum { MAX_WAITING = 64 };
static pthread_t waiting_threads[MAX_WAITING];
/// 0: free; 1: being claimed; 2: `waiting_threads[i]` waits in accept.
static int waiting_state[MAX_WAITING];
static int kick_signal;

static int claim_waiting_slot(void) {
    for (int i = 0; i < MAX_WAITING; i++) {
        int expected = 0;
        if (__atomic_compare_exchange_n(&waiting_state[i], &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            waiting_threads[i] = pthread_self();
            __atomic_store_n(&waiting_state[i], 2, __ATOMIC_RELEASE);
            return i;
        }
    }
    return -1;
}

/// A cleanup handler too: a thread cancelled in accept gives its slot back.
static void release_waiting_slot(void *slot) {
    int index = (int)(intptr_t)slot;
    if (index >= 0) __atomic_store_n(&waiting_state[index], 0, __ATOMIC_RELEASE);
}

// The connections accepted on shared sockets, by descriptor: the socket's inode, or 0. A
// descriptor closed and reused by something else no longer has that inode, so nothing needs
// to see `close`. Descriptors past the table's end set `untracked`: the drain then cannot
// tell when the work ends and waits for the supervisor's SIGTERM (supervise.drain_ms).
enum { MAX_TRACKED = 65536 };
static ino_t tracked[MAX_TRACKED];
static int untracked;
/// The drain watcher's pipe: the drain signal's handler writes a byte, the watcher reads it.
static int drain_pipe[2] = { -1, -1 };

static void track_connection(int fd) {
    struct stat status;
    if (fd < 0 || fstat(fd, &status) != 0) return;
    if (fd >= MAX_TRACKED) { __atomic_store_n(&untracked, 1, __ATOMIC_RELAXED); return; }
    __atomic_store_n(&tracked[fd], status.st_ino, __ATOMIC_RELEASE);
}

/// Wakes every thread waiting in `accept` on a shared socket (async-signal-safe).
static void kick_waiting_threads(void) {
    if (kick_signal <= 0) return;
    for (int i = 0; i < MAX_WAITING; i++) {
        if (__atomic_load_n(&waiting_state[i], __ATOMIC_ACQUIRE) == 2) (void)pthread_kill(waiting_threads[i], kick_signal);
    }
}

static void start_draining(int signal) {
    (void)signal;
    int saved = errno;
    draining = 1;
    if (drain_pipe[1] >= 0) { char byte = 1; (void)write(drain_pipe[1], &byte, 1); }
    kick_waiting_threads();
    errno = saved;
}

static void interrupt_accept(int signal) { (void)signal; }

static struct sockaddr_un notify_address;
static socklen_t notify_length;

/// Sends one datagram to the supervisor's notify socket, if there is one.
static void notify_supervisor(const char *text, size_t length) {
    if (notify_length == 0) return;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    (void)sendto(fd, text, length, MSG_DONTWAIT | MSG_NOSIGNAL, (const struct sockaddr *)&notify_address, notify_length);
    close(fd);
}

/// What a tracked connection holds. Busy: a request unread, an answer not yet acknowledged,
/// no request yet (a client that connected just before the drain), or bytes received after the
/// last ones sent. Idle: a keep-alive connection whose last bytes were its answer; one whose
/// last request came within the kernel's clock tick of its answer cannot be told from one
/// being answered, and counts as busy. Gone: closed (the descriptor is another file now).
enum connection_state { CONNECTION_GONE, CONNECTION_IDLE, CONNECTION_BUSY };

static enum connection_state connection_state(int fd, ino_t inode) {
    struct stat status;
    if (fstat(fd, &status) != 0 || status.st_ino != inode || !S_ISSOCK(status.st_mode)) return CONNECTION_GONE;
    int unread = 0, unsent = 0;
    if (ioctl(fd, SIOCINQ, &unread) != 0 || ioctl(fd, SIOCOUTQ, &unsent) != 0) return CONNECTION_BUSY;
    if (unread > 0 || unsent > 0) return CONNECTION_BUSY;
    struct tcp_info info;
    socklen_t length = sizeof info;
    memset(&info, 0, sizeof info);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return CONNECTION_BUSY;
    // Shut down or closing on this side: nothing more will be answered on it.
    // The kernel's TCP states (include/net/tcp_states.h): 1 established, 8 close-wait.
    if (info.tcpi_state != 1 && info.tcpi_state != 8) return CONNECTION_IDLE;
    if (info.tcpi_bytes_received == 0) return CONNECTION_BUSY;
    return info.tcpi_last_data_sent < info.tcpi_last_data_recv ? CONNECTION_IDLE : CONNECTION_BUSY;
}

/// Whether no thread waits in `accept` on a shared socket (one woken by the drain may still
/// return a connection, tracked before its slot is given back).
static int no_thread_in_accept(void) {
    for (int i = 0; i < MAX_WAITING; i++) if (__atomic_load_n(&waiting_state[i], __ATOMIC_ACQUIRE) != 0) return 0;
    return 1;
}

/// The drain watcher, a thread with every signal blocked: once drained, it looks at the
/// connections this child accepted every 2 ms and tells the supervisor `X_SWITCHBACK_IDLE=1`
/// when none holds work, so that the stop need not wait for supervise.drain_ms.
static void *watch_drain(void *unused) {
    (void)unused;
    char byte;
    while (read(drain_pipe[0], &byte, 1) < 0 && errno == EINTR) {}
    if (__atomic_load_n(&untracked, __ATOMIC_RELAXED)) return NULL;
    struct timespec interval = { 0, 2000000 };
    for (;;) {
        // A thread that entered accept in the very instant of the drain signal missed its
        // kick: kicked again until none waits.
        int busy = !no_thread_in_accept();
        if (busy) kick_waiting_threads();
        for (int fd = 0; fd < MAX_TRACKED && !busy; fd++) {
            ino_t inode = __atomic_load_n(&tracked[fd], __ATOMIC_ACQUIRE);
            if (inode == 0) continue;
            switch (connection_state(fd, inode)) {
            case CONNECTION_GONE:
                __atomic_compare_exchange_n(&tracked[fd], &inode, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
                break;
            case CONNECTION_IDLE:
                break;
            case CONNECTION_BUSY:
                busy = 1;
                break;
            }
        }
        if (__atomic_load_n(&untracked, __ATOMIC_RELAXED)) return NULL;
        if (!busy) {
            static const char idle[] = "X_SWITCHBACK_IDLE=1";
            notify_supervisor(idle, sizeof idle - 1);
            return NULL;
        }
        nanosleep(&interval, NULL);
    }
}

/// Starts the drain watcher, with every signal blocked in it (a signal the app handles in a
/// thread of its own must never land here). Without it the drain waits for SIGTERM.
static void start_drain_watcher(void) {
    if (pipe2(drain_pipe, O_CLOEXEC) != 0) { drain_pipe[0] = drain_pipe[1] = -1; return; }
    (void)fcntl(drain_pipe[1], F_SETFL, O_NONBLOCK);
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attributes, 64 * 1024);
    pthread_t thread;
    if (pthread_create(&thread, &attributes, watch_drain, NULL) != 0) {
        close(drain_pipe[0]);
        close(drain_pipe[1]);
        drain_pipe[0] = drain_pipe[1] = -1;
    }
    pthread_attr_destroy(&attributes);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
}

int switchback_listen_adopt(int first, int count, const char *notify_socket, int drain_signal) {
    inherited_count = 0;
    shared_count = 0;
    for (int i = 0; i < count && inherited_count < MAX_INHERITED; i++) {
        struct inherited *entry = &inherited[inherited_count];
        int type = 0;
        socklen_t type_length = sizeof type;
        if (getsockopt(first + i, SOL_SOCKET, SO_TYPE, &type, &type_length) != 0 || type != SOCK_STREAM) continue;
        entry->length = sizeof entry->address;
        if (getsockname(first + i, (struct sockaddr *)&entry->address, &entry->length) != 0) continue;
        if (entry->address.ss_family != AF_INET && entry->address.ss_family != AF_INET6) continue;
        entry->fd = first + i;
        inherited_count++;
    }
    notify_length = 0;
    size_t name_length = notify_socket ? strlen(notify_socket) : 0;
    if (name_length > 0 && name_length < sizeof notify_address.sun_path) {
        memset(&notify_address, 0, sizeof notify_address);
        notify_address.sun_family = AF_UNIX;
        memcpy(notify_address.sun_path, notify_socket, name_length);
        if (notify_address.sun_path[0] == '@') notify_address.sun_path[0] = '\0';
        notify_length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + name_length);
    }
    if (drain_signal > 0 && inherited_count > 0) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        if (drain_signal + 1 <= SIGRTMAX) {
            action.sa_handler = interrupt_accept;
            action.sa_flags = 0;
            sigemptyset(&action.sa_mask);
            if (sigaction(drain_signal + 1, &action, NULL) == 0) kick_signal = drain_signal + 1;
        }
        if (notify_length > 0) start_drain_watcher();
        action.sa_handler = start_draining;
        action.sa_flags = SA_RESTART;
        sigemptyset(&action.sa_mask);
        (void)sigaction(drain_signal, &action, NULL);
    }
    return inherited_count;
}

/// Whether `fd` is one of the shared listening sockets (inherited, or handed over by `bind`).
static int is_shared(int fd) {
    for (int i = 0; i < inherited_count; i++) if (inherited[i].fd == fd) return 1;
    for (int i = 0; i < shared_count; i++) if (shared_fds[i] == fd) return 1;
    return 0;
}

// While draining, a shared socket accepts nothing here: its connections wait in the queue
// for the child that replaces this one. An event loop woken for such a connection sees
// EAGAIN, as when another process took it first, and is woken again until the new child has
// accepted it: a millisecond's pause keeps that from spinning a core the new child needs.
static int refuse_while_draining(void) {
    struct timespec pause = { 0, 1000000 };
    nanosleep(&pause, NULL);
    errno = EAGAIN;
    return -1;
}

/// The C library's accept (`four`: accept4 with `flags`); the system call if it cannot be
/// found, which dlsym never fails to in a dynamically linked launcher.
static int libc_accept(int fd, struct sockaddr *address, socklen_t *length, int flags, int four) {
    if (four) {
        accept4_function call = (accept4_function)next_symbol(&next_accept4, "accept4");
        return call ? call(fd, address, length, flags) : (int)syscall(SYS_accept4, fd, address, length, flags);
    }
    accept_function call = (accept_function)next_symbol(&next_accept, "accept");
    return call ? call(fd, address, length) : (int)syscall(SYS_accept, fd, address, length);
}

/// accept on a shared socket: registered as waiting, so that the drain wakes it if it blocks.
static int accept_shared(int fd, struct sockaddr *address, socklen_t *length, int flags, int four) {
    if (draining) return refuse_while_draining();
    int slot = claim_waiting_slot();
    int result = -1;
    int error = EINTR;
    pthread_cleanup_push(release_waiting_slot, (void *)(intptr_t)slot);
    // The drain may have come between the first look and the claim, which it did not see.
    if (!draining) {
        result = libc_accept(fd, address, length, flags, four);
        error = errno;
        // Tracked before the slot is given back: the drain watcher waits for both.
        track_connection(result);
    }
    pthread_cleanup_pop(1);
    if (result < 0 && error == EINTR && draining) return refuse_while_draining();
    errno = error;
    return result;
}

int accept4(int fd, struct sockaddr *address, socklen_t *length, int flags) {
    if (inherited_count > 0 && is_shared(fd)) return accept_shared(fd, address, length, flags, 1);
    return libc_accept(fd, address, length, flags, 1);
}

int accept(int fd, struct sockaddr *address, socklen_t *length) {
    if (inherited_count > 0 && is_shared(fd)) return accept_shared(fd, address, length, 0, 0);
    return libc_accept(fd, address, length, 0, 0);
}

int switchback_listen_adopted_count(void) { return __atomic_load_n(&adopted_count, __ATOMIC_RELAXED); }

/// The same family, port and address (IPv6: and scope). 0.0.0.0 matches only 0.0.0.0.
static int same_address(const struct sockaddr *address, socklen_t length, const struct inherited *entry) {
    if (address->sa_family != entry->address.ss_family) return 0;
    if (address->sa_family == AF_INET && length >= (socklen_t)sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)address;
        const struct sockaddr_in *b = (const struct sockaddr_in *)&entry->address;
        return a->sin_port == b->sin_port && a->sin_addr.s_addr == b->sin_addr.s_addr;
    }
    if (address->sa_family == AF_INET6 && length >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)address;
        const struct sockaddr_in6 *b = (const struct sockaddr_in6 *)&entry->address;
        return a->sin6_port == b->sin6_port && a->sin6_scope_id == b->sin6_scope_id
            && memcmp(&a->sin6_addr, &b->sin6_addr, sizeof a->sin6_addr) == 0;
    }
    return 0;
}

/// Tells the supervisor this child now holds the shared socket: an HTTP or TCP probe of
/// that address can then be answered by this child, not only by the one it replaces.
static void report_adoption(const struct inherited *entry) {
    if (notify_length == 0) return;
    char text[128];
    char host[64] = "?";
    int port = 0;
    if (entry->address.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&entry->address;
        const unsigned char *b = (const unsigned char *)&a->sin_addr.s_addr;
        snprintf(host, sizeof host, "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
        port = ntohs(a->sin_port);
    } else {
        port = ntohs(((const struct sockaddr_in6 *)&entry->address)->sin6_port);
        snprintf(host, sizeof host, "[ipv6]");
    }
    int length = snprintf(text, sizeof text, "X_SWITCHBACK_ADOPTED=%s:%d", host, port);
    notify_supervisor(text, (size_t)length);
}

/// Whether `fd` is a TCP socket of `family` that is not bound yet: the only kind whose bind
/// of an inherited address is handed the inherited socket. Any other goes to the kernel,
/// which answers as it does for it (EINVAL for a socket already bound, say).
static int can_take_inherited(int fd, int family) {
    int type = 0, domain = 0;
    socklen_t option_length = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &option_length) != 0 || type != SOCK_STREAM) return 0;
    option_length = sizeof domain;
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &option_length) != 0 || domain != family) return 0;
    struct sockaddr_storage bound;
    socklen_t bound_length = sizeof bound;
    memset(&bound, 0, sizeof bound);
    if (getsockname(fd, (struct sockaddr *)&bound, &bound_length) != 0) return 0;
    if (family == AF_INET) return ((const struct sockaddr_in *)&bound)->sin_port == 0;
    return ((const struct sockaddr_in6 *)&bound)->sin6_port == 0;
}

int bind(int fd, const struct sockaddr *address, socklen_t length) {
    if (address != NULL) {
        for (int i = 0; i < inherited_count; i++) {
            const struct inherited *entry = &inherited[i];
            if (fd == entry->fd || !same_address(address, length, entry)) continue;
            if (!can_take_inherited(fd, address->sa_family)) break;
            // The app's descriptor becomes the inherited socket, with the app's flags:
            // O_NONBLOCK (on the shared description) and close-on-exec (on the descriptor).
            int status_flags = fcntl(fd, F_GETFL);
            int descriptor_flags = fcntl(fd, F_GETFD);
            if (dup3(entry->fd, fd, (descriptor_flags >= 0 && (descriptor_flags & FD_CLOEXEC)) ? O_CLOEXEC : 0) < 0) return -1;
            if (status_flags >= 0) (void)fcntl(fd, F_SETFL, status_flags);
            __atomic_add_fetch(&adopted_count, 1, __ATOMIC_RELAXED);
            if (shared_count < MAX_INHERITED && !is_shared(fd)) shared_fds[shared_count++] = fd;
            report_adoption(entry);
            return 0;
        }
    }
    bind_function call = (bind_function)next_symbol(&next_bind, "bind");
    return call ? call(fd, address, length) : (int)syscall(SYS_bind, fd, address, length);
}

// A shared socket listens already, with the supervisor's backlog (SOMAXCONN). The app's own
// `listen(fd, 128)` (most servers and frameworks ask for 128 to 256) would shrink the one queue
// that the supervisor and every child share, and a full queue drops SYNs during a pause: the
// kernel keeps the backlog of the last listen. So on a shared socket it changes nothing.
int listen(int fd, int backlog) {
    if (inherited_count > 0 && is_shared(fd)) return 0;
    listen_function call = (listen_function)next_symbol(&next_listen, "listen");
    return call ? call(fd, backlog) : (int)syscall(SYS_listen, fd, backlog);
}

// See switchback_listen.h. Only the launcher links this file: its `bind`, `accept` and
// `accept4` override the C library's for the app's library, because the launcher exports
// them (scripts/bundle links it with --export-dynamic-symbol=...) and the executable comes
// first in the dynamic linker's global search order. Without inherited sockets they are the
// system calls, and nothing else.
#define _GNU_SOURCE
#include "switchback_listen.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
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

static void start_draining(int signal) { (void)signal; draining = 1; }
static struct sockaddr_un notify_address;
static socklen_t notify_length;

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

int accept4(int fd, struct sockaddr *address, socklen_t *length, int flags) {
    if (draining && is_shared(fd)) return refuse_while_draining();
    return (int)syscall(SYS_accept4, fd, address, length, flags);
}

int accept(int fd, struct sockaddr *address, socklen_t *length) {
    if (draining && is_shared(fd)) return refuse_while_draining();
    return (int)syscall(SYS_accept, fd, address, length);
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
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    (void)sendto(fd, text, (size_t)length, MSG_DONTWAIT | MSG_NOSIGNAL, (const struct sockaddr *)&notify_address, notify_length);
    close(fd);
}

int bind(int fd, const struct sockaddr *address, socklen_t length) {
    if (address != NULL) {
        for (int i = 0; i < inherited_count; i++) {
            const struct inherited *entry = &inherited[i];
            if (fd == entry->fd || !same_address(address, length, entry)) continue;
            int type = 0;
            socklen_t type_length = sizeof type;
            if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_length) != 0 || type != SOCK_STREAM) break;
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
    return (int)syscall(SYS_bind, fd, address, length);
}

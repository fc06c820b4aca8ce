// See switchback_listen.h. Only the launcher links this file: its `bind` overrides the C
// library's for the app's library, because the launcher exports the symbol
// (scripts/bundle links it with --export-dynamic-symbol=bind) and the executable comes
// first in the dynamic linker's global search order.
#define _GNU_SOURCE
#include "switchback_listen.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

enum { MAX_INHERITED = 64 };

static struct inherited {
    int fd;
    struct sockaddr_storage address;
    socklen_t length;
} inherited[MAX_INHERITED];
static int inherited_count;
static int adopted_count;
static struct sockaddr_un notify_address;
static socklen_t notify_length;

int switchback_listen_adopt(int first, int count, const char *notify_socket) {
    inherited_count = 0;
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
    return inherited_count;
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
            report_adoption(entry);
            return 0;
        }
    }
    return (int)syscall(SYS_bind, fd, address, length);
}

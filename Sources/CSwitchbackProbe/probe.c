// See switchback_probe.h. One exact sock_diag query (one netlink socket per call, one request,
// one answer: no dump, so nothing to walk but one message), a scan of /proc/PID/fd, and a wait
// for a peer's close with POLLRDHUP (a _GNU_SOURCE name Swift's Glibc does not see). They
// retry EINTR and validate everything the kernel hands back.
#define _GNU_SOURCE
#include "switchback_probe.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/// close(2) that leaves errno as it was: a failure's errno is the first one, never close's.
static void close_keeping_errno(int fd) {
    int saved = errno;
    close(fd);
    errno = saved;
}

int switchback_probe_accepted_inode(int family, const void *server_address, uint16_t server_port,
                                    const void *client_address, uint16_t client_port, unsigned long *inode) {
    *inode = 0;
    size_t address_size;
    if (family == AF_INET) address_size = 4;
    else if (family == AF_INET6) address_size = 16;
    else {
        errno = EAFNOSUPPORT;
        return -1;
    }

    struct {
        struct nlmsghdr header;
        struct inet_diag_req_v2 body;
    } request;
    memset(&request, 0, sizeof request);
    request.header.nlmsg_len = sizeof request;
    request.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    // No NLM_F_DUMP: an exact lookup (inet_diag_find_one_icsk), answered by one message or one
    // NLMSG_ERROR. No NLM_F_ACK: a success then comes without a trailing acknowledgement.
    request.header.nlmsg_flags = NLM_F_REQUEST;
    request.header.nlmsg_seq = 1;
    request.body.sdiag_family = (uint8_t)family;
    request.body.sdiag_protocol = IPPROTO_TCP;
    request.body.idiag_states = ~0U;
    // The kernel names the socket by its own point of view: `src` is the server's end.
    request.body.id.idiag_sport = htons(server_port);
    request.body.id.idiag_dport = htons(client_port);
    memcpy(request.body.id.idiag_src, server_address, address_size);
    memcpy(request.body.id.idiag_dst, client_address, address_size);
    request.body.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
    request.body.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;

    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0) return -1;
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    ssize_t sent;
    do {
        sent = sendto(fd, &request, sizeof request, 0, (struct sockaddr *)&kernel, sizeof kernel);
    } while (sent < 0 && errno == EINTR);
    if (sent != (ssize_t)sizeof request) {
        if (sent >= 0) errno = EIO;
        close_keeping_errno(fd);
        return -1;
    }

    // One inet_diag_msg (72 bytes) and a few small attributes; 8 KiB as netlink suggests.
    // MSG_TRUNC in the flags would mean the answer was larger than the buffer: refused.
    _Alignas(struct nlmsghdr) char buffer[8192];
    for (;;) {
        struct iovec vector = {.iov_base = buffer, .iov_len = sizeof buffer};
        struct sockaddr_nl from;
        struct msghdr message = {.msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &vector, .msg_iovlen = 1};
        ssize_t received;
        do {
            received = recvmsg(fd, &message, 0);
        } while (received < 0 && errno == EINTR);
        if (received < 0) {
            close_keeping_errno(fd);
            return -1;
        }
        if ((message.msg_flags & MSG_TRUNC) || received == 0) {
            close(fd);
            errno = EMSGSIZE;
            return -1;
        }
        if (from.nl_pid != 0) continue; // not from the kernel
        int len = (int)received;
        for (struct nlmsghdr *h = (struct nlmsghdr *)buffer; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
            if (h->nlmsg_seq != request.header.nlmsg_seq) continue;
            if (h->nlmsg_type == NLMSG_ERROR) {
                close(fd);
                if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr))) {
                    errno = EBADMSG;
                    return -1;
                }
                const struct nlmsgerr *failure = NLMSG_DATA(h);
                // ENOENT: no such socket (also what an unloaded inet_diag module answers).
                if (failure->error == -ENOENT || failure->error == 0) return 0;
                errno = failure->error < 0 ? -failure->error : EPROTO;
                return -1;
            }
            if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg))) continue;
            const struct inet_diag_msg *found = NLMSG_DATA(h);
            close(fd);
            // The exact lookup falls back to the listening socket when no connection has
            // this pair of ends (it closed and went, say): that one is not ours.
            if (found->idiag_state == TCP_LISTEN || found->id.idiag_sport != htons(server_port)
                || found->id.idiag_dport != htons(client_port)) return 0;
            *inode = found->idiag_inode;
            return 1;
        }
        // Nothing of ours in this datagram (another sequence number): wait for the next.
    }
}

int switchback_probe_holder(unsigned long inode, const int *pids, int count) {
    if (inode == 0) return -1;
    char wanted[32];
    int wanted_length = snprintf(wanted, sizeof wanted, "socket:[%lu]", inode);
    if (wanted_length <= 0 || wanted_length >= (int)sizeof wanted) return -1;
    for (int index = 0; index < count; index++) {
        if (pids[index] <= 0) continue;
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/fd", pids[index]);
        int directory_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (directory_fd < 0) continue; // gone, or not ours to read
        DIR *directory = fdopendir(directory_fd);
        if (directory == NULL) {
            close(directory_fd);
            continue;
        }
        int holds = 0;
        struct dirent *entry;
        while (!holds && (entry = readdir(directory)) != NULL) {
            if (entry->d_name[0] == '.') continue;
            // One byte more than the target, so that a longer link cannot match a prefix.
            char target[sizeof wanted + 1];
            ssize_t length = readlinkat(directory_fd, entry->d_name, target, sizeof target);
            holds = length == wanted_length && memcmp(target, wanted, (size_t)length) == 0;
        }
        closedir(directory);
        if (holds) return index;
    }
    return -1;
}

int switchback_probe_wait_for_close(int fd, long microseconds) {
    struct pollfd watched = {.fd = fd, .events = POLLRDHUP};
    struct timespec timeout = {.tv_sec = microseconds / 1000000, .tv_nsec = (microseconds % 1000000) * 1000};
    int ready = ppoll(&watched, 1, &timeout, NULL);
    if (ready < 0) return errno == EINTR ? 0 : -1;
    return ready > 0 && (watched.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) ? 1 : 0;
}

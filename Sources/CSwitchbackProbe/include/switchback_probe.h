// Which process answered a probe, asked of the kernel without the app's help. Several
// processes (the baseline and the canary) accept on one shared listening socket; the analyzer
// connects, and before it sends its request it looks up the server's side of that connection
// with NETLINK_SOCK_DIAG (its socket inode, 0 until a process accepted it), then the process
// whose descriptor table holds that inode (/proc/PID/fd). Swift cannot build or walk netlink
// messages (nlmsghdr's macros, flexible payloads) without a wall of pointer casts, hence C.
#ifndef SWITCHBACK_PROBE_H
#define SWITCHBACK_PROBE_H

#include <stdint.h>

/// Looks up the server's side of one TCP connection with one exact NETLINK_SOCK_DIAG query
/// (SOCK_DIAG_BY_FAMILY with an `inet_diag_req_v2`, no dump, in the caller's network namespace):
/// the socket whose local end is `server_address`:`server_port` and whose remote end is
/// `client_address`:`client_port`. `family` is AF_INET (the addresses are 4 bytes, a
/// `struct in_addr`) or AF_INET6 (16 bytes, a `struct in6_addr`); ports in host byte order.
///
/// Returns 1 when the kernel has that connection, with `*inode` its socket's inode: 0 while it
/// waits in the listening socket's accept queue (or once its process closed it), non-zero once
/// a process accepted it. Returns 0 with `*inode` 0 when the kernel has no such connection (or
/// only the listening socket, which the kernel answers with when the connection is gone).
/// Returns -1 with errno set when the query failed (the netlink socket, send, receive, an
/// error the kernel answered other than ENOENT, or an answer that does not read).
/// Needs no privilege: any user may ask about any TCP socket of its network namespace.
int switchback_probe_accepted_inode(int family, const void *server_address, uint16_t server_port,
                                    const void *client_address, uint16_t client_port, unsigned long *inode);

/// The index in `pids[0 ..< count]` of the first process whose descriptor table holds the
/// socket `inode` (a `/proc/PID/fd/N` link reading `socket:[INODE]`), or -1 when none does.
/// A process that is gone or whose table this process may not read (another user's, or one
/// that is not dumpable) is skipped, as if it held nothing. Costs one readlink(2) per open
/// descriptor of each process scanned.
int switchback_probe_holder(unsigned long inode, const int *pids, int count);

/// Waits up to `microseconds` for the peer of the connected socket `fd` to close or reset it
/// (ppoll(2) for POLLRDHUP, which Swift's Glibc does not see): 1 when it did, 0 when the time
/// passed without, -1 with errno set when ppoll failed. EINTR counts as the time passing.
int switchback_probe_wait_for_close(int fd, long microseconds);

#endif

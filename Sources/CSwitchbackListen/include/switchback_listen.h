// The launcher's side of socket hand-over: a supervised child (or a launcher started by
// systemd socket activation) inherits listening sockets at descriptors 3.. (LISTEN_FDS).
// An app that takes a descriptor uses them directly; an app whose framework binds its own
// address gets them through `bind`, which this target defines for the launcher executable
// only: binding an inherited socket's address puts that socket on the app's descriptor.
#ifndef SWITCHBACK_LISTEN_H
#define SWITCHBACK_LISTEN_H

/// Records the listening sockets at `first` ..< `first + count` (their addresses, read with
/// getsockname(2)) for `bind` to hand over, and the datagram socket (`notify_socket`, in
/// NOTIFY_SOCKET's syntax, or NULL) told `X_SWITCHBACK_ADOPTED=<address>` when it does.
/// With `drain_signal` > 0, that signal makes `accept` and `accept4` on those sockets fail
/// with EAGAIN from then on: the supervisor's way to take an old child out of the accept
/// pool before it tells it to stop, so that no connection is accepted and then dropped
/// unread by a graceful shutdown. A thread already blocked in `accept` on one of them is
/// woken by `drain_signal + 1` (installed here without SA_RESTART; a thread it reaches
/// elsewhere sees nothing) and gets EAGAIN too.
///
/// The drain ends when the work ends: `accept` and `accept4` on a shared socket record each
/// connection they return (its descriptor and inode), and a thread started here with every
/// signal blocked wakes at the drain signal, looks at those connections every 2 ms, and sends
/// `X_SWITCHBACK_IDLE=1` to `notify_socket` once no thread waits in `accept` and none of them
/// holds work: closed, or a keep-alive connection whose last bytes were its answer (nothing
/// unread, nothing unacknowledged, something received and sent after). The supervisor then
/// sends SIGTERM at once; supervise.drain_ms stays the bound. Call once, before the app runs.
/// Returns how many were recorded.
int switchback_listen_adopt(int first, int count, const char *notify_socket, int drain_signal);

/// `listen` on a shared socket (inherited, or handed over by `bind`) returns 0 and leaves the
/// socket's backlog as the supervisor set it: an app's smaller backlog never shrinks the queue
/// every child shares.
///
/// How many times `bind` handed over an inherited socket (for tests and diagnostics).
int switchback_listen_adopted_count(void);

#endif

#if canImport(Glibc)
import Glibc
#endif
import SystemdNotify

/// Keeps a service manager's start deadline ahead of migration steps while they run: sends
/// `EXTEND_TIMEOUT_USEC=` (now + ``Settings/margin``) at once, then every ``Settings/period``
/// from a thread of its own, until ``stop()``.
///
/// The thread waits in `poll(2)` on one end of a socket pair; ``stop()`` closes the other
/// end, which wakes it at once, then joins it: after ``stop()`` returns nothing is sent, and
/// no thread or descriptor is left behind.
final class StartDeadlineExtender {
    /// Where and how often to extend.
    struct Settings: Sendable {
        /// The service manager's socket; nil: nobody to tell, nothing starts.
        var socket: NotifySocket?
        /// How often the deadline moves.
        var period: Duration = .seconds(1)
        /// How far ahead of now each message puts the deadline: a few periods, so that a
        /// late wake-up or a dropped datagram does not let it pass.
        var margin: Duration = .seconds(3)

        /// `$NOTIFY_SOCKET`'s, every second by 3 s.
        static var fromEnvironment: Settings { Settings(socket: NotifySocket.fromEnvironment) }
    }

    private var thread: pthread_t?
    /// Closing it wakes the thread; -1 once closed.
    private var wakeWriter: Int32
    private let wakeReader: Int32

    /// Sends the first extension and starts the thread; nil when there is no socket. If the
    /// thread cannot be started, the first extension is all there is.
    static func start(_ settings: Settings) -> StartDeadlineExtender? {
        guard let socket = settings.socket else { return nil }
        let message = "EXTEND_TIMEOUT_USEC=\(microseconds(settings.margin))"
        socket.send(message)
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else { return nil }
        let extender = StartDeadlineExtender(reader: pair[0], writer: pair[1])
        let loop = Loop(socket: socket, message: message, periodMilliseconds: max(1, milliseconds(settings.period)), wake: pair[0])
        var thread = pthread_t()
        let box = Unmanaged.passRetained(loop)
        if pthread_create(&thread, nil, { Unmanaged<Loop>.fromOpaque($0!).takeRetainedValue().run(); return nil }, box.toOpaque()) == 0 {
            extender.thread = thread
        } else {
            box.release()
        }
        return extender
    }

    private init(reader: Int32, writer: Int32) {
        wakeReader = reader
        wakeWriter = writer
    }

    /// Wakes the thread, waits for it to end, and closes the socket pair. Idempotent.
    func stop() {
        guard wakeWriter >= 0 else { return }
        close(wakeWriter)
        wakeWriter = -1
        if let thread { pthread_join(thread, nil) }
        thread = nil
        close(wakeReader)
    }

    deinit { stop() }

    /// The thread's work: wait a period or the wake-up, send, repeat.
    private final class Loop {
        let socket: NotifySocket
        let message: String
        let periodMilliseconds: Int
        let wake: Int32

        init(socket: NotifySocket, message: String, periodMilliseconds: Int, wake: Int32) {
            self.socket = socket
            self.message = message
            self.periodMilliseconds = periodMilliseconds
            self.wake = wake
        }

        func run() {
            var next = now() + periodMilliseconds
            while true {
                var waiter = pollfd(fd: wake, events: Int16(POLLIN), revents: 0)
                let ready = poll(&waiter, 1, Int32(clamping: max(0, next - now())))
                if ready < 0 && errno == EINTR { continue }
                // Woken (the other end closed), or poll itself failed: stop either way.
                guard ready == 0 else { return }
                socket.send(message)
                next = now() + periodMilliseconds
            }
        }

        /// CLOCK_MONOTONIC in milliseconds.
        private func now() -> Int {
            var time = timespec()
            clock_gettime(CLOCK_MONOTONIC, &time)
            return time.tv_sec * 1000 + time.tv_nsec / 1_000_000
        }
    }

    static func microseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }

    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// A POSIX thread running a closure: the HTTP server's acceptor (joined when it stops) and
/// its connections (detached).
struct Thread {
    let handle: pthread_t

    /// Starts `body` on a new thread with `pthread_create(3)`, or returns nil when the system
    /// has no thread to give (the error number in `errno`). A detached thread cannot be joined.
    static func start(detached: Bool, _ body: @escaping @Sendable () -> Void) -> Thread? {
        let box = Unmanaged.passRetained(Body(body))
        var handle = pthread_t()
        let created = pthread_create(&handle, nil, { pointer in
            Unmanaged<Body>.fromOpaque(pointer!).takeRetainedValue().run()
            return nil
        }, box.toOpaque())
        guard created == 0 else {
            box.release()
            errno = created
            return nil
        }
        if detached { pthread_detach(handle) }
        return Thread(handle: handle)
    }

    /// Waits for the thread to end (`pthread_join(3)`).
    func join() { pthread_join(handle, nil) }

    private final class Body: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
}

/// Sleeps `milliseconds`, resuming after a signal handler interrupts it.
func sleep(milliseconds: Int) {
    var request = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
}

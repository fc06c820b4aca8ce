#if canImport(Glibc)
import Glibc
#endif
import Dispatch

/// The thread a blocking libcurl transfer runs on (a directive fetch, an analysis check's
/// loop of probes and queries): a detached POSIX thread with a 256 KiB stack.
package enum FetchThread {
    /// Starts `body` on a new detached thread with `pthread_create(3)`. When the system has no
    /// thread to give, `body` runs on a global dispatch queue instead, so the fetch still happens.
    package static func start(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Body(body))
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        pthread_attr_setstacksize(&attributes, 256 << 10)
        var handle = pthread_t()
        let created = pthread_create(&handle, &attributes, { pointer in
            Unmanaged<Body>.fromOpaque(pointer!).takeRetainedValue().run()
            return nil
        }, box.toOpaque())
        if created != 0 {
            box.release()
            DispatchQueue.global().async(execute: body)
        }
    }

    private final class Body: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
}

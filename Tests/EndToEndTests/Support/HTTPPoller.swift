import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A client that watches an HTTP server through a switch: on its own thread it sends
/// `GET path` to 127.0.0.1:`port` every `interval`, each on a new TCP connection, and records
/// when each request started and how it ended (see `Outcome`). With `SlowRequests`, further
/// threads keep that many slow requests in flight through the whole window, recorded apart.
///
/// It can never run away: it sends at most `maxRequests` short requests (and as many slow
/// ones) and starts none after `maxDuration`; every request has a timeout. `stop()` ends the
/// window, joins every thread (waiting for the slow requests in flight to end, each within its
/// timeout) and returns the `Summary`; `summary()` reads one while it runs.
///
///     let poller = try HTTPPoller(port: port, maxDuration: .seconds(20))
///     #expect(waitUntil(seconds: 10) { poller.summary().ok > 0 })
///     try app.switchVersion()
///     let summary = poller.stop()
///     #expect(summary.failed == 0, "\(summary)")
///     #expect(summary.versionsSeen == ["1.0.0", "1.1.0"], "\(summary)")
final class HTTPPoller: Sendable {
    /// Slow requests to keep in flight while the poller runs: `concurrency` threads, each
    /// sending `GET path` on a new connection as soon as its previous one ended (and at most
    /// once per `interval`), so a switch happens while that many are being answered.
    struct SlowRequests: Sendable {
        var concurrency: Int
        var path: String = "/slow?ms=3000"
        /// Longer than the server takes to answer `path` on purpose.
        var timeout: Duration = .seconds(10)
    }

    let port: Int
    private let shared: Shared
    private let threads: Mutex<[pthread_t]>

    /// Starts polling at once. Traps on a non-positive `interval`, `timeout`, `maxRequests` or
    /// slow `concurrency` (a mistake in the test); throws when a thread cannot be started.
    init(port: Int, path: String = "/", interval: Duration = .milliseconds(5), timeout: Duration = .seconds(2),
         maxRequests: Int = 10_000, maxDuration: Duration = .seconds(30), slowRequests: SlowRequests? = nil) throws {
        precondition(interval > .zero && timeout > .zero && maxRequests > 0 && maxDuration > .zero,
                     "HTTPPoller needs a positive interval, timeout, maxRequests and maxDuration")
        precondition((slowRequests?.concurrency ?? 1) > 0, "HTTPPoller.SlowRequests needs a positive concurrency")
        self.port = port
        let shared = Shared(startedAt: ContinuousClock.now, maxRequests: maxRequests, maxDuration: maxDuration, interval: interval)
        self.shared = shared
        threads = Mutex([])
        do {
            try startThread { shared.poll(port: port, path: path, timeout: timeout) }
            if let slowRequests {
                for _ in 0..<slowRequests.concurrency {
                    try startThread { shared.keepSlowRequestInFlight(port: port, slowRequests) }
                }
            }
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    /// What it recorded so far (`end` is `.running` until the window closes).
    func summary() -> Summary { shared.summary() }

    /// Closes the window: no request starts after this; the ones in flight finish (each within
    /// its timeout), every thread is joined. Calling it again returns the same summary.
    @discardableResult
    func stop() -> Summary {
        shared.state.withLock { state in
            state.isStopRequested = true
            if state.end == .running { state.end = .stopped }
        }
        for thread in threads.withLock({ threads in defer { threads = [] }; return threads }) {
            pthread_join(thread, nil)
        }
        return shared.summary()
    }

    private func startThread(_ body: @escaping @Sendable () -> Void) throws {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        let result = pthread_create(&thread, nil, { context in
            Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        guard result == 0 else {
            Unmanaged<ThreadBody>.fromOpaque(context).release()
            throw TestFailure("HTTPPoller could not start a thread: pthread_create: \(String(cString: strerror(result)))")
        }
        threads.withLock { $0.append(thread) }
    }
}

private final class ThreadBody: Sendable {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}

/// What the poller's threads share: the bounds and, behind one lock, the records.
private final class Shared: Sendable {
    struct State {
        var records: [HTTPPoller.Record] = []
        var slowRecords: [HTTPPoller.Record] = []
        var end: HTTPPoller.End = .running
        var isStopRequested = false
        var slowStarted = 0
    }

    let startedAt: ContinuousClock.Instant
    let maxRequests: Int
    let maxDuration: Duration
    let interval: Duration
    let state = Mutex(State())

    init(startedAt: ContinuousClock.Instant, maxRequests: Int, maxDuration: Duration, interval: Duration) {
        self.startedAt = startedAt
        self.maxRequests = maxRequests
        self.maxDuration = maxDuration
        self.interval = interval
    }

    func summary() -> HTTPPoller.Summary {
        state.withLock { state in
            HTTPPoller.Summary(startedAt: startedAt, end: state.end, records: state.records,
                               slowRecords: state.slowRecords.sorted { $0.start < $1.start })
        }
    }

    /// The short requests: one every `interval` (started `interval` after the previous one
    /// started, or at once when that one took longer), until stopped or a bound is reached.
    func poll(port: Int, path: String, timeout: Duration) {
        var next = startedAt
        while true {
            let now = ContinuousClock.now
            let reason: HTTPPoller.End? = state.withLock { state in
                if state.isStopRequested { return .stopped }
                if state.records.count >= maxRequests { return .requestLimit }
                if now - startedAt >= maxDuration { return .timeLimit }
                return nil
            }
            if let reason {
                state.withLock { state in
                    if state.end == .running { state.end = reason }
                }
                return
            }
            if now < next {
                sleep(min(next - now, .milliseconds(10)))
                continue
            }
            let outcome = HTTPPoller.request(port: port, path: path, timeout: timeout)
            let record = HTTPPoller.Record(start: now, duration: ContinuousClock.now - now, outcome: outcome)
            state.withLock { $0.records.append(record) }
            next = now + interval
        }
    }

    /// One slow request after another while the window is open (`end` is `.running`).
    func keepSlowRequestInFlight(port: Int, _ slow: HTTPPoller.SlowRequests) {
        while true {
            let now = ContinuousClock.now
            let proceed = state.withLock { state in
                guard state.end == .running, !state.isStopRequested, state.slowStarted < maxRequests,
                      now - startedAt < maxDuration else { return false }
                state.slowStarted += 1
                return true
            }
            guard proceed else { return }
            let outcome = HTTPPoller.request(port: port, path: slow.path, timeout: slow.timeout)
            let record = HTTPPoller.Record(start: now, duration: ContinuousClock.now - now, outcome: outcome)
            state.withLock { $0.slowRecords.append(record) }
            // A request that fails at once (refused) must not make this a busy loop.
            let elapsed = ContinuousClock.now - now
            if elapsed < interval { sleep(interval - elapsed) }
        }
    }

    private func sleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}

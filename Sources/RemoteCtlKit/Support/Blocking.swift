import Dispatch

/// Runs `operation` on the concurrency pool and blocks this (non-pool) thread until it
/// finishes: the bridge from the synchronous command line to the async `sync`.
func runBlocking<T: Sendable>(_ operation: @escaping @Sendable () async -> T) -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        box.value = await operation()
        done.signal()
    }
    done.wait()
    return box.value!
}

private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}

#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackSDKSupport
import Dispatch
import Synchronization

/// Runs an app's async `main` as a Swift 6 `@main` async entry point runs it: isolated to the
/// main actor, with the main actor's queue drained until `main` returns, and then hands the
/// exit code back instead of exiting.
///
/// On the thread libdispatch's main queue is bound to (the launcher's main thread, or an
/// executable's calling ``Switchback/main()``), that thread is the run loop: it sleeps on the
/// queue's wake-up descriptor and runs what the main actor queued, so `@MainActor` code runs
/// on the main thread. It stops as soon as `main` has returned: main-actor work still queued
/// then is not waited for (the process exits, as after Swift's own async `main`). Anywhere
/// else (a test runner's thread) the main actor is whatever drains it there, and the calling
/// thread waits.
enum MainActorRunLoop {
    static func run(_ main: @escaping @MainActor @Sendable () async -> Int32) -> Int32 {
        let code = Mutex<Int32?>(nil)
        guard switchback_sdk_main_queue_is_here() != 0 else {
            let done = DispatchSemaphore(value: 0)
            Task { @MainActor in
                let result = await main()
                code.withLock { $0 = result }
                done.signal()
            }
            done.wait()
            return code.withLock { $0 } ?? 1
        }
        Task { @MainActor in
            let result = await main()
            code.withLock { $0 = result }
        }
        while true {
            if let result = code.withLock({ $0 }) { return result }
            let failure = switchback_sdk_main_queue_wait()
            if failure != 0 {
                SDKFiles.printError("Error: waiting for the main actor's work failed (poll: \(String(cString: strerror(failure)))), so the app cannot go on; start it again.")
                return 70
            }
            switchback_sdk_main_queue_drain()
        }
    }
}

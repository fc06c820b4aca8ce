#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Switchback

// The whole glue between this library and the launcher.
@_cdecl("switchback_register") public func switchbackRegister() { Switchback.register(MainActorApp.self) }

/// An app written as Swift 6 code is, with the main actor: `main` (isolated to the main actor,
/// as `@main`'s is) awaits a `@MainActor` function and a `MainActor.run` block. Each says on
/// stdout that it ran and whether on the process's main thread.
///
///     launcher [check]   the three lines, then exit 42
///     launcher pending   starts a main-actor task that sleeps 60 s, lets it start, and
///                        returns 7 at once: the task is not waited for
///     launcher signal    waits for SIGTERM on a dispatch source of the main queue (as a
///                        server's signal handling does), then returns 3
public enum MainActorApp: AsyncSwitchbackApp {
    public static func main(_ launch: LaunchInfo) async throws -> Int32 {
        launch.markGood()
        switch launch.arguments.first {
        case nil, "check":
            say("main: on the main thread: \(isMainThread())")
            let function = await recordedOnTheMainActor()
            say("@MainActor function: on the main thread: \(function)")
            let block = await MainActor.run { isMainThread() }
            say("MainActor.run: on the main thread: \(block)")
            return 42
        case "pending":
            Task { @MainActor in
                say("pending task: started")
                try? await Task.sleep(for: .seconds(60))
                say("pending task: finished")
            }
            // Lets the task start and suspend in its sleep; main then returns at once.
            await Task.yield()
            say("main: returning 7")
            return 7
        case "signal":
            signal(SIGTERM, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .main)
            await withCheckedContinuation { (stopped: CheckedContinuation<Void, Never>) in
                source.setEventHandler {
                    say("SIGTERM: handled on the main thread: \(isMainThread())")
                    source.cancel()
                    stopped.resume()
                }
                source.resume()
                say("waiting for SIGTERM")
            }
            return 3
        case let other?:
            say("unknown mode \(other)")
            return 64
        }
    }
}

@MainActor func recordedOnTheMainActor() async -> Bool {
    MainActor.assertIsolated()
    return isMainThread()
}

/// pthread_main_np(3) as Linux spells it: the calling thread's id is the process's id
/// (/proc/thread-self is "PID/task/TID").
func isMainThread() -> Bool {
    var buffer = [CChar](repeating: 0, count: 64)
    let count = readlink("/proc/thread-self", &buffer, buffer.count - 1)
    guard count > 0 else { return false }
    let parts = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self).split(separator: "/")
    return parts.count == 3 && parts[0] == parts[2] && Int32(parts[0]) == getpid()
}

/// One line on stdout, written at once (the launcher's exit must not lose it).
func say(_ line: String) {
    var text = line + "\n"
    _ = text.withUTF8 { write(1, $0.baseAddress, $0.count) }
}

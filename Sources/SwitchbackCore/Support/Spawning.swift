#if canImport(Glibc)
import Glibc
#endif

/// Calls `body` with a NULL-terminated array of C strings (an argv or an envp).
package func withCStrings<T>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> T) -> T {
    let pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
    defer { pointers.forEach { free($0) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

/// Calls `body` with posix_spawn attributes that give the child an empty signal mask and
/// the default action for the signals a launcher or supervisor blocks or handles (the
/// supervisor reads them through a signalfd, so they are blocked in it).
func withChildSpawnAttributes<T>(_ body: (UnsafePointer<posix_spawnattr_t>) -> T) -> T {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigmask(&attributes, &empty)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in Supervisor.forwarded + [SIGCHLD, SIGPIPE] { sigaddset(&defaults, signal) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    return body(&attributes)
}

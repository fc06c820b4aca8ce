#if canImport(Glibc)
import Glibc
#endif

/// Repeats a system call while it fails with `EINTR`.
func retryingEINTR<T: FixedWidthInteger>(_ call: () -> T) -> T {
    while true {
        let result = call()
        if result == -1 && errno == EINTR { continue }
        return result
    }
}

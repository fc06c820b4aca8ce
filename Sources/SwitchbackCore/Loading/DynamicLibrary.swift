#if canImport(Glibc)
import Glibc
#endif

/// A loaded shared object. It is never unloaded: `dlclose` of a Swift library unmaps code
/// the runtime still points at.
public struct DynamicLibrary: @unchecked Sendable {
    private let handle: UnsafeMutableRawPointer
    /// The path it was opened from.
    public let path: String

    /// Wraps `dlopen(3)` with `RTLD_NOW | RTLD_NODELETE`: every symbol resolves now (with
    /// RTLD_LAZY a missing one kills the process mid-run), and nothing ever unmaps it.
    /// `lazily` uses RTLD_LAZY instead, for a file known to bind (see LoadedSlot).
    public static func open(at path: String, global: Bool = false, lazily: Bool = false) throws(SwitchbackError) -> DynamicLibrary {
        guard let handle = dlopen(path, (lazily ? RTLD_LAZY : RTLD_NOW) | RTLD_NODELETE | (global ? RTLD_GLOBAL : RTLD_LOCAL)) else {
            let detail = dlerror().map { String(cString: $0) } ?? "unknown error"
            throw SwitchbackError(.slotLoadFailed, "dlopen failed: \(detail).", path: path)
        }
        return DynamicLibrary(handle: handle, path: path)
    }

    /// Wraps `dlsym(3)`: the address of `name`, cast to the C function type `T`.
    public func symbol<T>(named name: String, as type: T.Type) -> T? {
        _ = dlerror()
        guard let address = dlsym(handle, name) else { return nil }
        return unsafeBitCast(address, to: type)
    }
}

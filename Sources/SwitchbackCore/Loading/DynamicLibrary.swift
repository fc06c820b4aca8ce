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
        guard let handle = dlopen(path, flags(global: global, lazily: lazily)) else {
            let detail = dlerror().map { String(cString: $0) } ?? "unknown error"
            throw SwitchbackError(.slotLoadFailed, "dlopen failed: \(detail).", path: path)
        }
        return DynamicLibrary(handle: handle, path: path)
    }

    /// `text` with every `target` replaced, on bytes: the launcher imports no
    /// StringProcessing (it costs every start a library in each symbol lookup).
    static func replacing(_ target: String, with replacement: String, in text: String) -> String {
        let needle = Array(target.utf8), bytes = Array(text.utf8)
        guard !needle.isEmpty else { return text }
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            if index + needle.count <= bytes.count, bytes[index..<index + needle.count].elementsEqual(needle) {
                out.append(contentsOf: replacement.utf8)
                index += needle.count
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Wraps `dlopen(3)` of `/proc/self/fd/N`, N a duplicate of `descriptor`, with the flags
    /// of `open(at:)`: maps the very file that descriptor refers to, whatever is at `path`
    /// now. The duplicate (close-on-exec) stays open for the life of the process, so the name
    /// the dynamic linker recorded keeps naming this file. Errors name `path`.
    public static func open(descriptor: Int32, path: String, global: Bool = false, lazily: Bool = false) throws(SwitchbackError) -> DynamicLibrary {
        let duplicate = fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
        if duplicate < 0 { throw .system("Duplicating the descriptor of", path: path, errno: errno) }
        let procPath = "/proc/self/fd/\(duplicate)"
        guard let handle = dlopen(procPath, flags(global: global, lazily: lazily)) else {
            let detail = dlerror().map { String(cString: $0) } ?? "unknown error"
            close(duplicate)
            throw SwitchbackError(.slotLoadFailed, "dlopen failed: \(Self.replacing(procPath, with: path, in: detail)).", path: path)
        }
        return DynamicLibrary(handle: handle, path: path)
    }

    private static func flags(global: Bool, lazily: Bool) -> Int32 {
        (lazily ? RTLD_LAZY : RTLD_NOW) | RTLD_NODELETE | (global ? RTLD_GLOBAL : RTLD_LOCAL)
    }

    /// Wraps `dlsym(3)`: the address of `name`, cast to the C function type `T`.
    public func symbol<T>(named name: String, as type: T.Type) -> T? {
        _ = dlerror()
        guard let address = dlsym(handle, name) else { return nil }
        return unsafeBitCast(address, to: type)
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// A program of the bundle that Switchback runs (`bin/rollbackctl-remote`, `bin/launcher`),
/// opened once and checked through its descriptor as a slot is (`SlotFile`), then run from
/// that very descriptor (`fexecve(3)`, or `/proc/self/fd/N` for `posix_spawn`): the file
/// that passed the check is the file that runs, with no window for a swap in between.
///
/// The checks: every directory and symbolic link on the way (`StrictModes.resolve`: owned
/// by this user or root, writable by no one else; a sticky world-writable ancestor such as
/// /tmp accepted, the directory that holds the file not), the file itself opened with
/// `O_NOFOLLOW` and `fstat`ed (a regular file owned by this user or root, not writable by
/// group or others, executable), and the ELF magic. A script is refused: a program run as
/// root from a bundle is a compiled one, and `fexecve` of a close-on-exec script fails.
///
/// No size or SHA-256 is compared: the manifest records none for programs (see
/// docs/design.md, "Programs Switchback runs", for why).
public final class ProgramFile: Sendable {
    /// The open, read-only, close-on-exec descriptor.
    public let descriptor: Int32
    /// The path it was asked for (as the caller named it).
    public let path: String

    init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit { close(descriptor) }

    /// The path that runs this descriptor's file through procfs, for `posix_spawn(3)`: the
    /// kernel resolves it to the open file, never to whatever the name holds by then.
    public var procPath: String { "/proc/self/fd/\(descriptor)" }

    /// Opens and checks the program at `path` (absolute). `what` names it in the sentence
    /// ("rollbackctl-remote program"). Throws `.fileNotFound` when it is missing,
    /// `.insecurePermissions` when another user could have changed it or a directory or link
    /// on the way, and `.programNotRunnable` when it is not a regular, executable ELF file;
    /// each with one sentence naming the file, what was found and what to do.
    /// `allowingScripts`: an operator's program (a hook's command), which may be a script:
    /// every check but the ELF magic; it is then run by its path, not its descriptor.
    /// `remedy` ends each sentence.
    public static func open(_ path: String, what: String, allowingScripts: Bool = false,
                            remedy: String = "rebuild the bundle with scripts/bundle") throws(SwitchbackError) -> ProgramFile {
        func missing() -> SwitchbackError {
            SwitchbackError(.fileNotFound, "The \(what) \(path) is missing; \(remedy).", path: path)
        }
        guard let resolved = try StrictModes.resolve(path, what: what),
              let fd = try StrictModes.openNoFollow(resolved, what: what, flags: O_RDONLY | O_NONBLOCK) else { throw missing() }
        let file = ProgramFile(descriptor: fd, path: path)
        var info = stat()
        if fstat(fd, &info) != 0 { throw .system("Inspecting", path: resolved, errno: errno) }
        func notRunnable(_ found: String) -> SwitchbackError {
            SwitchbackError(.programNotRunnable, "The \(what) \(resolved) \(found); refusing to run it: \(remedy).", path: resolved)
        }
        guard FileMode.type(info) == FileMode.regular else { throw notRunnable("is not a regular file") }
        try StrictModes.checkOwnerAndMode(info, path: resolved, what: what)
        guard info.st_mode & 0o111 != 0 else { throw notRunnable("is not executable (mode \(String(info.st_mode & 0o7777, radix: 8)))") }
        if allowingScripts { return file }
        var magic = [UInt8](repeating: 0, count: 4)
        let (count, _) = magic.withUnsafeMutableBytes { buffer in retryingInterrupts { pread(fd, buffer.baseAddress, 4, 0) } }
        guard count == 4 && magic == [0x7F, 0x45, 0x4C, 0x46] else { throw notRunnable("is not an ELF executable") }
        return file
    }

    /// Replaces this process with the checked program, given `arguments` (argv, the first
    /// being the name it runs as) and this process's environment. Wraps `fexecve(3)`
    /// (`execveat(fd, "", ..., AT_EMPTY_PATH)`). Returns only on failure, with its errno.
    public func execute(_ arguments: [String]) -> Int32 {
        withCStrings(arguments) { argv in
            _ = fexecve(descriptor, UnsafeMutablePointer(mutating: argv), environ)
            return errno
        }
    }
}

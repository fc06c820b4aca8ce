#if canImport(Glibc)
import Glibc
#endif

/// The directory that holds the rollback flag, the history and the verified-slot cache:
/// `$SWITCHBACK_STATE_DIR`, else `$XDG_STATE_HOME/<app id>`, else
/// `~/.local/state/<app id>`.
public struct StateDirectory: Sendable, Equatable {
    /// The absolute path.
    public let path: String

    public init(path: String) { self.path = path }

    /// Resolves the directory from an explicit path, then the environment.
    ///
    /// An explicit path (`rollbackctl --state-dir`), typed by the operator for this one
    /// command, is made absolute against the working directory once, here. A relative
    /// `SWITCHBACK_STATE_DIR` or `HOME` is refused (`.invalidArgument`): inherited by every
    /// process, it would silently split one install into one state per working directory.
    /// A relative `XDG_STATE_HOME` is ignored, as the XDG specification says. With none of
    /// the three and `HOME` unset, empty or `/`, there is no default: `.noStateDirectory`,
    /// with a sentence naming `SWITCHBACK_STATE_DIR`.
    public static func resolve(explicit: String? = nil, appID: String,
                               environment: (String) -> String? = environmentValue) throws(SwitchbackError) -> StateDirectory {
        let chosen: String
        if let explicit, !explicit.isEmpty {
            chosen = explicit
        } else if let value = environment("SWITCHBACK_STATE_DIR"), !value.isEmpty {
            guard value.hasPrefix("/") else {
                throw SwitchbackError(.invalidArgument, "SWITCHBACK_STATE_DIR is the relative path '\(value)', which would name a different state directory in every working directory; set it to an absolute path.")
            }
            chosen = value
        } else if let value = environment("XDG_STATE_HOME"), value.hasPrefix("/") {
            chosen = value + "/" + appID
        } else if let home = environment("HOME"), !home.isEmpty, home != "/" {
            guard home.hasPrefix("/") else {
                throw SwitchbackError(.invalidArgument, "HOME is the relative path '\(home)', so the state directory would differ in every working directory; set HOME or SWITCHBACK_STATE_DIR to an absolute path.")
            }
            chosen = home + "/.local/state/" + appID
        } else {
            // HOME=/ is what a container gives a user with no passwd entry (Kubernetes'
            // runAsUser): //.local/state is no place for state, and usually not creatable.
            let home = environment("HOME").map { $0.isEmpty ? "empty" : "/" } ?? "not set"
            throw SwitchbackError(.noStateDirectory, "No state directory: HOME is \(home) and SWITCHBACK_STATE_DIR is not set; set SWITCHBACK_STATE_DIR to a directory this user can own, such as /var/lib/\(appID).")
        }
        if chosen.hasPrefix("/") { return StateDirectory(path: chosen) }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX))
        guard getcwd(&buffer, buffer.count) != nil else {
            throw SwitchbackError(.invalidArgument, "The state directory \(chosen) is relative and the working directory is unknown; give an absolute path.")
        }
        let workingDirectory = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return StateDirectory(path: workingDirectory + "/" + chosen)
    }

    /// The rollback flag.
    public var statePath: String { path + "/state" }
    /// The append-only switch history.
    public var historyPath: String { path + "/history.log" }
    /// The lock every writer holds.
    public var lockPath: String { path + "/lock" }
    /// Fingerprints of slot files that were hashed and matched the manifest.
    public var verifiedCachePath: String { path + "/verified-slots" }

    /// Throws `.insecurePermissions` when another user could write the directory (like
    /// ssh's StrictModes, see `StrictModes`): it must be owned by this user or root, not be
    /// group- or world-writable and not be a symbolic link, and every directory above it
    /// must pass the same check (a sticky one like /tmp may be world-writable). A directory
    /// that does not exist yet is fine. Each file in it is checked when it is opened
    /// (`FileSystem`, `FileLock`).
    public func checkPermissions() throws(SwitchbackError) {
        try StrictModes.checkDirectory(path, what: "state directory")
    }

    /// Creates the directory (mode 0700) if needed and checks its permissions. The
    /// directories that exist are checked first, so one another user could change gets no
    /// `mkdir` below it; the missing ones are made with `mkdirat` relative to checked
    /// directories, never through a link, and checked after (`FileSystem.createDirectory`).
    public func prepare() throws(SwitchbackError) {
        try checkPermissions()
        try FileSystem.createDirectory(path, what: "state directory")
        try checkPermissions()
    }
}

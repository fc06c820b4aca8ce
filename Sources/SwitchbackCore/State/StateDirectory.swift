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

    /// Resolves the directory from an explicit path, then the environment. A relative
    /// path is made absolute against the working directory once, here.
    public static func resolve(explicit: String? = nil, appID: String,
                               environment: (String) -> String? = environmentValue) throws(SwitchbackError) -> StateDirectory {
        let chosen: String
        if let explicit, !explicit.isEmpty {
            chosen = explicit
        } else if let value = environment("SWITCHBACK_STATE_DIR"), !value.isEmpty {
            chosen = value
        } else if let value = environment("XDG_STATE_HOME"), value.hasPrefix("/") {
            chosen = value + "/" + appID
        } else if let home = environment("HOME"), !home.isEmpty {
            chosen = home + "/.local/state/" + appID
        } else {
            throw SwitchbackError(.invalidArgument, "No state directory: set SWITCHBACK_STATE_DIR or HOME.")
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
    /// ssh's StrictModes): it must be owned by this user or root and not be group- or
    /// world-writable. A directory that does not exist yet is fine.
    public func checkPermissions() throws(SwitchbackError) {
        guard let info = try FileSystem.status(path) else { return }
        try Self.checkNotWritableByOthers(info, path: path, what: "state directory",
                                          fix: "chmod go-w \(path)")
    }

    /// Creates the directory (mode 0700) if needed and checks its permissions.
    public func prepare() throws(SwitchbackError) {
        try FileSystem.createDirectory(path)
        try checkPermissions()
    }

    /// Shared by the state directory and slot checks.
    static func checkNotWritableByOthers(_ info: stat, path: String, what: String, fix: String) throws(SwitchbackError) {
        let me = geteuid()
        if info.st_uid != me && info.st_uid != 0 {
            throw SwitchbackError(.insecurePermissions, "The \(what) \(path) is owned by another user (uid \(info.st_uid)); refusing to trust it: chown it to uid \(me).", path: path)
        }
        if info.st_mode & (S_IWGRP | S_IWOTH) != 0 {
            throw SwitchbackError(.insecurePermissions, "The \(what) \(path) is writable by other users (mode \(String(info.st_mode & 0o7777, radix: 8))); refusing to trust it: run '\(fix)'.", path: path)
        }
    }
}

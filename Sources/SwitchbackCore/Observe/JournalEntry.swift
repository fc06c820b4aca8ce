#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackSystem

/// One structured event for journald (docs/monitoring.md): `SYSLOG_IDENTIFIER=switchback`, a
/// stable `MESSAGE_ID` per kind of event, `MESSAGE` (the sentence), `PRIORITY`, and
/// `SWITCHBACK_*` fields, sent as one datagram of journald's native protocol.
public struct JournalEntry: Sendable, Equatable {
    /// The kinds of event, each with the `MESSAGE_ID` that names it for ever (journalctl
    /// `MESSAGE_ID=...` finds them whatever the sentence says).
    public enum Kind: String, Sendable, CaseIterable {
        case rollback, rollforward, fallback
        case hungStart = "hung_start"
        case switchFailed = "switch_failed"
        case release, recovery, revert, restore, archive
        case remoteRefused = "remote_refused"
        case remoteNotApplied = "remote_not_applied"
        case remoteStale = "remote_stale"
        case probationStarted = "probation_started"
        case probationPassed = "probation_passed"
        case probationFailed = "probation_failed"
        case probationInconclusive = "probation_inconclusive"
        case probationPromoted = "probation_promoted"
        case probationAborted = "probation_aborted"
        case probationHeld = "probation_held"
        case probationWouldRollBack = "probation_would_roll_back"
        case probationWouldHold = "probation_would_hold"
        /// A history kind this table does not know yet (a newer writer's).
        case other

        /// The 128-bit id, as journald wants it: 32 lowercase hex digits.
        public var messageID: String {
            switch self {
            case .rollback: return "b196af21f15b4019804d09196588d910"
            case .rollforward: return "7a56d89379874ac8bad6f2bfacfe73d2"
            case .fallback: return "2c85020a004c443b8f98edc39f828e68"
            case .hungStart: return "14619e3798a246b7bc782dfdcdf0e80e"
            case .switchFailed: return "2374090ee5514ed1b417da069a566002"
            case .release: return "912f962d818740878f8be33c24fe79e2"
            case .recovery: return "9b0e1edf7b584e26a5e90213eef2e9c4"
            case .revert: return "b5d79b4eef6e4b2fb5a346c76e431377"
            case .restore: return "1992b2ef67ae4369b18727fed47000c4"
            case .archive: return "d9fa66dc36224802902edcf6ef0ee45c"
            case .remoteRefused: return "394131486ebf4b1291d60290ab2f0f67"
            case .remoteNotApplied: return "7bae8d9a2c28432eb045a894a7499f30"
            case .remoteStale: return "f5951db9287646ab96941364ba3dca85"
            case .probationStarted: return "6a2f9d4c1b8e47a3a5c7e0d2f4b6189c"
            case .probationPassed: return "5d1c0e8a3f7b4c6e9a2d4b8f1e3c7a90"
            case .probationFailed: return "c3a9e27d5b1f4e08a6d2c9b7e4f1a358"
            case .probationInconclusive: return "8e4b2f6a1d9c4a7b93e5f0c2d8a6b147"
            case .probationPromoted: return "2f7d9c1e6b3a4f58a0c4e9d2b7f3a61c"
            case .probationAborted: return "a61e4d8b2c9f47309d5b1e7c3a8f2d64"
            case .probationHeld: return "4b8e1f0d6a2c47e9b3d5a7c9e1f30b62"
            case .probationWouldRollBack: return "e7a3c5d1f9b24086a4c2e6b8d0f17a35"
            case .probationWouldHold: return "0c6f2a8e4d1b4973b5e9a1c7d3f52e80"
            case .other: return "ae42fedbd8f94b798fbb7ac02d9ed69f"
            }
        }

        /// syslog priority: 4 (warning) for what went wrong, 5 (notice) for decisions.
        public var priority: Int {
            switch self {
            case .fallback, .hungStart, .switchFailed, .remoteRefused, .remoteNotApplied, .remoteStale, .recovery,
                 .probationFailed, .probationInconclusive, .probationHeld, .probationAborted, .probationWouldRollBack: return 4
            default: return 5
            }
        }
    }

    /// The environment variable that points the entries at another socket (tests).
    public static let socketVariable = "SWITCHBACK_JOURNAL_SOCKET"
    /// journald's native socket.
    public static let defaultSocketPath = "/run/systemd/journal/socket"

    public var kind: Kind
    public var message: String
    /// Extra fields, in order: `SWITCHBACK_APP_ID`, `SWITCHBACK_SLOT`, ...
    public var fields: [(key: String, value: String)]

    public init(kind: Kind, message: String, fields: [(key: String, value: String)]) {
        self.kind = kind
        self.message = message
        self.fields = fields
    }

    public static func == (lhs: JournalEntry, rhs: JournalEntry) -> Bool {
        lhs.kind == rhs.kind && lhs.message == rhs.message
            && lhs.fields.map { "\($0.key)=\($0.value)" } == rhs.fields.map { "\($0.key)=\($0.value)" }
    }

    /// Every field of the datagram, in order.
    public var allFields: [(key: String, value: String)] {
        [("MESSAGE", message), ("MESSAGE_ID", kind.messageID), ("PRIORITY", String(kind.priority)),
         ("SYSLOG_IDENTIFIER", "switchback"), ("SWITCHBACK_EVENT", kind.rawValue)] + fields
    }

    /// The datagram: `KEY=VALUE\n` per field; a value holding a newline in the protocol's
    /// binary form (`KEY\n`, its length as 64-bit little-endian, the bytes, `\n`).
    public func datagram() -> [UInt8] {
        var bytes: [UInt8] = []
        for (key, value) in allFields {
            let utf8 = Array(value.utf8)
            bytes += Array(key.utf8)
            if utf8.contains(0x0A) {
                bytes.append(0x0A)
                var length = UInt64(utf8.count).littleEndian
                withUnsafeBytes(of: &length) { bytes += $0 }
            } else {
                bytes.append(0x3D)
            }
            bytes += utf8
            bytes.append(0x0A)
        }
        return bytes
    }

    /// Sends the entry to journald (or `$SWITCHBACK_JOURNAL_SOCKET`); silently nothing when
    /// the socket does not exist or refuses it: monitoring never fails a switch. Returns
    /// whether it was sent.
    @discardableResult
    public func send() -> Bool {
        let path = getenv(Self.socketVariable).map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? Self.defaultSocketPath
        var address = sockaddr_un()
        let length = switchback_unix_address(path, &address)
        guard length > 0, access(path, F_OK) == 0 else { return false }
        let fd = switchback_datagram_socket()
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let bytes = datagram()
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { target in
                bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), target, length) }
            }
        }
        return sent == bytes.count
    }
}

import CSwitchbackContract

/// An AppCore's ABI stamp: "switchback-abi/<contract version> toolchain/<compiler>".
public struct ABIStamp: Sendable, Equatable, CustomStringConvertible {
    /// The contract version the library was built against.
    public var contractVersion: UInt32
    /// The compiler that built it (Swift has no stable ABI on Linux).
    public var toolchain: String

    public init(contractVersion: UInt32, toolchain: String) {
        self.contractVersion = contractVersion
        self.toolchain = toolchain
    }

    /// Parses a stamp; nil when it is not one.
    public init?(_ text: String) {
        // On the UTF-8 bytes, not Characters: the launcher parses its own stamp and its slot's
        // at every start, and grapheme breaking cost more than the rest of the check.
        let bytes = text.utf8
        let prefix = "switchback-abi/".utf8, tool = "toolchain/".utf8
        guard bytes.starts(with: prefix), let space = bytes.firstIndex(of: 0x20) else { return nil }
        let number = Substring(bytes[bytes.index(bytes.startIndex, offsetBy: prefix.count)..<space])
        let rest = bytes[bytes.index(after: space)...]
        guard let version = UInt32(number), rest.starts(with: tool) else { return nil }
        self.init(contractVersion: version, toolchain: String(Substring(rest.dropFirst(tool.count))))
    }

    /// The stamp this code was compiled with.
    public static let own = ABIStamp(String(cString: switchback_compiled_abi_stamp()))!

    public var description: String { "switchback-abi/\(contractVersion) toolchain/\(toolchain)" }

    /// Nil when a launcher with stamp `own` can run a library with this stamp; otherwise
    /// the reason, as the end of a sentence. A launcher runs every contract version from 1
    /// up to its own, built by its own toolchain.
    public func incompatibility(with own: ABIStamp = .own) -> String? {
        if toolchain != own.toolchain {
            return "was built by another toolchain (\(toolchain)) than the launcher (\(own.toolchain)); build both slots and the launcher with one toolchain (scripts/bundle does)"
        }
        if contractVersion == 0 || contractVersion > own.contractVersion {
            return "uses contract version \(contractVersion), which this launcher (contract \(own.contractVersion)) does not know; use a launcher from the same bundle"
        }
        return nil
    }
}

#if canImport(Glibc)
import Glibc
#endif
import AppCoreStamp
import SwitchbackContract

/// What the app knows about how it was started: from the launcher's context, or, when it
/// runs linked directly into an executable, from its own build stamp.
public struct LaunchInfo {
    /// The slot running ("current" or "previous"); nil when not under the launcher.
    public var slot: String?
    /// This build's version.
    public var version: String
    /// This build's build id (the commit scripts/bundle stamped, or "dev").
    public var build: String
    /// The state directory the launcher uses; nil when not under the launcher.
    public var stateDirectory: String?
    /// The other slot's version; nil when not under the launcher.
    public var otherSlotVersion: String?
    private var context: UnsafePointer<SwitchbackContext>?

    /// Where the app keeps its data: `$SAMPLE_DATA_DIR`, else `data/` in the launcher's state
    /// directory, else `~/.local/share/switchback-sample`.
    public var dataDirectory: String {
        if let value = getenv("SAMPLE_DATA_DIR"), value.pointee != 0 { return String(cString: value) }
        if let stateDirectory { return stateDirectory + "/data" }
        return (getenv("HOME").map { String(cString: $0) } ?? "/tmp") + "/.local/share/switchback-sample"
    }

    /// Reads the launcher's context, checking `size` before every field it uses.
    public init(_ context: UnsafePointer<SwitchbackContext>?) {
        self.context = context
        version = String(cString: switchback_app_version())
        build = String(cString: switchback_app_build())
        guard let context, context.pointee.size >= MemoryLayout<SwitchbackContext>.offset(of: \.mark_good)! else { return }
        slot = context.pointee.slot == Int32(SWITCHBACK_SLOT_PREVIOUS.rawValue) ? "previous" : "current"
        stateDirectory = context.pointee.state_directory.map { String(cString: $0) }
        otherSlotVersion = context.pointee.other_slot_version.map { String(cString: $0) }
    }

    /// Tells the launcher this start is healthy. Harmless when not under the launcher.
    public func markGood() {
        guard let context, let markGood = context.pointee.mark_good else { return }
        _ = markGood(context)
    }
}

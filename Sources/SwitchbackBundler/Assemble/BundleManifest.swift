import Foundation
import SwitchbackCore

/// The bundle's manifest, written with the launcher's own serializer (`KeyValueText`) and
/// read back by the launcher's own parser (`Manifest.parse`) before the bundle is swapped in.
///
/// Besides each slot's record and the settings, it lists every bundled library as
/// `lib.<file name>=<size>,<sha256>` (the launcher checks each before it loads it), the
/// libraries the host must provide as `host.libraries=<name>:<package>,...`, the toolchain
/// that built the bundle, and the commit the current slot was built from.
enum BundleManifest {
    /// The bundled libraries the manifest records: file name, size, SHA-256.
    static func libraries(of manifest: Manifest) -> [(name: String, size: Int64, sha256: String)] {
        let settings = manifest.settings
        return (0..<settings.count).compactMap { index in
            let key = settings.key(at: index)
            guard key.hasPrefix("lib.") else { return nil }
            let fields = settings.value(at: index).split(separator: ",")
            guard fields.count == 2, let size = Int64(fields[0]) else { return nil }
            return (String(key.dropFirst(4)), size, String(fields[1]))
        }
    }

    /// One slot's lines.
    struct Slot {
        var inspected: [(key: String, value: String)]  // version, build, abi, size, sha256, ... (rollbackctl inspect)
        var needed: [String]  // bundle-relative, load order
    }

    static func make(appID: String, settings: [(String, String)], toolchain: String, commit: String?, previousCommit: String?,
                     current: Slot, previous: Slot, libraries: [(name: String, size: Int64, sha256: String)],
                     host: [LibraryPlan.Host]) -> [UInt8] {
        var text = KeyValueText()
        text.append("format", String(Manifest.currentFormat))
        text.append("app_id", appID)
        text.append("toolchain", toolchain)
        if let commit { text.append("current.commit", commit) }
        if let previousCommit { text.append("previous.commit", previousCommit) }
        for (key, value) in settings { text.append(key, value) }
        for (name, slot) in [("current", current), ("previous", previous)] {
            for (key, value) in slot.inspected { text.append("\(name).\(key)", value) }
            text.append("\(name).needed", slot.needed.joined(separator: ","))
        }
        for library in libraries { text.append("lib.\(library.name)", "\(library.size),\(library.sha256)") }
        if !host.isEmpty { text.append("host.libraries", host.map { "\($0.name):\($0.package)" }.joined(separator: ",")) }
        let header = "# Switchback bundle manifest, written by switchback-bundle. Do not edit: the launcher checks slots and libraries against it.\n"
        return Array(header.utf8) + text.serialized()
    }
}

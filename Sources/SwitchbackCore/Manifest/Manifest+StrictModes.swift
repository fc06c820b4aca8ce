#if canImport(Glibc)
import Glibc
#endif

extension Manifest {
    /// Checks the bundle the way sshd checks a path (`StrictModes`): the bundle root, `bin/`
    /// and `slots/` are real directories (no links) owned by this user or root and not
    /// writable by group or others, and so is every directory above the root (a sticky one
    /// like /tmp may be world-writable). A missing `bin/` or `slots/` is left to the checks
    /// that need them. Throws `.insecurePermissions`.
    public static func checkBundleDirectories(bundleRoot: String) throws(SwitchbackError) {
        try StrictModes.checkDirectory(bundleRoot, what: "bundle directory")
        for name in ["bin", "slots"] {
            let path = bundleRoot + "/" + name
            guard let info = try StrictModes.linkStatus(path) else { continue }
            if FileMode.type(info) == FileMode.symbolicLink {
                throw SwitchbackError(.insecurePermissions, "The bundle's \(name) directory \(path) is a symbolic link; refusing to follow it: replace it with the real directory.", path: path)
            }
            try StrictModes.checkOwnerAndMode(info, path: path, what: "bundle's \(name) directory")
            if FileMode.type(info) == FileMode.directory { TrustedDirectories.insert(path, strictly: true) }
        }
    }

    /// The manifest's own strict-mode refusal, named as the manifest's.
    static func manifestUntrusted(_ error: SwitchbackError, path: String) -> SwitchbackError {
        var refusal = error
        if refusal.message.hasPrefix("The file ") {
            refusal.message = "The manifest " + refusal.message.dropFirst("The file ".count)
        }
        return refusal
    }
}

import Foundation

/// The Swift toolchain that builds every shipped file: its `swift`, its version, the
/// directory of its runtime libraries (what the bundle carries), and its `llvm-objcopy`
/// (what strips the slots). Nothing else from the build machine reaches the bundle.
public struct Toolchain: Sendable {
    public var swift: String
    /// `swift --version`'s first line, e.g. "Swift version 6.3.1 (swift-6.3.1-RELEASE)".
    public var version: String
    /// Where the runtime libraries are (`swift -print-target-info`'s runtimeLibraryPaths).
    public var runtimeDirectories: [String]
    public var objcopy: String
    /// The toolchain's C compiler: it compiles the slots' version stamps.
    public var clang: String

    /// Finds the toolchain of the `swift` on PATH. With `record`, its version and runtime
    /// directories are remembered there while the driver and frontend files are unchanged.
    public static func find(record: String? = nil) throws(BundlerError) -> Toolchain {
        guard let swift = Command.find("swift") else {
            throw BundlerError(.tool, "Cannot find swift on PATH; install Swift 6.3 and put its usr/bin on PATH.")
        }
        let resolved = URL(fileURLWithPath: swift).resolvingSymlinksInPath().path
        let bin = URL(fileURLWithPath: resolved).deletingLastPathComponent().path
        func probe() throws(BundlerError) -> String {
            let version = try Command(swift, ["--version"]).output { BundlerError(.tool, "swift --version failed: \($0)") }
                .split(separator: "\n").first.map(String.init) ?? ""
            let info = try Command(swift, ["-print-target-info"]).output { BundlerError(.tool, "swift -print-target-info failed: \($0)") }
            struct TargetInfo: Decodable { var paths: Paths; struct Paths: Decodable { var runtimeLibraryPaths: [String] } }
            guard let decoded = try? JSONDecoder().decode(TargetInfo.self, from: Data(info.utf8)), !decoded.paths.runtimeLibraryPaths.isEmpty else {
                throw BundlerError(.tool, "swift -print-target-info names no runtime library directory; use a Swift 6 toolchain.")
            }
            return ([version] + decoded.paths.runtimeLibraryPaths).joined(separator: "\n")
        }
        let key = [swift, resolved, bin + "/swift-frontend"].map(Remembered.identity(of:)).joined(separator: "; ")
        let answer: String
        if let record { answer = try Remembered.answer(at: record, key: "toolchain " + key, probe) } else { answer = try probe() }
        let lines = answer.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let version = lines[0]
        let runtimeDirectories = Array(lines.dropFirst())
        guard let objcopy = Command.find("llvm-objcopy", extraDirectories: [bin]) else {
            throw BundlerError(.tool, "Cannot find llvm-objcopy beside \(resolved); the Swift toolchain ships it in usr/bin: reinstall the toolchain.")
        }
        guard let clang = Command.find("clang", extraDirectories: [bin]) else {
            throw BundlerError(.tool, "Cannot find clang beside \(resolved); the Swift toolchain ships it in usr/bin: reinstall the toolchain.")
        }
        return Toolchain(swift: swift, version: version, runtimeDirectories: runtimeDirectories, objcopy: objcopy, clang: clang)
    }
}

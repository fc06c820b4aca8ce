// swift-tools-version:6.0
import Foundation
import PackageDescription

// The sample app's version lives in one place, the VERSION file; the build id comes from
// the environment (scripts/bundle passes the commit). Both are stamped into AppCore.
let appVersion = ((try? String(contentsOfFile: Context.packageDirectory + "/VERSION", encoding: .utf8)) ?? "0.0.0")
    .trimmingCharacters(in: .whitespacesAndNewlines)
let appBuild = ProcessInfo.processInfo.environment["SWITCHBACK_APP_BUILD"] ?? "dev"

let package = Package(
    name: "Switchback",
    products: [
        .library(name: "AppCore", type: .dynamic, targets: ["AppCore"]),
        .executable(name: "launcher", targets: ["launcher"]),
        .executable(name: "rollbackctl", targets: ["rollbackctl"]),
        .executable(name: "rollbackctl-remote", targets: ["rollbackctl-remote"]),
        .executable(name: "appcore-direct", targets: ["appcore-direct"]),
        .executable(name: "switchback-fuzz", targets: ["switchback-fuzz"]),
        .library(name: "AppVersions", targets: ["AppVersions"]),
    ],
    targets: [
        // The contract between launcher and AppCore: one C header, nothing else crosses.
        .target(name: "SwitchbackContract"),
        // The version and build stamped into AppCore at build time.
        .target(
            name: "AppCoreStamp",
            cSettings: [
                .define("SWITCHBACK_APP_VERSION", to: "\"\(appVersion)\""),
                .define("SWITCHBACK_APP_BUILD", to: "\"\(appBuild)\""),
            ]
        ),
        // State, manifest, decision and loading: no Foundation, so the launcher stays thin.
        // Wrappers of the C calls Swift cannot make (prctl, the wait(2) macros).
        .target(name: "SwitchbackSystem"),
        .target(name: "SwitchbackCore", dependencies: ["SwitchbackContract", "SwitchbackSystem"]),
        .executableTarget(name: "launcher", dependencies: ["SwitchbackCore", "SwitchbackContract"]),
        .target(name: "RollbackCtlKit", dependencies: ["SwitchbackCore", "SwitchbackContract"]),
        .executableTarget(name: "rollbackctl", dependencies: ["RollbackCtlKit"]),
        // Remote directives (docs/remote.md): the system's libcrypto through a module map,
        // Ed25519 and SHA-256 over it, and the signed directive's format, fetch and checks.
        // Only rollbackctl-remote links these: FoundationNetworking costs ~9 ms and libcrypto
        // ~2 ms at every start, which neither the launcher nor `rollbackctl status` may pay.
        .systemLibrary(name: "CSwitchbackCrypto", path: "Sources/CSwitchbackCrypto"),
        .target(name: "SwitchbackCrypto", dependencies: ["CSwitchbackCrypto"]),
        .target(name: "SwitchbackRemote", dependencies: ["SwitchbackCrypto"]),
        // `rollbackctl sync|keygen|sign`: rollbackctl executes this program for them.
        .target(name: "RemoteCtlKit", dependencies: ["RollbackCtlKit", "SwitchbackCore", "SwitchbackRemote"]),
        .executableTarget(name: "rollbackctl-remote", dependencies: ["RemoteCtlKit"]),
        // The sample app. Replace it with your own code; keep the two exported symbols.
        .target(name: "AppCore", dependencies: ["SwitchbackContract", "AppCoreStamp", "AppVersions"]),
        // Version history and run-once migrations, for the app to call from inside AppCore.
        .target(name: "AppVersions"),
        .executableTarget(name: "appversions-fixture", dependencies: ["AppVersions"]),
        .executableTarget(name: "appversions-bench", dependencies: ["AppVersions"]),
        .testTarget(name: "AppVersionsTests", dependencies: ["AppVersions", "appversions-fixture"]),
        // The same app linked directly into an executable: the benchmark's baseline.
        .executableTarget(name: "appcore-direct", dependencies: ["AppCore"]),
        .testTarget(name: "SwitchbackCoreTests", dependencies: ["SwitchbackCore"]),
        // Fuzzing (docs/fuzzing.md): one target per parser in a library the tests also run over
        // the kept regressions, and an executable that is libFuzzer's harness when scripts/fuzz
        // builds it with -sanitize=fuzzer -DSWITCHBACK_LIBFUZZER, and a replayer otherwise.
        .target(name: "SwitchbackFuzzing", dependencies: ["SwitchbackCore", "SwitchbackRemote", "SwitchbackCrypto", "AppVersions"]),
        .executableTarget(name: "switchback-fuzz", dependencies: ["SwitchbackFuzzing"]),
        .testTarget(name: "SwitchbackFuzzingTests", dependencies: ["SwitchbackFuzzing", "SwitchbackCore"]),
        .testTarget(name: "EndToEndTests", dependencies: ["SwitchbackCore"]),
        .testTarget(name: "SwitchbackCryptoTests", dependencies: ["SwitchbackCrypto"]),
        .testTarget(name: "SwitchbackRemoteTests", dependencies: ["SwitchbackRemote", "SwitchbackCrypto"],
                    exclude: ["Fixtures"]),
    ],
    swiftLanguageModes: [.v6]
)

// swift-tools-version:6.0
import Foundation
import PackageDescription

// The version and build the SDK stamps into an app's library come from the environment of
// the build: the bundle command (scripts/bundle) passes the app's VERSION file and commit.
// A plain `swift build` stamps 0.0.0-dev and dev. This manifest is also evaluated as a
// dependency of every app that adopts Switchback, so it reads nothing of its own here.
let environment = ProcessInfo.processInfo.environment
let appVersion = environment["SWITCHBACK_APP_VERSION"].flatMap { $0.isEmpty ? nil : $0 } ?? "0.0.0-dev"
let appBuild = environment["SWITCHBACK_APP_BUILD"].flatMap { $0.isEmpty ? nil : $0 } ?? "dev"

let package = Package(
    name: "Switchback",
    products: [
        // The SDK an app's dynamic library imports (docs/adopting.md).
        .library(name: "Switchback", targets: ["Switchback"]),
        // The sample app, written as an outside app is: a dynamic library using the SDK.
        .library(name: "AppCore", type: .dynamic, targets: ["AppCore"]),
        .executable(name: "launcher", targets: ["launcher"]),
        .executable(name: "rollbackctl", targets: ["rollbackctl"]),
        .executable(name: "rollbackctl-remote", targets: ["rollbackctl-remote"]),
        // `swift run switchback-bundle` in an app's package: builds its bundle (scripts/bundle).
        .executable(name: "switchback-bundle", targets: ["switchback-bundle"]),
        .library(name: "AppVersions", targets: ["AppVersions"]),
        // The developer tools (appcore-direct, slot-floor, appversions-bench, appversions-fixture,
        // switchback-fuzz) are executable targets and deliberately no products: SwiftPM makes
        // products of them only where Switchback is the root package (this checkout: scripts/bench,
        // scripts/fuzz, the tests), so an app that depends on Switchback sees none of them.
    ],
    targets: [
        // The contract between launcher and AppCore: one C header, nothing else crosses.
        .target(name: "CSwitchbackContract"),
        // The SDK: the contract's exports (entry point, downgrade, stamp, version, build) for
        // the app's library, the app's registration, its launch info and its data lifecycle.
        .target(
            name: "CSwitchbackSDKSupport",
            dependencies: ["CSwitchbackContract"],
            cSettings: [
                .define("SWITCHBACK_APP_VERSION", to: "\"\(appVersion)\""),
                .define("SWITCHBACK_APP_BUILD", to: "\"\(appBuild)\""),
            ]
        ),
        .target(name: "Switchback", dependencies: ["CSwitchbackSDKSupport", "CSwitchbackContract", "AppVersions", "SwitchbackFiles", "SystemdNotify"]),
        // systemd's sd_notify protocol without libsystemd (READY=1, EXTEND_TIMEOUT_USEC=, WATCHDOG=1),
        // Glibc only: the SDK and AppVersions tell systemd, or the supervisor, how a start goes.
        .target(name: "SystemdNotify"),
        // The bundler (docs/deploying.md): builds, plans libraries, assembles and checks a
        // self-contained bundle; the command and the tests share it.
        .target(name: "SwitchbackBundler", dependencies: ["SwitchbackCore"]),
        .executableTarget(name: "switchback-bundle", dependencies: ["SwitchbackBundler"]),
        // State, manifest, decision and loading: no Foundation, so the launcher stays thin.
        // Wrappers of the C calls Swift cannot make (prctl, the wait(2) macros).
        .target(name: "CSwitchbackSystem"),
        // The one file-system layer every writer uses (directories opened and checked once,
        // everything relative to their descriptor, no link followed), Glibc only: the
        // launcher, rollbackctl, the SDK and AppVersions all write through it.
        .target(name: "SwitchbackFiles"),
        .target(name: "SwitchbackCore", dependencies: ["CSwitchbackContract", "CSwitchbackSystem", "SwitchbackFiles", "SystemdNotify"]),
        // The launcher's `bind`, which hands a supervised child the supervisor's listening
        // socket when the app binds that address itself (docs/supervise.md). Only the
        // launcher links it; scripts/bundle exports the symbol from the launcher.
        .target(name: "CSwitchbackListen"),
        .executableTarget(name: "launcher", dependencies: ["SwitchbackCore", "CSwitchbackContract", "CSwitchbackListen"]),
        .target(name: "RollbackCtlKit", dependencies: ["SwitchbackCore", "CSwitchbackContract"]),
        .executableTarget(name: "rollbackctl", dependencies: ["RollbackCtlKit"]),
        // Remote directives (docs/remote.md): the system's libcrypto through a module map,
        // Ed25519 and SHA-256 over it, and the signed directive's format, fetch and checks.
        // Only rollbackctl-remote links these: Foundation costs ~2-3 ms and libcrypto
        // ~2 ms at every start, which neither the launcher nor `rollbackctl status` may pay.
        .systemLibrary(name: "CSwitchbackCrypto", path: "Sources/CSwitchbackCrypto"),
        .target(name: "SwitchbackCrypto", dependencies: ["CSwitchbackCrypto"]),
        // One bounded HTTP GET over the system's libcurl (dlopen'ed; never told to decode a
        // body): URLSession could not be bounded (it always lets libcurl inflate gzip and
        // queues every chunk without back-pressure; docs/remote.md, "Bounded memory and time").
        .target(name: "CSwitchbackHTTP"),
        // Which process accepted a probe's connection, asked of the kernel (sock_diag, /proc/PID/fd):
        // the analyzer tells the baseline's answers from the canary's on one shared socket.
        .target(name: "CSwitchbackProbe"),
        .target(name: "SwitchbackRemote", dependencies: ["SwitchbackCrypto", "CSwitchbackHTTP", "SwitchbackFiles"]),
        // The analysis of a bake window or a rollout step (docs/analysis.md): http probes
        // and Prometheus queries over the system's libcurl, judged by SwitchbackCore/Analysis.
        // Only rollbackctl-remote links it: the launcher runs it as a separate process.
        .target(name: "SwitchbackAnalysis", dependencies: ["SwitchbackCore", "SwitchbackRemote", "CSwitchbackHTTP", "CSwitchbackProbe"]),
        // `rollbackctl sync|keygen|sign`: rollbackctl executes this program for them.
        .target(name: "RemoteCtlKit", dependencies: ["RollbackCtlKit", "SwitchbackCore", "SwitchbackRemote", "SwitchbackAnalysis", "SwitchbackCrypto", "CSwitchbackHTTP"]),
        .executableTarget(name: "rollbackctl-remote", dependencies: ["RemoteCtlKit"]),
        // The sample app: a user of the SDK like any other app.
        .target(name: "AppCore", dependencies: ["Switchback"]),
        // Version history and run-once migrations, for the app to call from inside AppCore.
        .target(name: "AppVersions", dependencies: ["SystemdNotify", "SwitchbackFiles"]),
        .executableTarget(name: "appversions-fixture", dependencies: ["AppVersions"]),
        .executableTarget(name: "appversions-bench", dependencies: ["AppVersions"]),
        .testTarget(name: "AppVersionsTests", dependencies: ["AppVersions", "SystemdNotify", "appversions-fixture", "SwitchbackTestSupport"]),
        // The same app linked directly into an executable: the benchmark's baseline.
        .executableTarget(name: "appcore-direct", dependencies: ["AppCore", "Switchback"]),
        // scripts/bench's floor: the slot opened and called with no checks (never shipped).
        .executableTarget(name: "slot-floor", dependencies: ["CSwitchbackContract"]),
        // What several test targets share (a seeded generator, an sd_notify receiver, the
        // python3 test servers' process); a target, not a product, so an adopting app never sees it.
        .target(name: "SwitchbackTestSupport"),
        .testTarget(name: "SwitchbackCoreTests", dependencies: ["SwitchbackCore", "SwitchbackFiles", "SwitchbackTestSupport"]),
        .testTarget(name: "SwitchbackSDKTests", dependencies: ["Switchback", "SwitchbackCore", "SystemdNotify", "SwitchbackTestSupport"]),
        // Fuzzing (docs/fuzzing.md): one target per parser in a library the tests also run over
        // the kept regressions, and an executable that is libFuzzer's harness when scripts/fuzz
        // builds it with -sanitize=fuzzer -DSWITCHBACK_LIBFUZZER, and a replayer otherwise.
        .target(name: "SwitchbackFuzzing", dependencies: ["SwitchbackCore", "SwitchbackRemote", "SwitchbackCrypto", "AppVersions", "SwitchbackBundler"]),
        .executableTarget(name: "switchback-fuzz", dependencies: ["SwitchbackFuzzing"]),
        .testTarget(name: "SwitchbackFuzzingTests", dependencies: ["SwitchbackFuzzing", "SwitchbackCore"]),
        .testTarget(name: "EndToEndTests", dependencies: ["SwitchbackCore", "SwitchbackBundler", "RollbackCtlKit", "SwitchbackTestSupport"]),
        .testTarget(name: "SwitchbackCryptoTests", dependencies: ["SwitchbackCrypto"]),
        .testTarget(name: "SwitchbackBundlerTests", dependencies: ["SwitchbackBundler", "SwitchbackCore"]),
        .testTarget(name: "SwitchbackAnalysisTests", dependencies: ["SwitchbackAnalysis", "SwitchbackCore", "SwitchbackTestSupport"]),
        // rollbackctl-remote's own logic without a process: the rollout's plan, state machine and driver.
        .testTarget(name: "RemoteCtlKitTests", dependencies: ["RemoteCtlKit", "RollbackCtlKit", "SwitchbackCore", "SwitchbackRemote", "SwitchbackCrypto"]),
        .testTarget(name: "SwitchbackRemoteTests", dependencies: ["SwitchbackRemote", "SwitchbackCrypto", "SwitchbackFiles", "SwitchbackTestSupport"],
                    exclude: ["Fixtures"]),
    ],
    swiftLanguageModes: [.v6]
)

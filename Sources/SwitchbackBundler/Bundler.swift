import Foundation
import SwitchbackCore

/// Builds a self-contained bundle of an app package: plan, build, assemble, check, swap in.
///
/// The bundle runs on any host of the build's distribution and architecture that has the
/// base system (glibc, libstdc++, libgcc_s) and the host libraries its manifest lists: the
/// Swift runtime travels in `lib/`, and no shipped file names a path of the build machine,
/// so the bundle also works after being moved. Everything is written under the output
/// directory and the build directories; nothing runs as another user or installs anything.
public struct Bundler {
    public var options: BundleOptions
    /// The Switchback checkout the launcher and tools are built from.
    public var switchbackRoot: String
    /// Progress lines ("bundle: ...") go here.
    public var say: (String) -> Void

    public init(options: BundleOptions, switchbackRoot: String, say: @escaping (String) -> Void) {
        self.options = options
        self.switchbackRoot = switchbackRoot
        self.say = say
    }

    /// The libraries Switchback itself opens with `dlopen`: the host's, listed in the manifest.
    static let dlopened = ["libcrypto.so.3", "libcurl.so.4"]

    /// What was written.
    public struct Result: Sendable {
        public var out: String
        public var manifestSHA256: String
        public var size: Int64
        public var hostLibraries: [LibraryPlan.Host]
        public var currentVersion: String
        public var previousVersion: String
    }

    public func run() throws(BundlerError) -> Result {
        let fileManager = FileManager.default
        let appRoot = URL(fileURLWithPath: options.package, relativeTo: URL(fileURLWithPath: fileManager.currentDirectoryPath)).standardizedFileURL.path
        guard fileManager.fileExists(atPath: appRoot + "/Package.swift") else {
            throw BundlerError(.package, "\(appRoot) has no Package.swift; run the bundle command in the app's package (or pass --package DIR).", path: appRoot)
        }
        let isSample = appRoot == switchbackRoot
        let work = appRoot + "/.build-switchback"
        let out = options.out.map { URL(fileURLWithPath: $0, relativeTo: URL(fileURLWithPath: fileManager.currentDirectoryPath)).standardizedFileURL.path } ?? appRoot + "/dist"
        try? fileManager.createDirectory(atPath: work + "/logs", withIntermediateDirectories: true)
        let toolchain = try Toolchain.find(record: work + "/toolchain.record")

        // The product, the app id, the version.
        let product: String
        if let named = options.product { product = named } else if isSample { product = "AppCore" } else {
            let products = try AppPackage(directory: appRoot).dynamicLibraryProducts(toolchain: toolchain, scratch: work + "/current",
                                                                                     record: work + "/products.record")
            guard products.count == 1 else {
                throw products.isEmpty
                    ? BundlerError(.package, "\(appRoot) declares no dynamic library product; add .library(name: \"MyApp\", type: .dynamic, targets: [...]) (docs/adopting.md).")
                    : BundlerError(.package, "\(appRoot) declares several dynamic library products (\(products.joined(separator: " "))); pass --product NAME.")
            }
            product = products[0]
        }
        let appID = options.appID ?? ProcessInfo.processInfo.environment["SWITCHBACK_APP_ID"].flatMap { $0.isEmpty ? nil : $0 } ?? (isSample ? "dev.switchback.sample" : product)
        guard let currentVersion = AppPackage.version(in: appRoot) else {
            throw BundlerError(.package, "\(appRoot)/VERSION is missing or empty; write the app's version there (for example 1.0.0) and commit it.", path: appRoot + "/VERSION")
        }
        var settings = try manifestSettings()

        // Which commit is the previous release, and where its slot comes from.
        let history = try? GitHistory(packageDirectory: appRoot)
        let isRepository = history?.isRepository ?? false
        let pinned = isRepository ? try history!.pinnedCommit() : nil
        let head = isRepository ? try history!.head() : nil
        if !isRepository && options.buildID == nil {
            throw BundlerError(.history, "\(appRoot) is not in a git repository (a Docker build context without .git?); pass --build-id ID, and --previous-from with the last release's tarball (or --first-release).")
        }
        if isRepository, pinned == nil, !options.firstRelease, options.previousFrom == nil {
            throw BundlerError(.history, "PreviousVersion/ is not pinned to a commit; pin the previous release with 'scripts/pin-previous REV' (docs/adopting.md), or pass --first-release for an app's first release.")
        }
        if !isRepository, !options.firstRelease, options.previousFrom == nil {
            throw BundlerError(.history, "Without .git the bundler cannot build the previous release from history; pass --previous-from with the last release's tarball, or --first-release.")
        }
        if let pinned, options.firstRelease {
            throw BundlerError(.history, "--first-release, but PreviousVersion/ is pinned to \(pinned); drop --first-release to bundle that release as the previous slot.")
        }
        // Without .git, a build id that is a full commit id (CI's $GITHUB_SHA) is recorded as the
        // commit, so that the next release can take this bundle as its previous artifact.
        let commit = head ?? options.buildID.flatMap { Self.isCommitID($0) ? $0 : nil }
        var currentBuild = options.buildID.map { Self.isCommitID($0) ? String($0.prefix(12)) : $0 } ?? String(head!.prefix(12))
        if options.buildID == nil, isRepository, try history!.isDirty() { currentBuild += "-dirty" }
        if !isRepository, let artifact = options.previousFrom {
            say("no .git: \(artifact)'s commit cannot be checked against a PreviousVersion/ pin")
        }

        // Switchback's own checkout, when the app reaches it by a path outside its repository:
        // mapped too, so the SDK's source paths do not depend on where it is cloned.
        let top = isRepository ? try history!.layout().top : appRoot
        var sdkMaps: [(String, String)] = []
        if !(switchbackRoot + "/").hasPrefix(top + "/") { sdkMaps = [(switchbackRoot, "/switchback/sdk")] }

        // The previous release's artifact is checked before anything is built: a wrong one
        // is refused at once.
        let artifact = try options.previousFrom.map { (from) throws(BundlerError) in
            try PreviousArtifact.open(from, work: work + "/previous-artifact", pinned: pinned, toolchain: toolchain)
        }

        // 1. The programs, from Switchback (built beside it when it is writable, else in the app's work directory).
        let tools = fileManager.isWritableFile(atPath: switchbackRoot) ? switchbackRoot : work
        say("building Switchback's rollbackctl-remote")
        let remoteBin = try SwiftBuild(toolchain: toolchain, package: switchbackRoot, scratch: tools + "/.build-tools", product: "rollbackctl-remote",
                                       pathMaps: [(switchbackRoot, "/switchback/src"), (tools + "/.build-tools", "/switchback/build")])
            .runUnlessUnchanged(log: work + "/logs/rollbackctl-remote.log", what: "rollbackctl-remote")
        say("building the launcher and rollbackctl without the Concurrency and StringProcessing runtimes")
        // They use neither, and each runtime a program links sits in every symbol lookup of
        // every start. The launcher exports `bind`, `accept` and `accept4` (CSwitchbackListen:
        // docs/supervise.md); their C code carries DWARF 4, which Debian 12's valgrind reads.
        let lean = ["-Xswiftc", "-Xfrontend", "-Xswiftc", "-disable-implicit-concurrency-module-import",
                    "-Xswiftc", "-Xfrontend", "-Xswiftc", "-disable-implicit-string-processing-module-import",
                    "-Xswiftc", "-Xfrontend", "-Xswiftc", "-disable-concrete-type-metadata-mangled-name-accessors",
                    "-Xlinker", "--export-dynamic-symbol=bind", "-Xlinker", "--export-dynamic-symbol=listen",
                    "-Xlinker", "--export-dynamic-symbol=accept",
                    "-Xlinker", "--export-dynamic-symbol=accept4", "-Xcc", "-gdwarf-4"]
        var launcherBin = ""
        for program in ["launcher", "rollbackctl"] {
            launcherBin = try SwiftBuild(toolchain: toolchain, package: switchbackRoot, scratch: tools + "/.build-launcher", product: program,
                                         pathMaps: [(switchbackRoot, "/switchback/src"), (tools + "/.build-launcher", "/switchback/build")], extraFlags: lean)
                .runUnlessUnchanged(log: work + "/logs/\(program).log", what: program)
        }

        // 2. The slots.
        func buildSlot(package: String, repository: String, scratch: String, version: String, build: String,
                       previous: Bool = false) throws(BundlerError) -> String {
            let stamp = try SwiftBuild.stamp(version: version, build: build, object: scratch + "-stamp/stamp.o",
                                             scratch: scratch, product: product, toolchain: toolchain)
                + SwiftBuild.exports(at: scratch + "-stamp/exports.map", scratch: scratch, product: product)
            // A previous release whose own sources carry an SDK older than the linked stamp reads
            // its version and build from build-time defines (through the manifest's environment),
            // as it did when it was released, so it is built byte for byte as it shipped. They
            // are constant for one pin: no re-planning at every release.
            // (An app that reaches Switchback outside its repository builds both slots with this
            // checkout's SDK, which reads the stamp.)
            // (Its directory is Sources/SwitchbackSDKSupport in releases before the C targets took
            // the C prefix.)
            let sdk = ["CSwitchbackSDKSupport", "SwitchbackSDKSupport"].map { repository + "/Sources/\($0)/sdk.c" }
            let legacy = previous && sdkMaps.isEmpty
                && !sdk.contains { (try? String(contentsOfFile: $0, encoding: .utf8))?.contains("switchback_stamped_app_version") ?? false }
            let defines = legacy ? ["SWITCHBACK_APP_VERSION": version, "SWITCHBACK_APP_BUILD": build] : [:]
            let bin = try SwiftBuild(toolchain: toolchain, package: package, scratch: scratch, product: product,
                                     pathMaps: [(repository, "/switchback/src"), (scratch, "/switchback/build")] + sdkMaps,
                                     environment: defines, extraFlags: stamp, isProgram: false,
                                     forcesResolvedVersions: fileManager.fileExists(atPath: package + "/Package.resolved"))
                .run(log: work + "/logs/slot-\(version).log", what: "\(product) \(version)")
            let library = bin + "/lib\(product).so"
            guard fileManager.fileExists(atPath: library) else {
                throw BundlerError(.package, "Building \(product) produced no lib\(product).so; declare it as .library(name: \"\(product)\", type: .dynamic, ...).")
            }
            return library
        }
        say("building the current release (\(product) \(currentVersion), build \(currentBuild))")
        let currentLibrary = try buildSlot(package: appRoot, repository: top, scratch: work + "/current", version: currentVersion, build: currentBuild)

        var previousLibrary = currentLibrary
        var previousCommit = pinned
        if let artifact {
            say("taking the previous slot (\(artifact.record.version), build \(artifact.record.build)) from \(options.previousFrom!)")
            previousCommit = artifact.commit
        } else if let pinned {
            try history!.ensure(pinned)
            let prefix = try history!.layout().prefix
            let repository = work + "/previous/repo"
            let marker = work + "/previous/repo.commit"
            if (try? String(contentsOfFile: marker, encoding: .utf8)) != pinned {
                say("extracting the previous release (\(pinned)) from git history")
                try history!.extract(pinned, into: repository)
                try? pinned.write(toFile: marker, atomically: true, encoding: .utf8)
            }
            let source = prefix.isEmpty ? repository : repository + "/" + String(prefix.dropLast())
            guard let previousVersion = AppPackage.version(in: source) else {
                throw BundlerError(.history, "The previous release (\(pinned)) has no VERSION file; pin a commit that has one.")
            }
            if previousVersion == currentVersion {
                FileHandle.standardError.write(Data("Warning: the previous release (\(pinned)) has the same version (\(currentVersion)) as the working tree; bump VERSION so the two slots can be told apart.\n".utf8))
            }
            say("building the previous release (\(product) \(previousVersion), build \(pinned.prefix(12)))")
            previousLibrary = try buildSlot(package: source, repository: repository, scratch: work + "/previous/build",
                                            version: previousVersion, build: String(pinned.prefix(12)), previous: true)
        } else {
            say("first release: the previous slot holds the current build; rollbacks are refused until the next release")
        }

        // 3. Assemble in a temporary directory beside the output, then swap it in.
        let stage = out + ".tmp-\(getpid())"
        let assembler = Assembler(stage: stage, toolchain: toolchain, cache: work + "/prepared")
        defer { try? fileManager.removeItem(atPath: stage) }
        try assembler.prepare()
        try assembler.installProgram(launcherBin + "/launcher", named: "launcher")
        try assembler.installProgram(launcherBin + "/rollbackctl", named: "rollbackctl")
        try assembler.installProgram(remoteBin + "/rollbackctl-remote", named: "rollbackctl-remote")
        try assembler.installSlot(built: currentLibrary, slot: "current", strip: !options.keepDebugInfo)
        if let artifact {
            try assembler.install(artifact.slot, as: "slots/previous/libAppCore.so", mode: 0o644)
            if let debug = artifact.debugSlot {
                try assembler.installPrepared(debug, as: "debug/previous/libAppCore.so.debug", mode: 0o644, stripped: false)
            }
        } else {
            try assembler.installSlot(built: previousLibrary, slot: "previous", strip: !options.keepDebugInfo)
        }
        let shipped = try ["bin/launcher", "bin/rollbackctl", "bin/rollbackctl-remote", "slots/current/libAppCore.so", "slots/previous/libAppCore.so"]
            .map { (file) throws(BundlerError) in try ELFFile(path: stage + "/" + file) }
        let plan = try LibraryPlan.make(for: shipped, toolchain: toolchain, dlopened: Self.dlopened,
                                        packages: PackageIndex(record: work + "/packages.record"))
        let libraries = try assembler.installLibraries(plan, cache: work + "/lib-cache")
        for slot in ["current", "previous"] {
            say("\(slot) slot: \(assembler.size(of: "slots/\(slot)/libAppCore.so")) bytes shipped")
        }

        // 4. The manifest, checked with the launcher's own parser.
        if !settings.contains(where: { $0.0 == "remote.keys" }), settings.contains(where: { $0.0 == "remote.url" }) {
            throw BundlerError(.usage, "--directive-url needs at least one --trust-key FILE: installs refuse directives signed by no trusted key.")
        }
        let rollbackctl = stage + "/bin/rollbackctl"
        func inspect(_ slot: String, needed: ELFFile) throws(BundlerError) -> BundleManifest.Slot {
            let text = try Command(rollbackctl, ["inspect", stage + "/slots/\(slot)/libAppCore.so"])
                .output { BundlerError(.build, "rollbackctl inspect could not read the \(slot) slot: \($0)") }
            let pairs = text.split(separator: "\n").compactMap { line -> (String, String)? in
                let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
            }
            return BundleManifest.Slot(inspected: pairs, needed: plan.loadOrder(of: needed).map { "lib/" + $0 })
        }
        if settings.first(where: { $0.0 == "supervise" }) == nil { settings.insert(("supervise", "false"), at: 0) }
        if settings.first(where: { $0.0 == "trial.good_on_exit_zero" }) == nil { settings.insert(("trial.good_on_exit_zero", "true"), at: 0) }
        if settings.first(where: { $0.0 == "trial.tries" }) == nil { settings.insert(("trial.tries", "3"), at: 0) }
        if options.firstRelease { settings.insert(("first_release", "true"), at: 0) }
        let manifest = BundleManifest.make(appID: appID, settings: settings, toolchain: toolchain.version,
                                           commit: commit, previousCommit: previousCommit,
                                           current: try inspect("current", needed: shipped[3]), previous: try inspect("previous", needed: shipped[4]),
                                           libraries: libraries, host: plan.host)
        let parsed: Manifest
        do { parsed = try Manifest.parse(manifest, path: stage + "/manifest") } catch {
            throw BundlerError(.output, "The manifest the bundler wrote does not read back: \(error.message) This is a bug in switchback-bundle.")
        }
        try assembler.write(manifest, as: "manifest")

        // 5. Swap in, then the tarball.
        try? fileManager.removeItem(atPath: out)
        guard rename(stage, out) == 0 else {
            throw BundlerError(.output, "Cannot move the bundle into place at \(out): \(String(cString: strerror(errno))).", path: out)
        }
        if let tarball = options.tarball { try Archive.write(out, to: tarball) }
        let digest: String
        do { digest = try FileDigest.hexDigest(ofFile: out + "/manifest") } catch { throw BundlerError(.output, error.message) }
        return Result(out: out, manifestSHA256: digest, size: Assembler.totalSize(of: out, excluding: ["debug"]),
                      hostLibraries: plan.host, currentVersion: parsed.current.version, previousVersion: parsed.previous.version)
    }

    /// Whether `text` is a full git commit id (40 lowercase hex digits).
    static func isCommitID(_ text: String) -> Bool {
        text.utf8.count == 40 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// The settings of the options, with the trusted keys read from their PEM files.
    private func manifestSettings() throws(BundlerError) -> [(String, String)] {
        var settings = options.settings
        var keys: [String] = []
        for file in options.trustKeys {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw BundlerError(.usage, "Cannot read the public key \(file); make one with 'rollbackctl keygen --out DIR' and pass DIR/directive.pub.", path: file)
            }
            guard let begin = text.range(of: "-----BEGIN PUBLIC KEY-----"), let end = text.range(of: "-----END PUBLIC KEY-----") else {
                throw BundlerError(.usage, "\(file) is not a PEM public key; pass the directive.pub written by 'rollbackctl keygen'.", path: file)
            }
            keys.append(text[begin.upperBound..<end.lowerBound].filter { !$0.isWhitespace })
        }
        if !keys.isEmpty { settings.append(("remote.keys", keys.joined(separator: ","))) }
        return settings
    }
}

import Foundation
import Synchronization
import SwitchbackBundler
import SwitchbackCore
import Testing

/// scripts/bundle's failure paths that need no build.
@Suite struct BundleScriptTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// The launcher links only what it uses: each runtime library it loads costs every start.
    @Test func theLauncherLinksNeitherConcurrencyNorStringProcessing() throws {
        let ldd = try shell("ldd", TestBundle.source + "/bin/launcher")
        #expect(ldd.status == 0)
        #expect(ldd.stdout.contains("libswiftCore.so"))
        #expect(!ldd.stdout.contains("libswift_Concurrency"), "\(ldd.stdout)")
        #expect(!ldd.stdout.contains("libswift_StringProcessing"), "\(ldd.stdout)")
        #expect(!ldd.stdout.contains("libFoundation"), "\(ldd.stdout)")
    }

    /// The bundle is self-contained: no shipped ELF file names a path of the build machine
    /// (every `DT_NEEDED` is a bare name, every search path starts at `$ORIGIN`, as a
    /// `DT_RPATH`, read before `LD_LIBRARY_PATH`); each library a file needs is in `lib/` or
    /// the host's (the base system, or listed with its package); every file of `lib/` has
    /// its size and SHA-256 in the manifest; a slot's `needed` list names `lib/` files, each
    /// after those it needs.
    @Test func noShippedFileNamesAPathOfTheBuildMachine() throws {
        let bundle = TestBundle.source
        let manifest = try Manifest.parse(Array(try Data(contentsOf: URL(fileURLWithPath: bundle + "/manifest"))), path: bundle + "/manifest")
        let libraries = try FileManager.default.contentsOfDirectory(atPath: bundle + "/lib").sorted()
        #expect(libraries.contains("libswiftCore.so") && libraries.contains("libFoundationEssentials.so"), "\(libraries)")
        #expect(!libraries.contains { $0.hasPrefix("libFoundation.so") || $0.contains("ICU") || $0.contains("Networking") }, "\(libraries)")
        let host = manifest.settings["host.libraries"]?.split(separator: ",").map(String.init) ?? []
        #expect(host == ["libcrypto.so.3:libssl3", "libcurl.so.4:libcurl4"])
        let base = ["libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "ld-linux-x86-64.so.2", "libdl.so.2", "libpthread.so.0", "librt.so.1"]
        let files = ["bin/launcher", "bin/rollbackctl", "bin/rollbackctl-remote", "slots/current/libAppCore.so", "slots/previous/libAppCore.so"]
            + libraries.map { "lib/" + $0 }
        // Every ELF file under the bundle, the debug copies too: none names or searches a
        // directory of the build machine.
        let walker = try #require(FileManager.default.enumerator(atPath: bundle))
        var elves: [String] = []
        while let relative = walker.nextObject() as? String {
            guard let handle = FileHandle(forReadingAtPath: bundle + "/" + relative) else { continue }
            if (try? handle.read(upToCount: 4)) == Data([0x7F, 0x45, 0x4C, 0x46]) { elves.append(relative) }
            try? handle.close()
        }
        #expect(Set(files).isSubset(of: Set(elves)) && elves.contains { $0.hasPrefix("debug/") }, "\(elves)")
        for file in elves {
            let elf = try ELFFile(path: bundle + "/" + file)
            #expect(elf.runpath == nil, "\(file) has a DT_RUNPATH")
            for path in elf.searchPaths { #expect(path.hasPrefix("$ORIGIN"), "\(file) searches \(path)") }
            for name in elf.needed { #expect(!name.contains("/"), "\(file) names \(name)") }
        }
        for file in files {
            let elf = try ELFFile(path: bundle + "/" + file)
            #expect(elf.runpath == nil, "\(file) has a DT_RUNPATH, searched after LD_LIBRARY_PATH")
            for path in elf.searchPaths { #expect(path.hasPrefix("$ORIGIN"), "\(file) searches \(path)") }
            for name in elf.needed {
                #expect(!name.contains("/"), "\(file) names \(name)")
                #expect(libraries.contains(name) || base.contains(name) || host.contains { $0.hasPrefix(name + ":") },
                        "\(file) needs \(name), which the bundle neither carries nor lists")
            }
            let text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: bundle + "/" + file)), as: UTF8.self)
            for buildPath in [Self.repository, "/opt/swift/usr/lib/swift"] {
                #expect(!text.contains(buildPath), "\(file) contains the build machine's path \(buildPath)")
            }
        }
        for name in libraries {
            let record = try #require(manifest.bundledLibrary(named: name), "\(name) is not in the manifest")
            let attributes = try FileManager.default.attributesOfItem(atPath: bundle + "/lib/" + name)
            #expect((attributes[.size] as? NSNumber)?.int64Value == record.size, "\(name)")
            #expect(try SwitchbackCore.FileDigest.hexDigest(ofFile: bundle + "/lib/" + name) == record.sha256, "\(name)")
        }
        for slot in [manifest.current, manifest.previous] {
            #expect(slot.needed.allSatisfy { $0.hasPrefix("lib/") && libraries.contains(String($0.dropFirst(4))) }, "\(slot.needed)")
            let order = slot.needed.map { String($0.dropFirst(4)) }
            #expect(order.firstIndex(of: "libswiftCore.so")! < order.firstIndex(of: "libswift_Concurrency.so")!, "\(order)")
        }
    }

    /// The sample's self-contained bundle, its Swift runtime included, fits in 30 MB (the
    /// debug/ files, which no host needs, excluded).
    @Test func theSamplesBundleIsAtMost30MB() throws {
        var total = 0
        let walker = try #require(FileManager.default.enumerator(atPath: TestBundle.source))
        while let relative = walker.nextObject() as? String {
            guard !relative.hasPrefix("debug"), let attributes = walker.fileAttributes, attributes[.type] as? FileAttributeType == .typeRegular else { continue }
            total += (attributes[.size] as? NSNumber)?.intValue ?? 0
        }
        print("BundleScriptTests: the sample's bundle is \(total) bytes without debug/")
        #expect(total > 10_000_000, "\(total) bytes: is the runtime in lib/?")
        #expect(total <= 30_000_000, "\(total) bytes")
    }

    /// Every ELF file of the bundle (programs, slots, the bundled runtime, the debug copies)
    /// has full RELRO (`PT_GNU_RELRO` and `BIND_NOW`), a non-executable stack and is
    /// position-independent, as binutils' readelf reads them (not the bundler's own reader);
    /// each slot defines at most 200 dynamic symbols (it exports the contract, nothing else).
    @Test func everyShippedELFFileIsHardenedAndSlotsExportOnlyTheContract() throws {
        func readelf(_ arguments: [String]) throws -> String {
            let result = try runProcess("/usr/bin/readelf", ["-W"] + arguments)
            #expect(result.status == 0, "readelf \(arguments): \(result)")
            return result.stdout
        }
        var checked: [String] = []
        let walker = try #require(FileManager.default.enumerator(atPath: TestBundle.source))
        while let relative = walker.nextObject() as? String {
            let path = TestBundle.source + "/" + relative
            guard walker.fileAttributes?[.type] as? FileAttributeType == .typeRegular,
                  let handle = FileHandle(forReadingAtPath: path) else { continue }
            let magic = try handle.read(upToCount: 4)
            try handle.close()
            guard magic == Data([0x7F, 0x45, 0x4C, 0x46]) else { continue }
            checked.append(relative)
            let header = try readelf(["-h", path]), segments = try readelf(["-l", path]), dynamic = try readelf(["-d", path])
            #expect(header.contains("Type:                              DYN"), "\(relative): not position-independent")
            #expect(segments.contains("GNU_RELRO"), "\(relative): no PT_GNU_RELRO")
            // `GNU_STACK 0x0 0x0 0x0 0x0 0x0 RW 0x10`: the flags are the seventh field.
            let stack = segments.split(separator: "\n").first { $0.contains("GNU_STACK") }?.split(separator: " ")
            #expect(stack.map { $0.count >= 7 && !$0[6].contains("E") } == true, "\(relative): \(stack ?? ["no GNU_STACK"])")
            // `(BIND_NOW)`, `(FLAGS) BIND_NOW` or `(FLAGS_1) Flags: NOW`.
            #expect(dynamic.contains("BIND_NOW") || dynamic.split(separator: "\n").contains { $0.contains("(FLAGS_1)") && $0.contains(" NOW") },
                    "\(relative): no BIND_NOW")
            if relative.hasPrefix("slots/") {
                let defined = try readelf(["--dyn-syms", path]).split(separator: "\n").filter { line in
                    let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                    return fields.count >= 8 && fields[0].hasSuffix(":") && fields[0] != "0:" && fields[6] != "UND"
                }
                print("BundleScriptTests: \(relative) defines \(defined.count) dynamic symbols")
                #expect(defined.count <= 200, "\(relative) defines \(defined.count) dynamic symbols")
                let names = Set(defined.compactMap { $0.split(separator: " ").last.map(String.init) })
                #expect(names.isSuperset(of: ["switchback_main", "switchback_abi_stamp", "switchback_app_version", "switchback_app_build"]), "\(names)")
            }
        }
        #expect(Set(checked).isSuperset(of: ["bin/launcher", "bin/rollbackctl", "bin/rollbackctl-remote", "slots/current/libAppCore.so",
                                             "slots/previous/libAppCore.so", "lib/libswiftCore.so", "lib/libBlocksRuntime.so",
                                             "debug/current/libAppCore.so.debug"]), "\(checked)")
    }

    /// A bundled library changed after bundling (one byte) is refused before it is loaded:
    /// the launcher names it, runs neither slot, and the dynamic loader never opened it
    /// (LD_DEBUG's record of every file it loaded). Also after a good start had remembered
    /// the slot and its libraries as verified.
    @Test func aModifiedBundledLibraryIsNeverLoaded() throws {
        let t = try TestBundle()
        let library = t.bundle + "/lib/libFoundationEssentials.so"
        let good = try t.launcher("version")
        #expect(good.status == 0, "\(good)")

        let handle = try #require(FileHandle(forUpdatingAtPath: library))
        try handle.seek(toOffset: 4096)
        let byte = try #require(try handle.read(upToCount: 1)).first!
        try handle.seek(toOffset: 4096)
        try handle.write(contentsOf: Data([byte ^ 0x01]))
        try handle.close()

        let trace = t.directory + "/ld-debug"
        let result = try t.launcher("version", environment: ["LD_DEBUG": "files", "LD_DEBUG_OUTPUT": trace])
        #expect(result.status == 70, "\(result)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("The bundled library \(library), which the current slot needs, does not match the manifest's SHA-256 (it was modified after bundling); refusing to load it: rebuild the bundle with scripts/bundle."), "\(result.stderr)")
        let traces = try FileManager.default.contentsOfDirectory(atPath: t.directory).filter { $0.hasPrefix("ld-debug") }
        #expect(!traces.isEmpty, "LD_DEBUG wrote nothing")
        for file in traces {
            let text = try String(contentsOfFile: t.directory + "/" + file, encoding: .utf8)
            #expect(!text.contains("libFoundationEssentials.so"), "the modified library was loaded:\n\(text)")
        }
    }

    /// Release N made from release N-1's tarball (scripts/lib/release-fixture does it as a CI
    /// job does): its previous slot is N-1's current slot, byte for byte.
    @Test func aReleaseFromThePreviousArtifactShipsItsSlotByteForByte() throws {
        let previous = try Data(contentsOf: URL(fileURLWithPath: TestBundle.releases + "/1.3.0/slots/previous/libAppCore.so"))
        let shipped = try Data(contentsOf: URL(fileURLWithPath: TestBundle.releases + "/1.2.0/slots/current/libAppCore.so"))
        #expect(previous == shipped)
        #expect(FileManager.default.fileExists(atPath: TestBundle.releases + "/1.2.0.tar.gz"))
    }

    /// A previous artifact that was modified, or made from another commit than the pin, is
    /// refused before anything is built, with a sentence that says what is wrong.
    @Test func aModifiedOrWrongArtifactIsRefused() throws {
        let directory = try makeTemporaryDirectory()
        let modified = directory + "/1.2.0"
        try shell("cp", "-R", TestBundle.releases + "/1.2.0", modified)
        let slot = modified + "/slots/current/libAppCore.so"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: slot))
        bytes[bytes.count / 2] ^= 0x01
        try bytes.write(to: URL(fileURLWithPath: slot))
        let repository = TestBundle.releases + "/repo"
        // What the scratch repository's checkout pins now (the release fixture leaves it at its
        // last release, whose pin is not 1.3.0's commit).
        let pinned = try shell("git", "-C", repository, "rev-parse", "HEAD:PreviousVersion").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let built13 = try shell("git", "-C", repository, "rev-parse", "v1.3.0").stdout.trimmingCharacters(in: .whitespacesAndNewlines)

        let cases = [
            (modified, "Error: The previous release \(modified) has a current slot that does not match its manifest's SHA-256 (it was modified).\n"),
            (TestBundle.releases + "/1.3.0", "Error: The previous release \(TestBundle.releases)/1.3.0 was built from commit \(built13), but PreviousVersion/ pins \(pinned); pass that release's artifact, or pin \(built13) with scripts/pin-previous.\n"),
            (directory + "/missing.tar.gz", "Error: The previous release \(directory)/missing.tar.gz does not exist; pass the last release's tarball or bundle directory.\n"),
        ]
        for (artifact, message) in cases {
            let result = try runProcess(try Self.bundler, ["--package", repository, "--previous-from", artifact, "--out", directory + "/dist"], deadline: buildDeadline)
            #expect(result.status == 1, "\(result)")
            #expect(result.stderr == message)
            #expect(!FileManager.default.fileExists(atPath: directory + "/dist"))
        }
    }

    /// A crafted artifact with a symbolic link in it (the slot directory to a directory
    /// elsewhere, a debug file to a root-only file, the slot file itself) is refused by the
    /// command, exit 1, in one sentence naming the member, before anything is built.
    @Test func anArtifactWithASymbolicLinkIsRefusedNamingTheMember() throws {
        let directory = try makeTemporaryDirectory()
        let elsewhere = directory + "/elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        func craft(_ name: String, link: String, to target: String) throws -> String {
            let root = directory + "/" + name
            for folder in ["slots/current", "slots/previous", "debug/current", "lib", "bin"] {
                try FileManager.default.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true)
            }
            try "format=1\n".write(toFile: root + "/manifest", atomically: true, encoding: .utf8)
            try "ELF".write(toFile: root + "/slots/current/libAppCore.so", atomically: true, encoding: .utf8)
            try "ELF".write(toFile: root + "/debug/current/libAppCore.so.debug", atomically: true, encoding: .utf8)
            try? FileManager.default.removeItem(atPath: root + "/" + link)
            try FileManager.default.createSymbolicLink(atPath: root + "/" + link, withDestinationPath: target)
            try shell("tar", "-czf", root + ".tar.gz", "-C", root, ".")
            return root + ".tar.gz"
        }
        for (name, link, target) in [("directory", "slots/current", elsewhere), ("debug", "debug/current/libAppCore.so.debug", "/etc/shadow"),
                                     ("slot", "slots/current/libAppCore.so", "/etc/passwd")] {
            let artifact = try craft(name, link: link, to: target)
            let result = try runProcess(try Self.bundler, ["--package", Self.repository, "--previous-from", artifact, "--out", directory + "/dist"], deadline: buildDeadline)
            #expect(result.status == 1, "\(result)")
            #expect(result.stderr == "Error: The previous release \(artifact) has a symbolic link at \(link) (to \(target)); a release artifact holds only files and directories: pass the tarball switchback-bundle --tarball wrote, or its bundle directory, as it was written.\n")
            #expect(!FileManager.default.fileExists(atPath: directory + "/dist"))
        }
    }

    /// A tree without .git (a Docker build context) bundles when the previous slot comes from
    /// the last release's artifact and the build id is given (the full commit id, recorded so
    /// that the next release can take this bundle as its artifact); without them it says what
    /// to pass. The bundle runs the tree's release and the artifact's slot, byte for byte.
    @Test func aTreeWithoutGitBundlesFromThePreviousArtifact() throws {
        let directory = try makeTemporaryDirectory()
        let tree = directory + "/tree"
        let repository = TestBundle.releases + "/repo"
        try shell("mkdir", tree)
        try shell("sh", "-c", "git -C '\(repository)' archive v1.3.0 | tar -x -C '\(tree)'")
        let commit = try shell("git", "-C", repository, "rev-parse", "v1.3.0").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let common = ["--package", tree, "--out", directory + "/dist", "--app-id", "dev.switchback.sample"]

        let refused = try runProcess(try Self.bundler, common, deadline: buildDeadline)
        #expect(refused.status == 1)
        #expect(refused.stderr == "Error: \(tree) is not in a git repository (a Docker build context without .git?); pass --build-id ID, and --previous-from with the last release's tarball (or --first-release).\n")
        let noArtifact = try runProcess(try Self.bundler, common + ["--build-id", commit], deadline: buildDeadline)
        #expect(noArtifact.status == 1)
        #expect(noArtifact.stderr == "Error: Without .git the bundler cannot build the previous release from history; pass --previous-from with the last release's tarball, or --first-release.\n")

        let made = try runProcess(try Self.bundler, common + ["--build-id", commit, "--previous-from", TestBundle.releases + "/1.2.0.tar.gz"], deadline: buildDeadline)
        #expect(made.status == 0, "\(made)")
        let manifest = try Manifest.parse(Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/dist/manifest"))), path: "manifest")
        #expect(manifest.current.version == "1.3.0" && manifest.current.build == String(commit.prefix(12)))
        #expect(manifest.settings["current.commit"] == commit)
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/dist/slots/previous/libAppCore.so"))
                == Data(contentsOf: URL(fileURLWithPath: TestBundle.releases + "/1.2.0/slots/current/libAppCore.so")))
        let run = try runProcess(directory + "/dist/bin/launcher", ["version"], environment: ["SWITCHBACK_STATE_DIR": directory + "/state"])
        #expect(run.status == 0 && run.stdout == "1.3.0\n", "\(run)")
    }

    /// The bundler scripts/bundle builds. scripts/test builds it before the tests only when
    /// it makes the test bundle; a fresh clone that copies the test bundle from the machine's
    /// cache has none yet, so the first test to need it builds it (`scripts/bundle --help`).
    static var bundler: String {
        get throws {
            let path = repository + "/.build-bundler/debug/switchback-bundle"
            try bundlerBuilt.withLock { built in
                guard !built else { return }
                if !FileManager.default.isExecutableFile(atPath: path) {
                    let help = try runProcess(repository + "/scripts/bundle", ["--help"], deadline: buildDeadline)
                    try #require(help.status == 0, "scripts/bundle --help: \(help)")
                }
                built = true
            }
            return path
        }
    }
    private static let bundlerBuilt = Mutex(false)

    /// Shipped slots are stripped and reproducible: the debug files stay beside them.
    @Test func shippedSlotsCarryNoDebugInformation() throws {
        for slot in ["current", "previous"] {
            let sections = try shell("readelf", "-S", "-W", TestBundle.source + "/slots/\(slot)/libAppCore.so")
            #expect(sections.status == 0)
            #expect(!sections.stdout.contains(".debug_info"), "\(slot)")
            #expect(!sections.stdout.contains(".swift_modhash"), "\(slot)")
            #expect(FileManager.default.fileExists(atPath: TestBundle.source + "/debug/\(slot)/libAppCore.so.debug"))
        }
    }

    @Test func unknownArgumentsAreUsageErrors() throws {
        let result = try runProcess(Self.repository + "/scripts/bundle", ["--outt", "x"], deadline: buildDeadline)
        #expect(result.status == 64)
        #expect(result.stderr == "Error: Unknown option '--outt'.\nSee 'switchback-bundle --help'.\n")
        let help = try runProcess(Self.repository + "/scripts/bundle", ["--help"], deadline: buildDeadline)
        #expect(help.status == 0)
        #expect(help.stdout.hasPrefix("OVERVIEW: Builds a Switchback bundle"))
        #expect(help.stdout.contains("  --previous-from PATH"))
    }

    @Test func pinPreviousRefusesWhatIsNotACommit() throws {
        let result = try runProcess(Self.repository + "/scripts/pin-previous", ["no-such-revision"])
        #expect(result.status == 1)
        #expect(result.stderr == "Error: 'no-such-revision' is not a commit of this repository.\n")
    }

    // MARK: - Any app package

    /// An app package in a fresh git repository: a dynamic library product and whatever else
    /// `files` adds. Nothing is built.
    func appPackage(_ files: [String: String] = [:], products: String = #".library(name: "Notes", type: .dynamic, targets: ["Notes"])"#) throws -> String {
        let directory = try makeTemporaryDirectory() + "/notes"
        try FileManager.default.createDirectory(atPath: directory + "/Sources/Notes", withIntermediateDirectories: true)
        let manifest = """
            // swift-tools-version:6.0
            import PackageDescription
            let package = Package(name: "Notes", products: [\(products)], targets: [.target(name: "Notes")])
            """
        try manifest.write(toFile: directory + "/Package.swift", atomically: true, encoding: .utf8)
        try "public let notes = 1\n".write(toFile: directory + "/Sources/Notes/Notes.swift", atomically: true, encoding: .utf8)
        for (name, text) in files { try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8) }
        try shell("git", "-C", directory, "init", "-q")
        try shell("git", "-C", directory, "add", "-A")
        try shell("git", "-C", directory, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "1.0.0")
        return directory
    }

    func bundle(_ package: String, _ arguments: String...) throws -> ProcessResult {
        try runProcess(Self.repository + "/scripts/bundle", ["--package", package, "--out", package + "/dist"] + arguments, deadline: buildDeadline)
    }

    @Test func aDirectoryWithoutAPackageIsRefused() throws {
        let directory = try makeTemporaryDirectory()
        let result = try bundle(directory)
        #expect(result.status == 1)
        #expect(result.stderr == "Error: \(directory) has no Package.swift; run the bundle command in the app's package (or pass --package DIR).\n")
    }

    @Test func anAppWithoutAVersionFileIsToldToWriteOne() throws {
        let app = try appPackage()
        let result = try bundle(app, "--product", "Notes", "--first-release")
        #expect(result.status == 1)
        #expect(result.stderr == "Error: \(app)/VERSION is missing or empty; write the app's version there (for example 1.0.0) and commit it.\n")
    }

    @Test func anAppWithoutAPinIsToldToPinOrSayFirstRelease() throws {
        let app = try appPackage(["VERSION": "1.0.0\n"])
        let result = try bundle(app, "--product", "Notes")
        #expect(result.status == 1)
        #expect(result.stderr == "Error: PreviousVersion/ is not pinned to a commit; pin the previous release with 'scripts/pin-previous REV' (docs/adopting.md), or pass --first-release for an app's first release.\n")
        #expect(!FileManager.default.fileExists(atPath: app + "/dist"))
    }

    @Test func aFirstReleaseFlagWithAPinIsAContradiction() throws {
        let app = try appPackage(["VERSION": "1.0.0\n"])
        let pin = try runProcess(Self.repository + "/scripts/pin-previous", ["--package", app, "HEAD"])
        #expect(pin.status == 0, "\(pin.stderr)")
        let pinned = try shell("git", "-C", app, "rev-parse", "HEAD").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let result = try bundle(app, "--product", "Notes", "--first-release")
        #expect(result.status == 1)
        #expect(result.stderr == "Error: --first-release, but PreviousVersion/ is pinned to \(pinned); drop --first-release to bundle that release as the previous slot.\n")
    }

    @Test func theProductIsFoundOrNamed() throws {
        let none = try appPackage(["VERSION": "1.0.0\n"], products: #".library(name: "Notes", targets: ["Notes"])"#)
        let noneResult = try bundle(none, "--first-release")
        #expect(noneResult.status == 1)
        #expect(noneResult.stderr == "Error: \(none) declares no dynamic library product; add .library(name: \"MyApp\", type: .dynamic, targets: [...]) (docs/adopting.md).\n")
        let two = try appPackage(["VERSION": "1.0.0\n"], products: #".library(name: "A", type: .dynamic, targets: ["Notes"]), .library(name: "B", type: .dynamic, targets: ["Notes"])"#)
        let twoResult = try bundle(two, "--first-release")
        #expect(twoResult.status == 1)
        #expect(twoResult.stderr == "Error: \(two) declares several dynamic library products (A B); pass --product NAME.\n")
    }

    @Test(arguments: [
        (["--supervise-grace-ms", "soon"], "Error: --supervise-grace-ms needs a whole number, not 'soon'."),
        (["--tries", "0"], "Error: --tries needs a whole number of at least 1, not '0'."),
        (["--check-interval"], "Error: --check-interval needs a value (S)."),
        (["--supervise-start-deadline-ms", "-1"], "Error: --supervise-start-deadline-ms needs a whole number, not '-1'."),
        (["--listen", "example.com:80"], "Error: --listen needs [NAME=]HOST:PORT with a numeric host or localhost, like 127.0.0.1:8080, not 'example.com:80'."),
        (["--listen", "127.0.0.1"], "Error: --listen needs [NAME=]HOST:PORT with a numeric host or localhost, like 127.0.0.1:8080, not '127.0.0.1'."),
        (["--ready", "udp:127.0.0.1:53"], "Error: --ready needs mark, tcp:HOST:PORT, http://127.0.0.1:PORT/PATH or command:COMMAND, not 'udp:127.0.0.1:53'."),
        // A number followed by another option: the next option is not read as the minimum.
        (["--tries", "5", "--supervise", "--bogus"], "Error: Unknown option '--bogus'."),
        (["--check-interval", "60", "--supervise-drain-ms", "300", "--bogus"], "Error: Unknown option '--bogus'."),
    ])
    func settingsNeedNumbers(arguments: [String], error: String) throws {
        let result = try runProcess(Self.repository + "/scripts/bundle", arguments, deadline: buildDeadline)
        #expect(result.status == 64)
        #expect(result.stderr == error + "\nSee 'switchback-bundle --help'.\n")
    }

    @Test func anAppIDThatCannotNameADirectoryIsRefused() throws {
        let app = try appPackage(["VERSION": "1.0.0\n"])
        let result = try bundle(app, "--product", "Notes", "--first-release", "--app-id", "../etc")
        #expect(result.status == 64)
        #expect(result.stderr == "Error: The app id '../etc' cannot name a directory; pass --app-id with letters, digits, dots and dashes.\nSee 'switchback-bundle --help'.\n")
    }

    @Test func pinPreviousPinsAnAppsOwnRelease() throws {
        let app = try appPackage(["VERSION": "1.0.0\n"])
        try shell("git", "-C", app, "tag", "v1.0.0")
        let pin = try runProcess(Self.repository + "/scripts/pin-previous", ["--package", app, "v1.0.0"])
        #expect(pin.status == 0)
        let sha = try shell("git", "-C", app, "rev-parse", "v1.0.0").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(pin.stdout.hasPrefix("PreviousVersion/ is pinned to \(sha) (version 1.0.0). Commit it:"))
        #expect(try shell("git", "-C", app, "ls-files", "-s", "PreviousVersion").stdout.hasPrefix("160000 \(sha) "))
    }

    @Test func aRelativePackageThatIsNotOneIsNamedInFull() throws {
        let directory = try makeTemporaryDirectory()
        let result = try runProcess("/bin/sh", ["-c", "cd \(directory) && \(Self.repository)/scripts/bundle --package ."], deadline: buildDeadline)
        #expect(result.status == 1)
        #expect(result.stderr == "Error: \(directory) has no Package.swift; run the bundle command in the app's package (or pass --package DIR).\n")
    }

    @Test func anAppThatDoesNotCompileIsReportedWithItsLog() throws {
        let app = try appPackage(["VERSION": "1.0.0\n", "Sources/Notes/Broken.swift": "let broken: Int = \"not a number\"\n"])
        let result = try bundle(app, "--product", "Notes", "--first-release")
        #expect(result.status == 1)
        let log = app + "/.build-switchback/logs/slot-1.0.0.log"
        #expect(result.stderr.hasSuffix("Error: Building Notes 1.0.0 failed; the end of the compiler's output is above, all of it in \(log).\n"), "\(result.stderr)")
        #expect(result.stderr.contains("Broken.swift"))
        #expect(try String(contentsOfFile: log, encoding: .utf8).contains("error:"))
        #expect(!FileManager.default.fileExists(atPath: app + "/dist"))
    }

    @Test func anAppInASubdirectoryPinsItsOwnPreviousRelease() throws {
        let app = try appPackage(["VERSION": "1.0.0\n"])
        // The app moves into a subdirectory of its repository, like Examples/NotesServer.
        let repository = (app as NSString).deletingLastPathComponent + "/repo"
        try FileManager.default.createDirectory(atPath: repository, withIntermediateDirectories: true)
        try shell("git", "-C", repository, "init", "-q")
        try shell("cp", "-R", app, repository + "/notes")
        try shell("rm", "-rf", repository + "/notes/.git")
        try shell("git", "-C", repository, "add", "-A")
        try shell("git", "-C", repository, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "1.0.0")
        try shell("git", "-C", repository, "tag", "v1.0.0")
        let pin = try runProcess(Self.repository + "/scripts/pin-previous", ["--package", repository + "/notes", "v1.0.0"])
        #expect(pin.status == 0, "\(pin.stderr)")
        let sha = try shell("git", "-C", repository, "rev-parse", "v1.0.0").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try shell("git", "-C", repository, "ls-files", "-s", "notes/PreviousVersion").stdout.hasPrefix("160000 \(sha) "))
        let modules = try String(contentsOfFile: repository + "/.gitmodules", encoding: .utf8)
        #expect(modules.contains("path = notes/PreviousVersion"))
        #expect(!FileManager.default.fileExists(atPath: repository + "/notes/.gitmodules"))
    }
}


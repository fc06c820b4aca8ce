import Foundation
import Testing

/// scripts/bundle's failure paths that need no build.
@Suite struct BundleScriptTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    @Test func aShallowCloneSaysThePinnedCommitIsMissing() throws {
        let directory = try makeTemporaryDirectory() + "/clone"
        try shell("git", "clone", "-q", "--depth", "1", "file://" + Self.repository, directory)
        let pinned = try shell("git", "-C", directory, "ls-files", "-s", "PreviousVersion").stdout
            .split(separator: " ").dropFirst().first.map(String.init) ?? "?"
        let result = try runProcess(directory + "/scripts/bundle", ["--out", directory + "/dist"])
        #expect(result.status == 1)
        #expect(result.stderr == "Error: PreviousVersion/ is pinned to \(pinned), which this clone does not have; this is a shallow clone: run 'git fetch --unshallow' (or clone without --depth), then retry.\n")
        #expect(!FileManager.default.fileExists(atPath: directory + "/dist"))
    }

    /// The launcher links only what it uses: each runtime library it loads costs every start.
    @Test func theLauncherLinksNeitherConcurrencyNorStringProcessing() throws {
        let ldd = try shell("ldd", TestBundle.source + "/bin/launcher")
        #expect(ldd.status == 0)
        #expect(ldd.stdout.contains("libswiftCore.so"))
        #expect(!ldd.stdout.contains("libswift_Concurrency"), "\(ldd.stdout)")
        #expect(!ldd.stdout.contains("libswift_StringProcessing"), "\(ldd.stdout)")
        #expect(!ldd.stdout.contains("libFoundation"), "\(ldd.stdout)")
    }

    /// Every shipped program and slot names each library it loads by absolute path, so nothing
    /// is searched for at a start; a slot's manifest `needed` list is exactly those names, each
    /// after the libraries it needs (the order the launcher opens them in).
    @Test func everyShippedFileNamesItsLibrariesByPath() throws {
        for file in ["bin/launcher", "bin/rollbackctl", "bin/rollbackctl-remote", "slots/current/libAppCore.so", "slots/previous/libAppCore.so"] {
            let path = TestBundle.source + "/" + file
            let dynamic = try shell("readelf", "-d", "-W", path)
            #expect(dynamic.status == 0)
            let needed = dynamic.stdout.split(separator: "\n").filter { $0.contains("(NEEDED)") }.compactMap { line in
                line.split(separator: "[").last?.split(separator: "]").first.map(String.init)
            }
            #expect(needed.contains { $0.hasSuffix("/libswiftCore.so") }, "\(file): \(needed)")
            for name in needed where !name.hasPrefix("ld-linux") {
                #expect(name.hasPrefix("/") && FileManager.default.fileExists(atPath: name), "\(file) names \(name)")
            }
            let ldd = try shell("ldd", path)
            #expect(ldd.status == 0)
            #expect(!ldd.stdout.contains("=>"), "\(file) still searches:\n\(ldd.stdout)")
            if file.hasPrefix("slots/") {
                let slot = file.split(separator: "/")[1]
                let manifest = try String(contentsOfFile: TestBundle.source + "/manifest", encoding: .utf8)
                let listed = manifest.split(separator: "\n").first { $0.hasPrefix("\(slot).needed=") }?.dropFirst("\(slot).needed=".count)
                let libraries = listed.map { $0.split(separator: ",").map(String.init) } ?? []
                #expect(libraries.sorted() == needed.filter { $0.hasPrefix("/") }.sorted(), "\(slot)")
                // The order the launcher opens them in: each after the libraries it needs.
                let order = libraries.map { ($0 as NSString).lastPathComponent }
                #expect(order.firstIndex(of: "libswiftCore.so")! < order.firstIndex(of: "libswift_Concurrency.so")!, "\(order)")
                #expect(order.firstIndex(of: "libc.so.6")! < order.firstIndex(of: "libswiftCore.so")!, "\(order)")
            }
        }
    }

    /// Without patchelf, and not root to install it, the bundle command stops before it builds
    /// anything and says what to install. (Run as nobody, with a PATH of the few programs the
    /// command runs before that check, on a copy of the two scripts nobody can read wherever
    /// this checkout is.)
    @Test func withoutPatchelfTheBundleSaysWhatToInstall() throws {
        let directory = try makeTemporaryDirectory()
        for path in [directory, directory + "/bin", directory + "/app", directory + "/switchback/scripts/lib"] {
            try shell("mkdir", "-p", "-m", "755", path)
            try shell("chmod", "755", path)
        }
        try shell("chmod", "755", directory + "/switchback")
        for script in ["bundle", "lib/ensure-packages"] {
            try shell("install", "-m", "755", Self.repository + "/scripts/" + script, directory + "/switchback/scripts/" + script)
        }
        try "// swift-tools-version:6.0\nimport PackageDescription\nlet package = Package(name: \"Notes\")\n"
            .write(toFile: directory + "/app/Package.swift", atomically: true, encoding: .utf8)
        try "1.0.0\n".write(toFile: directory + "/app/VERSION", atomically: true, encoding: .utf8)
        for tool in ["bash", "dirname", "cat", "tr", "id"] {
            try shell("ln", "-s", try shell("sh", "-c", "command -v \(tool)").stdout.trimmingCharacters(in: .whitespacesAndNewlines), directory + "/bin/" + tool)
        }
        let result = try runProcess("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/env", "PATH=" + directory + "/bin",
                                                         directory + "/switchback/scripts/bundle", "--package", directory + "/app", "--product", "Notes", "--out", directory + "/dist"])
        #expect(result.status == 1)
        #expect(result.stderr == """
            ensure-packages: patchelf missing and this is not root; run: sudo apt-get install -y patchelf
            Error: the bundle needs patchelf (see above); install it, then retry.

            """)
        #expect(!FileManager.default.fileExists(atPath: directory + "/dist"))
    }

    /// A file that links a library this machine does not have is refused, the library named,
    /// and left as it was.
    @Test func namingLibrariesRefusesOneThatIsMissing() throws {
        let directory = try makeTemporaryDirectory()
        try "int helper(void) { return 1; }\n".write(toFile: directory + "/helper.c", atomically: true, encoding: .utf8)
        try "int helper(void); int user(void) { return helper(); }\n".write(toFile: directory + "/user.c", atomically: true, encoding: .utf8)
        try shell("cc", "-shared", "-fPIC", "-o", directory + "/libhelper.so", directory + "/helper.c")
        try shell("cc", "-shared", "-fPIC", "-o", directory + "/libuser.so", directory + "/user.c", "-L" + directory, "-lhelper")
        try shell("rm", directory + "/libhelper.so")
        let before = try Data(contentsOf: URL(fileURLWithPath: directory + "/libuser.so"))

        let result = try runProcess(Self.repository + "/scripts/lib/name-libraries", [directory + "/libuser.so"])
        #expect(result.status == 1)
        #expect(result.stderr == "name-libraries: \(directory)/libuser.so links a library this machine does not have (libhelper.so => not found).\n")
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/libuser.so")) == before)
    }

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
        let result = try runProcess(Self.repository + "/scripts/bundle", ["--outt", "x"])
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix("Error: unknown argument '--outt'.\nUsage: scripts/bundle"))
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
        try runProcess(Self.repository + "/scripts/bundle", ["--package", package, "--out", package + "/dist"] + arguments)
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
        (["--supervise-grace-ms", "soon"], "Error: --supervise-grace-ms needs a whole number."),
        (["--tries", "0"], "Error: --tries needs a whole number of at least 1."),
        (["--check-interval"], "Error: --check-interval needs a whole number."),
        (["--supervise-start-deadline-ms", "-1"], "Error: --supervise-start-deadline-ms needs a whole number."),
        (["--listen", "example.com:80"], "Error: --listen needs [NAME=]HOST:PORT with a numeric host or localhost, like 127.0.0.1:8080."),
        (["--listen", "127.0.0.1"], "Error: --listen needs [NAME=]HOST:PORT with a numeric host or localhost, like 127.0.0.1:8080."),
        (["--ready", "udp:127.0.0.1:53"], "Error: --ready needs mark, tcp:HOST:PORT, http://127.0.0.1:PORT/PATH or command:COMMAND."),
        // A number followed by another option: the next option is not read as the minimum.
        (["--tries", "5", "--supervise", "--bogus"], "Error: unknown argument '--bogus'."),
        (["--check-interval", "60", "--supervise-drain-ms", "300", "--bogus"], "Error: unknown argument '--bogus'."),
    ])
    func settingsNeedNumbers(arguments: [String], error: String) throws {
        let result = try runProcess(Self.repository + "/scripts/bundle", arguments)
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix(error + "\nUsage: scripts/bundle"))
    }

    @Test func anAppIDThatCannotNameADirectoryIsRefused() throws {
        let app = try appPackage(["VERSION": "1.0.0\n"])
        let result = try bundle(app, "--product", "Notes", "--first-release", "--app-id", "../etc")
        #expect(result.status == 1)
        #expect(result.stderr == "Error: the app id '../etc' cannot name a directory; pass --app-id with letters, digits, dots and dashes.\n")
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
        let result = try runProcess("/bin/sh", ["-c", "cd \(directory) && \(Self.repository)/scripts/bundle --package ."])
        #expect(result.status == 1)
        #expect(result.stderr == "Error: \(directory) has no Package.swift; run the bundle command in the app's package (or pass --package DIR).\n")
    }

    @Test func anAppThatDoesNotCompileIsReportedWithItsLog() throws {
        let app = try appPackage(["VERSION": "1.0.0\n", "Sources/Notes/Broken.swift": "let broken: Int = \"not a number\"\n"])
        let result = try bundle(app, "--product", "Notes", "--first-release")
        #expect(result.status == 1)
        let log = app + "/.build-switchback/logs/slot-1.0.0.log"
        #expect(result.stderr.hasSuffix("Error: building Notes 1.0.0 failed; the end of the compiler's output is above, all of it in \(log).\n"), "\(result.stderr)")
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


import Foundation

/// One `swift build -c release` of a product, with the flags every shipped file gets:
///
/// - **Searched first**: the search path is a `DT_RPATH` (`--disable-new-dtags`), which the
///   dynamic loader reads before `LD_LIBRARY_PATH` (a `DT_RUNPATH` comes after it), so a
///   library planted in that variable under a bundled name is never loaded in its place.
/// - **Self-contained**: no run path into the toolchain (`-no-toolchain-stdlib-rpath`) and
///   none to the build directory (`--disable-local-rpath`); programs search `$ORIGIN/../lib`,
///   the bundle's own copy of the runtime; a slot searches `$ORIGIN/../../lib` (for
///   `rollbackctl inspect`, which opens it by path). The launcher maps a slot through
///   `/proc/self/fd/N`, where that path leads nowhere: it opens the slot's libraries by
///   path, from the manifest, before the slot itself, so the slot's search finds them loaded.
/// - **Hardened by the linker**, not repaired afterwards: full RELRO (`-z relro -z now`);
///   the toolchain already gives PIE and a non-executable stack.
/// - **Reproducible**: source and scratch paths mapped to fixed names, no build id, and a
///   fixed soname for a slot, so one commit gives the same shipped bytes wherever it is
///   built (a rollback and a health verdict name a build by its SHA-256).
struct SwiftBuild {
    var toolchain: Toolchain
    var package: String
    var scratch: String
    var product: String
    /// Paths mapped to fixed names in debug information and `#file` (source, scratch, ...).
    var pathMaps: [(from: String, to: String)] = []
    var environment: [String: String] = [:]
    var extraFlags: [String] = []
    var isProgram = true
    var forcesResolvedVersions = false

    var arguments: [String] {
        var flags = ["build", "-c", "release", "--product", product, "--package-path", package, "--scratch-path", scratch,
                     "--disable-local-rpath", "-Xswiftc", "-no-toolchain-stdlib-rpath", "-Xlinker", "--disable-new-dtags",
                     "-Xlinker", "-z", "-Xlinker", "relro", "-Xlinker", "-z", "-Xlinker", "now",
                     "-Xlinker", "--build-id=none"]
        if forcesResolvedVersions { flags.append("--force-resolved-versions") }
        for (from, to) in pathMaps {
            flags += ["-Xswiftc", "-file-prefix-map", "-Xswiftc", "\(from)=\(to)", "-Xcc", "-ffile-prefix-map=\(from)=\(to)"]
        }
        if isProgram {
            flags += ["-Xlinker", "-rpath", "-Xlinker", "$ORIGIN/../lib"]
        } else {
            flags += ["-Xlinker", "-soname", "-Xlinker", "libAppCore.so", "-Xlinker", "-rpath", "-Xlinker", "$ORIGIN/../../lib"]
        }
        return flags + extraFlags
    }

    /// Builds, like `run`, unless the last build in this scratch path was of the same product
    /// with the same flags and toolchain from sources no file of which changed since (path,
    /// size and modification time of every file under `Sources/` and of `Package.swift`): a
    /// no-op `swift build` still loads the package graph, a second or more per program at
    /// every release. The sources are the tools' own (Switchback's), never the app's.
    func runUnlessUnchanged(log: String, what: String) throws(BundlerError) -> String {
        let record = scratch + "/switchback-bundle-\(product).stamp"
        let key = sourceKey()
        let bin = scratch + "/release"
        if let key, (try? String(contentsOfFile: record, encoding: .utf8)) == key,
           FileManager.default.isExecutableFile(atPath: bin + "/" + product) {
            return bin
        }
        let built = try run(log: log, what: what)
        if let key { try? key.write(toFile: record, atomically: true, encoding: .utf8) }
        return built
    }

    /// What `runUnlessUnchanged` compares, or nil when a file cannot be read.
    private func sourceKey() -> String? {
        var lines = [toolchain.version, arguments.joined(separator: " ")]
        var paths = [package + "/Package.swift"]
        guard let walker = FileManager.default.enumerator(atPath: package + "/Sources") else { return nil }
        while let relative = walker.nextObject() as? String { paths.append(package + "/Sources/" + relative) }
        for path in paths.sorted() {
            var info = stat()
            guard lstat(path, &info) == 0 else { return nil }
            lines.append("\(path) \(info.st_size) \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec) \(info.st_mode)")
        }
        return lines.joined(separator: "\n")
    }

    /// Builds, with the compiler's output in `log`; returns the binary directory. On failure
    /// the error carries the log's last lines and its path.
    func run(log: String, what: String) throws(BundlerError) -> String {
        var environment = ProcessInfo.processInfo.environment
        environment.merge(self.environment) { $1 }
        let verbose = environment["SWITCHBACK_BUNDLE_VERBOSE"] == "1"
        let result = try Command(toolchain.swift, arguments, environment: environment).run(logTo: verbose ? nil : log)
        if verbose { FileHandle.standardError.write(Data(result.output.utf8)) }
        guard result.status == 0 else {
            let tail = (try? String(contentsOfFile: log, encoding: .utf8))?.lastLines(40) ?? result.output.lastLines(40)
            FileHandle.standardError.write(Data((tail + "\n").utf8))
            throw BundlerError(.build, "Building \(what) failed; the end of the compiler's output is above, all of it in \(log).", path: log)
        }
        // `--show-bin-path` would load the package graph once more (seconds, for an app with
        // many dependencies): SwiftPM links `<scratch>/release` to the configuration's directory.
        return scratch + "/release"
    }

    /// Writes and compiles the object that stamps a slot's version and build
    /// (`switchback_stamped_app_version`, `..._build`: sdk.c), at `object`. When the stamp
    /// changed, the slot built before in `scratch` is removed, so that the next build links
    /// it again (the object is not an input SwiftPM tracks). Returns the linker flags.
    static func stamp(version: String, build: String, object: String, scratch: String, product: String,
                      toolchain: Toolchain) throws(BundlerError) -> [String] {
        func literal(_ text: String) -> String {
            "\"" + text.utf8.map { $0 >= 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x5C ? String(UnicodeScalar($0)) : String(format: "\\%03o", $0) }.joined() + "\""
        }
        let source = "// Written by switchback-bundle.\nconst char switchback_stamped_app_version[] = \(literal(version));\n"
            + "const char switchback_stamped_app_build[] = \(literal(build));\n"
        // The source sits beside the object: only the object's extension changes (a directory
        // in the path may hold ".o" too: mktemp's /tmp/x.oFE0mI).
        let file = (object as NSString).deletingPathExtension + ".c"
        let previous = try? String(contentsOfFile: file, encoding: .utf8)
        if previous != source || !FileManager.default.fileExists(atPath: object) {
            try? FileManager.default.createDirectory(atPath: (object as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            do { try source.write(toFile: file, atomically: true, encoding: .utf8) } catch {
                throw BundlerError(.output, "Cannot write \(file): \(error.localizedDescription).", path: file)
            }
            let compiled = try Command(toolchain.clang, ["-c", "-fPIC", "-O2", "-g0", "-o", object, file]).run()
            guard compiled.status == 0 else { throw BundlerError(.tool, "Compiling the version stamp failed: \(compiled.output.lastLines(5))", path: file) }
            try? FileManager.default.removeItem(atPath: scratch + "/release/lib\(product).so")
        }
        return ["-Xlinker", object]
    }

    /// The symbols a slot exports: the contract's (`CSwitchbackContract`), and nothing else.
    /// Everything else the slot links (the app, its packages, the SDK) is bound inside the slot
    /// and hidden, so a slot's dynamic symbol table holds a handful of names instead of one per
    /// Swift declaration (47,027 for a Vapor app): smaller, faster to load, and nothing for
    /// another library to interpose on or reach into. The Swift runtime finds a slot's types and
    /// conformances through its metadata sections, registered by the slot's own constructor, not
    /// through exported names.
    static let contractSymbols = ["switchback_main", "switchback_abi_stamp", "switchback_app_version",
                                  "switchback_app_build", "switchback_downgrade", "switchback_pending_steps"]

    /// Writes the version script that limits a slot's exports to `contractSymbols`, at `path`;
    /// when it changed, the slot built before in `scratch` is removed so that the next build
    /// links it again (as `stamp` does). Returns the linker flags.
    static func exports(at path: String, scratch: String, product: String) throws(BundlerError) -> [String] {
        let script = "/* Written by switchback-bundle: the slot's exports (docs/adopting.md). */\n{\n  global:\n"
            + contractSymbols.map { "    \($0);\n" }.joined() + "  local:\n    *;\n};\n"
        if (try? String(contentsOfFile: path, encoding: .utf8)) != script {
            try? FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            do { try script.write(toFile: path, atomically: true, encoding: .utf8) } catch {
                throw BundlerError(.output, "Cannot write \(path): \(error.localizedDescription).", path: path)
            }
            try? FileManager.default.removeItem(atPath: scratch + "/release/lib\(product).so")
        }
        // Linked by lld (the toolchain's own, `-use-ld=lld`): gold keeps every symbol the
        // script makes local in `.dynsym` (a Hummingbird slot: 476 local entries beside the
        // contract's 6), lld keeps only the exports. `--undefined-version`: a contract name the
        // slot does not define (an old SDK's) is not an error.
        return ["-Xswiftc", "-use-ld=lld", "-Xlinker", "--undefined-version", "-Xlinker", "--version-script=" + path]
    }
}

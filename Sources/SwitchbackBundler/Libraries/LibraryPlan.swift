import Foundation

/// Which libraries travel in the bundle and which the host must provide, decided from the
/// shipped files' `DT_NEEDED` entries, followed through every library they reach:
///
/// - a library of the toolchain's runtime directories travels in `lib/` (the Swift runtime,
///   Foundation, Dispatch: a host has none of them at the build machine's path);
/// - the base system (glibc, libstdc++, libgcc_s) belongs to the host and is not listed:
///   every Debian or Ubuntu image has it;
/// - any other system library belongs to the host too, and is listed in the manifest with
///   the distribution package that provides it, so that a host without it is told what to
///   install. So are the libraries Switchback opens with `dlopen` (`dlopened`): libcrypto,
///   which hashes a slot, and libcurl, which fetches a directive. They stay the host's so
///   that the distribution's security updates reach them.
public struct LibraryPlan: Sendable {
    /// A library carried in the bundle: its file name and where it was found.
    public struct Bundled: Sendable, Equatable {
        public var name: String
        public var source: String
    }

    /// A library the host provides, with the package that provides it.
    public struct Host: Sendable, Equatable {
        public var name: String
        public var package: String
    }

    /// Every bundled library, in an order where each comes after those it needs.
    public var bundled: [Bundled] = []
    /// Libraries outside the base system that the host must provide.
    public var host: [Host] = []
    /// Each bundled library's `DT_NEEDED` names (bundled ones only).
    var dependencies: [String: [String]] = [:]

    /// The base system every host of the distribution has: never bundled, never listed.
    static let baseSystem: Set<String> = [
        "libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "libutil.so.1",
        "libresolv.so.2", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "libstdc++.so.6", "libgcc_s.so.1",
    ]

    /// The system's library directories, searched for host libraries.
    static let systemDirectories = [
        "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
        "/lib64", "/usr/lib64", "/lib", "/usr/lib",
    ]

    /// Plans the libraries of `files` (the shipped programs and slots) built by `toolchain`,
    /// plus the host libraries Switchback opens itself (`dlopened`).
    public static func make(for files: [ELFFile], toolchain: Toolchain, dlopened: [String],
                            packages: PackageIndex = PackageIndex()) throws(BundlerError) -> LibraryPlan {
        var plan = LibraryPlan()
        var visited: Set<String> = []
        var hostNames: [String] = []
        func visit(_ name: String, neededBy: String) throws(BundlerError) {
            if visited.contains(name) || baseSystem.contains(name) { return }
            visited.insert(name)
            if let source = toolchain.runtimeDirectories.map({ $0 + "/" + name }).first(where: { FileManager.default.fileExists(atPath: $0) }) {
                let library = try ELFFile(path: source)
                for dependency in library.needed { try visit(dependency, neededBy: name) }
                plan.dependencies[name] = library.needed.filter { !baseSystem.contains($0) }
                plan.bundled.append(Bundled(name: name, source: source))  // after its dependencies
            } else {
                guard systemDirectories.contains(where: { FileManager.default.fileExists(atPath: $0 + "/" + name) }) else {
                    throw BundlerError(.library, "\(neededBy) needs \(name), which is neither in the toolchain (\(toolchain.runtimeDirectories.joined(separator: ", "))) nor installed on this system; install the package that provides it, then bundle again.", path: neededBy)
                }
                hostNames.append(name)
            }
        }
        for file in files {
            for name in file.needed { try visit(name, neededBy: file.path) }
        }
        for name in dlopened where !visited.contains(name) {
            visited.insert(name)
            hostNames.append(name)
        }
        let providers = packages.packages(providing: hostNames)
        plan.host = hostNames.map { Host(name: $0, package: providers[$0] ?? "unknown") }
        plan.dependencies = plan.dependencies.mapValues { $0.filter { name in plan.bundled.contains { $0.name == name } } }
        return plan
    }

    /// The bundled libraries `file` loads, each after the libraries it needs: the order the
    /// launcher opens a slot's libraries in before the slot itself.
    public func loadOrder(of file: ELFFile) -> [String] {
        var order: [String] = []
        func visit(_ name: String) {
            guard !order.contains(name), let needs = dependencies[name] else { return }
            for dependency in needs { visit(dependency) }
            order.append(name)
        }
        for name in file.needed { visit(name) }
        return order
    }
}

/// Which Debian package provides a file, read from dpkg's own lists
/// (`/var/lib/dpkg/info/*.list`), without running dpkg. With `record`, the answer for a set
/// of names is remembered while dpkg's status file is unchanged (dpkg rewrites it at every
/// install or removal): reading every list took half a second of every release.
public struct PackageIndex: Sendable {
    public var infoDirectory: String
    public var record: String?

    public init(infoDirectory: String = "/var/lib/dpkg/info", record: String? = nil) {
        self.infoDirectory = infoDirectory
        self.record = record
    }

    /// The package whose files include `name` in one of the system's library directories.
    public func package(providing name: String) -> String? { packages(providing: [name])[name] }

    /// For each of `names`, the package that provides it, found in one pass over the lists.
    public func packages(providing names: [String]) -> [String: String] {
        guard !names.isEmpty else { return [:] }
        func scan() -> String {
            guard let lists = try? FileManager.default.contentsOfDirectory(atPath: infoDirectory) else { return "" }
            var wanted: [String: String] = [:]
            for name in names { for directory in LibraryPlan.systemDirectories { wanted[directory + "/" + name] = name } }
            var found: [String: String] = [:]
            for list in lists.sorted() where list.hasSuffix(".list") && found.count < names.count {
                guard let text = try? String(contentsOfFile: infoDirectory + "/" + list, encoding: .utf8) else { continue }
                for line in text.split(separator: "\n") {
                    guard let name = wanted[String(line)], found[name] == nil else { continue }
                    let package = list.dropLast(".list".count)
                    found[name] = String(package.split(separator: ":").first ?? package)
                }
            }
            return found.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: "\n")
        }
        let answer: String
        if let record {
            let key = "packages \(names.sorted().joined(separator: ",")) " + Remembered.identity(of: infoDirectory + "/../status")
            answer = (try? Remembered.answer(at: record, key: key) { () throws(BundlerError) in scan() }) ?? scan()
        } else {
            answer = scan()
        }
        var found: [String: String] = [:]
        for line in answer.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            if parts.count == 2 { found[parts[0]] = parts[1] }
        }
        return found
    }
}

import Foundation
import SwitchbackCore

/// Puts the bundle's files together in a staging directory: programs, slots (stripped, with
/// their debug copies in `debug/`), and the libraries of a `LibraryPlan` in `lib/`.
struct Assembler {
    var stage: String
    var toolchain: Toolchain
    /// Where files made from build outputs that rarely change (the programs, stripped and as
    /// debug copies; the previous artifact's debug copy) are kept between releases, each with
    /// a record of the file it was made from (path, size, time, inode): a release copies them
    /// into the stage instead of running llvm-objcopy on them again. Nil: made every time.
    var cache: String? = nil

    func prepare() throws(BundlerError) {
        try? FileManager.default.removeItem(atPath: stage)
        for directory in ["bin", "lib", "slots/current", "slots/previous", "debug/bin", "debug/current", "debug/previous"] {
            do {
                try FileManager.default.createDirectory(atPath: stage + "/" + directory, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o755])
            } catch {
                throw BundlerError(.output, "Cannot create \(stage)/\(directory): \(error.localizedDescription); check the output directory's permissions.", path: stage)
            }
        }
        // The directories made along the way get the umask's mode: the launcher refuses a bundle
        // another user could change, so every directory is 0755 whatever the umask.
        for directory in ["", "slots", "debug"] { chmod(stage + "/" + directory, 0o755) }
    }

    /// Copies `source` to `relative` in the stage with `mode`.
    func install(_ source: String, as relative: String, mode: mode_t) throws(BundlerError) {
        try Self.copyContents(of: source, to: stage + "/" + relative, mode: mode)
    }

    /// Writes a copy of `source` at `target` (replacing it) with `mode`, in writes of up to
    /// 64 MiB. How a file is written decides how the page cache holds it until it is evicted:
    /// FileManager's copy (small writes) and llvm-objcopy (a mapped output file) leave it in
    /// 4 KiB pages, one large write in large folios, as `cp` does. The dynamic loader maps the
    /// bundle's libraries with fewer faults from large folios: a bundle started where the
    /// bundler wrote it took 13-16% longer to start than a `cp -a` of it (issue 38).
    static func copyContents(of source: String, to target: String, mode: mode_t) throws(BundlerError) {
        func failure(_ what: String, _ path: String) -> BundlerError {
            BundlerError(.output, "Cannot copy \(source) into the bundle: \(what) \(path): \(String(cString: strerror(errno))).", path: path)
        }
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw failure("cannot open", source) }
        defer { close(input) }
        var info = stat()
        guard fstat(input, &info) == 0 else { throw failure("cannot read", source) }
        unlink(target)
        let output = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard output >= 0 else { throw failure("cannot create", target) }
        defer { close(output) }
        let chunk = 64 << 20
        var buffer = [UInt8](repeating: 0, count: min(max(Int(info.st_size), 1), chunk))
        while true {
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw failure("cannot read", source) }
            if count == 0 { break }
            var written = 0
            while written < count {
                let result = buffer.withUnsafeBytes { Glibc.write(output, $0.baseAddress! + written, count - written) }
                if result < 0 && errno == EINTR { continue }
                guard result > 0 else { throw failure("cannot write", target) }
                written += result
            }
        }
        fchmod(output, mode)
    }

    /// Installs an ELF file without its symbol table and debug information (`llvm-objcopy
    /// --strip-all`, from the toolchain: only sections that are not loaded go, so RELRO,
    /// BIND_NOW and the dynamic symbols stay as linked), and with `removing` sections too.
    func installStripped(_ source: String, as relative: String, mode: mode_t, removing: [String] = []) throws(BundlerError) {
        let target = stage + "/" + relative
        // Through a file of its own, copied: llvm-objcopy writes through a mapping (see copyContents).
        let mapped = target + ".objcopy"
        defer { unlink(mapped) }
        let stripped = try Command(toolchain.objcopy, ["--strip-all"] + removing.map { "--remove-section=" + $0 } + [source, mapped]).run()
        guard stripped.status == 0 else {
            throw BundlerError(.tool, "llvm-objcopy could not strip \(source): \(stripped.output.lastLines(3))", path: source)
        }
        try Self.copyContents(of: mapped, to: target, mode: mode)
    }

    /// Installs a built program, stripped; the full file goes to `debug/bin/`.
    func installProgram(_ built: String, named name: String) throws(BundlerError) {
        try installPrepared(built, as: "debug/bin/\(name).debug", mode: 0o644, stripped: false)
        try installPrepared(built, as: "bin/\(name)", mode: 0o755, stripped: true)
    }

    /// Installs `source` (stripped, or as it is) at `relative` through the cache: made there
    /// once per version of `source`, then copied into the stage. Not hard-linked: a link
    /// shares the cached file's pages in the page cache, whatever their size (a file faulted
    /// in through a mapping, or written before large writes, is held in 4 KiB pages), and the
    /// launcher started 13% slower from such a bundle than from a copy of it; a copy made by
    /// `copyContents` is held in large folios, for 0.1 s a release.
    func installPrepared(_ source: String, as relative: String, mode: mode_t, stripped: Bool) throws(BundlerError) {
        guard let cache else {
            return stripped ? try installStripped(source, as: relative, mode: mode) : try install(source, as: relative, mode: mode)
        }
        try? FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
        let prepared = cache + "/" + relative.replacingOccurrences(of: "/", with: "%")
        let record = prepared + ".record"
        let key = "\(stripped ? "stripped by \(toolchain.objcopy)" : "copied") from " + Remembered.identity(of: source)
        if (try? String(contentsOfFile: record, encoding: .utf8)) != key || !FileManager.default.fileExists(atPath: prepared) {
            unlink(record)
            if stripped {
                try Assembler(stage: cache, toolchain: toolchain).installStripped(source, as: prepared.dropFirst(cache.count + 1).description, mode: mode)
            } else {
                try Self.copyContents(of: source, to: prepared, mode: mode)
            }
            try? key.write(toFile: record, atomically: true, encoding: .utf8)
        }
        try place(prepared, as: relative, mode: mode)
    }

    /// Puts a copy of `prepared` at `relative` in the stage (see `installPrepared`).
    func place(_ prepared: String, as relative: String, mode: mode_t) throws(BundlerError) {
        try Self.copyContents(of: prepared, to: stage + "/" + relative, mode: mode)
    }

    /// Installs a built slot: the full file in `debug/`, a copy without debug information or
    /// the module hash (which differs with the build's paths) in `slots/`.
    func installSlot(built: String, slot: String, strip: Bool) throws(BundlerError) {
        try install(built, as: "debug/\(slot)/libAppCore.so.debug", mode: 0o644)
        let target = "slots/\(slot)/libAppCore.so"
        guard strip else { return try install(built, as: target, mode: 0o644) }
        try installStripped(built, as: target, mode: 0o644, removing: [".swift_modhash"])
    }

    /// Copies the plan's libraries into `lib/`; returns each one's name, size and SHA-256.
    /// Each is prepared once per toolchain file into `cache` (stripped, made to bind now
    /// in place of its run path: `ELFFile.bindNow`, hashed) and copied from there while the
    /// toolchain's file is unchanged.
    func installLibraries(_ plan: LibraryPlan, cache: String) throws(BundlerError) -> [(name: String, size: Int64, sha256: String)] {
        var records: [(name: String, size: Int64, sha256: String)] = []
        try? FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
        for library in plan.bundled {
            let relative = "lib/" + library.name
            // Copy the file a link points to, never the link (the bundle must stand alone).
            // Stripped like the programs: the toolchain's copies keep their symbol tables (a
            // third of libswiftCore.so); the dynamic symbols a backtrace names stay.
            let source = URL(fileURLWithPath: library.source).resolvingSymlinksInPath().path
            var info = stat()
            guard stat(source, &info) == 0 else { throw BundlerError(.library, "Cannot read \(source).", path: source) }
            let key = "\(source) \(info.st_size) \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec) \(toolchain.objcopy) bind-now"
            let prepared = cache + "/" + library.name, record = prepared + ".record"
            let remembered = (try? String(contentsOfFile: record, encoding: .utf8))?.split(separator: "\n").map(String.init)
            if let remembered, remembered.count == 2, remembered[0] == key, FileManager.default.fileExists(atPath: prepared) {
                try place(prepared, as: relative, mode: 0o644)
                records.append((library.name, size(of: relative), remembered[1]))
                continue
            }
            try installStripped(source, as: relative, mode: 0o644)
            _ = try ELFFile.bindNow(at: stage + "/" + relative)
            let digest: String
            do { digest = try FileDigest.hexDigest(ofFile: stage + "/" + relative) } catch { throw BundlerError(.output, error.message) }
            records.append((library.name, size(of: relative), digest))
            try? FileManager.default.removeItem(atPath: prepared)
            if (try? Self.copyContents(of: stage + "/" + relative, to: prepared, mode: 0o644)) != nil {
                try? (key + "\n" + digest).write(toFile: record, atomically: true, encoding: .utf8)
            }
        }
        return records
    }

    func write(_ bytes: [UInt8], as relative: String) throws(BundlerError) {
        let path = stage + "/" + relative
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o644]) else {
            throw BundlerError(.output, "Cannot write \(path).", path: path)
        }
        chmod(path, 0o644)
    }

    func size(of relative: String) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: stage + "/" + relative))?[.size] as? NSNumber)?.int64Value ?? 0
    }

    /// The bytes of every regular file under `root`, but for the top-level directories `excluding`.
    static func totalSize(of root: String, excluding: Set<String>) -> Int64 {
        var total: Int64 = 0
        guard let walker = FileManager.default.enumerator(atPath: root) else { return 0 }
        while let relative = walker.nextObject() as? String {
            if let first = relative.split(separator: "/").first, excluding.contains(String(first)) { continue }
            let attributes = try? FileManager.default.attributesOfItem(atPath: root + "/" + relative)
            if attributes?[.type] as? FileAttributeType == .typeRegular {
                total += (attributes?[.size] as? NSNumber)?.int64Value ?? 0
            }
        }
        return total
    }
}

import Foundation

/// What the bundler reads of a 64-bit little-endian ELF file: its dynamic section (the
/// libraries it needs, its search paths, its soname and binding flags), its program headers
/// (RELRO, stack, type) and its defined dynamic symbols. Read from the bytes, without
/// readelf; anything malformed throws `.elfInvalid` naming the file.
public struct ELFFile: Sendable {
    public var path: String
    /// `DT_NEEDED`, in the file's order.
    public var needed: [String] = []
    public var soname: String?
    /// `DT_RUNPATH` and `DT_RPATH`, as written (colon-separated lists).
    public var runpath: String?
    public var rpath: String?
    /// `ET_DYN` with a `PT_INTERP`, or with `DF_1_PIE`: a position-independent executable.
    public var isPIE = false
    /// `ET_DYN`: a shared object or a position-independent executable.
    public var isDynamic = false
    /// `DF_BIND_NOW` in `DT_FLAGS`, or `DF_1_NOW` in `DT_FLAGS_1`.
    public var bindsNow = false
    public var hasRELRO = false
    /// A `PT_GNU_STACK` without the execute flag.
    public var hasNonExecutableStack = false
    /// Symbols of `.dynsym` defined in this file (section index not `SHN_UNDEF`), the
    /// null symbol excluded.
    public var definedDynamicSymbols = 0
    /// Where in the file the `DT_RUNPATH`, `DT_RPATH`, `DT_FLAGS` and `DT_RELACOUNT`
    /// entries' tags are.
    var runpathEntryOffset: Int?
    var relativeCountEntryOffset: Int?
    var rpathEntryOffset: Int?
    var flagsEntryOffset: Int?

    /// Reads the ELF file at `path`.
    public init(path: String) throws(BundlerError) {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped) } catch {
            throw BundlerError(.elfInvalid, "Cannot read \(path): \(error); check that the build wrote it.", path: path)
        }
        try self.init(bytes: [UInt8](data), path: path)
    }

    /// Parses `bytes`; `path` names the file in errors.
    public init(bytes: [UInt8], path: String) throws(BundlerError) {
        self.path = path
        let reader = Reader(bytes: bytes)
        func invalid(_ what: String) -> BundlerError {
            BundlerError(.elfInvalid, "\(path) is not a 64-bit little-endian ELF file the bundler can read (\(what)); rebuild it.", path: path)
        }
        guard bytes.count >= 64, bytes[0] == 0x7F, bytes[1] == 0x45, bytes[2] == 0x4C, bytes[3] == 0x46 else { throw invalid("no ELF magic") }
        guard bytes[4] == 2, bytes[5] == 1 else { throw invalid("not ELFCLASS64/ELFDATA2LSB") }
        guard let type = reader.u16(16), let phoff = reader.u64(32), let shoff = reader.u64(40),
              let phentsize = reader.u16(54), let phnum = reader.u16(56),
              let shentsize = reader.u16(58), let shnum = reader.u16(60) else { throw invalid("truncated header") }
        isDynamic = type == 3
        // Every offset and size the file gives is checked against its length before it is
        // used: a crafted header must not trap an arithmetic check.
        let length = UInt64(bytes.count)
        func within(_ value: UInt64) throws(BundlerError) -> Int {
            guard value <= length else { throw invalid("an offset past the end") }
            return Int(value)
        }

        // Program headers: the loadable segments map addresses to offsets for the dynamic section.
        var loads: [(vaddr: UInt64, offset: UInt64, size: UInt64)] = []
        var dynamic: (offset: UInt64, size: UInt64)?
        var hasInterpreter = false
        for index in 0..<Int(phnum) {
            let base = try within(phoff) + index * Int(phentsize)
            guard let kind = reader.u32(base), let flags = reader.u32(base + 4), let offset = reader.u64(base + 8),
                  let vaddr = reader.u64(base + 16), let filesz = reader.u64(base + 32) else { throw invalid("truncated program header") }
            switch kind {
            case 1: loads.append((vaddr, offset, filesz))
            case 2: dynamic = (offset, filesz)
            case 3: hasInterpreter = true
            case 0x6474_E551: hasNonExecutableStack = flags & 1 == 0  // PT_GNU_STACK
            case 0x6474_E552: hasRELRO = true  // PT_GNU_RELRO
            default: break
            }
        }
        func fileOffset(_ address: UInt64) -> Int? {
            // `address - vaddr < size`, not `address < vaddr + size`: a crafted segment's end
            // may be past 2^64 (the fuzz target's first finding).
            for load in loads where address >= load.vaddr && address - load.vaddr < load.size {
                let offset = (address - load.vaddr).addingReportingOverflow(load.offset)
                return offset.overflow || offset.partialValue > length ? nil : Int(offset.partialValue)
            }
            return nil
        }

        if let dynamic {
            var strtab: UInt64?, strsz: UInt64?, neededOffsets: [UInt64] = []
            var sonameOffset: UInt64?, runpathOffset: UInt64?, rpathOffset: UInt64?
            var entry = try within(dynamic.offset)
            let end = try within(min(length, dynamic.offset.addingReportingOverflow(dynamic.size).overflow ? length : dynamic.offset + dynamic.size))
            // The linker writes each of these once; a second one would escape `bindNow`'s patch
            // (it rewrites one entry) and leave the file with a search path of its own.
            var seen: Set<UInt64> = []
            while entry + 16 <= end {
                guard let tag = reader.u64(entry), let value = reader.u64(entry + 8) else { throw invalid("truncated dynamic section") }
                if [5, 10, 14, 15, 29, 30, 0x6FFF_FFF9, 0x6FFF_FFFB].contains(tag) {
                    guard seen.insert(tag).inserted else { throw invalid("dynamic tag \(tag) twice") }
                }
                switch tag {
                case 0: entry = end; continue  // DT_NULL
                case 1: neededOffsets.append(value)
                case 5: strtab = value
                case 10: strsz = value
                case 14: sonameOffset = value
                case 15: rpathOffset = value; rpathEntryOffset = entry
                case 24: bindsNow = true  // DT_BIND_NOW
                case 29: runpathOffset = value; runpathEntryOffset = entry
                case 30:  // DT_FLAGS: DF_BIND_NOW
                    flagsEntryOffset = entry
                    if value & 0x8 != 0 { bindsNow = true }
                case 0x6FFF_FFF9: relativeCountEntryOffset = entry  // DT_RELACOUNT
                case 0x6FFF_FFFB:  // DT_FLAGS_1
                    if value & 0x1 != 0 { bindsNow = true }
                    if value & 0x0800_0000 != 0 { isPIE = true }
                default: break
                }
                entry += 16
            }
            guard let strtab, let table = fileOffset(strtab) else { throw invalid("no string table for the dynamic section") }
            let limit = strsz.map { table + Int(min($0, length)) } ?? bytes.count
            func string(_ offset: UInt64) throws(BundlerError) -> String {
                guard offset < length, let text = reader.cString(table + Int(offset), limit: limit) else { throw invalid("a dynamic string out of range") }
                return text
            }
            for offset in neededOffsets { needed.append(try string(offset)) }
            soname = try sonameOffset.map { (offset) throws(BundlerError) in try string(offset) }
            runpath = try runpathOffset.map { (offset) throws(BundlerError) in try string(offset) }
            rpath = try rpathOffset.map { (offset) throws(BundlerError) in try string(offset) }
        }
        if isDynamic && hasInterpreter { isPIE = true }

        // Section headers: count the defined symbols of .dynsym (SHT_DYNSYM = 11).
        for index in 0..<Int(shnum) where shoff != 0 {
            let base = try within(shoff) + index * Int(shentsize)
            guard let kind = reader.u32(base + 4) else { throw invalid("truncated section header") }
            guard kind == 11, let offset = reader.u64(base + 24), let size = reader.u64(base + 32),
                  let entsize = reader.u64(base + 56), entsize >= 24, entsize <= length, size <= length else { continue }
            let start = try within(offset)
            let stop = min(Int(length), start + Int(size))
            var symbol = start + Int(entsize)  // skip the null symbol
            while symbol + 24 <= stop {
                guard let sectionIndex = reader.u16(symbol + 6) else { throw invalid("truncated symbol table") }
                if sectionIndex != 0 { definedDynamicSymbols += 1 }
                symbol += Int(entsize)
            }
        }
    }

    /// Makes a library of the toolchain bind every symbol at load (`DF_BIND_NOW`), in place:
    /// nothing moves, so its segments, RELRO and every other file's hash stay as they were.
    /// The toolchain links its libraries without `-z now` and with a `DT_RUNPATH` of
    /// `$ORIGIN`, and their dynamic section has no free entry for a flag: that entry becomes
    /// `DT_FLAGS` = `DF_BIND_NOW`. The library then has no search path of its own, and needs
    /// none in a bundle: the dynamic loader looks for a library's dependencies in the
    /// `DT_RPATH` of every object that led to loading it, down to the program
    /// (`$ORIGIN/../lib` for a program, `$ORIGIN/../../lib` for a slot), before
    /// `LD_LIBRARY_PATH` (glibc's `_dl_map_object`, for an object without `DT_RUNPATH`).
    /// A file that already has `DT_FLAGS` gets the flag there, and its `DT_RUNPATH` becomes a
    /// `DT_RPATH`. A library with no search path (libBlocksRuntime.so needs only libc) gives
    /// its `DT_RELACOUNT` instead, a hint that lets the loader apply the leading relative
    /// relocations in a tighter loop; without it they take the general path, with the same
    /// result. Returns false when the file already binds now and has no `DT_RUNPATH`; throws
    /// `.elfInvalid` when there is no entry to use.
    public static func bindNow(at path: String) throws(BundlerError) -> Bool {
        guard let bytes = FileManager.default.contents(atPath: path).map([UInt8].init) else {
            throw BundlerError(.elfInvalid, "Cannot read \(path).", path: path)
        }
        guard let patched = try boundNow(bytes, path: path) else { return false }
        do { try Data(patched).write(to: URL(fileURLWithPath: path)) } catch {
            throw BundlerError(.output, "Cannot write \(path): \(error.localizedDescription).", path: path)
        }
        return true
    }

    /// `bindNow(at:)` on bytes: the file's bytes with the flag set, or nil when it already
    /// binds now and has no `DT_RUNPATH`; `path` names the file in errors.
    public static func boundNow(_ original: [UInt8], path: String) throws(BundlerError) -> [UInt8]? {
        var bytes = original
        let file = try ELFFile(bytes: bytes, path: path)
        func put(_ value: UInt64, at offset: Int) {
            for index in 0..<8 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(index))) }
        }
        // DT_RUNPATH becomes DT_RPATH, unless the file has a DT_RPATH too (the loader ignores
        // it beside a DT_RUNPATH; two would be ambiguous): the fuzz target's second finding.
        func makeRPATH(_ runpath: Int) throws(BundlerError) {
            guard file.rpathEntryOffset == nil else {
                throw BundlerError(.elfInvalid, "\(path) has both DT_RUNPATH and DT_RPATH, so its DT_RUNPATH cannot become a DT_RPATH; bundle a library linked with one search path.", path: path)
            }
            put(15, at: runpath)  // DT_RPATH
        }
        if let flags = file.flagsEntryOffset {
            if !file.bindsNow {
                let reader = Reader(bytes: bytes)
                put((reader.u64(flags + 8) ?? 0) | 0x8, at: flags + 8)
            }
            if let runpath = file.runpathEntryOffset { try makeRPATH(runpath) }
            if file.bindsNow && file.runpathEntryOffset == nil { return nil }
        } else if file.bindsNow {
            guard let runpath = file.runpathEntryOffset else { return nil }
            try makeRPATH(runpath)
        } else {
            guard let entry = file.runpathEntryOffset ?? file.rpathEntryOffset ?? file.relativeCountEntryOffset else {
                throw BundlerError(.elfInvalid, "\(path) has no DT_FLAGS, search path or DT_RELACOUNT entry to make it bind now; bundle a library linked with -z now.", path: path)
            }
            put(30, at: entry)  // DT_FLAGS
            put(0x8, at: entry + 8)  // DF_BIND_NOW
        }
        return bytes
    }

    /// The search paths the file names (RUNPATH, else RPATH), split.
    public var searchPaths: [String] {
        (runpath ?? rpath ?? "").split(separator: ":").map(String.init)
    }

    /// Little-endian reads that return nil past the end instead of trapping.
    struct Reader {
        let bytes: [UInt8]

        func u16(_ at: Int) -> UInt16? { read(at, 2).map { UInt16(truncatingIfNeeded: $0) } }
        func u32(_ at: Int) -> UInt32? { read(at, 4).map { UInt32(truncatingIfNeeded: $0) } }
        func u64(_ at: Int) -> UInt64? { read(at, 8) }

        private func read(_ at: Int, _ count: Int) -> UInt64? {
            guard at >= 0, count <= bytes.count, at <= bytes.count - count else { return nil }
            var value: UInt64 = 0
            for index in (0..<count).reversed() { value = value << 8 | UInt64(bytes[at + index]) }
            return value
        }

        func cString(_ at: Int, limit: Int) -> String? {
            let end = min(limit, bytes.count)
            guard at >= 0, at < end, let nul = bytes[at..<end].firstIndex(of: 0) else { return nil }
            return String(decoding: bytes[at..<nul], as: UTF8.self)
        }
    }
}

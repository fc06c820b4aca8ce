import SwitchbackBundler

/// The bundler's ELF reader (`ELFFile`): the input as a library or program the build wrote,
/// every field the bundler reads of it (needed libraries, search paths, soname, binding,
/// RELRO, stack, defined symbols), and `ELFFile.boundNow`, the in-place patch that makes a
/// toolchain library bind now: the patched bytes must keep their length, parse again, bind
/// now and have no `DT_RUNPATH` left (the bundler hashes the patched file as shipped).
enum ELFTarget {
    static func run(_ bytes: [UInt8]) throws(FuzzFailure) -> FuzzOutcome {
        let file: ELFFile
        do { file = try ELFFile(bytes: bytes, path: "/fuzz/libAppCore.so") } catch { return try rejected(error.description) }
        let paths = file.searchPaths
        let summary = "needed \(file.needed) soname \(file.soname ?? "-") paths \(paths) pie \(file.isPIE) dynamic \(file.isDynamic) "
            + "now \(file.bindsNow) relro \(file.hasRELRO) nx \(file.hasNonExecutableStack) symbols \(file.definedDynamicSymbols)"
        let patched: [UInt8]?
        do { patched = try ELFFile.boundNow(bytes, path: "/fuzz/libAppCore.so") } catch {
            try check(!error.description.isEmpty, "a refusal to bind now without a sentence")
            return .parsed(summary + " bind-now refused")
        }
        guard let patched else {
            try check(file.bindsNow && file.runpath == nil, "boundNow left a file that does not bind now, or keeps its DT_RUNPATH, unpatched")
            return .parsed(summary + " already binds now")
        }
        try check(patched.count == bytes.count, "boundNow changed the file's length (\(bytes.count) → \(patched.count))")
        let again: ELFFile
        do { again = try ELFFile(bytes: patched, path: "/fuzz/libAppCore.so") } catch {
            throw FuzzFailure("the file boundNow patched no longer parses: \(error.description)")
        }
        try check(again.bindsNow, "the file boundNow patched does not bind now")
        try check(again.runpath == nil, "the file boundNow patched keeps a DT_RUNPATH")
        try check(again.needed == file.needed && again.soname == file.soname, "boundNow changed the needed libraries or the soname")
        return .parsed(summary + " patched")
    }
}

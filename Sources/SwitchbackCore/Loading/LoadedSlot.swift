#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackContract

/// A slot mapped into this process, with its ABI stamp checked and its entry point found.
public struct LoadedSlot: @unchecked Sendable {
    public var slot: BuildSlot
    public var library: DynamicLibrary
    public var stamp: ABIStamp
    public var entryPoint: SwitchbackEntryPoint

    /// Maps the slot file `SlotVerifier` checked — through `/proc/self/fd/N` of the very
    /// descriptor it checked, never by opening its path again — and checks it. Once
    /// `dlopen` succeeded the library stays mapped, so a caller that gets
    /// `.slotSymbolMissing` or `.slotABIMismatch` must not load another build into this
    /// process: it re-executes instead.
    ///
    /// The slot itself is opened with RTLD_NOW — every symbol it uses bound before any of its
    /// code runs — unless `bindLazily`, which the launcher passes only for a file that was
    /// already opened with RTLD_NOW against exactly these libraries (same fingerprints: the
    /// files the strict-mode walk checked). Before either open, `dependencies` (the libraries
    /// the slot links, from the manifest, each after those it needs) are opened by path with
    /// RTLD_LAZY: the slot is mapped through `/proc/self/fd/N`, where its own search path
    /// (`$ORIGIN/../../lib`) finds nothing, so the bundle's copies must already be loaded
    /// when the dynamic loader looks for the slot's `DT_NEEDED` names. Before an RTLD_NOW open
    /// this also makes the open bind the symbols *the slot* uses, not every symbol of
    /// FoundationEssentials and the rest (that alone costs about 1 ms). Only the libraries
    /// the verifier checked (`verified.libraries`) are opened.
    public static func load(_ slot: BuildSlot, verified: SlotVerifier.Verified, dependencies: [String] = [],
                            bindLazily: Bool = false) throws(SwitchbackError) -> LoadedSlot {
        let libraries = verified.libraries
        for dependency in dependencies where libraries.contains(dependency) {
            _ = dlopen(dependency, RTLD_LAZY | RTLD_NODELETE)
        }
        return try map(slot, path: verified.path, bindLazily: bindLazily) { () throws(SwitchbackError) in
            try DynamicLibrary.open(descriptor: verified.file.descriptor, path: verified.path, lazily: bindLazily)
        }
    }

    /// Opens the slot file at `path` the strict way (`StrictModes`: directories, links and
    /// the file checked, then one descriptor mapped through `/proc/self/fd/N`), after checking
    /// `dependencies` the same way, but without the manifest's size and hash checks.
    @available(*, deprecated, message: "Pass the SlotVerifier.Verified: it maps the very file that was checked against the manifest.")
    public static func load(_ slot: BuildSlot, path: String, dependencies: [String] = [], bindLazily: Bool = false) throws(SwitchbackError) -> LoadedSlot {
        let what = "\(slot.rawValue) slot"
        guard let (file, _) = try SlotFile.open(path, what: what) else {
            throw SwitchbackError(.slotMissing, "The \(what) at \(path) is missing; rebuild the bundle with scripts/bundle.", path: path)
        }
        for dependency in try SlotFile.checkLibraries(dependencies, neededBy: what) {
            _ = dlopen(dependency, RTLD_LAZY | RTLD_NODELETE)
        }
        return try map(slot, path: path, bindLazily: bindLazily) { () throws(SwitchbackError) in
            try DynamicLibrary.open(descriptor: file.descriptor, path: path, lazily: bindLazily)
        }
    }

    private static func map(_ slot: BuildSlot, path: String, bindLazily: Bool,
                            _ open: () throws(SwitchbackError) -> DynamicLibrary) throws(SwitchbackError) -> LoadedSlot {
        var name: String { "The \(slot.rawValue) slot at \(path)" }  // for failures only
        let library: DynamicLibrary
        do { library = try open() } catch {
            if error.code != .slotLoadFailed { throw error }
            throw SwitchbackError(.slotLoadFailed, "\(name) cannot be loaded: \(error.message) Rebuild it with scripts/bundle.", path: path)
        }
        guard let stampFunction = library.symbol(named: SWITCHBACK_STAMP_SYMBOL, as: SwitchbackStampFunction.self),
              let stampPointer = stampFunction() else {
            throw SwitchbackError(.slotSymbolMissing, "\(name) does not export \(SWITCHBACK_STAMP_SYMBOL); it is not an AppCore build.", path: path)
        }
        let stampText = String(cString: stampPointer)
        guard let stamp = ABIStamp(stampText) else {
            throw SwitchbackError(.slotABIMismatch, "\(name) has an unreadable ABI stamp '\(stampText)'; rebuild it with scripts/bundle.", path: path)
        }
        if let problem = stamp.incompatibility() {
            throw SwitchbackError(.slotABIMismatch, "\(name) \(problem).", path: path)
        }
        guard let entry = library.symbol(named: SWITCHBACK_ENTRY_SYMBOL, as: SwitchbackEntryPoint.self) else {
            throw SwitchbackError(.slotSymbolMissing, "\(name) does not export the entry point \(SWITCHBACK_ENTRY_SYMBOL); export it with @_cdecl(\"\(SWITCHBACK_ENTRY_SYMBOL)\").", path: path)
        }
        return LoadedSlot(slot: slot, library: library, stamp: stamp, entryPoint: entry)
    }
}

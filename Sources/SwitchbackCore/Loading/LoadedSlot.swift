#if canImport(Glibc)
import Glibc
#endif
import SwitchbackContract

/// A slot mapped into this process, with its ABI stamp checked and its entry point found.
public struct LoadedSlot: @unchecked Sendable {
    public var slot: BuildSlot
    public var library: DynamicLibrary
    public var stamp: ABIStamp
    public var entryPoint: SwitchbackEntryPoint

    /// Opens a verified slot file and checks it. Once `dlopen` succeeded the library stays
    /// mapped, so a caller that gets `.slotSymbolMissing` or `.slotABIMismatch` must not load
    /// another build into this process: it re-executes instead.
    ///
    /// `dependencies` (the libraries the slot links, from the manifest) are loaded first
    /// with RTLD_LAZY, so that opening the slot binds the symbols *the slot* uses, not every
    /// symbol of FoundationEssentials and the rest (that alone costs about 1 ms per start).
    /// The slot itself is opened with RTLD_NOW — every symbol it uses bound before any of its
    /// code runs — unless `bindLazily`, which the launcher passes only for a file that was
    /// already opened with RTLD_NOW against exactly these libraries (same fingerprints).
    public static func load(_ slot: BuildSlot, path: String, dependencies: [String] = [], bindLazily: Bool = false) throws(SwitchbackError) -> LoadedSlot {
        let name = "The \(slot.rawValue) slot at \(path)"
        for dependency in dependencies {
            _ = dlopen(dependency, RTLD_LAZY | RTLD_NODELETE)
        }
        let library: DynamicLibrary
        do { library = try DynamicLibrary.open(at: path, lazily: bindLazily) } catch {
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

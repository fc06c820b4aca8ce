import Foundation
import SwitchbackCore
import Testing

/// Every way a slot can be broken makes the launcher run the other slot, with one line on
/// stderr that says what failed and what runs instead, and a fallback in the history.
@Suite struct BrokenSlotTests {
    enum Breakage: String, CaseIterable {
        case missing, truncated, garbage, modified, noSymbol, wrongABI, unresolvedSymbol, worldWritable, writableDirectory

        /// Breaks `slot` in `t` and returns the text its failure message must contain.
        func apply(to slot: BuildSlot, in t: TestBundle) throws -> String {
            let path = t.slotPath(slot)
            let fm = FileManager.default
            let size = try fm.attributesOfItem(atPath: path)[.size] as! Int
            switch self {
            case .missing:
                try fm.removeItem(atPath: path)
                return "The \(slot.rawValue) slot at \(path) is missing; rebuild the bundle with scripts/bundle."
            case .truncated:
                try shell("truncate", "-s", "4096", path)
                return "The \(slot.rawValue) slot at \(path) is truncated: 4096 of \(size) bytes; rebuild it with scripts/bundle."
            case .garbage:
                try Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }).write(to: URL(fileURLWithPath: path))
                return "The \(slot.rawValue) slot at \(path) is not an ELF shared object; rebuild it with scripts/bundle."
            case .modified:
                try corruptMiddle(path)
                return "The \(slot.rawValue) slot at \(path) does not match the manifest's SHA-256 (it was modified after bundling); rebuild the bundle with scripts/bundle."
            case .noSymbol:
                try fm.removeItem(atPath: path)
                try compileSharedLibrary("int not_an_app(void) { return 1; }\n", to: path)
                try t.acceptSlotFileInManifest(slot)
                return "The \(slot.rawValue) slot at \(path) does not export switchback_abi_stamp; it is not an AppCore build."
            case .wrongABI:
                try fm.removeItem(atPath: path)
                try compileSharedLibrary("""
                    #include <stdio.h>
                    const char *switchback_abi_stamp(void) { return "switchback-abi/1 toolchain/swift-5.9-other"; }
                    int switchback_main(int c, char **v, char **e, const void *x) { puts("WRONG BUILD RAN"); return 0; }
                    """, to: path)
                try t.acceptSlotFileInManifest(slot)
                return "The \(slot.rawValue) slot at \(path) was built by another toolchain (swift-5.9-other) than the launcher"
            case .unresolvedSymbol:
                // Links against a function no library provides: RTLD_NOW refuses it before any
                // of its code runs (with RTLD_LAZY it would die mid-run with exit 127).
                try fm.removeItem(atPath: path)
                try compileSharedLibrary("""
                    extern void switchback_missing_function(void);
                    int switchback_main(int c, char **v, char **e, const void *x) { switchback_missing_function(); return 0; }
                    """, to: path)
                try t.acceptSlotFileInManifest(slot)
                return "The \(slot.rawValue) slot at \(path) cannot be loaded: dlopen failed: \(path): undefined symbol: switchback_missing_function."
            case .worldWritable:
                try shell("chmod", "666", path)
                return "The \(slot.rawValue) slot \(path) is writable by other users (owner uid \(geteuid()), mode 666); refusing to trust it: run 'chmod go-w \(path)'."
            case .writableDirectory:
                let directory = (path as NSString).deletingLastPathComponent
                try shell("chmod", "777", directory)
                return "The directory of the \(slot.rawValue) slot \(directory) is writable by other users (owner uid \(geteuid()), mode 777); refusing to trust it: run 'chmod go-w \(directory)'."
            }
        }
    }

    @Test(arguments: Breakage.allCases)
    func brokenCurrentFallsBackToPrevious(breakage: Breakage) throws {
        let t = try TestBundle()
        let message = try breakage.apply(to: .current, in: t)
        let result = try t.launcher()
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix(t.greeting(.previous)))
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "one line on stderr: \(result.stderr)")
        #expect(result.stderr.hasPrefix("launcher: " + message))
        #expect(result.stderr.hasSuffix("Running the previous slot (\(t.previousVersion)) instead.\n"))
        #expect(!result.stdout.contains("WRONG BUILD RAN"))

        let event = try #require(try t.history().last)
        #expect(event.kind == "fallback")
        #expect(event.from == "current")
        #expect(event.to == "previous")
        #expect(event.reason?.hasPrefix(message) == true)

        let status = try t.status()
        if ![.noSymbol, .wrongABI, .unresolvedSymbol].contains(breakage) {
            // status sees the failures that need no loading, and says the launcher falls back.
            #expect(status.activeSlot == "previous")
            #expect(status.explanation.contains("because the current slot cannot run (") == true)
        }
    }

    @Test func brokenPreviousFallsBackToCurrentAfterARollback() throws {
        let t = try TestBundle()
        _ = try t.rollbackctl("rollback")
        let message = try Breakage.truncated.apply(to: .previous, in: t)
        let result = try t.launcher()
        #expect(result.stdout.hasPrefix(t.greeting(.current)))
        #expect(result.stderr == "launcher: \(message) Running the current slot (\(t.currentVersion)) instead.\n")
    }

    @Test func previousWithWrongABIReexecutesIntoCurrent() throws {
        let t = try TestBundle()
        _ = try t.rollbackctl("rollback")
        let message = try Breakage.wrongABI.apply(to: .previous, in: t)
        let result = try t.launcher("args", "kept")
        #expect(result.stdout == "kept\n")
        #expect(result.stderr.hasPrefix("launcher: \(message)"))
    }

    @Test func bothSlotsBrokenExitsWithBothReasons() throws {
        let t = try TestBundle()
        let first = try Breakage.truncated.apply(to: .current, in: t)
        let second = try Breakage.missing.apply(to: .previous, in: t)
        let result = try t.launcher()
        #expect(result.status == 70)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == "launcher: neither slot can run. First: \(first) Then: \(second) Rebuild the bundle with scripts/bundle, or restore the files named above.\n")
    }

    @Test func bothSlotsBrokenAfterMappingExitsWithBothReasons() throws {
        let t = try TestBundle()
        let first = try Breakage.noSymbol.apply(to: .current, in: t)
        let second = try Breakage.wrongABI.apply(to: .previous, in: t)
        let result = try t.launcher()
        #expect(result.status == 70)
        #expect(result.stderr.hasPrefix("launcher: neither slot can run. First: \(first) Then: \(second)"))
        #expect(!result.stdout.contains("WRONG BUILD RAN"))
    }

    @Test func aForcedSlotNeverFallsBack() throws {
        let t = try TestBundle()
        let message = try Breakage.garbage.apply(to: .previous, in: t)
        let result = try t.launcher(environment: ["SWITCHBACK_SLOT": "previous"])
        #expect(result.status == 70)
        #expect(result.stderr == "launcher: \(message) SWITCHBACK_SLOT forces this slot, so the launcher does not fall back.\n")
    }

    @Test func anUnresolvableSlotIsNeverRememberedAsBound() throws {
        let t = try TestBundle()
        let message = try Breakage.unresolvedSymbol.apply(to: .current, in: t)
        for _ in 0..<3 {
            let result = try t.launcher()
            #expect(result.stdout.hasPrefix(t.greeting(.previous)))
            #expect(result.stderr.hasPrefix("launcher: " + message))
        }
    }

    @Test func aVerifiedSlotIsNotHashedAgainUntilItChanges() throws {
        let t = try TestBundle()
        #expect(try t.launcher().status == 0)
        let cache = try String(contentsOfFile: t.state + "/verified-slots", encoding: .utf8)
        #expect(cache.contains(t.slotPath(.current)))
        #expect(cache.contains(try t.manifestValue("current.sha256")))
        // Same size, same ELF header, new content: the fingerprint changes, so it is hashed.
        try corruptMiddle(t.slotPath(.current))
        let result = try t.launcher()
        #expect(result.stderr.contains("does not match the manifest's SHA-256"))
        // The first start migrated the data to 1.2.0's format: the previous build is not run on
        // it, and the broken current build cannot convert it back.
        #expect(result.status == 70)
        #expect(result.stderr.contains("The previous slot (\(t.previousVersion)) cannot run instead: "))
    }
}

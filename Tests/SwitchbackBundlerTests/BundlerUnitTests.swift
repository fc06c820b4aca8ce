import Foundation
@testable import SwitchbackBundler
import Testing

/// The bundler's pieces that need no build: the ELF reader on real files the system's C
/// compiler makes, the library plan's refusal, the option table.
@Suite struct BundlerUnitTests {
    /// A shared object made by `cc` with the given link flags.
    func sharedObject(_ flags: [String], named name: String = "libuser.so") throws -> String {
        let directory = NSTemporaryDirectory() + "switchback-bundler-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try "int helper(void) { return 1; }\n".write(toFile: directory + "/helper.c", atomically: true, encoding: .utf8)
        try "int helper(void); int user(void) { return helper(); }\nint user2(void) { return 2; }\n"
            .write(toFile: directory + "/user.c", atomically: true, encoding: .utf8)
        try run("/usr/bin/cc", ["-shared", "-fPIC", "-o", directory + "/libhelper.so", directory + "/helper.c"])
        try run("/usr/bin/cc", ["-shared", "-fPIC", "-o", directory + "/" + name, directory + "/user.c", "-L" + directory, "-lhelper"] + flags)
        return directory + "/" + name
    }

    @Test func readsTheDynamicSectionAndTheHardening() throws {
        let path = try sharedObject(["-Wl,-soname,libuser.so", "-Wl,-rpath,$ORIGIN/../lib", "-Wl,--enable-new-dtags", "-Wl,-z,relro,-z,now"])
        let elf = try ELFFile(path: path)
        #expect(elf.needed.contains("libhelper.so"), "\(elf.needed)")
        #expect(elf.soname == "libuser.so")
        #expect(elf.runpath == "$ORIGIN/../lib" && elf.rpath == nil)
        #expect(elf.searchPaths == ["$ORIGIN/../lib"])
        #expect(elf.isDynamic && elf.hasRELRO && elf.bindsNow && elf.hasNonExecutableStack)
        #expect(elf.definedDynamicSymbols >= 2, "user and user2")
    }

    @Test func makesALibraryBindNowInPlaceOfItsRunpath() throws {
        let path = try sharedObject(["-Wl,-rpath,$ORIGIN", "-Wl,--enable-new-dtags", "-Wl,-z,lazy"])
        let before = try ELFFile(path: path)
        #expect(!before.bindsNow && before.runpath == "$ORIGIN")
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber
        #expect(try ELFFile.bindNow(at: path))
        let elf = try ELFFile(path: path)
        #expect(elf.bindsNow && elf.runpath == nil && elf.rpath == nil, "the run path's entry became DT_FLAGS")
        #expect(elf.needed == before.needed && elf.soname == before.soname)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber == size)
        #expect(try !ELFFile.bindNow(at: path), "nothing left to change")
    }

    @Test func aLibraryThatBindsNowKeepsItsSearchPathAsAnRpath() throws {
        let path = try sharedObject(["-Wl,-rpath,$ORIGIN", "-Wl,--enable-new-dtags", "-Wl,-z,now"])
        #expect(try ELFFile.bindNow(at: path))
        let elf = try ELFFile(path: path)
        #expect(elf.bindsNow && elf.rpath == "$ORIGIN" && elf.runpath == nil)
    }

    @Test func aLibraryWithoutASearchPathGivesItsRelativeCount() throws {
        let path = try sharedObject(["-Wl,-z,lazy", "-Wl,-z,combreloc"])
        let before = try ELFFile(path: path)
        #expect(before.relativeCountEntryOffset != nil, "cc's link writes DT_RELACOUNT")
        #expect(try ELFFile.bindNow(at: path))
        let elf = try ELFFile(path: path)
        #expect(elf.bindsNow && elf.relativeCountEntryOffset == nil)
    }

    @Test func aLibraryWithNoEntryToSpareIsRefused() throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: try sharedObject(["-Wl,-z,lazy"]))))
        let elf = try ELFFile(bytes: bytes, path: "/x")
        guard let entry = elf.relativeCountEntryOffset else { Issue.record("no DT_RELACOUNT to remove"); return }
        bytes.replaceSubrange(entry..<entry + 8, with: [UInt8](repeating: 0, count: 8))  // now DT_NULL: the end
        let path = NSTemporaryDirectory() + "switchback-bundler-\(UUID().uuidString).so"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        do {
            _ = try ELFFile.bindNow(at: path)
            Issue.record("a library without a spare entry was changed")
        } catch {
            #expect(error.code == .elfInvalid)
            #expect(error.message == "\(path) has no DT_FLAGS, search path or DT_RELACOUNT entry to make it bind now; bundle a library linked with -z now.")
        }
    }

    @Test func refusesWhatIsNotAnELFFile() throws {
        for bytes: [UInt8] in [[], [0x7F, 0x45, 0x4C], Array("#!/bin/sh\n".utf8) + [UInt8](repeating: 0, count: 80),
                               [0x7F, 0x45, 0x4C, 0x46, 2, 1] + [UInt8](repeating: 0xFF, count: 80)] {
            #expect(throws: BundlerError.self) { try ELFFile(bytes: bytes, path: "/x") }
            do { _ = try ELFFile(bytes: bytes, path: "/x") } catch { #expect(error.code == .elfInvalid) }
        }
    }

    @Test func aLibraryNeitherInTheToolchainNorOnTheSystemIsNamed() throws {
        let path = try sharedObject([])
        try FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent + "/libhelper.so")
        let toolchain = try Toolchain.find()
        do {
            _ = try LibraryPlan.make(for: [try ELFFile(path: path)], toolchain: toolchain, dlopened: [])
            Issue.record("a missing library was planned")
        } catch {
            #expect(error.code == .library)
            #expect(error.message.hasPrefix("\(path) needs libhelper.so, which is neither in the toolchain ("), "\(error.message)")
            #expect(error.message.hasSuffix("nor installed on this system; install the package that provides it, then bundle again."))
        }
    }

    @Test func plansTheRuntimeIntoTheBundleAndTheRestOntoTheHost() throws {
        let toolchain = try Toolchain.find()
        let core = try ELFFile(path: toolchain.runtimeDirectories[0] + "/libFoundationEssentials.so")
        let plan = try LibraryPlan.make(for: [core], toolchain: toolchain, dlopened: ["libcrypto.so.3"])
        let names = plan.bundled.map(\.name)
        #expect(names.contains("libswiftCore.so") && !names.contains("libc.so.6"), "\(names)")
        #expect(names.firstIndex(of: "libswiftCore.so")! < names.firstIndex(of: "libswift_Concurrency.so")!, "dependencies first")
        #expect(plan.host.map(\.name) == ["libcrypto.so.3"])
        #expect(plan.host.first?.package == "libssl3")
        let order = plan.loadOrder(of: core)
        #expect(order.last == "libswiftGlibc.so" || order.contains("libswiftCore.so"))
    }

    @Test func optionsComeFromOneTable() throws {
        let options = try BundleOptions.parse(["--out", "d", "--listen", "127.0.0.1:8080", "--tries=5", "--previous-from", "r.tar.gz"])
        #expect(options.out == "d" && options.previousFrom == "r.tar.gz")
        #expect(options.settings.map(\.0) == ["supervise", "trial.tries", "supervise.listen"])
        for (arguments, message) in [(["--first-release", "--previous-from", "x"], "--first-release and --previous-from contradict each other: a first release has no previous release."),
                                     (["--supervise=yes"], "--supervise takes no value."),
                                     (["--out"], "--out needs a value (DIR)."),
                                     (["--metrics-dir", "relative"], "--metrics-dir needs an absolute directory, such as /var/lib/prometheus/node-exporter."),
                                     (["--directive-url", "file://etc/app/directive.json"], "--directive-url needs an absolute path in a file URL, such as file:///etc/app/directive.json, not 'file://etc/app/directive.json'.")] {
            do { _ = try BundleOptions.parse(arguments); Issue.record("\(arguments) parsed") } catch {
                #expect(error.code == .usage && error.exitCode == 64)
                #expect(error.message == message)
            }
        }
        #expect(BundleOptions.helpText.contains("  --tarball FILE"))
        #expect(try BundleOptions.parse(["--directive-url", "file:///etc/app/directive.json"]).settings.map { "\($0.0)=\($0.1)" } == ["remote.url=file:///etc/app/directive.json"])
    }

    @Test func bakeWindowAndAnalysisFileBecomeAnalysisSettingsTheLastWinning() throws {
        let directory = NSTemporaryDirectory() + "switchback-bundler-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/analysis"
        try "# the checks\nanalysis.window_s=60\nanalysis.checks=app\nanalysis.check.app.kind=app\n".write(toFile: file, atomically: true, encoding: .utf8)
        let options = try BundleOptions.parse(["--analysis", file, "--bake-window", "30"])
        #expect(options.settings.map(\.0) == ["analysis.checks", "analysis.check.app.kind", "analysis.window_s"])
        #expect(options.settings.last?.1 == "30")
        #expect(try BundleOptions.parse(["--bake-window=45"]).settings.map { "\($0.0)=\($0.1)" } == ["analysis.window_s=45"])

        // A window of 0 turns the analysis off, checks or not (docs/analysis.md).
        #expect(try BundleOptions.parse(["--analysis", file, "--bake-window", "0"]).settings.last.map { "\($0.0)=\($0.1)" } == "analysis.window_s=0")
        let windowless = directory + "/windowless"
        try "analysis.checks=app\nanalysis.check.app.kind=app\n".write(toFile: windowless, atomically: true, encoding: .utf8)
        let foreign = directory + "/foreign"
        try "analysis.window_s=60\nsupervise=true\n".write(toFile: foreign, atomically: true, encoding: .utf8)
        let insecure = directory + "/insecure"
        try "analysis.window_s=60\nanalysis.checks=p\nanalysis.check.p.kind=prometheus\nanalysis.check.p.address=http://prometheus.example:9090\nanalysis.check.p.query=up\nanalysis.check.p.success=result == 1\n"
            .write(toFile: insecure, atomically: true, encoding: .utf8)
        for (arguments, message) in [(["--bake-window", "soon"], "--bake-window needs a whole number, not 'soon'."),
                                     (["--analysis", directory + "/missing"], "--analysis: the file \(directory)/missing cannot be read; pass a file of analysis.* settings (docs/analysis.md)."),
                                     (["--analysis", foreign], "--analysis: the file \(foreign) sets 'supervise', which is not an analysis.* setting; keep only analysis.* keys in it."),
                                     (["--analysis", windowless], "The analysis has checks but no analysis.window_s; write analysis.window_s=SECONDS (e.g. 60), the bake window."),
                                     (["--analysis", insecure], "analysis.check.p.address is http://prometheus.example:9090, plain http to a host other than loopback, where anything on the path could change the answers that judge a build; use https, or set analysis.allow_insecure_http=true to accept that.")] {
            do { _ = try BundleOptions.parse(arguments); Issue.record("\(arguments) parsed") } catch {
                #expect(error.code == .usage && error.exitCode == 64)
                #expect(error.message == message)
            }
        }
        #expect(BundleOptions.helpText.contains("  --analysis FILE"))
    }

    /// The version stamp's source is written beside its object even when a directory above it
    /// holds ".o" (mktemp's `/tmp/notes-server-exercise.oFE0mI` once sent it to `.cFE0mI`).
    @Test func theVersionStampIsCompiledBesideItsObjectWhateverTheDirectoryIsCalled() throws {
        let directory = NSTemporaryDirectory() + "switchback-bundler.oFE0mI-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let object = directory + "/slot.o-stamp/stamp.o"
        let flags = try SwiftBuild.stamp(version: "1.0.1", build: "9903e2ed363e", object: object, scratch: directory + "/slot",
                                         product: "AppCore", toolchain: Toolchain.find())
        #expect(flags == ["-Xlinker", object])
        #expect(FileManager.default.fileExists(atPath: object))
        let source = try String(contentsOfFile: directory + "/slot.o-stamp/stamp.c", encoding: .utf8)
        #expect(source.contains("switchback_stamped_app_version[] = \"1.0.1\";"))
        #expect(!FileManager.default.fileExists(atPath: directory.replacingOccurrences(of: ".oFE0mI", with: ".cFE0mI")))
    }
}

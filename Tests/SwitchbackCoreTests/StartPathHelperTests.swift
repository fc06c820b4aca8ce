#if canImport(Glibc)
import Glibc
#endif
@testable import SwitchbackCore
import Testing

/// The start path's byte-level helpers: they decide what a slot is bound against and which
/// manifest lines are checked, so each is held to what it replaced.
struct StartPathHelperTests {
    @Test func libraryStampChangesWithAnyLibraryAndIsNilWhenOneIsMissing() throws {
        let directory = "/tmp/switchback-test-stamp-\(getpid())"
        mkdir(directory, 0o700)
        defer { _ = unlink(directory + "/a.so"); _ = unlink(directory + "/b.so"); rmdir(directory) }
        func write(_ name: String, _ text: String) {
            let descriptor = open(directory + "/" + name, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            _ = text.withCString { Glibc.write(descriptor, $0, strlen($0)) }
            close(descriptor)
        }
        write("a.so", "one")
        write("b.so", "two")
        let paths = [directory + "/a.so", directory + "/b.so"]
        let first = try #require(LibraryStamp.of(paths))
        #expect(LibraryStamp.of(paths) == first)
        #expect(LibraryStamp.of(paths.reversed()) != first)
        write("b.so", "three")  // another size: another fingerprint
        #expect(LibraryStamp.of(paths) != first)
        let now = try #require(LibraryStamp.of(paths))
        #expect(LibraryStamp.of(list: paths.joined(separator: ",")) == now)
        #expect(LibraryStamp.of(list: "," + paths.joined(separator: ",,") + ",") == now)  // empty fields skipped
        #expect(LibraryStamp.of(list: "") == nil)
        #expect(LibraryStamp.of(list: String(repeating: "/x", count: 5000)) == nil)  // longer than PATH_MAX
        #expect(LibraryStamp.of(paths + [directory + "/missing.so"]) == nil)
        #expect(LibraryStamp.of([]) == nil)
        #expect(LibraryStamp.of([directory + "/a.so," + directory + "/b.so"]) == nil)  // one path with a comma is not two
    }

    @Test func slotRecordKeepsItsLibraryListAsTheManifestHasIt() throws {
        let manifest = try Manifest.parse(Array((Self.manifest + "current.needed=/a/libx.so,/b/liby.so\n").utf8), path: "manifest")
        #expect(manifest.current.neededList == "/a/libx.so,/b/liby.so")
        #expect(manifest.current.needed == ["/a/libx.so", "/b/liby.so"])
        #expect(manifest.previous.needed == [])
        var record = manifest.current
        record.needed = ["/c/libz.so"]
        #expect(record.neededList == "/c/libz.so")
        #expect(record == Manifest.SlotRecord(version: record.version, build: record.build, abiStamp: record.abiStamp, size: record.size,
                                              sha256: record.sha256, needed: ["/c/libz.so"]))
    }

    @Test func bundleRelativeLibrariesResolveUnderTheBundleRoot() throws {
        var record = try Manifest.parse(Array((Self.manifest + "current.needed=lib/a.so,,/abs/b.so,lib/c.so,\n").utf8), path: "manifest").current
        record.resolveLibraries(in: "/opt/app")
        #expect(record.neededList == "/opt/app/lib/a.so,/abs/b.so,/opt/app/lib/c.so")
        record = try Manifest.parse(Array((Self.manifest + "current.needed=/abs/b.so,lib/c.so\n").utf8), path: "manifest").current
        record.resolveLibraries(in: "/opt/app")  // a list that starts absolute is the bundler's old absolute form: kept as it is
        #expect(record.neededList == "/abs/b.so,lib/c.so")
        record = try Manifest.parse(Array((Self.manifest + "current.needed=,,\n").utf8), path: "manifest").current
        record.resolveLibraries(in: "/opt/app")
        #expect(record.neededList == "")
    }

    @Test func hexDigestIsSixtyFourLowercaseHexDigits() {
        let digest = String(repeating: "0123456789abcdef", count: 4)
        #expect(FileDigest.isHexDigest(digest))
        #expect(!FileDigest.isHexDigest(digest.uppercased()))
        #expect(!FileDigest.isHexDigest(String(digest.dropLast())))
        #expect(!FileDigest.isHexDigest(digest + "0"))
        #expect(!FileDigest.isHexDigest(String(digest.dropLast()) + "g"))
        #expect(!FileDigest.isHexDigest(String(digest.dropLast(2)) + "é"))
    }

    @Test func abiStampParsesItsBytesAsBefore() {
        #expect(ABIStamp("switchback-abi/2 toolchain/21.0.0 (https://x y)") == ABIStamp(contractVersion: 2, toolchain: "21.0.0 (https://x y)"))
        #expect(ABIStamp("switchback-abi/1 toolchain/é") == ABIStamp(contractVersion: 1, toolchain: "é"))
        #expect(ABIStamp("switchback-abi/1 toolchain/") == ABIStamp(contractVersion: 1, toolchain: ""))
        for bad in ["", "switchback-abi/", "switchback-abi/2", "switchback-abi/x toolchain/t", "switchback-abi/2 compiler/t",
                    "switchback-abi/99999999999 toolchain/t", "switchback-ab/2 toolchain/t", "switchback-abi/-1 toolchain/t"] {
            #expect(ABIStamp(bad) == nil, "\(bad)")
        }
    }

    @Test func numericSettingsAreCheckedWhateverTheirNeighboursLength() {
        let manifest = Self.manifest
        for (key, bad) in [("trial.tries", "many"), ("supervise.drain_ms", "-1"), ("remote.splay_s", "99999999999")] {
            let error = #expect(throws: SwitchbackError.self) {
                try Manifest.parse(Array((manifest + "\(key)=\(bad)\n").utf8), path: "manifest")
            }
            #expect(error?.code == .manifestInvalid)
            #expect(error?.message.contains("invalid \(key) line") == true)
        }
        // Every numeric setting docs/fuzzing.md names is range-checked, each with its own range.
        let durations = ["remote.interval_s", "remote.deadline_ms", "remote.before_start_deadline_ms", "remote.max_staleness_s",
                         "remote.retry_floor_s", "remote.splay_s", "remote.first_check_s", "supervise.grace_ms", "supervise.backoff_initial_ms",
                         "supervise.backoff_max_ms", "supervise.backoff_reset_after_ms", "supervise.crash_window_ms",
                         "supervise.poll_ms", "supervise.start_deadline_ms", "supervise.min_ready_ms", "supervise.watchdog_ms",
                         "supervise.probe_interval_ms", "supervise.drain_ms"]
        for key in durations + ["trial.tries", "supervise.crash_limit"] {
            #expect((try? Manifest.parse(Array((manifest + "\(key)=12\n").utf8), path: "manifest")) != nil, "\(key)")
            let error = #expect(throws: SwitchbackError.self) { try Manifest.parse(Array((manifest + "\(key)=x\n").utf8), path: "manifest") }
            #expect(error?.message.contains("invalid \(key) line") == true, "\(key)")
        }
        for key in durations {  // beyond a count, within a duration
            #expect((try? Manifest.parse(Array((manifest + "\(key)=2000000\n").utf8), path: "manifest")) != nil, "\(key)")
        }
        for key in ["trial.tries", "supervise.crash_limit"] {
            #expect((try? Manifest.parse(Array((manifest + "\(key)=2000000\n").utf8), path: "manifest")) == nil, "\(key)")
        }
        // Only the first line of a key is checked, as only the first counts.
        #expect((try? Manifest.parse(Array((manifest + "trial.tries=4\ntrial.tries=x\n").utf8), path: "manifest")) != nil)
        #expect((try? Manifest.parse(Array((manifest + "trial.tries=x\ntrial.tries=4\n").utf8), path: "manifest")) == nil)
        // A key of a setting's length that is not one is an ordinary setting.
        #expect((try? Manifest.parse(Array((manifest + "trial.xxxxx=many\n").utf8), path: "manifest")) != nil)
    }

    /// A complete manifest as scripts/bundle writes one.
    static let manifest = """
        format=1
        app_id=dev.switchback.test
        current.version=1.2.0
        current.build=abc
        current.abi=switchback-abi/2 toolchain/x
        current.size=100
        current.sha256=\(String(repeating: "ab", count: 32))
        previous.version=1.1.0
        previous.build=def
        previous.abi=switchback-abi/2 toolchain/x
        previous.size=100
        previous.sha256=\(String(repeating: "ab", count: 32))

        """
}

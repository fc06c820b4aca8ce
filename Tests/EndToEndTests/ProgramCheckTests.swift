import Foundation
import SwitchbackCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Every program Switchback runs as root is checked as a slot is, on the descriptor it then
/// runs: `bin/rollbackctl-remote`, which the launcher starts for the remote check and which
/// `rollbackctl sync`, `keygen` and `sign` hand over to; and the files `sign` acts on.
@Suite(.enabled(if: geteuid() == 0, "needs root to create a second user and give it files"))
struct ProgramCheckTests {
    /// A private bundle whose remote check is due at every start (no random wait), whose
    /// `bin/rollbackctl-remote` is set aside so each case can put its own in place.
    struct Setup {
        let t: TestBundle
        /// The bundle as the kernel names it (the sentences name resolved paths).
        let bundle: String
        let directory: String
        /// The real program, set aside.
        let kept: String
        /// A compiled program that appends to `marker` if anything runs it.
        let impostor: String
        let marker: String
        var program: String { bundle + "/bin/rollbackctl-remote" }

        init() throws {
            t = try TestBundle()
            directory = try #require(FileSystem.resolved(t.directory))
            bundle = directory + "/bundle"
            kept = directory + "/rollbackctl-remote.kept"
            try shell("mv", t.bundle + "/bin/rollbackctl-remote", kept)
            marker = directory + "/impostor-ran"
            impostor = directory + "/impostor"
            let source = impostor + ".c"
            try """
                #include <fcntl.h>
                #include <unistd.h>
                int main(void) {
                    int fd = open("\(marker)", O_WRONLY | O_CREAT | O_APPEND, 0644);
                    if (fd >= 0) { write(fd, "ran\\n", 4); close(fd); }
                    return 0;
                }
                """.write(toFile: source, atomically: true, encoding: .utf8)
            try shell("cc", "-o", impostor, source)
            // A directive URL (nothing listens there: the check must never get that far).
            try t.setManifestSetting("remote.url", "http://127.0.0.1:9/directive.json")
            try t.setManifestSetting("remote.splay_s", "0")
        }

        /// Makes the next start's check due (no marker: a first check).
        func makeDue() { unlink(t.state + "/remote.attempt") }

        /// The launcher, with the check due, both ways it runs the program: in the background
        /// (the default) and before the start (`remote.check_before_start`). It starts the app
        /// and says why the program was refused.
        func expectLauncherRefuses(_ refusal: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            for beforeStart in ["false", "true"] {
                try t.setManifestSetting("remote.check_before_start", beforeStart)
                makeDue()
                let result = try t.launcher()
                #expect(result.status == 0, "\(result)", sourceLocation: sourceLocation)
                #expect(result.stdout.hasPrefix(t.greeting(.current)), "\(result)", sourceLocation: sourceLocation)
                #expect(result.stderr == "launcher: \(refusal) The remote directive was not checked.\n", sourceLocation: sourceLocation)
            }
            try t.setManifestSetting("remote.check_before_start", "false")
        }

        /// `rollbackctl sync`, `keygen` and `sign`: exit 1 with the refusal, nothing written.
        func expectRollbackctlRefuses(_ refusal: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let keys = directory + "/keys-\(UUID().uuidString)"
            for arguments in [["sync"], ["keygen", "--out", keys],
                              ["sign", "--key", keys + "/directive.key", "--decision", "previous", "--applies-to", "1.0.0",
                               "--reason", "test", "--app-id", "app"]] {
                let result = try t.run(bundle + "/bin/rollbackctl", arguments)
                #expect(result.status == 1, "\(arguments): \(result)", sourceLocation: sourceLocation)
                #expect(result.stdout == "", sourceLocation: sourceLocation)
                #expect(result.stderr == "Error: \(refusal)\n", "\(arguments)", sourceLocation: sourceLocation)
            }
            #expect(!FileManager.default.fileExists(atPath: keys), sourceLocation: sourceLocation)
        }
    }

    @Test func aReplacedRollbackctlRemoteIsNeverRun() throws {
        let s = try Setup()
        let other = try SecondUser.uid()

        // (a) Writable by everyone.
        try shell("install", "-m", "777", s.impostor, s.program)
        try shell("chmod", "777", s.program)  // install honours no umask, but be explicit
        let writable = "The rollbackctl-remote program \(s.program) is writable by other users (owner uid 0, mode 777); refusing to trust it: run 'chmod go-w \(s.program)'."
        try s.expectLauncherRefuses(writable)
        try s.expectRollbackctlRefuses(writable)

        // (b) Owned by the second user (mode 755: only the owner could have written it).
        try shell("chmod", "755", s.program)
        try shell("chown", String(other), s.program)
        let foreign = "The rollbackctl-remote program \(s.program) is owned by another user (owner uid \(other), mode 755); refusing to trust it: run 'chown 0 \(s.program)' or remove it."
        try s.expectLauncherRefuses(foreign)
        try s.expectRollbackctlRefuses(foreign)
        try shell("rm", s.program)

        // (c) A link (root's own) into a directory everyone can write, sticky or not: the file
        // there is root's and 0755, but anyone could have put it there or can swap it.
        for mode in ["1777", "777"] {
            let open = s.directory + "/open-\(mode)"
            try shell("mkdir", "-m", mode, open)
            try shell("chmod", mode, open)
            try shell("install", "-m", "755", s.impostor, open + "/rollbackctl-remote")
            try shell("ln", "-sfn", open + "/rollbackctl-remote", s.program)
            let linked = "The directory of the rollbackctl-remote program \(open) is writable by other users (owner uid 0, mode \(mode)); refusing to trust it: run 'chmod go-w \(open)'."
            try s.expectLauncherRefuses(linked)
            try s.expectRollbackctlRefuses(linked)
            try shell("rm", s.program)
        }

        // A detached sync would have started at once (no random wait): give one a moment.
        usleep(500_000)
        #expect(!FileManager.default.fileExists(atPath: s.marker), "the impostor ran")

        // The real program, back in place, passes and runs.
        try shell("mv", s.kept, s.program)
        let keys = s.directory + "/keys"
        let made = try s.t.run(s.bundle + "/bin/rollbackctl", ["keygen", "--out", keys])
        #expect(made.status == 0, "\(made)")
        #expect(FileManager.default.fileExists(atPath: keys + "/directive.key"))
    }

    /// A script is no program of the bundle: refused even when its owner and mode are right.
    @Test func aScriptInPlaceOfTheProgramIsRefused() throws {
        let s = try Setup()
        try "#!/bin/sh\necho ran >> \(s.marker)\n".write(toFile: s.program, atomically: true, encoding: .utf8)
        try shell("chmod", "755", s.program)
        let refusal = "The rollbackctl-remote program \(s.program) is not an ELF executable; refusing to run it: rebuild the bundle with scripts/bundle."
        try s.expectLauncherRefuses(refusal)
        try s.expectRollbackctlRefuses(refusal)
        #expect(!FileManager.default.fileExists(atPath: s.marker))
    }

    /// `sign` reads its key and the directive it renews as a slot is read: one another user
    /// could replace is refused, with a sentence naming it.
    @Test func signRefusesAKeyOrDirectiveAnotherUserCouldReplace() throws {
        let other = try SecondUser.uid()
        let t = try TestBundle()
        let directory = try #require(FileSystem.resolved(t.directory))
        let keys = directory + "/keys"
        let made = try t.rollbackctl("keygen", "--out", keys)
        try #require(made.status == 0, "\(made)")
        let key = keys + "/directive.key"
        let out = directory + "/directive.json"
        let fields = ["--decision", "previous", "--applies-to", "1.0.0", "--reason", "test", "--app-id", "app", "--out", out]
        #expect(try t.run(t.bundle + "/bin/rollbackctl", ["sign", "--key", key] + fields).status == 0)

        try shell("chmod", "666", key)
        var result = try t.run(t.bundle + "/bin/rollbackctl", ["sign", "--key", key] + fields)
        #expect(result.status == 1)
        #expect(result.stderr == "Error: The private key \(key) is writable by other users (owner uid 0, mode 666); refusing to trust it: run 'chmod go-w \(key)'.\n")
        try shell("chmod", "600", key)

        try shell("chown", String(other), key)
        result = try t.run(t.bundle + "/bin/rollbackctl", ["sign", "--key", key] + fields)
        #expect(result.status == 1)
        #expect(result.stderr == "Error: The private key \(key) is owned by another user (owner uid \(other), mode 600); refusing to trust it: run 'chown 0 \(key)' or remove it.\n")
        try shell("chown", "0", key)

        try shell("chmod", "777", keys)
        result = try t.run(t.bundle + "/bin/rollbackctl", ["sign", "--key", key] + fields)
        #expect(result.status == 1)
        #expect(result.stderr == "Error: The directory of the private key \(keys) is writable by other users (owner uid 0, mode 777); refusing to trust it: run 'chmod go-w \(keys)'.\n")
        try shell("chmod", "700", keys)

        // The directive `--renew` re-signs: another user's file could be an older directive
        // this key signed, which the renewal would bless again.
        let before = try Data(contentsOf: URL(fileURLWithPath: out))
        try shell("chown", String(other), out)
        let mode = String((try FileManager.default.attributesOfItem(atPath: out)[.posixPermissions] as! Int), radix: 8)
        result = try t.run(t.bundle + "/bin/rollbackctl", ["sign", "--renew", out, "--key", key])
        #expect(result.status == 1)
        #expect(result.stderr == "Error: The directive file \(out) is owned by another user (owner uid \(other), mode \(mode)); refusing to trust it: run 'chown 0 \(out)' or remove it.\n")
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == before)
        try shell("chown", "0", out)
        result = try t.run(t.bundle + "/bin/rollbackctl", ["sign", "--renew", out, "--key", key])
        #expect(result.status == 0, "\(result)")
    }
}

import Foundation
import Testing
@testable import SwitchbackCore

/// `ProgramFile.open` and `TrustedFile.read` on a real file system: each refusal's code and
/// sentence, and a good program that runs from its descriptor.
@Suite struct ProgramFileTests {
    let root: String

    init() throws {
        var template = Array((NSTemporaryDirectory() + "/switchback-program-XXXXXX").utf8CString)
        guard let pointer = mkdtemp(&template) else { throw SwitchbackError(.ioFailure, "mkdtemp failed") }
        root = URL(fileURLWithPath: String(cString: pointer)).resolvingSymlinksInPath().path
    }

    /// A copy of /bin/true (an ELF executable) at `path` with `mode`.
    func program(_ path: String, mode: mode_t = 0o755) throws {
        try write(path, try Data(contentsOf: URL(fileURLWithPath: "/bin/true")), mode: mode)
    }

    func write(_ path: String, _ data: Data, mode: mode_t) throws {
        try data.write(to: URL(fileURLWithPath: path))
        chmod(path, mode)
    }

    func refusal(_ path: String) -> SwitchbackError? {
        do { _ = try ProgramFile.open(path, what: "test program"); return nil } catch { return error }
    }

    @Test func aGoodProgramOpensAndRunsFromItsDescriptor() throws {
        let path = root + "/good"
        try program(path)
        let file = try ProgramFile.open(path, what: "test program")
        #expect(file.procPath == "/proc/self/fd/\(file.descriptor)")
        // Run it through procfs, as posix_spawn does: /bin/true exits 0.
        var pid: pid_t = 0
        let spawned = withCStrings([path]) { argv in posix_spawn(&pid, file.procPath, nil, nil, UnsafeMutablePointer(mutating: argv), environ) }
        #expect(spawned == 0)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        #expect(status == 0)
    }

    @Test func eachRefusalSaysWhichFileAndWhy() throws {
        let missing = refusal(root + "/missing")
        #expect(missing?.code == .fileNotFound)
        #expect(missing?.message == "The test program \(root)/missing is missing; rebuild the bundle with scripts/bundle.")

        let writable = root + "/writable"
        try program(writable, mode: 0o777)
        #expect(refusal(writable)?.code == .insecurePermissions)
        #expect(refusal(writable)?.message == "The test program \(writable) is writable by other users (owner uid \(geteuid()), mode 777); refusing to trust it: run 'chmod go-w \(writable)'.")

        let plain = root + "/plain"
        try program(plain, mode: 0o644)
        #expect(refusal(plain)?.code == .programNotRunnable)
        #expect(refusal(plain)?.message == "The test program \(plain) is not executable (mode 644); refusing to run it: rebuild the bundle with scripts/bundle.")

        let script = root + "/script"
        try write(script, Data("#!/bin/sh\nexit 0\n".utf8), mode: 0o755)
        #expect(refusal(script)?.code == .programNotRunnable)
        #expect(refusal(script)?.message == "The test program \(script) is not an ELF executable; refusing to run it: rebuild the bundle with scripts/bundle.")

        let directory = root + "/directory"
        mkdir(directory, 0o755)
        #expect(refusal(directory)?.message == "The test program \(directory) is not a regular file; refusing to run it: rebuild the bundle with scripts/bundle.")

        // A link (ours) into a world-writable sticky directory: the directory that holds the
        // program gets no sticky exception.
        let open = root + "/open"
        mkdir(open, 0o700)
        chmod(open, 0o1777)
        try program(open + "/target")
        let link = root + "/link"
        symlink(open + "/target", link)
        #expect(refusal(link)?.code == .insecurePermissions)
        #expect(refusal(link)?.message == "The directory of the test program \(open) is writable by other users (owner uid \(geteuid()), mode 1777); refusing to trust it: run 'chmod go-w \(open)'.")
    }

    @Test(.enabled(if: geteuid() == 0, "needs root to give a file to another uid"))
    func aProgramOfAnotherUserIsRefused() throws {
        let path = root + "/foreign"
        try program(path)
        chown(path, 65534, 65534)
        #expect(refusal(path)?.code == .insecurePermissions)
        #expect(refusal(path)?.message == "The test program \(path) is owned by another user (owner uid 65534, mode 755); refusing to trust it: run 'chown 0 \(path)' or remove it.")
    }

    @Test func aTrustedFileIsReadOnlyWhenNoOtherUserCouldHaveWrittenIt() throws {
        let path = root + "/key"
        try write(path, Data("secret".utf8), mode: 0o600)
        #expect(try TrustedFile.read(path, what: "private key") == Array("secret".utf8))
        #expect(try TrustedFile.read(root + "/none", what: "private key") == nil)
        chmod(path, 0o622)
        #expect { try TrustedFile.read(path, what: "private key") } throws: { error in
            (error as? SwitchbackError)?.code == .insecurePermissions
                && (error as? SwitchbackError)?.message == "The private key \(path) is writable by other users (owner uid \(geteuid()), mode 622); refusing to trust it: run 'chmod go-w \(path)'."
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import SwitchbackCore
import SwitchbackTestSupport
import Testing

/// A directive file's URL and version (docs/remote.md, "Directives from a file").
struct DirectiveFileTests {
    @Test func onlyAFileURLWithAnAbsolutePathNamesAFile() {
        #expect(DirectiveFile.path(ofURL: "file:///etc/app/directive.json") == "/etc/app/directive.json")
        #expect(DirectiveFile.path(ofURL: "file://localhost/etc/app/directive.json") == "/etc/app/directive.json")
        #expect(DirectiveFile.path(ofURL: "file://example.com/etc/app/directive.json") == nil)
        #expect(DirectiveFile.path(ofURL: "file://") == nil)
        #expect(DirectiveFile.path(ofURL: "https://example.com/directive.json") == nil)
        #expect(RemoteScheduleTests.settings().filePath == nil)
    }

    @Test func theVersionMovesWithTheFileAndTheCurrentBuild() throws {
        var template = Array("/tmp/switchback-test-XXXXXX".utf8CString)
        let directory = String(cString: try #require(mkdtemp(&template)))
        defer { _ = rmdir(directory) }
        let path = directory + "/directive.json"
        #expect(DirectiveFile.fingerprint(of: path, for: "1.2.0") == "missing for 1.2.0")
        let fd = open(path, O_WRONLY | O_CREAT, 0o644)
        #expect(write(fd, "{}", 2) == 2)
        close(fd)
        defer { unlink(path) }
        let first = DirectiveFile.fingerprint(of: path, for: "1.2.0")
        #expect(first.hasPrefix("v1 ") && first.hasSuffix(" for 1.2.0"))
        #expect(DirectiveFile.fingerprint(of: path, for: "1.2.0") == first)
        #expect(DirectiveFile.fingerprint(of: path, for: "1.3.0") != first)
        // A rename into place (configuration management, the kubelet's new file): a new inode.
        let other = directory + "/next"
        let fd2 = open(other, O_WRONLY | O_CREAT, 0o644)
        #expect(write(fd2, "{}", 2) == 2)
        close(fd2)
        #expect(rename(other, path) == 0)
        #expect(DirectiveFile.fingerprint(of: path, for: "1.2.0") != first)
    }
}

@testable import RemoteCtlKit
import Testing

/// A webhook's failure sentence goes to `hooks/status` and `rollbackctl status`: what libcurl
/// quotes of the server (a certificate's subject name) arrives without a control character.
@Suite struct HookPostTests {
    @Test func libcurlsErrorTextIsMadeSafe() {
        let clause = HookPost.failure(curlCode: 60, error: "SSL: certificate subject name '\u{1B}[31mevil\r\nHooks: forged' does not match target host name", timeoutMilliseconds: 5000)
        #expect(!clause.unicodeScalars.contains { $0.value < 0x20 || $0 == "\u{7F}" }, "\(clause)")
        #expect(clause.hasPrefix("could not be reached (SSL: certificate subject name '") && clause.contains("evil"), "\(clause)")
        #expect(HookPost.failure(curlCode: 7, error: "x", timeoutMilliseconds: 5000) == "could not be reached (connection refused)")
        #expect(HookPost.failure(curlCode: 28, error: "", timeoutMilliseconds: 250) == "gave no answer within 250 ms (hooks.timeout_ms)")
    }
}

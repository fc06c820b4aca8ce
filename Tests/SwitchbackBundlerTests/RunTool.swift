import Foundation
import Testing

/// Runs `tool` with `arguments` (cc, strip, tar) and expects exit 0: the fixtures the bundler's
/// tests build from real compilers and archivers.
func run(_ tool: String, _ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool)
    process.arguments = arguments
    try process.run()
    process.waitUntilExit()
    #expect(process.terminationStatus == 0, "\(tool) \(arguments)")
}

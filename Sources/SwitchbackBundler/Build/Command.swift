import Foundation

/// Runs another program and waits for it: the toolchain's `swift`, `git`, `tar` and
/// `llvm-objcopy`, nothing else.
struct Command {
    var executable: String
    var arguments: [String]
    var environment: [String: String]? = nil
    var directory: String? = nil

    init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil) {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
        self.directory = directory
    }

    struct Result {
        var status: Int32
        var output: String
    }

    /// Runs the command with its standard output and error captured together (or, with
    /// `logTo`, written to that file). Throws `.tool` when it cannot be started.
    @discardableResult
    func run(logTo log: String? = nil, input: FileHandle? = nil) throws(BundlerError) -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        process.standardInput = input ?? FileHandle.nullDevice
        let pipe = Pipe()
        var logHandle: FileHandle?
        if let log {
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            logHandle = FileHandle(forWritingAtPath: log)
            process.standardOutput = logHandle
            process.standardError = logHandle
        } else {
            process.standardOutput = pipe
            process.standardError = pipe
        }
        do { try process.run() } catch {
            throw BundlerError(.tool, "Cannot run \(executable): \(error.localizedDescription); install it or put it on PATH.", path: executable)
        }
        var output = Data()
        if log == nil { output = pipe.fileHandleForReading.readDataToEndOfFile() }
        process.waitUntilExit()
        try? logHandle?.close()
        return Result(status: process.terminationStatus, output: String(decoding: output, as: UTF8.self))
    }

    /// Runs the command and returns its output, trimmed; throws `failure` (with the output's
    /// last lines appended) when it exits non-zero.
    func output(or failure: (String) -> BundlerError) throws(BundlerError) -> String {
        let result = try run()
        guard result.status == 0 else { throw failure(result.output.lastLines(12)) }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The absolute path of `name` on PATH, or nil.
    static func find(_ name: String, extraDirectories: [String] = []) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in extraDirectories + path.split(separator: ":").map(String.init) {
            let candidate = directory + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}

extension String {
    /// The last `count` lines.
    func lastLines(_ count: Int) -> String {
        split(separator: "\n", omittingEmptySubsequences: false).suffix(count).joined(separator: "\n")
    }
}

// `switchback-bundle [options]`: builds an app's self-contained bundle (SwitchbackBundler).
// `swift run switchback-bundle` in an app's package; scripts/bundle in this repository.
// `switchback-bundle pin-previous REV`: pins PreviousVersion/ with scripts/pin-previous.
import Foundation
import SwitchbackBundler

func fail(_ message: String, code: Int32) -> Never {
    FileHandle.standardError.write(Data("Error: \(message)\n".utf8))
    if code == 64 { FileHandle.standardError.write(Data("See 'switchback-bundle --help'.\n".utf8)) }
    exit(code)
}

// The Switchback checkout this tool was built from: three levels above this file.
let switchbackRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "pin-previous" {
    let script = switchbackRoot + "/scripts/pin-previous"
    let argv = [script, "--package", "."] + arguments.dropFirst()
    var cArguments = argv.map { strdup($0) } + [nil]
    execv(script, &cArguments)
    fail("cannot run \(script): \(String(cString: strerror(errno))).", code: 1)
}
do {
    let options = try BundleOptions.parse(arguments)
    if options.help {
        print(BundleOptions.helpText, terminator: "")
        exit(0)
    }
    let bundler = Bundler(options: options, switchbackRoot: ProcessInfo.processInfo.environment["SWITCHBACK_ROOT"] ?? switchbackRoot) {
        FileHandle.standardError.write(Data("bundle: \($0)\n".utf8))
    }
    let result = try bundler.run()
    let megabytes = String(format: "%.1f", Double(result.size) / 1_000_000)
    FileHandle.standardError.write(Data("bundle: wrote \(result.out) (\(result.currentVersion) current, \(result.previousVersion) previous; \(megabytes) MB without debug/)\n".utf8))
    if !result.hostLibraries.isEmpty {
        let listed = result.hostLibraries.map { "\($0.name) (\($0.package))" }.joined(separator: ", ")
        FileHandle.standardError.write(Data("bundle: the host provides \(listed)\n".utf8))
    }
    if let tarball = options.tarball {
        print("\(tarball): manifest sha256 \(result.manifestSHA256)")
    }
} catch {
    fail(error.message, code: error.exitCode)
}

// `swift run switchback-bundle [options]`, from an app's package: builds the app's bundle with
// Switchback's scripts/bundle, passing the package it runs in (`--package .`).
// `swift run switchback-bundle pin-previous REV`: pins PreviousVersion/ to the release REV
// with scripts/pin-previous, the release routine's step (docs/adopting.md).
//
// Why an executable product and not a command plugin: `swift run` releases the build lock
// before it executes the tool, which then runs `swift build` itself (twice: current and
// previous slot); a plugin runs inside `swift package`, holding that lock, and needs
// `--allow-writing-to-package-directory` on every run. The script is found beside this
// source file, in the Switchback checkout the tool was built from.
#if canImport(Glibc)
import Glibc
#endif

let source = "\(#filePath)"
let root = source.components(droppingLast: 3)
let pinning = CommandLine.arguments.dropFirst().first == "pin-previous"
let script = root + (pinning ? "/scripts/pin-previous" : "/scripts/bundle")
guard access(script, X_OK) == 0 else {
    var message = "Error: cannot find Switchback's script at \(script); build switchback-bundle from a Switchback checkout.\n"
    _ = message.withUTF8 { write(2, $0.baseAddress, $0.count) }
    exit(1)
}
let arguments = [script, "--package", "."] + CommandLine.arguments.dropFirst(pinning ? 2 : 1)
var cArguments = arguments.map { strdup($0) } + [nil]
execv(script, &cArguments)
var message = "Error: cannot run \(script): \(String(cString: strerror(errno))).\n"
_ = message.withUTF8 { write(2, $0.baseAddress, $0.count) }
exit(1)

extension String {
    /// The path without its last `count` components.
    func components(droppingLast count: Int) -> String {
        var path = Substring(self)
        for _ in 0..<count {
            guard let slash = path.lastIndex(of: "/") else { return "." }
            path = path[..<slash]
        }
        return String(path)
    }
}

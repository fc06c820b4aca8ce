#if canImport(Glibc)
import Glibc
#endif
import SwitchbackFuzzing

/// The target named by `$SWITCHBACK_FUZZ_TARGET` (scripts/fuzz sets it).
let selectedTarget: FuzzTarget = {
    let name = getenv("SWITCHBACK_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    guard let target = FuzzTarget(rawValue: name) else {
        fatalError("Set SWITCHBACK_FUZZ_TARGET to one of: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")).")
    }
    return target
}()

#if SWITCHBACK_LIBFUZZER
/// libFuzzer's entry point: one input through the selected target. A broken invariant traps
/// with its description, so libFuzzer keeps the input as a crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    do {
        _ = try selectedTarget.run(bytes)
    } catch {
        fatalError("\(selectedTarget.rawValue): \(error)")
    }
    return 0
}

/// libFuzzer's driver (compiler-rt's FuzzerDriver.cpp): parses libFuzzer's flags and runs.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                     _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

/// The program's entry: SwiftPM links an executable target's `main` to `<module>_main`, so
/// the harness provides it and hands over to libFuzzer's driver (rather than libFuzzer's own
/// `main`, which SwiftPM's link would not reach).
@_cdecl("switchback_fuzz_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments) { data, size in fuzzTestOneInput(data, size) }
}
#else
/// Without libFuzzer: `switchback-fuzz TARGET FILE...` runs each file through a target and
/// prints the outcome (exit 1 on a broken invariant), to replay a finding in a debugger.
@main
enum FuzzReplay {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard let name = arguments.first, let target = FuzzTarget(rawValue: name), arguments.count > 1 else {
            let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")
            printError("Usage: switchback-fuzz \(names) FILE...\n(scripts/fuzz builds this with libFuzzer; see docs/fuzzing.md.)")
            exit(64)
        }
        var failed = false
        for path in arguments.dropFirst() {
            guard let file = fopen(path, "rb") else {
                printError("Error: cannot open \(path).")
                exit(1)
            }
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = fread(&buffer, 1, buffer.count, file)
                if count <= 0 { break }
                bytes.append(contentsOf: buffer[0..<count])
            }
            fclose(file)
            do {
                print("\(path): \(try target.run(bytes))")
            } catch {
                print("\(path): FAILURE \(error)")
                failed = true
            }
        }
        exit(failed ? 1 : 0)
    }

    static func printError(_ line: String) {
        var text = line + "\n"
        _ = text.withUTF8 { write(2, $0.baseAddress, $0.count) }
    }
}
#endif

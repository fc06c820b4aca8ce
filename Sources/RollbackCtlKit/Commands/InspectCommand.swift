#if canImport(Glibc)
import Glibc
#endif
import CSwitchbackContract
import SwitchbackCore

/// `inspect PATH`: load one AppCore library (only one per process) and print what it says
/// about itself.
struct InspectCommand: Command {
    static let configuration = CommandConfiguration(
        name: "inspect",
        abstract: "Show the version, build and ABI stamp of an AppCore library.",
        overview: """
            Load one AppCore library and print its version, build, ABI stamp, size and
            SHA-256 as key=value lines (scripts/bundle writes the manifest from them).
            """,
        arguments: [.init("<path>", required: true, help: "The AppCore library to load.", missing: "the library's path")],
        options: [.init("--json", help: "Print JSON.")])

    let path: String
    let json: Bool

    init(_ arguments: ParsedArguments, _ context: CommandContext) throws(CommandError) {
        path = arguments.positionals[0]
        json = arguments.wantsJSON
    }

    private typealias CString = @convention(c) () -> UnsafePointer<CChar>?

    func run(_ console: Console) throws(CommandError) {
        guard let absolute = FileSystem.resolved(path) else { throw .failure("The library \(path) does not exist.") }
        let library: DynamicLibrary
        let digest: String
        let size: Int64
        do throws(SwitchbackError) {
            guard let info = try FileSystem.status(absolute) else { throw SwitchbackError(.fileNotFound, "The library \(path) does not exist.") }
            size = Int64(info.st_size)
            digest = try FileDigest.hexDigest(ofFile: absolute)
            library = try DynamicLibrary.open(at: absolute)
        } catch {
            throw .failure(error.message)
        }
        func string(_ symbol: String) throws(CommandError) -> String {
            guard let function = library.symbol(named: symbol, as: CString.self), let pointer = function() else {
                throw .failure("\(path) does not export \(symbol); it is not an AppCore build.")
            }
            return String(cString: pointer)
        }
        let fields: [(String, String)] = [
            ("version", try string(SWITCHBACK_VERSION_SYMBOL)),
            ("build", try string(SWITCHBACK_BUILD_SYMBOL)),
            ("abi", try string(SWITCHBACK_STAMP_SYMBOL)),
            ("size", String(size)),
            ("sha256", digest),
            // Whether the build converts its data back before a rollback (contract 2).
            ("downgrade", library.symbol(named: SWITCHBACK_DOWNGRADE_SYMBOL, as: CString.self) == nil ? "false" : "true"),
        ]
        if json {
            console.out(JSONWriter.render(Dictionary(uniqueKeysWithValues: fields)))
        } else {
            for (key, value) in fields { console.out("\(key)=\(KeyValueText.escape(value))") }
        }
    }
}

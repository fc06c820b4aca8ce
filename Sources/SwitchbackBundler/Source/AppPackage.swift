import Foundation
import SwitchbackCore

/// The app package being bundled: where it is, its dynamic library product, its version.
struct AppPackage {
    var directory: String

    /// The package's dynamic library products (`swift package dump-package`), remembered in
    /// `record` for the same Package.swift (its SHA-256) and toolchain: compiling and running
    /// the manifest took 1.5 s of every release.
    func dynamicLibraryProducts(toolchain: Toolchain, scratch: String, record: String) throws(BundlerError) -> [String] {
        func dump() throws(BundlerError) -> String {
            let json = try Command(toolchain.swift, ["package", "--package-path", directory, "--scratch-path", scratch, "dump-package"])
                .output { BundlerError(.package, "Cannot read \(directory)/Package.swift (swift package dump-package failed); fix the manifest, then retry: \($0)") }
            struct Dump: Decodable {
                var products: [Product]
                struct Product: Decodable { var name: String; var type: [String: [String]?] }
            }
            guard let start = json.firstIndex(of: "{"), let dump = try? JSONDecoder().decode(Dump.self, from: Data(json[start...].utf8)) else {
                throw BundlerError(.package, "Cannot read the products of \(directory)/Package.swift; fix the manifest, then retry.")
            }
            return dump.products.filter { ($0.type["library"] ?? nil) == ["dynamic"] }.map(\.name).joined(separator: "\n")
        }
        let manifest = (try? FileDigest.hexDigest(ofFile: directory + "/Package.swift")) ?? "unreadable"
        let answer = try Remembered.answer(at: record, key: "products \(directory) \(manifest) \(toolchain.version)", dump)
        return answer.split(separator: "\n").map(String.init)
    }

    /// The trimmed contents of VERSION in `directory`.
    static func version(in directory: String) -> String? {
        guard let text = try? String(contentsOfFile: directory + "/VERSION", encoding: .utf8) else { return nil }
        let version = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return version.isEmpty ? nil : version
    }
}

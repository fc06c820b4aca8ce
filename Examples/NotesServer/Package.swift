// swift-tools-version:6.1
import PackageDescription

// NotesServer: a Hummingbird 2 HTTP server shipped as a Switchback bundle. The app's code is
// the dynamic library NotesServer, which the launcher loads from a slot; notes-server-direct
// is the same server linked into a plain executable (for `swift run` and for benchmarks).
let package = Package(
    name: "NotesServer",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "NotesServer", type: .dynamic, targets: ["NotesServer"]),
        .executable(name: "notes-server-direct", targets: ["notes-server-direct"]),
    ],
    dependencies: [
        // No default traits: they link full Foundation and ICU into the slot (12.8 MB instead of
        // 12.0 MB stripped, and more libraries for every start to load) for features this
        // server does not use (FullFoundation, ConfigurationSupport).
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
        // Already a dependency of Hummingbird's: named here only for NIOCore's Channel, whose
        // local address gives the port the server really listens on (`--port 0`).
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        .package(name: "Switchback", path: "../.."),
    ],
    targets: [
        .target(
            name: "NotesServer",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Switchback", package: "Switchback"),
            ]
        ),
        .executableTarget(
            name: "notes-server-direct",
            dependencies: ["NotesServer", .product(name: "Switchback", package: "Switchback")]
        ),
    ],
    swiftLanguageModes: [.v6]
)

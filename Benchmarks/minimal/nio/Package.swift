// swift-tools-version:6.2
// The floor for a Swift server: SwiftNIO answering GET /healthz and nothing else, built as Herald's
// functions are (release, static Swift runtime, lld, no dynamic symbols). Benchmarks/compare.py builds
// it and measures it beside Herald's functions and the C server in the same run.
import PackageDescription

let package = Package(
    name: "NIOHealthz",
    dependencies: [.package(url: "https://github.com/apple/swift-nio", from: "2.101.2")],
    targets: [
        .executableTarget(
            name: "NIOHealthz",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            linkerSettings: [.unsafeFlags(["-use-ld=lld", "-Xlinker", "--no-export-dynamic", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"])]
        )
    ]
)

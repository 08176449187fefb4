import Foundation

/// Where a test finds the package's files and the executables `swift build` made.
public enum TestPaths {
    /// The package root, found from this file's location at build time (`Sources/Tools/HeraldTesting/`).
    public static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    public static let fixtures = packageRoot.appendingPathComponent("Tests/Fixtures")

    /// The build products folder (`.build/debug`): the test bundle runs from there.
    public static var products: URL {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // On some platforms the runner is inside a bundle folder (`X.xctest/Contents/MacOS`).
        while url.path.contains(".xctest") { url = url.deletingLastPathComponent() }
        return url
    }

    public static func executable(_ name: String) -> URL { products.appendingPathComponent(name) }

    public static func fixture(_ relativePath: String) -> URL { fixtures.appendingPathComponent(relativePath) }

    /// Every fixture file of one scenario (`default/message-created`), keyed by encoding name.
    public static func encodings(of scenario: String) throws -> [String: URL] {
        let folder = fixtures.appendingPathComponent(scenario).deletingLastPathComponent()
        let stem = URL(fileURLWithPath: scenario).lastPathComponent + "."
        var result: [String: URL] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) where name.hasPrefix(stem) && name.hasSuffix(".json") {
            result[String(name.dropFirst(stem.count).dropLast(".json".count))] = folder.appendingPathComponent(name)
        }
        return result
    }
}

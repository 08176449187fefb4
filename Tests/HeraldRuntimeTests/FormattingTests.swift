import Foundation
import HeraldTesting
import Testing

/// The code keeps one format: `.swift-format` at the root, applied with
/// `swift format format --in-place --recursive Sources Tests Functions Benchmarks Fuzz Package.swift`.
@Suite struct FormattingTests {
    static let paths = ["Sources", "Tests", "Functions", "Benchmarks", "Fuzz", "Package.swift"]

    @Test func theCodeIsFormattedAsSwiftFormatWouldFormatIt() async throws {
        let root = TestPaths.packageRoot
        let lint = try await ProcessRunner.run(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["swift", "format", "lint", "--strict", "--recursive", "--parallel", "--configuration", root.appendingPathComponent(".swift-format").path]
                + Self.paths.map { root.appendingPathComponent($0).path })
        let findings = lint.stderr.split(separator: "\n").filter { $0.contains(": warning:") || $0.contains(": error:") }
        #expect(
            lint.status == 0 && findings.isEmpty,
            "\(findings.count) findings; run: swift format format --in-place --recursive \(Self.paths.joined(separator: " "))\n\(findings.prefix(30).joined(separator: "\n"))\n\(lint.stderr.suffix(1000))"
        )
    }
}

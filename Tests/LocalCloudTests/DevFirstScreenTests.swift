import Foundation
import HeraldTesting
import Testing

/// What `herald dev` tells a newcomer at a glance: where its state is and whether it is an earlier
/// run's (a second `--seed demo` is not a new demo), how to start fresh, and why an event did nothing.
@Suite struct DevFirstScreenTests {
    static func waitFor(_ text: String, in dev: RunningDev) async throws {
        #expect(await dev.waitForOutput(containing: text, timeout: .seconds(60)), "\(dev.output.suffix(2000))")
    }

    @Test func aSecondRunSaysItKeptTheFirstsDataAndFreshStartsEmpty() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-data-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let key = directory.appendingPathComponent("local-key.pem")
        #expect(FileManager.default.createFile(atPath: key.path, contents: Data(try await TestKeys.rsaPEM().utf8), attributes: [.posixPermissions: 0o600]))
        let arguments = ["--data", directory.path, "--seed", "demo"]

        let first = try await RunningDev.start(arguments, ephemeral: false)
        try await Self.waitFor("seed    demo world:", in: first)
        #expect(first.output.contains("data    \(directory.path)/: a new database"))
        _ = try await first.stop()

        let second = try await RunningDev.start(arguments, ephemeral: false)
        try await Self.waitFor("seed    demo world:", in: second)
        #expect(second.output.contains("kept from an earlier run"), "\(second.output.prefix(1500))")
        #expect(second.output.contains("--fresh"))
        #expect(second.output.contains("seed    demo world: 0 documents written"))
        _ = try await second.stop()

        let fresh = try await RunningDev.start(arguments + ["--fresh"], ephemeral: false)
        try await Self.waitFor("seed    demo world:", in: fresh)
        #expect(fresh.output.contains("the earlier run's database removed (--fresh)"), "\(fresh.output.prefix(1500))")
        #expect(!fresh.output.contains("seed    demo world: 0 documents written"), "a fresh start seeds the demo anew")
        _ = try await fresh.stop()
    }

    /// `herald send 'dave→family: …'` (Dave is not in Family): the event line says skipped, and why.
    @Test func aSkippedEventShowsItsReason() async throws {
        let dev = try await RunningDev.start(["--seed", "demo", "--send", "dave→family: Hello?"])
        defer { dev.kill() }
        try await Self.waitFor("→ onMessageCreated: 200 skipped: ", in: dev)
        let line = dev.output.split(separator: "\n").first { $0.contains("→ onMessageCreated: 200 skipped: ") } ?? ""
        #expect(line.contains("dave"), "\(line)")
    }

    /// Seeding's events (tokenCleanup for each seeded user) are one line, not two lines each; what a
    /// message does afterwards is shown in full; stopping says nothing alarming.
    @Test func seedingsEventsAreOneLineAndStoppingIsQuiet() async throws {
        let dev = try await RunningDev.start(["--seed", "demo", "--send", "alice→family: Dinner at 6pm"])
        defer { dev.kill() }
        try await Self.waitFor("→ onMessageCreated: 200 applied", in: dev)
        // The status onMessageCreated wrote is an update of its own, delivered to onReadReceipt after.
        try await Self.waitFor("→ onReadReceipt", in: dev)
        let lines = dev.output.split(separator: "\n").map(String.init)
        let banner = try #require(lines.firstIndex { $0.hasPrefix("Herald local cloud on ") }, "\(dev.output.prefix(2000))")
        let summary = lines.filter { $0.hasPrefix("seed    ") && $0.contains("events from seeding handled: tokenCleanup ") }
        #expect(summary.count == 1, "\(dev.output.prefix(2000))")
        #expect(summary.first?.contains("5 applied") == true, "one per seeded user: \(summary)")
        let seedingLines = lines[..<banner].filter { $0.hasPrefix("event   ") || $0.hasPrefix("tokenCleanup      applied") }
        #expect(seedingLines.isEmpty, "\(seedingLines)")
        let later = lines[banner...]
        #expect(
            later.contains { $0.hasPrefix("event   updated conversations/family/messages/") && $0.contains("→ onReadReceipt") },
            "later events keep their lines: \(later)")
        // The badges are kept apart: the message writes no user document, so tokenCleanup does not run.
        #expect(!later.contains { $0.contains("→ tokenCleanup") }, "\(later)")
        let status = try await dev.stop()
        #expect(status == 0)
        #expect(!dev.output.contains("WARNING"), "\(dev.output.suffix(1500))")
    }
}

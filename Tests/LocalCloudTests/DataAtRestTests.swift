import AsyncHTTPClient
import FirestoreModel
import Foundation
import GoogleClients
import HeraldRuntime
import HeraldTesting
import NIOCore
import Synchronization
import Testing

/// Hostile inputs, round 3, class 5: data at rest. A `herald dev` data directory, an export or an
/// `--import` file that is corrupt, cut short, from a newer version or crafted is refused with the
/// reason, or read as far as it is valid and said so; never a crash, never a silent partial state.
@Suite struct DataAtRestTests {
    /// `herald dev` with these arguments, when it is expected to stop by itself (a refusal): its status and output.
    static func dev(_ arguments: [String]) async throws -> ProcessResult {
        try await ProcessRunner.run(
            URL(fileURLWithPath: "/usr/bin/timeout"), ["120", TestPaths.executable("herald").path, "dev", "--port", "0", "--no-functions"] + arguments)
    }

    static func line(_ path: String, _ fields: String = #"{"n":{"integerValue":"1"}}"#) -> String {
        #"{"name":"projects/p/databases/(default)/documents/\#(path)","fields":\#(fields),"createTime":"2026-11-20T09:00:00Z","updateTime":"2026-11-20T09:00:00Z"}"#
    }

    static func export(_ lines: [String], metadata: String? = nil) throws -> URL {
        let directory = try Scratch.directory()
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: directory.appendingPathComponent("documents.jsonl"))
        if let metadata { try Data(metadata.utf8).write(to: directory.appendingPathComponent("metadata.json")) }
        return directory
    }

    @Test func aDataDirectoryThatIsNotADatabaseIsRefusedWithWhatToDo() async throws {
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data((0..<65_536).map { _ in UInt8.random(in: 0...255) }).write(to: directory.appendingPathComponent("herald.sqlite"))
        let run = try await Self.dev(["--data", directory.path])
        #expect(run.status != 0 && run.status != 124, "it stops, and does not hang: \(run.status)")
        let said = run.stdoutText + run.stderr
        #expect(said.contains("herald.sqlite cannot be used") && said.contains("--fresh"), "\(said.suffix(800))")
        #expect(!said.contains("Fatal error"), "no crash: \(said.suffix(800))")
    }

    @Test func aDatabaseCutShortOrFromANewerHeraldIsRefused() async throws {
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // A real database, with the demo in it.
        let made = try await Self.dev(["--data", directory.path, "--seed", "demo", "--exit-when-idle"])
        #expect(made.status == 0, "\(made.stderr.suffix(500))")
        let file = directory.appendingPathComponent("herald.sqlite")
        let original = try Data(contentsOf: file)
        #expect(original.count > 8192)

        // Cut short.
        try original.prefix(original.count / 2).write(to: file)
        try? FileManager.default.removeItem(at: directory.appendingPathComponent("herald.sqlite-wal"))
        let truncated = try await Self.dev(["--data", directory.path])
        #expect(truncated.status != 0 && truncated.status != 124, "\(truncated.status)")
        #expect((truncated.stdoutText + truncated.stderr).contains("herald.sqlite cannot be used"), "\((truncated.stdoutText + truncated.stderr).suffix(800))")

        // From a newer herald: a migration this one does not know.
        try original.write(to: file)
        let sqlite = try await ProcessRunner.run(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "python3", "-c",
                "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(\"INSERT INTO grdb_migrations VALUES ('v99-shards')\"); c.commit()", file.path,
            ])
        #expect(sqlite.status == 0, "\(sqlite.stderr)")
        let newer = try await Self.dev(["--data", directory.path])
        let said = newer.stdoutText + newer.stderr
        #expect(newer.status != 0 && said.contains("written by a newer herald") && said.contains("v99-shards"), "\(said.suffix(800))")
        #expect(try Data(contentsOf: file).count >= original.count, "the file was not touched")
    }

    /// A corrupt line part way, or a last line cut short: the whole import is refused, naming the line, and nothing is written.
    @Test func aCorruptOrTruncatedExportIsRefusedWholeNamingTheLine() async throws {
        var lines = (0..<1200).map { Self.line("items/i\($0)") }
        lines[700] = "{\"name\": \"projects/p/databases/(default)/documents/items/x\", \"fields\": {\"n\": {\"integerValue\": \"not a number\"}}}"
        let corrupt = try Self.export(lines)
        defer { try? FileManager.default.removeItem(at: corrupt) }
        let data = try Scratch.directory()
        defer { try? FileManager.default.removeItem(at: data) }
        let run = try await Self.dev(["--data", data.path, "--import", corrupt.path])
        #expect(run.status != 0 && (run.stdoutText + run.stderr).contains("line 701"), "\((run.stdoutText + run.stderr).suffix(800))")
        // Nothing of it was written: the data directory opens empty.
        let after = try await RunningDev.start(["--data", data.path, "--no-functions"], ephemeral: false)
        defer { after.kill() }
        #expect(try await after.app.get(try DocumentName(project: "e2e", path: "items/i1")) == nil, "no partial import")

        var cut = (0..<10).map { Self.line("items/i\($0)") }
        cut[9] = String(cut[9].prefix(40))
        let truncated = try Self.export(cut)
        defer { try? FileManager.default.removeItem(at: truncated) }
        let refused = try await Self.dev(["--ephemeral", "--import", truncated.path])
        #expect(refused.status != 0 && (refused.stdoutText + refused.stderr).contains("line 10"), "\((refused.stdoutText + refused.stderr).suffix(500))")
    }

    /// A refused import is refused before herald dev listens: no client ever finds its port open on an
    /// empty store. Its port is polled from before the start until herald dev has exited.
    @Test func aRefusedImportNeverOpensThePort() async throws {
        var lines = (0..<3000).map { Self.line("items/i\($0)") }
        lines[2999] = String(lines[2999].prefix(40))
        let cut = try Self.export(lines)
        defer { try? FileManager.default.removeItem(at: cut) }
        let port = try freeLoopbackPort()
        let answered = SharedCount()
        let result = try await withThrowingTaskGroup(of: ProcessResult?.self) { group in
            group.addTask {
                try await ProcessRunner.run(
                    URL(fileURLWithPath: "/usr/bin/timeout"),
                    ["120", TestPaths.executable("herald").path, "dev", "--port", "\(port)", "--no-functions", "--ephemeral", "--import", cut.path])
            }
            group.addTask {
                while !Task.isCancelled {
                    let request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/herald/health")
                    if (try? await HTTPClient.shared.execute(request, timeout: .milliseconds(500))) != nil { answered.add() }
                    try? await Task.sleep(for: .milliseconds(20))
                }
                return nil
            }
            var exited: ProcessResult?
            while let next = try await group.next() {
                if let next {
                    exited = next
                    group.cancelAll()
                }
            }
            return try #require(exited)
        }
        #expect(result.status != 0 && (result.stdoutText + result.stderr).contains("line 3000"), "\((result.stdoutText + result.stderr).suffix(500))")
        #expect(answered.value == 0, "herald dev answered on its port \(answered.value) times before refusing the import")
    }

    @Test func anExportFromANewerHeraldOrCraftedIsRefusedByName() async throws {
        let newer = try Self.export([Self.line("items/a")], metadata: #"{"format": "herald-export", "version": 7, "documents": 1}"#)
        defer { try? FileManager.default.removeItem(at: newer) }
        let refused = try await Self.dev(["--ephemeral", "--import", newer.path])
        #expect(refused.status != 0 && (refused.stdoutText + refused.stderr).contains("written by a newer herald (format version 7)"), "\(refused.stderr)")

        // Values nested past Firestore's 20 levels.
        var deep = #"{"integerValue":"1"}"#
        for _ in 0..<25 { deep = #"{"mapValue":{"fields":{"x":\#(deep)}}}"# }
        let nested = try Self.export([Self.line("items/ok"), Self.line("items/deep", #"{"d":\#(deep)}"#)])
        defer { try? FileManager.default.removeItem(at: nested) }
        let tooDeep = try await Self.dev(["--ephemeral", "--import", nested.path])
        #expect(tooDeep.status != 0 && (tooDeep.stdoutText + tooDeep.stderr).contains("nested 25 levels deep"), "\(tooDeep.stderr.suffix(500))")

        // Names that are no document's.
        for bad in [
            #"{"name":"projects/p/databases/(default)/documents/items/../x","fields":{}}"#, #"{"name":"projects/p/databases/(default)/items/x","fields":{}}"#,
            #"{"name":"projects/p/databases/(default)/documents/items","fields":{}}"#,
        ] {
            let crafted = try Self.export([Self.line("items/ok"), bad])
            defer { try? FileManager.default.removeItem(at: crafted) }
            let run = try await Self.dev(["--ephemeral", "--import", crafted.path])
            #expect(run.status != 0 && (run.stdoutText + run.stderr).contains("line 2"), "\(bad): \((run.stdoutText + run.stderr).suffix(500))")
        }
    }

    /// Documents of another project are moved to the one served (as Firebase's emulators import), and
    /// twenty thousand collections of one document each are imported whole.
    @Test func anotherProjectsDocumentsAndManyCollectionsAreReadWhole() async throws {
        var lines = (0..<20_000).map { Self.line("c\($0)/d") }
        lines.append(#"{"name":"projects/someone-else/databases/(default)/documents/users/eve","fields":{"n":{"integerValue":"1"}}}"#)
        let many = try Self.export(lines)
        defer { try? FileManager.default.removeItem(at: many) }
        let dev = try await RunningDev.start(["--no-functions", "--import", many.path])
        defer { dev.kill() }
        #expect(dev.output.contains("20001 documents written"), "\(dev.output.suffix(800))")
        #expect(try await dev.app.get(try DocumentName(project: "e2e", path: "users/eve")) != nil)
        #expect(try await dev.app.get(try DocumentName(project: "e2e", path: "c19999/d")) != nil)
    }
}

/// A count several tasks add to.
final class SharedCount: Sendable {
    private let state = Mutex(0)
    func add() { _ = next() }
    /// Adds one and says the count.
    func next() -> Int {
        state.withLock { count in
            count += 1
            return count
        }
    }
    var value: Int { state.withLock { $0 } }
}

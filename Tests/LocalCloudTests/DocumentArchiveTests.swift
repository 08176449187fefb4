import AsyncHTTPClient
import FirestoreModel
import Foundation
import GoogleClients
import HeraldHTTPClient
import HeraldTesting
import Supervision
import Testing
import WireFormats

@testable import EmbeddedFirestore
@testable import LocalCloud

/// `herald dev --import`, `--export-on-exit`, `--seed FILE` and `herald export`: Herald's own format,
/// Google's emulator's export, and what a hostile or huge file does.
@Suite(.serialized) struct DocumentArchiveTests {
    static func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-archive-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func lines(_ directory: String) throws -> [String] {
        try String(contentsOfFile: (directory as NSString).appendingPathComponent(DocumentArchive.documentsFile), encoding: .utf8)
            .split(separator: "\n").map(String.init)
    }

    /// Every value type, subcollections, a string that spans several 32 KiB log blocks, and enough
    /// documents for several blocks.
    static func world(_ name: (String) throws -> DocumentName) throws -> [Write] {
        let everyType: [String: FirestoreValue] = [
            "text": .string("héllo, 世界 🎉"), "long": .string(String(repeating: "ab", count: 50_000)), "int": .integer(-42),
            "big": .integer(9_007_199_254_740_993), "min": .integer(.min), "double": .double(1.5), "negativeZero": .double(-0.0),
            "yes": .boolean(true), "nothing": .null, "when": .timestamp(Timestamp(seconds: 1_795_521_953, nanos: 123_456_000)),
            "before1970": .timestamp(Timestamp(seconds: -86_401, nanos: 500_000_000)), "bytes": .bytes([0, 1, 2, 255]),
            "ref": .reference(try name("users/bob").resourceName), "place": .geoPoint(latitude: 52.52, longitude: -13.4),
            "list": .array([.string("x"), .integer(1), .null, .map(["k": .string("v"), "l": .array([.integer(2)])])]), "emptyList": .array([]),
            "one": .array([.boolean(false)]), "nested": .map(["inner": .map(["deep": .boolean(false)]), "e": .array([])]), "emptyMap": .map([:]),
            "dotted.name": .string("a field name with a dot"),
        ]
        var writes = [
            Write(.update(try name("users/alice"), fields: everyType, mask: nil)),
            Write(.update(try name("users/alice/tokens/t1"), fields: ["token": .string("tok")], mask: nil)),
            Write(.update(try name("conversations/empty"), fields: [:], mask: nil)),
        ]
        for index in 0..<1_200 {
            writes.append(
                Write(
                    .update(
                        try name("items/item-\(index)"), fields: ["n": .integer(Int64(index)), "pad": .string(String(repeating: "p", count: 60))], mask: nil)))
        }
        return writes
    }

    @Test func aWorldExportedByGooglesEmulatorImportsAsTheSameDocuments() async throws {
        guard GoogleFirestoreEmulator.isInstalled else {
            try skipTest("Google's Firestore emulator is not installed at \(GoogleFirestoreEmulator.launcher)")
        }
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let expected: [DocumentName: FirestoreDocument] = try await GoogleFirestoreEmulator.run { host in
            let google = FirestoreClient(project: "exported", endpoint: "http://\(host)", credentials: EmulatorCredentials(), httpClient: .shared)
            let writes = try Self.world(google.name)
            _ = try await google.commitInBatches(writes)
            let answer = try await HTTPClient.shared.post(
                "http://\(host)/emulator/v1/projects/exported:export", headers: ["content-type": "application/json"],
                body: Array(#"{"database":"projects/exported/databases/(default)","export_directory":"\#(directory)"}"#.utf8))
            #expect(answer.status == 200, "\(answer.body)")
            return try await google.batchGet(writes.map(\.document)).compactMapValues { $0 }
        }
        #expect(expected.count == 1_203)
        // Into herald dev, as a user would import it.
        let dev = try await RunningDev.start(["--no-functions", "--import", directory])
        defer { dev.kill() }
        #expect(dev.output.contains("1203 documents written"), "\(dev.output.suffix(1000))")
        let imported = try await dev.app.batchGet(try expected.keys.map { try DocumentName(project: "e2e", segments: $0.segments) }).compactMapValues { $0 }
        #expect(imported.count == expected.count)
        for (name, document) in expected {
            var fields = document.fields
            if name.path == "users/alice" { fields["ref"] = .reference("projects/e2e/databases/(default)/documents/users/bob") }
            #expect(imported[try DocumentName(project: "e2e", segments: name.segments)]?.fields == fields, "\(name.path)")
        }
        #expect(try await dev.stop() == 0)
    }

    @Test func anExportRoundTripsThroughHeraldDevWithoutFiringTriggers() async throws {
        let (exitExport, liveExport, reimported, seeded) = (
            try Self.temporaryDirectory(), try Self.temporaryDirectory(), try Self.temporaryDirectory(), try Self.temporaryDirectory()
        )
        defer { for directory in [exitExport, liveExport, reimported, seeded] { try? FileManager.default.removeItem(atPath: directory) } }
        let first = try await RunningDev.start(["--seed", "demo", "--send", "alice→family: Dinner at 6pm", "--export-on-exit", exitExport])
        defer { first.kill() }
        try await first.pauseJobs()
        try await first.waitUntilIdle()
        let pushed = try await first.pushes().count
        #expect(pushed > 0)
        let live = try await ProcessRunner.run(TestPaths.executable("herald"), ["export", liveExport, "--url", first.base])
        #expect(live.status == 0, "\(live.stderr)")
        #expect(try await first.stop() == 0)
        let exported = try Self.lines(exitExport)
        #expect(exported.count > 10)
        #expect(try Self.lines(liveExport) == exported, "herald export and --export-on-exit write the same lines")
        let names = try exported.map { try #require(JSONValue(parsing: Array($0.utf8))["name"]?.stringValue) }
        #expect(names == names.sorted(), "lines in name order")
        let metadata = try JSONValue(parsing: Array(try Data(contentsOf: URL(fileURLWithPath: exitExport + "/metadata.json"))))
        #expect(metadata["format"]?.stringValue == "herald-export" && metadata["documents"]?.int64Value == Int64(exported.count))

        // Imported into a fresh herald dev: the same documents, times included, and no trigger fired;
        // then a seed file adds what is missing and leaves what exists alone.
        let seedFile = seeded + "/world.jsonl"
        let alice = try #require(exported.first { $0.contains("/documents/users/alice\"") })
        try Data(
            ([
                #"{"name":"projects/any/databases/(default)/documents/users/alice","fields":{"displayName":{"stringValue":"Not Alice"}}}"#,
                "",
                #"{"name":"projects/any/databases/(default)/documents/users/zed","fields":{"displayName":{"stringValue":"Zed"}}}"#,
            ].joined(separator: "\n") + "\n").utf8
        ).write(to: URL(fileURLWithPath: seedFile))
        let second = try await RunningDev.start(["--import", exitExport, "--seed", seedFile, "--export-on-exit", reimported])
        defer { second.kill() }
        try await second.pauseJobs()
        try await second.waitUntilIdle()
        #expect(try await second.pushes().isEmpty, "an import fires no trigger")
        let deliveries = try JSONValue(parsing: Array(try await HTTPClient.shared.get("\(second.base)/herald/deliveries").body.utf8))["deliveries"]?.arrayValue
        #expect(deliveries?.isEmpty == true, "\(deliveries ?? [])")
        #expect(second.output.contains("import  \(exitExport): \(exported.count) documents written"))
        #expect(second.output.contains("1 documents written, 1 left as they were"))
        #expect(try await second.stop() == 0)
        let after = try Self.lines(reimported)
        #expect(after.contains(alice), "the seed left the imported Alice as she was")
        #expect(after.filter { !$0.contains("/users/zed\"") } == exported)
        #expect(after.contains { $0.contains("/users/zed\"") && $0.contains("Zed") })
    }

    @Test func aDamagedFileIsRefusedWithWhereAndWhy() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await withLocalCloud { local in
            let bad = directory + "/bad.jsonl"
            try Data(
                (#"{"name":"projects/p/databases/(default)/documents/a/b","fields":{}}"# + "\n"
                    + #"{"name":"projects/p/databases/(default)/documents/a","fields":{}}"# + "\n")
                    .utf8
            ).write(to: URL(fileURLWithPath: bad))
            await #expect {
                try await DocumentArchive.importDocuments(from: bad, into: local.cloud.firestore, project: "herald-test", existing: .replace)
            } throws: { "\($0)".contains("line 2") }
            // An export whose documents file is a directory: said so, not a Foundation error dump.
            let strange = directory + "/strange"
            try FileManager.default.createDirectory(atPath: strange + "/documents.jsonl", withIntermediateDirectories: true)
            await #expect {
                try await DocumentArchive.importDocuments(from: strange, into: local.cloud.firestore, project: "herald-test", existing: .replace)
            } throws: { "\($0)".contains("is a directory") && !"\($0)".contains("Cocoa") }
            // A file that cannot be read (reading /proc/self/mem from its start fails with EIO): the system's reason.
            let unreadable = directory + "/unreadable.jsonl"
            try FileManager.default.createSymbolicLink(atPath: unreadable, withDestinationPath: "/proc/self/mem")
            await #expect {
                try await DocumentArchive.importDocuments(from: unreadable, into: local.cloud.firestore, project: "herald-test", existing: .replace)
            } throws: { "\($0)".contains("cannot read \(unreadable): Input/output error") }
            let notJSON = directory + "/not.jsonl"
            try Data("{\"name\": \n".utf8).write(to: URL(fileURLWithPath: notJSON))
            await #expect {
                try await DocumentArchive.importDocuments(from: notJSON, into: local.cloud.firestore, project: "herald-test", existing: .replace)
            } throws: {
                "\($0)".contains("line 1")
            }
            let huge = directory + "/huge.jsonl"
            try Data(repeating: UInt8(ascii: "x"), count: 17 << 20).write(to: URL(fileURLWithPath: huge))
            await #expect {
                try await DocumentArchive.importDocuments(from: huge, into: local.cloud.firestore, project: "herald-test", existing: .replace)
            } throws: {
                "\($0)".contains("over 16 MiB")
            }
            let oversized = directory + "/oversized.jsonl"
            let big = String(repeating: "y", count: 1_100_000)
            try Data((#"{"name":"projects/p/databases/(default)/documents/a/b","fields":{"s":{"stringValue":"\#(big)"}}}"# + "\n").utf8).write(
                to: URL(fileURLWithPath: oversized))
            await #expect {
                try await DocumentArchive.importDocuments(from: oversized, into: local.cloud.firestore, project: "herald-test", existing: .replace)
            } throws: {
                "\($0)".contains("1,048,576")
            }
            #expect(
                try await local.cloud.firestore.get([try DocumentName(project: "herald-test", path: "a/b")]).isEmpty, "nothing from a refused batch is kept")
        }
    }

    /// An export of a running instance is one snapshot: documents written while it runs, before or
    /// after the page being read, are in none of its pages.
    @Test func anExportIsOneSnapshot() async throws {
        try await withLocalCloud { local in
            let firestore = local.cloud.firestore
            let documents = try (0..<2_500).map { index in
                FirestoreDocument(name: try DocumentName(project: "herald-test", path: "items/m-\(index)"), fields: ["n": .integer(Int64(index))])
            }
            _ = try await firestore.importDocuments(documents, existing: .replace)
            var pages = 0
            let count = try await firestore.exportLines { lines in
                pages += 1
                guard pages == 1 else { return }
                for path in ["items/a-before", "items/z-after"] {
                    let write = Write(.update(try DocumentName(project: "herald-test", path: path), fields: [:], mask: nil))
                    _ = try await firestore.commit([write], databaseName: "projects/herald-test/databases/(default)")
                }
            }
            #expect(pages == 3 && count == 2_500)
            #expect(try await firestore.get([try DocumentName(project: "herald-test", path: "items/z-after")]).count == 1)
        }
    }

    /// Hostile bytes where an emulator export's records should be: an error that says so, never a crash or a hang.
    @Test func damagedEmulatorRecordsAreErrors() throws {
        let cases: [[UInt8]] = [
            [0x6a, 0x80],  // a length cut short
            [0x6a, 0x7f, 0x00],  // a length past the end
            [0x72, 0x04, 0x2a, 0x02, 0x2b, 0x31],  // a geo point group without its end
            Array(repeating: 0xff, count: 12),  // a varint over 10 bytes
            [0x6a, 0x00],  // an entity without a key path
            [0x00],  // field number 0
        ]
        for bytes in cases {
            #expect(throws: (any Error).self, "\(bytes)") { _ = try EmulatorExport.document(fromEntity: bytes[...], project: "p") }
        }
        // Maps nested deeper than Firestore allows are refused, not recursed into without end.
        var entity: [UInt8] = [0x6a, 0x0c, 0x72, 0x0a, 0x0b, 0x12, 0x01, 0x61, 0x22, 0x01, 0x62, 0x0c, 0x6a, 0x00]
        for _ in 0..<30 {
            let value: [UInt8] = [0x1a] + Self.varint(entity.count) + entity
            let property: [UInt8] = [0x08, 0x13, 0x1a, 0x01, 0x6d, 0x20, 0x00, 0x2a] + Self.varint(value.count) + value
            entity = [0x6a, 0x0c, 0x72, 0x0a, 0x0b, 0x12, 0x01, 0x61, 0x22, 0x01, 0x62, 0x0c] + [0x7a] + Self.varint(property.count) + property
        }
        #expect(throws: (any Error).self) { _ = try EmulatorExport.document(fromEntity: entity[...], project: "p") }
        #expect(CRC32C.checksum(Array("123456789".utf8)[...]) == 0xE306_9283, "CRC-32C's check value")
    }

    static func varint(_ value: Int) -> [UInt8] {
        var value = UInt64(value)
        var bytes: [UInt8] = []
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7f) | 0x80)
            value >>= 7
        }
        return bytes + [UInt8(value)]
    }

    /// An import streams: 100,000 documents (40 MB of lines) take no more memory than 10,000.
    @Test func aLargeImportKeepsMemoryFlat() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var peaks: [Int: Int] = [:]
        for count in [10_000, 100_000] {
            let file = directory + "/world-\(count).jsonl"
            #expect(FileManager.default.createFile(atPath: file, contents: nil))
            let handle = try #require(FileHandle(forWritingAtPath: file))
            var chunk = ""
            for index in 0..<count {
                chunk +=
                    #"{"name":"projects/x/databases/(default)/documents/items/item-\#(index)","fields":{"n":{"integerValue":"\#(index)"},"text":{"stringValue":"\#(String(repeating: "hello world ", count: 20))"}},"createTime":"2026-01-01T00:00:00Z","updateTime":"2026-01-01T00:00:00Z"}"#
                    + "\n"
                if index % 5_000 == 4_999 {
                    try handle.write(contentsOf: Data(chunk.utf8))
                    chunk = ""
                }
            }
            try handle.close()
            let dev = try await RunningDev.start(["--no-functions", "--import", file])
            defer { dev.kill() }
            #expect(dev.output.contains("\(count) documents written"))
            let status = try String(contentsOfFile: "/proc/\(dev.process.pid)/status", encoding: .utf8)
            let peak = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }.flatMap { Int($0.split(separator: " ")[1]) } ?? 0
            peaks[count] = peak
            #expect(try await dev.stop() == 0)
        }
        let small = peaks[10_000] ?? 0
        let large = peaks[100_000] ?? 0
        print("peak resident memory of herald dev importing 10,000 documents: \(small / 1024) MB; 100,000: \(large / 1024) MB")
        #expect(small > 0 && large - small < 16 * 1024, "10,000: \(small) kB, 100,000: \(large) kB")
    }
}

import FirestoreEvents
import FirestoreModel
import Foundation
import HeraldRuntime
import HeraldTesting
import Testing
import WireFormats

/// Herald's decoding checked against Google's own `google-events` package (PyPI), both ways:
/// events Google's library serializes decode in Herald to the values Google says they hold, and
/// Herald's protobuf payloads parse in Google's library to the values Herald meant.
@Suite struct GoogleEventsCrossCheckTests {
    static let script = TestPaths.packageRoot.appendingPathComponent("Tests/Python/google_events_reference.py")

    static func python() async throws -> URL {
        try await PythonReference.forTest(importing: "google.events.cloud.firestore_v1")
    }

    @Test func eventsSerializedByGoogleDecodeToTheSameValues() async throws {
        let python = try await Self.python()
        let result = try await ProcessRunner.run(python, [Self.script.path, "generate", "300", "42"])
        #expect(result.status == 0, "\(result.stderr)")
        let cases = try #require(try JSONValue(parsing: result.stdout).arrayValue)
        #expect(cases.count == 300)
        for (index, item) in cases.enumerated() {
            let kind = try #require(item["kind"]?.stringValue.flatMap(DocumentChange.Kind.init(rawValue:)))
            let document = try #require(item["document"]?.stringValue)
            let headers = [
                "ce-id": "g-\(index)", "ce-source": "//firestore.googleapis.com/projects/p-x/databases/(default)",
                "ce-type": "google.cloud.firestore.document.v1.\(kind.rawValue)", "ce-specversion": "1.0",
                "ce-time": "2026-11-20T09:00:00Z", "ce-document": document,
            ]
            let protobuf = try #require(item["protobuf"]?.stringValue.flatMap { Data(base64Encoded: $0) })
            var requests = [
                EventRequest(headers: headers.merging(["content-type": "application/protobuf"]) { $1 }, body: Array(protobuf)),
                EventRequest(headers: headers.merging(["content-type": "application/json"]) { $1 }, body: Array(item["json"]!.serialized().utf8)),
            ]
            let legacy: JSONValue = [
                "data": item["jsonSnake"]!,
                "context": [
                    "eventId": .string("g-\(index)"), "timestamp": "2026-11-20T09:00:00Z",
                    "eventType": .string(
                        "providers/cloud.firestore/eventTypes/document.\(["created": "create", "updated": "update", "deleted": "delete"][kind.rawValue]!)"),
                    "resource": .string("projects/p-x/databases/(default)/documents/\(document)"),
                ],
            ]
            requests.append(EventRequest(headers: ["content-type": "application/json"], body: Array(legacy.serialized().utf8)))
            for request in requests {
                let change = try EventDecoder.decode(request).change
                #expect(Neutral.of(change) == item["neutral"], "case \(index)")
            }
        }
    }

    @Test func herladsProtobufParsesInGooglesLibraryToTheSameValues() async throws {
        let python = try await Self.python()
        var rng = SeededRandom(seed: 77)
        let changes = try (0..<300).map { try randomChange(&rng, index: $0) }
        let payload = JSONValue.array(changes.map { .string(Base64.encode($0.protobufData())) })
        let result = try await ProcessRunner.run(python, [Self.script.path, "decode"], stdin: Data(payload.serialized().utf8))
        #expect(result.status == 0, "\(result.stderr)")
        let parsed = try #require(try JSONValue(parsing: result.stdout).arrayValue)
        #expect(parsed.count == changes.count)
        for (change, google) in zip(changes, parsed) {
            #expect(Neutral.of(change) == google, "\(change.eventID)")
        }
    }
}

/// The shape-neutral description both sides compute (see google_events_reference.py).
enum Neutral {
    static func of(_ change: DocumentChange) -> JSONValue {
        [
            "value": change.newDocument.map(of) ?? .null,
            "oldValue": change.oldDocument.map(of) ?? .null,
            "updateMask": change.updateMask.map { .array($0.map { .string($0) }) } ?? .null,
        ]
    }

    static func of(_ document: FirestoreDocument) -> JSONValue {
        [
            "name": .string(document.name.resourceName),
            "fields": .object(document.fields.mapValues(of)),
            "createTime": document.createTime.map { [.integer($0.seconds), .integer($0.nanos)] } ?? .null,
            "updateTime": document.updateTime.map { [.integer($0.seconds), .integer($0.nanos)] } ?? .null,
        ]
    }

    static func bits(_ d: Double) -> JSONValue { d.isNaN ? "nan" : .string(String(d.bitPattern)) }

    static func of(_ value: FirestoreValue) -> JSONValue {
        switch value {
        case .null: ["null"]
        case .boolean(let b): ["bool", .bool(b)]
        case .integer(let i): ["int", .string(String(i))]
        case .double(let d): ["double", bits(d)]
        case .timestamp(let t): ["ts", .integer(t.seconds), .integer(t.nanos)]
        case .string(let s): ["str", .string(s)]
        case .bytes(let data): ["bytes", .string(data.map { String(format: "%02x", $0) }.joined())]
        case .reference(let r): ["ref", .string(r)]
        case .geoPoint(let lat, let lng): ["geo", bits(lat), bits(lng)]
        case .array(let values): ["array", .array(values.map(of))]
        case .map(let fields): ["map", .object(fields.mapValues(of))]
        }
    }
}

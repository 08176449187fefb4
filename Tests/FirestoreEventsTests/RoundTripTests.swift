import FirestoreEvents
import FirestoreModel
import Foundation
import HeraldRuntime
import HeraldTesting
import Testing
import WireFormats

func randomChange(_ rng: inout SeededRandom, index: Int) throws -> DocumentChange {
    let name = try DocumentName(project: "p-x", path: "conversations/c\(index)/messages/m\(Int.random(in: 0...999, using: &rng))")
    func document() -> FirestoreDocument {
        FirestoreDocument(
            name: name, fields: RandomValues.fields(&rng),
            createTime: Timestamp(seconds: Int64.random(in: 0...(1 << 33), using: &rng), nanos: 5),
            updateTime: Timestamp(seconds: 1 << 34))
    }
    let kind = DocumentChange.Kind.allCases.randomElement(using: &rng)!
    let old = kind == .created ? nil : document()
    let new = kind == .deleted ? nil : document()
    return DocumentChange(
        eventID: "evt-\(index)", kind: kind, time: Timestamp(seconds: 1_795_165_200, nanos: 250_000_000),
        document: name, oldDocument: old, newDocument: new,
        updateMask: kind == .updated ? ["a", "`b.c`"] : nil)
}

/// A binary-mode request for a change, as Eventarc would send it.
func binaryRequest(_ change: DocumentChange, json: Bool) throws -> EventRequest {
    let event = DecodedEvent(
        change: change, envelope: EventEnvelope(encoding: .binaryProtobuf, type: "google.cloud.firestore.document.v1.\(change.kind.rawValue)"))
    return try Fixture.request(from: Array(Fixture.binary(event, json: json).serialized().utf8))
}

@Suite struct RoundTripTests {
    @Test func protobufAndJSONPayloadsRoundTrip() throws {
        var rng = SeededRandom(seed: 21)
        for index in 0..<500 {
            let change = try randomChange(&rng, index: index)
            #expect(try EventDecoder.decode(binaryRequest(change, json: false)).change == change)
            #expect(try EventDecoder.decode(binaryRequest(change, json: true)).change == change)
        }
    }

    @Test func protobufPayloadIsDeterministic() throws {
        var rng = SeededRandom(seed: 5)
        let change = try randomChange(&rng, index: 1)
        #expect(change.protobufData() == change.protobufData())
    }
}

@Suite struct DecodingErrorTests {
    static let good: [String: String] = [
        "ce-id": "e1", "ce-source": "//firestore.googleapis.com/projects/p/databases/(default)",
        "ce-type": "google.cloud.firestore.document.v1.created", "ce-specversion": "1.0",
        "ce-time": "2026-11-20T09:00:00Z", "ce-document": "users/u1", "content-type": "application/protobuf",
    ]

    func decode(_ change: (inout [String: String]) -> Void, body: [UInt8] = []) -> EventDecodingError? {
        var headers = Self.good
        change(&headers)
        do {
            _ = try EventDecoder.decode(EventRequest(headers: headers, body: body))
            return nil
        } catch { return error }
    }

    @Test func aWellFormedEventDecodes() {
        #expect(decode { _ in } == nil)
        #expect(
            decode {
                $0["ce-type"]! += ".withAuthContext"
                $0["ce-authtype"] = "service_account"
            } == nil)
    }

    @Test func eachMissingOrBadAttributeIsNamed() {
        #expect(decode { $0["ce-id"] = nil }?.reason.contains("id") == true)
        #expect(decode { $0["ce-type"] = "google.cloud.pubsub.topic.v1.messagePublished" }?.reason.contains("unknown event type") == true)
        #expect(decode { $0["ce-specversion"] = "0.3" }?.reason.contains("specversion") == true)
        #expect(decode { $0["ce-time"] = "yesterday" }?.reason.contains("RFC 3339") == true)
        #expect(decode { $0["ce-time"] = nil }?.reason.contains("time") == true)
        #expect(decode { $0["ce-source"] = "//pubsub.googleapis.com/x" }?.reason.contains("source") == true)
        #expect(decode { $0["ce-document"] = "users" }?.reason.contains("even number") == true)
        #expect(decode { $0["content-type"] = "text/plain" }?.reason.contains("content-type") == true)
        #expect(decode({ _ in }, body: [0xFF, 0xFF, 0xFF])?.reason.contains("protobuf") == true)
        #expect(decode({ $0["content-type"] = "application/json" }, body: Array("{\"value\": 3}".utf8))?.reason.contains("value") == true)
        #expect(
            decode {
                $0["ce-id"] = nil
                $0["ce-time"] = "x"
            }?.eventID == nil)
        #expect(decode { $0["ce-time"] = "x" }?.eventID == "e1")
    }

    @Test func dataForAnotherDocumentIsRefused() throws {
        let change = DocumentChange(
            eventID: "e1", kind: .created, time: Timestamp(seconds: 0),
            document: try DocumentName(project: "p", path: "users/u2"),
            newDocument: FirestoreDocument(name: try DocumentName(project: "p", path: "users/u2"), fields: [:]))
        let error = decode({ _ in }, body: Array(change.protobufData()))
        #expect(error?.reason.contains("users/u2") == true)
    }

    @Test func legacyAndStructuredErrors() {
        for (body, fragment) in [
            (
                #"{"context": {"eventId": "1", "timestamp": "2026-11-20T09:00:00Z", "eventType": "providers/cloud.pubsub/eventTypes/topic.publish", "resource": "x"}}"#,
                "unknown event type"
            ),
            (
                #"{"context": {"eventId": "1", "eventType": "providers/cloud.firestore/eventTypes/document.create", "resource": "projects/p/databases/(default)/documents/a/b"}}"#,
                "timestamp"
            ),
            (#"{"hello": "world"}"#, "not a Firestore event"),
            (#"[1, 2]"#, "JSON object"),
            (
                #"{"specversion": "1.0", "id": "1", "source": "//firestore.googleapis.com/projects/p/databases/d", "type": "google.cloud.firestore.document.v1.created", "time": "2026-11-20T09:00:00Z"}"#,
                "names no document"
            ),
        ] {
            do {
                _ = try EventDecoder.decode(EventRequest(headers: ["content-type": "application/json"], body: Array(body.utf8)))
                Issue.record("decoded \(body)")
            } catch {
                #expect(error.reason.contains(fragment), "\(error.reason) should mention \(fragment)")
            }
        }
    }

    /// A value deep in a protobuf document that sets no kind is refused with its whole path.
    @Test func aBadNestedProtobufValueIsNamedByItsPath() {
        func varint(_ n: Int) -> [UInt8] { n < 0x80 ? [UInt8(n)] : [UInt8(n & 0x7F | 0x80)] + varint(n >> 7) }
        func field(_ number: Int, _ bytes: [UInt8]) -> [UInt8] { varint(number << 3 | 2) + varint(bytes.count) + bytes }
        let kindless: [UInt8] = []
        let map = field(6, field(1, field(1, Array("b".utf8)) + field(2, kindless)))
        let array = field(9, field(1, field(17, Array("x".utf8))) + field(1, map))
        let document = field(1, Array("projects/p/databases/(default)/documents/users/u1".utf8)) + field(2, field(1, Array("a".utf8)) + field(2, array))
        let error = decode({ _ in }, body: field(1, document))
        #expect(error?.reason.contains("value.fields.a.values[1].fields.b: a value must set one kind") == true, "\(String(describing: error))")
    }

    @Test func googleEmulatorQuirksAreAccepted() throws {
        // Google's emulator doubles projects/ in the source and sends the protobuf as base64 text.
        let name = try DocumentName(project: "p", path: "users/u1")
        let change = DocumentChange(
            eventID: "e1", kind: .created, time: Timestamp(seconds: 1_795_165_200), document: name,
            newDocument: FirestoreDocument(name: name, fields: ["a": .integer(1)]))
        var headers = Self.good
        headers["ce-source"] = "//firestore.googleapis.com/projects/projects/p/databases/(default)"
        headers["ce-document"] = nil
        headers["ce-subject"] = "documents/users/u1"
        let decoded = try EventDecoder.decode(EventRequest(headers: headers, body: Array(Base64.encode(change.protobufData()).utf8)))
        #expect(decoded.change == change)
    }
}

@Suite struct DecoderFuzzTests {
    /// Mutated fixtures and headers: every outcome is a decoded change or an `EventDecodingError`, never a crash.
    @Test func mutatedRequestsNeverCrash() throws {
        var rng = SeededRandom(seed: 99)
        let seeds = try FixtureEquivalenceTests.scenarios.flatMap { try TestPaths.encodings(of: $0).values }.map { try request(fromFixture: $0) }
        var decoded = 0
        var refused = 0
        for _ in 0..<6_000 {
            var request = seeds.randomElement(using: &rng)!
            var body = request.body
            for _ in 0..<Int.random(in: 1...8, using: &rng) where !body.isEmpty {
                let i = Int.random(in: 0..<body.count, using: &rng)
                switch Int.random(in: 0...3, using: &rng) {
                case 0: body[i] = UInt8.random(in: 0...255, using: &rng)
                case 1: body.remove(at: i)
                case 2: body.insert(contentsOf: body[i..<min(body.count, i + 8)], at: i)
                default: body = Array(body[..<i])
                }
            }
            request.body = body
            if Int.random(in: 0...4, using: &rng) == 0, let key = request.headers.keys.randomElement(using: &rng) {
                request.headers[key] = ["", "\u{0}", "%ZZ", "1.0", "application/json", "application/protobuf", String(repeating: "x", count: 5000)]
                    .randomElement(using: &rng)!
            }
            do {
                _ = try EventDecoder.decode(request)
                decoded += 1
            } catch {
                #expect(!error.reason.isEmpty)
                refused += 1
            }
        }
        #expect(refused > 1_000)
        #expect(decoded + refused == 6_000)
    }
}

import FirestoreEvents
import FirestoreModel
import Foundation
import HeraldRuntime
import HeraldTesting
import Testing

/// Loads a fixture file as the request it stands for.
func request(fromFixture url: URL) throws -> EventRequest {
    try Fixture.request(from: Array(Data(contentsOf: url)))
}

@Suite struct FixtureEquivalenceTests {
    static let scenarios =
        ["default", "prd000", "prd001", "prd004"].flatMap { preset in
            ["message-created", "message-read", "user-written", "message-deleted"].map { "\(preset)/\($0)" }
        } + ["values/all-kinds", "values/data-omitted"]

    static let encodings: Set = ["binary-protobuf", "binary-json", "structured", "structured-base64", "legacy", "legacy-flat"]

    @Test(arguments: scenarios)
    func everyEncodingDecodesToTheSameChange(_ scenario: String) throws {
        let files = try TestPaths.encodings(of: scenario)
        #expect(Set(files.keys) == Self.encodings)
        var changes: [String: DocumentChange] = [:]
        for (encoding, url) in files { changes[encoding] = try EventDecoder.decode(request(fromFixture: url)).change }
        let reference = try #require(changes["binary-protobuf"])
        for (encoding, change) in changes {
            #expect(change == reference, "\(scenario) \(encoding) differs from binary-protobuf")
        }
    }

    @Test func decodedFieldsAreWhatTheFixtureSays() throws {
        let event = try EventDecoder.decode(request(fromFixture: TestPaths.fixture("default/message-created.binary-protobuf.json")))
        let change = event.change
        #expect(change.eventID == "default-evt-1")
        #expect(change.kind == .created)
        #expect(change.time == Timestamp(rfc3339: "2026-11-20T09:00:01.250Z"))
        #expect(change.document.project == "herald-demo")
        #expect(change.document.database == "(default)")
        #expect(change.document.path == "conversations/c-family/messages/m-1001")
        #expect(change.oldDocument == nil)
        #expect(event.envelope.location == "europe-west1")
        // The message document in the documents snapshot is the same document the event carries.
        let snapshot = try SnapshotGateway(contentsOf: TestPaths.fixture("default/documents.json").path)
        #expect(change.newDocument == snapshot.documents[change.document])
        #expect(change.newDocument?["text"] == .string("Dinner at 6pm"))
    }

    /// Each attribute Herald reads comes from its own `ce-` header in binary mode.
    @Test func everyAttributeIsReadFromItsHeader() throws {
        var request = try request(fromFixture: TestPaths.fixture("default/message-created.binary-protobuf.json"))
        request.headers["ce-type"] = "google.cloud.firestore.document.v1.created.withAuthContext"
        request.headers["ce-namespace"] = "tenant-1"
        request.headers["ce-authtype"] = "service_account"
        request.headers["ce-authid"] = "sa@herald-demo.iam.gserviceaccount.com"
        let event = try EventDecoder.decode(request)
        #expect(event.envelope.namespace == "tenant-1")
        #expect(event.envelope.authType == "service_account" && event.envelope.authID == "sa@herald-demo.iam.gserviceaccount.com")
        #expect(event.envelope.location == "europe-west1" && event.envelope.type.hasSuffix(".withAuthContext"))
        #expect(event.change.eventID == "default-evt-1")
        // The document named apart from the data must be the data's.
        request.headers["ce-document"] = "conversations/c-family/messages/m-2"
        #expect(throws: EventDecodingError.self) { try EventDecoder.decode(request) }
        request.headers["ce-document"] = nil
        request.headers["ce-specversion"] = "0.3"
        #expect(throws: EventDecodingError.self) { try EventDecoder.decode(request) }
    }

    @Test func updatesCarryBothDocumentsAndTheMask() throws {
        let change = try EventDecoder.decode(request(fromFixture: TestPaths.fixture("prd004/message-read.legacy.json"))).change
        #expect(change.kind == .updated)
        #expect(change.updateMask == ["readBy"])
        #expect(change.oldDocument?["readBy"] == .array([.string("u1")]))
        #expect(change.newDocument?["readBy"] == .array([.string("u1"), .string("u2")]))
        let written = try EventDecoder.decode(request(fromFixture: TestPaths.fixture("prd004/user-written.structured.json"))).change
        #expect(written.kind == .written)
        #expect(written.effectiveKind == .updated)
    }

    @Test func everyValueKindSurvives() throws {
        let change = try EventDecoder.decode(request(fromFixture: TestPaths.fixture("values/all-kinds.binary-protobuf.json"))).change
        let fields = try #require(change.newDocument?.fields)
        #expect(fields["intMin"] == .integer(.min))
        #expect(fields["int"] == .integer(9_007_199_254_740_993))
        #expect(fields["nan"] == .double(.nan))
        #expect(fields["negZero"].map { if case .double(let d) = $0 { d.sign == .minus && d == 0 } else { false } } == true)
        #expect(fields["tiny"] == .double(.leastNonzeroMagnitude))
        #expect(fields["time"] == .timestamp(Timestamp(seconds: 1_795_165_200, nanos: 123_456_789)))
        #expect(fields["yearOne"] == .timestamp(Timestamp(seconds: Timestamp.minimumSeconds)))
        #expect(fields["bytes"] == .bytes(Array(0...255)))
        #expect(fields["geo"] == .geoPoint(latitude: 48.8584, longitude: -2.2945))
        #expect(fields["text"] == .string("Ünïcödé 👩‍👩‍👧 e\u{301} \"quoted\" \\ \n\t\u{0} end"))
        #expect(fields["nested"] == .map(["a": .map(["b": .map(["c": .array([.map(["d": .null])])])])]))
        #expect(fields["emptyList"] == .array([]))
        #expect(fields["key with spaces.and`ticks"] == .string("odd keys are fine"))
        #expect(fields.count == 26)
    }

    @Test func emptyDataMeansTheFunctionMustReadTheDocument() throws {
        for (_, url) in try TestPaths.encodings(of: "values/data-omitted") {
            let change = try EventDecoder.decode(request(fromFixture: url)).change
            #expect(change.isDataMissing)
            #expect(change.document.path == "conversations/c-big/messages/m-huge")
        }
    }
}

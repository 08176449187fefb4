import FirestoreModel
import Foundation
import HeraldTesting
import Testing
import WireFormats

@Suite struct FirestoreJSONTests {
    @Test func everyKindRoundTripsThroughRESTJSON() throws {
        var rng = SeededRandom(seed: 11)
        for _ in 0..<2_000 {
            let value = RandomValues.value(&rng)
            let text = FirestoreJSON.json(value).serialized()
            #expect(try FirestoreJSON.value(from: JSONValue(parsing: text)) == value, "\(text)")
        }
    }

    @Test func decodesProtoJSONSpellings() throws {
        let cases: [(String, FirestoreValue)] = [
            (#"{"integerValue": "-9223372036854775808"}"#, .integer(.min)),
            (#"{"integerValue": 42}"#, .integer(42)),
            (#"{"integer_value": "7"}"#, .integer(7)),
            (#"{"doubleValue": "NaN"}"#, .double(.nan)),
            (#"{"doubleValue": "-Infinity"}"#, .double(-.infinity)),
            (#"{"doubleValue": "1.5"}"#, .double(1.5)),
            (#"{"doubleValue": -0.0}"#, .double(-0.0)),
            (#"{"nullValue": null}"#, .null),
            (#"{"null_value": 0}"#, .null),
            (#"{"nullValue": "NULL_VALUE"}"#, .null),
            (#"{"bytesValue": "_-8"}"#, .bytes([0xFF, 0xEF])),
            (#"{"timestampValue": "2026-11-20T09:00:00.000000001Z"}"#, .timestamp(Timestamp(seconds: 1_795_165_200, nanos: 1))),
            (#"{"geoPointValue": {}}"#, .geoPoint(latitude: 0, longitude: 0)),
            (#"{"arrayValue": {}}"#, .array([])),
            (#"{"mapValue": {}}"#, .map([:])),
            (#"{"map_value": {"fields": {"a.b": {"boolean_value": true}}}}"#, .map(["a.b": .boolean(true)])),
        ]
        for (text, expected) in cases {
            #expect(try FirestoreJSON.value(from: JSONValue(parsing: text)) == expected, "\(text)")
        }
    }

    @Test func namesTheBadFieldInErrors() throws {
        let json = try JSONValue(parsing: #"{"mapValue": {"fields": {"count": {"integerValue": "12x"}}}}"#)
        let error = #expect(throws: FirestoreJSONError.self) { try FirestoreJSON.value(from: json) }
        #expect(error?.path == "value.mapValue.fields.count.integerValue")
        for bad in [
            #"{}"#, #"{"stringValue": 1}"#, #"{"a": 1}"#, #"{"stringValue": "a", "booleanValue": true}"#,
            #"{"doubleValue": "inf"}"#, #"{"timestampValue": "yesterday"}"#, #"{"bytesValue": "a"}"#, #"[]"#,
            #"{"integerValue": "9223372036854775808"}"#, #"{"arrayValue": {"values": {}}}"#,
        ] {
            #expect(throws: FirestoreJSONError.self, "\(bad)") { try FirestoreJSON.value(from: JSONValue(parsing: bad)) }
        }
    }

    @Test func emptyDocumentObjectMeansNoDocument() throws {
        #expect(try FirestoreJSON.document(from: .object([:])) == nil)
        #expect(try FirestoreJSON.document(from: ["name": "", "fields": [:]]) == nil)
        #expect(throws: FirestoreJSONError.self) { try FirestoreJSON.document(from: ["fields": ["a": ["stringValue": "x"]]]) }
        let doc = try #require(
            try FirestoreJSON.document(
                from: JSONValue(
                    parsing:
                        #"{"name": "projects/p/databases/(default)/documents/users/u1", "fields": {}, "createTime": "2026-01-01T00:00:00Z"}"#)))
        #expect(doc.name.path == "users/u1")
        #expect(doc.createTime == Timestamp(rfc3339: "2026-01-01T00:00:00Z"))
    }

    @Test func nanEqualsNaNButKindsStayApart() {
        #expect(FirestoreValue.double(.nan) == .double(.nan))
        #expect(FirestoreValue.double(1) != .integer(1))
        #expect(Set<FirestoreValue>([.double(.nan), .double(.nan)]).count == 1)
    }
}

@Suite struct NamesAndPathsTests {
    @Test func parsesAndValidatesDocumentNames() throws {
        let name = try DocumentName(resourceName: "projects/p1/databases/(default)/documents/conversations/c1/messages/m1")
        #expect(name.project == "p1")
        #expect(name.path == "conversations/c1/messages/m1")
        #expect(name.parent?.path == "conversations/c1")
        #expect(name.collectionID == "messages")
        for bad in [
            "projects/p/databases/d/documents/users", "projects/p/databases/d/documents/", "users/u1",
            "projects/p/databases/d/documents/a//b/c", "projects//databases/d/documents/a/b",
        ] {
            #expect(throws: DocumentNameError.self, "\(bad)") { try DocumentName(resourceName: bad) }
        }
    }

    @Test func quotesFieldPathSegmentsAsFirestoreDoes() {
        #expect(FieldPath("unreadCount", "alice").description == "unreadCount.alice")
        #expect(FieldPath("unreadCount", "user.1").description == "unreadCount.`user.1`")
        #expect(FieldPath("unreadCount", "9lives").description == "unreadCount.`9lives`")
        #expect(FieldPath("a`b\\c").description == "`a\\`b\\\\c`")
        #expect(FieldPath("").description == "``")
    }

    @Test func writesEncodeAsTheCommitAPITakesThem() throws {
        let doc = try DocumentName(project: "p", path: "conversations/c1")
        let write = Write(
            .update(doc, fields: ["lastMessage": .map(["text": .string("hi")])], mask: [FieldPath("lastMessage")]),
            transforms: [FieldTransform(FieldPath("unreadCount", "bob.b"), .increment(.integer(1)))],
            precondition: .exists(true))
        let expected: JSONValue = [
            "update": [
                "name": "projects/p/databases/(default)/documents/conversations/c1",
                "fields": ["lastMessage": ["mapValue": ["fields": ["text": ["stringValue": "hi"]]]]],
            ],
            "updateMask": ["fieldPaths": ["lastMessage"]],
            "updateTransforms": [["fieldPath": "unreadCount.`bob.b`", "increment": ["integerValue": "1"]]],
            "currentDocument": ["exists": true],
        ]
        #expect(write.json == expected)
    }
}

import FirestoreModel
import HeraldTesting
import Testing
import WireFormats

@Suite struct JSONValueTests {
    @Test func keepsSixtyFourBitIntegersExactly() throws {
        let json = try JSONValue(parsing: #"{"a": 9223372036854775807, "b": -9223372036854775808, "c": 9007199254740993}"#)
        #expect(json["a"]?.int64Value == Int64.max)
        #expect(json["b"]?.int64Value == Int64.min)
        #expect(json["c"]?.int64Value == 9_007_199_254_740_993)
    }

    @Test func decodesEscapesAndSurrogatePairs() throws {
        let json = try JSONValue(parsing: #"["\u00e9\ud83c\udf5d\n\t\"\\\/\u0000"]"#)
        #expect(json == .array([.string("é🍝\n\t\"\\/\u{0}")]))
    }

    @Test(arguments: [
        "", " ", "{", "}", "[1,]", "{\"a\":}", "{\"a\" 1}", "01", "1.", ".5", "-", "1e", "+1", "tru", "nul", "\"abc",
        "\"\\x\"", "\"\\ud800\"", "\"\\udc00\"", "\"a\u{1}b\"", "[1] x", "{\"a\":1,}", "NaN", "Infinity", "'a'",
    ])
    func refusesInvalidJSON(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: text) }
    }

    @Test func refusesInvalidUTF8() {
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: [0x22, 0xC3, 0x28, 0x22]) }
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: [0x22, 0xED, 0xA0, 0x80, 0x22]) }
    }

    @Test func refusesDeepNestingWithoutOverflowingTheStack() {
        let deep = String(repeating: "[", count: 200_000) + String(repeating: "]", count: 200_000)
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: deep) }
        let ok = String(repeating: "[", count: JSONValue.maximumDepth) + String(repeating: "]", count: JSONValue.maximumDepth)
        #expect(throws: Never.self) { try JSONValue(parsing: ok) }
    }

    @Test func serializationRoundTripsAndIsDeterministic() throws {
        let value: JSONValue = ["z": 1, "a": ["s\u{1}\u{2028}\"": .null, "n": .number("-1.5e+30")], "arr": [true, false, "é🍝"]]
        let text = value.serialized()
        #expect(try JSONValue(parsing: text) == value)
        #expect(text.hasPrefix(#"{"a":"#))
        #expect(try JSONValue(parsing: value.serialized(pretty: true)) == value)
    }

    @Test func prettyTextIndentsByTwoAndKeepsEmptyContainersOnOneLine() {
        let value: JSONValue = ["b": [:], "a": [1, [], ["k": "v"]]]
        let expected = "{\n  \"a\": [\n    1,\n    [],\n    {\n      \"k\": \"v\"\n    }\n  ],\n  \"b\": {}\n}"
        #expect(value.serialized(pretty: true) == expected)
    }

    /// The writer copies runs of bytes between escapes; the reference escapes scalar by scalar, as JSON's
    /// grammar reads (and as the writer did before it was made faster).
    @Test func stringsAreEscapedExactlyAsScalarByScalar() throws {
        func reference(_ s: String) -> String {
            var out = "\""
            for scalar in s.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\t": out += "\\t"
                case let c where c.value < 0x20 || c.value == 0x2028 || c.value == 0x2029:
                    let hex = String(c.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                default: out.unicodeScalars.append(scalar)
                }
            }
            return out + "\""
        }
        var rng = SeededRandom(seed: 11)
        let pieces = [
            "a", "é", "🍝", "👩‍👩‍👧", "\"", "\\", "\n", "\r", "\t", "\u{0}", "\u{1f}", "\u{10}", "\u{2028}", "\u{2029}", "\u{2027}",
            "\u{20AC}", " ", "/", "\u{7f}",
        ]
        for _ in 0..<5_000 {
            let text = (0..<Int.random(in: 0...12, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined()
            #expect(JSONValue.string(text).serialized() == reference(text), "\(Array(text.unicodeScalars))")
            #expect(try JSONValue(parsing: JSONValue.string(text).serialized()) == .string(text))
        }
    }

    @Test func randomBytesNeverCrashTheParser() throws {
        var rng = SeededRandom(seed: 7)
        let alphabet = Array(#"{}[]":,0123456789-+.eEtruefalsn\ u"#.utf8) + [0x00, 0xFF, 0xC3, 0xA9]
        for _ in 0..<20_000 {
            let bytes = (0..<Int.random(in: 0...40, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }
            if let value = try? JSONValue(parsing: bytes) {
                #expect(try JSONValue(parsing: value.serialized()) == value)
            }
        }
    }
}

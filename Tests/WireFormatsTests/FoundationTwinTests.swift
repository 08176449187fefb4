import Foundation
import Testing
import WireFormats

/// WireFormats stands in for Foundation in the functions (which link no Foundation: docs/architecture.md).
/// Its twin here is Foundation itself: the same random inputs through both, the same results.
@Suite struct FoundationTwinTests {
    /// Random JSON: ours written, Foundation's parser reads the same value; Foundation's written, ours reads it.
    @Test func jsonAgreesWithJSONSerializationBothWays() throws {
        var generator = SystemRandomNumberGenerator()
        var mismatches: [String] = []
        for round in 0..<2_000 {
            let value = Self.randomJSON(depth: 0, using: &generator)
            let ours = value.serialized()
            let theirs = try JSONSerialization.jsonObject(with: Data(ours.utf8), options: [.fragmentsAllowed])
            if !Self.same(value, theirs) { mismatches.append("round \(round): Foundation read \(ours) as \(theirs)") }
            let written = try JSONSerialization.data(withJSONObject: theirs, options: [.fragmentsAllowed])
            if !(try JSONValue(parsing: Array(written))).isEquivalent(to: value) {
                mismatches.append("round \(round): ours read \(String(decoding: written, as: UTF8.self)) otherwise")
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.count): \(mismatches.prefix(5).joined(separator: "\n"))")
    }

    /// Text RFC 8259 refuses: Herald refuses all of it, Foundation all but trailing commas (which
    /// swift-foundation takes, as JSON5 does).
    @Test func jsonRefusesWhatRFC8259Refuses() {
        for text in ["{", "[1,]", "{\"a\" 1}", "01", "1.", "\"\\x\"", "tru", "[1 2]", "{\"a\":1,}", "\"\u{01}\"", "-", "1e", "nul"] {
            let foundation = (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])) != nil
            let ours = (try? JSONValue(parsing: Array(text.utf8))) != nil
            #expect(!ours, "\(text)")
            #expect(foundation == (text.hasSuffix(",]") || text.hasSuffix(",}")), "\(text): Foundation \(foundation)")
        }
    }

    @Test func base64AgreesWithFoundationForEveryLengthAndBothAlphabets() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<300 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let foundation = Data(bytes).base64EncodedString()
            #expect(Base64.encode(bytes) == foundation)
            #expect(Base64.decode(foundation) == bytes)
            let urlSafe = foundation.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            #expect(Base64.encode(bytes, urlSafe: true) == urlSafe.replacingOccurrences(of: "=", with: ""))
        }
        // ("ab=c", padding inside, Foundation takes; RFC 4648 and Herald do not.)
        for damaged in ["a", "****", "YQ==YQ=="] {
            #expect((Base64.decode(damaged) == nil) == (Data(base64Encoded: damaged) == nil), "\(damaged)")
        }
    }

    @Test func percentEncodingAgreesWithFoundation() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("aZ09-._~ /?#[]@!$&'()*+,;=%é€😀\u{7F}").map(String.init)
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)..<Unicode.Scalar(128)))
        allowed.insert(charactersIn: "-._~()':@!$&*+,;=")
        for _ in 0..<2_000 {
            let text = (0..<Int.random(in: 0...12, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }.joined()
            let ours = PercentEncoding.encode(text, allowed: PercentEncoding.isPathSegmentByte)
            #expect(ours == text.addingPercentEncoding(withAllowedCharacters: allowed), "\(text)")
            #expect(PercentEncoding.decode(ours) == text)
            // Where a `%` starts no `%XX`, Foundation guesses and Herald refuses: only well-formed text is compared.
            if !text.contains("%") { #expect(PercentEncoding.decode(text) == text.removingPercentEncoding, "\(text)") }
        }
    }

    /// From 1600 to 9999, Firestore's range after the Gregorian reform: before it, Foundation's
    /// calendar is Julian, while Herald's (as RFC 3339's) is Gregorian throughout.
    @Test func civilDatesAgreeWithFoundationsGregorianCalendar() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            let days = Int64.random(in: -135_140...2_932_896, using: &generator)
            let parts = calendar.dateComponents([.year, .month, .day, .weekday], from: Date(timeIntervalSince1970: Double(days) * 86_400))
            let civil = CivilCalendar.civil(days: days)
            #expect([civil.year, civil.month, civil.day] == [Int64(parts.year!), Int64(parts.month!), Int64(parts.day!)], "day \(days)")
            #expect(CivilCalendar.weekday(days: days) == Int64(parts.weekday! - 1), "day \(days)")
            #expect(CivilCalendar.days(year: civil.year, month: civil.month, day: civil.day) == days)
        }
    }

    @Test func decimalsAreWrittenAsSwiftDescribesThem() {
        var generator = SystemRandomNumberGenerator()
        for value in [Int64.min, Int64.max, 0, -1, 9, 10] + (0..<1_000).map({ _ in Int64.random(in: .min ... .max, using: &generator) }) {
            var bytes: [UInt8] = []
            bytes.appendDecimal(value)
            #expect(String(decoding: bytes, as: UTF8.self) == String(value))
        }
    }

    static func randomJSON(depth: Int, using generator: inout SystemRandomNumberGenerator) -> JSONValue {
        let strings = ["", "a", "é", "😀", "\u{0}", "\"", "\\", "/", "\n\t", "\u{1F}", "\u{2028}", "x y"]
        switch Int.random(in: 0..<(depth < 3 ? 7 : 5), using: &generator) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &generator))
        case 2: return .integer(Int64.random(in: -(1 << 52)...(1 << 52), using: &generator))
        case 3: return .string((0..<Int.random(in: 0...4, using: &generator)).map { _ in strings.randomElement(using: &generator)! }.joined())
        case 4: return .number(String(Double(Int.random(in: -1000...1000, using: &generator)) / 8))
        case 5: return .array((0..<Int.random(in: 0...4, using: &generator)).map { _ in randomJSON(depth: depth + 1, using: &generator) })
        default:
            var object: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0...4, using: &generator) {
                object[strings.randomElement(using: &generator)! + String(Int.random(in: 0...9, using: &generator))] = randomJSON(
                    depth: depth + 1, using: &generator)
            }
            return .object(object)
        }
    }

    /// Whether Foundation's reading of JSON text is `value`.
    static func same(_ value: JSONValue, _ object: Any) -> Bool {
        switch value {
        case .null: return object is NSNull
        case .bool(let bool): return (object as? NSNumber)?.boolValue == bool
        case .number(let text): return (object as? NSNumber)?.doubleValue == Double(text)
        case .string(let string): return object as? String == string
        case .array(let items):
            guard let array = object as? [Any], array.count == items.count else { return false }
            return zip(items, array).allSatisfy { same($0, $1) }
        case .object(let members):
            guard let dictionary = object as? [String: Any], dictionary.count == members.count else { return false }
            return members.allSatisfy { key, member in dictionary[key].map { same(member, $0) } ?? false }
        }
    }
}

extension JSONValue {
    /// Equal, numbers by their value (Foundation writes 8.0 as 8).
    func isEquivalent(to other: JSONValue) -> Bool {
        switch (self, other) {
        case (.number(let a), .number(let b)): return Double(a) == Double(b)
        case (.array(let a), .array(let b)): return a.count == b.count && zip(a, b).allSatisfy { $0.isEquivalent(to: $1) }
        case (.object(let a), .object(let b)):
            return a.count == b.count && a.allSatisfy { key, value in b[key].map { value.isEquivalent(to: $0) } ?? false }
        default: return self == other
        }
    }
}

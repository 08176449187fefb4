import FirestoreModel
import Foundation

/// A small seeded generator (SplitMix64), so a failing random case can be replayed from its seed.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Random Firestore values of every kind, including the awkward ones (NaN, ±0, int64 limits,
/// timestamps at both ends of the range, emoji and combining marks, NUL, odd map keys).
public enum RandomValues {
    static let strings = ["", "a", "Hey", "é", "e\u{301}", "👩‍👩‍👧", "🍝", "\"", "\\", "\n", "\u{0}", "中文", "`", ".", "/", "\u{2028}"]

    public static func string(_ rng: inout SeededRandom) -> String {
        (0..<Int.random(in: 0...6, using: &rng)).map { _ in strings.randomElement(using: &rng)! }.joined()
    }

    /// - storable: only what Firestore accepts in a document (no array directly inside an array).
    public static func value(_ rng: inout SeededRandom, depth: Int = 0, storable: Bool = false, inArray: Bool = false) -> FirestoreValue {
        var kind = Int.random(in: 0...(depth < 3 ? 10 : 8), using: &rng)
        if storable, inArray, kind == 9 { kind = 10 }
        switch kind {
        case 0: return .null
        case 1: return .boolean(Bool.random(using: &rng))
        case 2: return .integer([0, 1, -1, Int64.min, Int64.max, 1 << 53 + 1, Int64.random(in: .min ... .max, using: &rng)].randomElement(using: &rng)!)
        case 3:
            return .double(
                [0.0, -0.0, 0.1, 1e300, -1e-300, Double.leastNonzeroMagnitude, .nan, .infinity, -.infinity, Double.random(in: -1e9...1e9, using: &rng)]
                    .randomElement(using: &rng)!)
        case 4:
            let seconds = Int64.random(in: Timestamp.minimumSeconds...Timestamp.maximumSeconds, using: &rng)
            let nanos = [0, 1, 999_999_999, 120_000_000, 123_456_000, Int32.random(in: 0..<1_000_000_000, using: &rng)].randomElement(using: &rng)!
            // Firestore keeps microseconds: a stored timestamp loses the rest.
            return .timestamp(Timestamp(seconds: seconds, nanos: storable ? nanos / 1000 * 1000 : nanos))
        case 5: return .string(string(&rng))
        case 6: return .bytes(((0..<Int.random(in: 0...20, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }))
        case 7: return .reference("projects/p/databases/(default)/documents/users/u\(Int.random(in: 0...99, using: &rng))")
        case 8: return .geoPoint(latitude: Double.random(in: -90...90, using: &rng), longitude: Double.random(in: -180...180, using: &rng))
        case 9: return .array((0..<Int.random(in: 0...4, using: &rng)).map { _ in value(&rng, depth: depth + 1, storable: storable, inArray: true) })
        default: return .map(fields(&rng, depth: depth + 1, storable: storable))
        }
    }

    public static func fields(_ rng: inout SeededRandom, depth: Int = 0, storable: Bool = false) -> [String: FirestoreValue] {
        var result: [String: FirestoreValue] = [:]
        for _ in 0..<Int.random(in: 0...5, using: &rng) {
            let key = string(&rng)
            result[key.isEmpty ? "k" : key] = value(&rng, depth: depth, storable: storable)
        }
        return result
    }
}

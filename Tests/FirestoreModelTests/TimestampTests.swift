import FirestoreModel
import HeraldTesting
import Testing

@Suite struct TimestampTests {
    @Test(
        arguments: [
            ("1970-01-01T00:00:00Z", 0, 0),
            ("1969-12-31T23:59:59.999999999Z", -1, 999_999_999),
            ("2024-02-29T12:00:00.5Z", 1_709_208_000, 500_000_000),
            ("2026-11-20T09:00:00.123456Z", 1_795_165_200, 123_456_000),
            ("2026-11-20T10:00:00+01:00", 1_795_165_200, 0),
            ("0001-01-01T00:00:00Z", Timestamp.minimumSeconds, 0),
            ("9999-12-31T23:59:59.999999999Z", Timestamp.maximumSeconds, 999_999_999),
        ] as [(String, Int64, Int32)])
    func parsesRFC3339(_ text: String, _ seconds: Int64, _ nanos: Int32) throws {
        let t = try #require(Timestamp(rfc3339: text))
        #expect(t.seconds == seconds)
        #expect(t.nanos == nanos)
    }

    @Test(arguments: [
        "", "2026-11-20", "2026-11-20T09:00:00", "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z", "2026-11-20T24:00:00Z",
        "2026-11-20T09:00:00.Z", "2026-11-20T09:00:00.1234567890Z", "2026-11-20T09:00:00Zjunk", "10000-01-01T00:00:00Z",
        "0000-12-31T23:59:59Z", "2026-11-20T09:00:00+25:00", "２０２６-11-20T09:00:00Z",
    ])
    func refusesInvalidText(_ text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }

    @Test func formatsWithProtoJSONPrecision() {
        #expect(Timestamp(seconds: 0).rfc3339 == "1970-01-01T00:00:00Z")
        #expect(Timestamp(seconds: 0, nanos: 120_000_000).rfc3339 == "1970-01-01T00:00:00.120Z")
        #expect(Timestamp(seconds: 0, nanos: 123_456_000).rfc3339 == "1970-01-01T00:00:00.123456Z")
        #expect(Timestamp(seconds: -1, nanos: 1).rfc3339 == "1969-12-31T23:59:59.000000001Z")
    }

    @Test func roundTripsAcrossTheWholeRange() {
        var rng = SeededRandom(seed: 3)
        for _ in 0..<5_000 {
            let t = Timestamp(
                seconds: Int64.random(in: Timestamp.minimumSeconds...Timestamp.maximumSeconds, using: &rng),
                nanos: Int32.random(in: 0..<1_000_000_000, using: &rng))
            #expect(Timestamp(rfc3339: t.rfc3339) == t, "\(t.seconds) \(t.nanos)")
        }
    }
}

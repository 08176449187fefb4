import WireFormats

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A point in time with nanosecond precision, as Firestore and protobuf's Timestamp hold it.
/// Valid range: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z.
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var seconds: Int64
    public var nanos: Int32

    public static let minimumSeconds: Int64 = -62_135_596_800
    public static let maximumSeconds: Int64 = 253_402_300_799

    /// The time `micros` microseconds after 1970-01-01T00:00:00Z.
    public init(microsecondsSince1970 micros: Int64) {
        let seconds = micros >= 0 ? micros / 1_000_000 : (micros - 999_999) / 1_000_000
        self.init(seconds: seconds, nanos: Int32(micros - seconds * 1_000_000) * 1000)
    }

    /// Now by the system's clock, to the microsecond (Firestore's precision).
    public static func now() -> Timestamp {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Timestamp(seconds: Int64(now.tv_sec), nanos: Int32(now.tv_nsec / 1000 * 1000))
    }

    public var microsecondsSince1970: Int64 { seconds * 1_000_000 + Int64(nanos / 1000) }

    /// Before any time Firestore can hold.
    public static let distantPast = Timestamp(seconds: minimumSeconds)

    /// The instant `duration` later (or earlier), to the microsecond.
    public func adding(_ duration: Duration) -> Timestamp {
        let (seconds, attoseconds) = duration.components
        return Timestamp(microsecondsSince1970: microsecondsSince1970 + seconds * 1_000_000 + attoseconds / 1_000_000_000_000)
    }

    /// How long after `other` this is (negative when before).
    public func duration(since other: Timestamp) -> Duration {
        .seconds(seconds - other.seconds) + .nanoseconds(Int64(nanos) - Int64(other.nanos))
    }

    public init(seconds: Int64, nanos: Int32 = 0) {
        self.seconds = seconds
        self.nanos = nanos
    }

    /// Nil when outside Firestore's range or nanos not in 0..<1e9.
    public init?(validSeconds seconds: Int64, nanos: Int32) {
        guard (Self.minimumSeconds...Self.maximumSeconds).contains(seconds), (0..<1_000_000_000).contains(nanos) else {
            return nil
        }
        self.init(seconds: seconds, nanos: nanos)
    }

    public static func < (a: Timestamp, b: Timestamp) -> Bool {
        (a.seconds, a.nanos) < (b.seconds, b.nanos)
    }

    public var description: String { rfc3339 }

    /// RFC 3339 in UTC with 0, 3, 6 or 9 fractional digits, as proto3 JSON writes timestamps.
    public var rfc3339: String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = CivilCalendar.civil(days: days)
        var text: [UInt8] = []
        text.reserveCapacity(32)
        text.appendDecimal(year, width: 4)
        text.append(UInt8(ascii: "-"))
        text.appendDecimal(month, width: 2)
        text.append(UInt8(ascii: "-"))
        text.appendDecimal(day, width: 2)
        text.append(UInt8(ascii: "T"))
        text.appendDecimal(secondOfDay / 3600, width: 2)
        text.append(UInt8(ascii: ":"))
        text.appendDecimal(secondOfDay / 60 % 60, width: 2)
        text.append(UInt8(ascii: ":"))
        text.appendDecimal(secondOfDay % 60, width: 2)
        if nanos != 0 {
            text.append(UInt8(ascii: "."))
            if nanos % 1_000_000 == 0 {
                text.appendDecimal(Int64(nanos / 1_000_000), width: 3)
            } else if nanos % 1000 == 0 {
                text.appendDecimal(Int64(nanos / 1000), width: 6)
            } else {
                text.appendDecimal(Int64(nanos), width: 9)
            }
        }
        text.append(UInt8(ascii: "Z"))
        return String(decoding: text, as: UTF8.self)
    }

    /// Parses RFC 3339 (`2024-05-01T12:00:00.123456789Z`, or with a `+hh:mm` offset), up to 9 fractional digits.
    public init?(rfc3339 text: String) {
        let b = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int64? {
            guard range.upperBound <= b.count else { return nil }
            var value: Int64 = 0
            for i in range {
                guard (48...57).contains(b[i]) else { return nil }
                value = value * 10 + Int64(b[i] - 48)
            }
            return value
        }
        guard b.count >= 20,
            let year = number(0..<4), b[4] == UInt8(ascii: "-"),
            let month = number(5..<7), b[7] == UInt8(ascii: "-"),
            let day = number(8..<10), b[10] | 0x20 == UInt8(ascii: "t"),
            let hour = number(11..<13), b[13] == UInt8(ascii: ":"),
            let minute = number(14..<16), b[16] == UInt8(ascii: ":"),
            let second = number(17..<19),
            (1...12).contains(month), day >= 1, day <= Int64(CivilCalendar.daysIn(month: Int(month), year: year)),
            hour < 24, minute < 60, second < 60
        else { return nil }
        var i = 19
        var nanos: Int64 = 0
        if b[i] == UInt8(ascii: ".") {
            i += 1
            let start = i
            while i < b.count, (48...57).contains(b[i]) { i += 1 }
            let digits = i - start
            guard (1...9).contains(digits), let fraction = number(start..<i) else { return nil }
            nanos = fraction
            for _ in digits..<9 { nanos *= 10 }
        }
        guard i < b.count else { return nil }
        var offset: Int64 = 0
        if b[i] | 0x20 == UInt8(ascii: "z") {
            i += 1
        } else if b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
            guard let oh = number(i + 1..<i + 3), i + 3 < b.count, b[i + 3] == UInt8(ascii: ":"),
                let om = number(i + 4..<i + 6), oh < 24, om < 60
            else { return nil }
            offset = (oh * 3600 + om * 60) * (b[i] == UInt8(ascii: "+") ? 1 : -1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = CivilCalendar.days(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset
        self.init(validSeconds: seconds, nanos: Int32(nanos))
    }
}

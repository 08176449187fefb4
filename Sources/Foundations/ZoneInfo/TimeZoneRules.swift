import WireFormats

/// A time zone's offsets from UTC over time, read from a TZif file (RFC 8536) as the IANA time zone
/// database ships it: the recorded transitions, then the POSIX TZ rule of its footer for the years
/// after them. Pure: the bytes come from whoever reads the database.
public struct TimeZoneRules: Sendable, Hashable {
    public let name: String
    /// UTC seconds of each transition, ascending, and the offset (seconds east of UTC) from then on.
    let transitions: [Int64]
    let offsets: [Int32]
    /// The offset before the first transition (the file's first local time type).
    let initialOffset: Int32
    /// What holds after the last transition, when the file says (version 2 and later).
    let future: PosixTimeZone?

    public static let utc = TimeZoneRules(name: "UTC", transitions: [], offsets: [], initialOffset: 0, future: PosixTimeZone(standardOffset: 0))

    init(name: String, transitions: [Int64], offsets: [Int32], initialOffset: Int32, future: PosixTimeZone?) {
        self.name = name
        self.transitions = transitions
        self.offsets = offsets
        self.initialOffset = initialOffset
        self.future = future
    }

    /// Seconds east of UTC at `seconds` since 1970 (UTC).
    public func offset(at seconds: Int64) -> Int {
        if let last = transitions.last, seconds >= last, let future { return future.offset(at: seconds) }
        guard let first = transitions.first, seconds >= first else {
            return transitions.isEmpty ? (future?.offset(at: seconds) ?? Int(initialOffset)) : Int(initialOffset)
        }
        // The last transition at or before `seconds`.
        var low = 0
        var high = transitions.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if transitions[middle] <= seconds { low = middle } else { high = middle - 1 }
        }
        return Int(offsets[low])
    }

    /// The local wall-clock time at `seconds` since 1970 (UTC), as seconds since midnight.
    public func secondOfDay(at seconds: Int64) -> Int {
        Int(CivilCalendar.floorMod(seconds + Int64(offset(at: seconds)), 86_400))
    }

    /// A name that can be looked up safely: IANA's form (`Europe/Berlin`, `Etc/GMT+5`), never a path out
    /// of the database.
    public static func isPlausibleName(_ name: String) -> Bool {
        guard (1...64).contains(name.utf8.count) else { return false }
        return name.split(separator: "/", omittingEmptySubsequences: false).allSatisfy { part in
            !part.isEmpty && part != "." && part != ".."
                && part.utf8.allSatisfy { byte in
                    (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || "_-+.".utf8.contains(byte)
                }
        }
    }

    /// Parses a TZif file. Every count is checked against the bytes there are: a short or hostile file is an error, never a crash.
    public init(name: String, tzif bytes: [UInt8]) throws(TimeZoneError) {
        var reader = ByteReader(bytes: bytes)
        let header = try Self.header(&reader, name: name)
        guard header.version >= 2 else {
            let block = try Self.block(&reader, header: header, timeSize: 4, name: name)
            self.init(name: name, transitions: block.transitions, offsets: block.offsets, initialOffset: block.initialOffset, future: nil)
            return
        }
        // Version 2+: skip the 32-bit block; the 64-bit one and the footer follow.
        try reader.skip(header.v1DataSize)
        let header64 = try Self.header(&reader, name: name)
        let block = try Self.block(&reader, header: header64, timeSize: 8, name: name)
        var future: PosixTimeZone?
        if reader.remaining > 1, try reader.byte() == UInt8(ascii: "\n") {
            let footer = reader.rest.prefix { $0 != UInt8(ascii: "\n") }
            if !footer.isEmpty {
                guard let text = String(validating: footer, as: UTF8.self), let rule = PosixTimeZone(text) else {
                    throw TimeZoneError("\(name): the footer's TZ rule cannot be read")
                }
                future = rule
            }
        }
        self.init(name: name, transitions: block.transitions, offsets: block.offsets, initialOffset: block.initialOffset, future: future)
    }

    struct Header {
        var version: Int
        var isUTCCount, isStandardCount, leapCount, timeCount, typeCount, characterCount: Int
        var v1DataSize: Int { timeCount * 5 + typeCount * 6 + characterCount + leapCount * 8 + isStandardCount + isUTCCount }
    }

    static func header(_ reader: inout ByteReader, name: String) throws(TimeZoneError) -> Header {
        guard try reader.take(4) == Array("TZif".utf8) else { throw TimeZoneError("\(name) is not a TZif file") }
        let versionByte = try reader.byte()
        let version = versionByte == 0 ? 1 : Int(versionByte) - Int(UInt8(ascii: "0"))
        try reader.skip(15)
        var counts: [Int] = []
        for _ in 0..<6 {
            let count = try reader.integer(4)
            guard (0...1_000_000).contains(count) else { throw TimeZoneError("\(name): a count is out of range") }
            counts.append(Int(count))
        }
        guard counts[4] >= 1 else { throw TimeZoneError("\(name) has no local time types") }
        return Header(
            version: version, isUTCCount: counts[0], isStandardCount: counts[1], leapCount: counts[2], timeCount: counts[3],
            typeCount: counts[4], characterCount: counts[5])
    }

    static func block(_ reader: inout ByteReader, header: Header, timeSize: Int, name: String) throws(TimeZoneError)
        -> (transitions: [Int64], offsets: [Int32], initialOffset: Int32)
    {
        var times: [Int64] = []
        times.reserveCapacity(header.timeCount)
        for _ in 0..<header.timeCount { times.append(try reader.integer(timeSize)) }
        let indices = try reader.take(header.timeCount)
        var typeOffsets: [Int32] = []
        for _ in 0..<header.typeCount {
            let offset = try reader.integer(4)
            try reader.skip(2)
            guard (-89_999...93_599).contains(offset) else { throw TimeZoneError("\(name): an offset is out of range") }
            typeOffsets.append(Int32(offset))
        }
        try reader.skip(header.characterCount + header.leapCount * (timeSize + 4) + header.isStandardCount + header.isUTCCount)
        var offsets: [Int32] = []
        offsets.reserveCapacity(indices.count)
        for index in indices {
            guard Int(index) < typeOffsets.count else { throw TimeZoneError("\(name): a transition names a missing local time type") }
            offsets.append(typeOffsets[Int(index)])
        }
        guard zip(times, times.dropFirst()).allSatisfy({ $0 < $1 }) else { throw TimeZoneError("\(name): transitions are not in order") }
        return (times, offsets, typeOffsets[0])
    }
}

public struct TimeZoneError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Big-endian reading with bounds checks.
struct ByteReader {
    let bytes: [UInt8]
    var position = 0

    var remaining: Int { bytes.count - position }
    var rest: ArraySlice<UInt8> { bytes[position...] }

    mutating func take(_ count: Int) throws(TimeZoneError) -> [UInt8] {
        guard count >= 0, count <= remaining else { throw TimeZoneError("the file ends early") }
        defer { position += count }
        return Array(bytes[position..<position + count])
    }

    mutating func skip(_ count: Int) throws(TimeZoneError) { _ = try take(count) }
    mutating func byte() throws(TimeZoneError) -> UInt8 { try take(1)[0] }

    /// A signed big-endian integer of 4 or 8 bytes.
    mutating func integer(_ size: Int) throws(TimeZoneError) -> Int64 {
        let raw = try take(size).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return size == 8 ? Int64(bitPattern: raw) : Int64(Int32(bitPattern: UInt32(truncatingIfNeeded: raw)))
    }
}

/// Finds a time zone's rules by IANA name. The domain asks; the runtime reads the database (see
/// `ZoneInfoDirectory`), so plans stay pure. Names that could leave the database are never asked for.
public struct TimeZones: Sendable {
    let load: @Sendable (String) -> TimeZoneRules?

    public init(load: @escaping @Sendable (String) -> TimeZoneRules?) { self.load = load }

    /// Only UTC: what a function knows with no database.
    public static let utcOnly = TimeZones { _ in nil }

    public func rules(named name: String) -> TimeZoneRules? {
        if ["UTC", "Etc/UTC", "GMT", "Etc/GMT", "Z", "Zulu"].contains(name) { return .utc }
        guard TimeZoneRules.isPlausibleName(name) else { return nil }
        return load(name)
    }
}

/// The few text operations the function path needs, written against the standard library so that it
/// needs no Foundation (whose full form brings ICU's 39 MB into every function).
extension StringProtocol {
    /// The text without leading and trailing whitespace and newlines (Unicode's, as `Character` knows them).
    public var trimmingWhitespace: String {
        // A printable ASCII character at both ends: nothing to trim. Most text takes this path.
        if let head = first?.asciiValue, let tail = last?.asciiValue, (0x21...0x7E).contains(head), (0x21...0x7E).contains(tail) {
            return String(self)
        }
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace }) else { return "" }
        return String(self[first...last])
    }

    /// Whether every character is whitespace (an empty text too): `trimmingWhitespace.isEmpty` without
    /// making the trimmed copy, and by bytes when the text is ASCII.
    public var isBlank: Bool {
        for byte in utf8 {
            if byte >= 0x80 { return allSatisfy(\.isWhitespace) }
            if byte != 0x20 && !(0x09...0x0D).contains(byte) { return false }
        }
        return true
    }

    /// Where `other` first occurs, comparing UTF-8 bytes: for ASCII markers and codes, without the
    /// standard library's string-processing module (and its regex parser) in every function.
    public func firstByteRange(of other: some StringProtocol) -> Range<Index>? {
        let needle = Array(other.utf8)
        guard let head = needle.first else { return startIndex..<startIndex }
        var start = utf8.startIndex
        while let candidate = utf8[start...].firstIndex(of: head) {
            var position = candidate
            var matched = 0
            while matched < needle.count, position < utf8.endIndex, utf8[position] == needle[matched] {
                matched += 1
                position = utf8.index(after: position)
            }
            if matched == needle.count { return candidate..<position }
            start = utf8.index(after: candidate)
        }
        return nil
    }

    /// Whether `other` occurs, comparing UTF-8 bytes (see `firstByteRange(of:)`).
    public func containsBytes(of other: some StringProtocol) -> Bool { firstByteRange(of: other) != nil }
}

extension String {
    /// The parts between each occurrence of an ASCII `separator`, empty parts included: a scan of the
    /// contiguous UTF-8 bytes, where `split(separator:)` walks grapheme clusters (a hot cost when every
    /// event's names are parsed).
    public func parts(splitAt separator: Unicode.Scalar) -> [String] {
        precondition(separator.isASCII)
        let byte = UInt8(separator.value)
        var text = self
        return text.withUTF8 { bytes in
            var parts: [String] = []
            parts.reserveCapacity(bytes.reduce(1) { $1 == byte ? $0 + 1 : $0 })
            var start = 0
            for index in 0..<bytes.count where bytes[index] == byte {
                parts.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self))
                start = index + 1
            }
            parts.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start...]), as: UTF8.self))
            return parts
        }
    }

    /// Whether any of the text's UTF-8 bytes is `byte`: a scan of contiguous storage.
    public func containsByte(_ byte: UInt8) -> Bool {
        utf8.withContiguousStorageIfAvailable { $0.contains(byte) } ?? utf8.contains(byte)
    }

    /// Whether the text is ASCII with no uppercase letter (what `asciiLowercased` leaves as it is).
    public var isLowercaseASCII: Bool {
        let isLowercaseASCII = { (byte: UInt8) in byte < 0x80 && !(0x41...0x5A).contains(byte) }
        return utf8.withContiguousStorageIfAvailable { $0.allSatisfy(isLowercaseASCII) } ?? utf8.allSatisfy(isLowercaseASCII)
    }

    /// The text with ASCII letters lowercased and every other byte kept: for protocol tokens (header
    /// names, media types), which are ASCII and compared case-insensitively.
    public var asciiLowercased: String {
        var text = self
        return text.withUTF8 { bytes in
            guard bytes.contains(where: { (0x41...0x5A).contains($0) }) else { return self }
            return String(unsafeUninitializedCapacity: bytes.count) { out in
                for (index, byte) in bytes.enumerated() { out[index] = (0x41...0x5A).contains(byte) ? byte | 0x20 : byte }
                return bytes.count
            }
        }
    }

    /// The text without leading and trailing spaces and tabs (HTTP's optional whitespace).
    public var trimmingSpacesAndTabs: String {
        let isSpaceOrTab = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        guard let first = utf8.firstIndex(where: { !isSpaceOrTab($0) }), let last = utf8.lastIndex(where: { !isSpaceOrTab($0) }) else { return "" }
        return String(self[first...last])
    }
}

/// Percent-encoding of URL path segments and header values (RFC 3986), over UTF-8 bytes.
public enum PercentEncoding {
    /// Bytes outside `allowed` as `%XX`.
    public static func encode(_ text: String, allowed: (UInt8) -> Bool) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if allowed(byte) {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `%XX` sequences as bytes; nil for a malformed sequence or bytes that are not UTF-8.
    public static func decode(_ text: String) -> String? {
        var out: [UInt8] = []
        var bytes = text.utf8.makeIterator()
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        while let byte = bytes.next() {
            guard byte == UInt8(ascii: "%") else {
                out.append(byte)
                continue
            }
            guard let high = bytes.next().flatMap(value), let low = bytes.next().flatMap(value) else { return nil }
            out.append(high << 4 | low)
        }
        return String(validating: out, as: UTF8.self)
    }

    /// RFC 3986's unreserved characters and the sub-delimiters a path segment may hold as they are.
    public static func isPathSegmentByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: "-._~()':@!$&*+,;=".utf8.contains(byte)
        }
    }
}

extension Array {
    /// The elements whose key no earlier element had, in order. A few keys are compared in place (a
    /// token or an id is long to hash), many through a set.
    @inlinable
    public func firstOccurrences<Key: Hashable>(by key: (Element) -> Key) -> [Element] {
        guard count > 16 else {
            var kept: [Element] = []
            kept.reserveCapacity(count)
            for element in self {
                let candidate = key(element)
                if !kept.contains(where: { key($0) == candidate }) { kept.append(element) }
            }
            return kept
        }
        var seen = Set<Key>()
        return filter { seen.insert(key($0)).inserted }
    }
}

extension [UInt8] {
    /// `value` in ASCII decimal, zero-padded to at least `width` digits; a negative value (a year
    /// before 1 BC) as its sign and digits.
    public mutating func appendDecimal(_ value: Int64, width: Int = 1) {
        guard value >= 0 else {
            append(contentsOf: String(value).utf8)
            return
        }
        var divisor: Int64 = 1
        var count = 1
        while divisor <= value / 10 {
            divisor *= 10
            count += 1
        }
        if count < width { append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width - count)) }
        while divisor > 0 {
            append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
            divisor /= 10
        }
    }
}

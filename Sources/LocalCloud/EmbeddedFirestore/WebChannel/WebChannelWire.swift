import Foundation

/// closure-library's WebChannel wire, version 8 (`goog.labs.net.webchannel`), as firebase-js-sdk's
/// browser and React Native transport speaks it and Google's Firestore emulator answers it.
///
/// - A forward-channel POST's body is a form: `headers=` (the SDK's own headers, `Name:value` lines,
///   on the first POST only), then `count=N&ofs=K` and for each message `reqI___data__=JSON`, message
///   `I` of the POST being the session's map `K + I` (`WireV8.encodeMessageQueue`).
/// - Every answer is a frame: the length of a JSON array, a newline, the array. The length counts
///   UTF-16 code units, as the client's JavaScript strings do (`ChannelRequest.decodeNextChunks_`):
///   an emoji is two.
/// - The back channel's array holds `[arrayID, [message]]` pairs; the client acknowledges the last id
///   it saw as `AID` on its next request.
enum WebChannelWire {
    /// What a forward-channel POST carries.
    struct ForwardBody: Equatable {
        /// The SDK's headers (`Authorization`, `X-Goog-Api-Client`…), names lowercased.
        var headers: [String: String] = [:]
        /// Each message: the session's map id and its JSON text.
        var maps: [Map] = []
    }

    struct Map: Equatable {
        let id: Int
        let json: String
    }

    /// closure-library sends at most 1,000 messages in one POST (`MAX_MAPS_PER_REQUEST_`).
    static let maximumMapsPerPost = 1000
    static let maximumMapID = Int(Int32.max)

    static func forwardBody(_ bytes: [UInt8]) throws(LocalAPIError) -> ForwardBody {
        let fields = formFields(String(decoding: bytes, as: UTF8.self))
        var body = ForwardBody()
        if let headers = fields["headers"] { body.headers = headerLines(headers) }
        guard let countText = fields["count"] else {
            if fields.isEmpty { return body }
            throw .invalidArgument("A WebChannel POST names its message count (count=N).")
        }
        guard let count = Int(countText), (0...maximumMapsPerPost).contains(count) else {
            throw .invalidArgument("A WebChannel POST carries 0 to \(maximumMapsPerPost) messages, not count=\(countText.prefix(20)).")
        }
        let offset = fields["ofs"].flatMap { Int($0) } ?? 0
        // A client counts its messages from 0 in a JavaScript number; an offset past 2^31 is no client's,
        // and one near Int.max would overflow once the messages' ids are added to it.
        guard (0...maximumMapID).contains(offset) else { throw .invalidArgument("ofs must be 0 to \(maximumMapID), not \(fields["ofs"]?.prefix(24) ?? "")") }
        for index in 0..<count {
            guard let json = fields["req\(index)___data__"] else {
                throw .invalidArgument("A WebChannel POST with count=\(count) lacks req\(index)___data__ (herald dev reads raw JSON messages).")
            }
            body.maps.append(Map(id: offset + index, json: json))
        }
        return body
    }

    /// `application/x-www-form-urlencoded`: `&`-separated `name=value`, `+` a space, `%XX` a byte.
    static func formFields(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = percentDecoded(parts[0])
            if fields[name] == nil { fields[name] = parts.count > 1 ? percentDecoded(parts[1]) : "" }
        }
        return fields
    }

    static func percentDecoded(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next(), let low = iterator.next(), let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) else {
                    bytes.append(byte)
                    continue
                }
                bytes.append(value)
            default: bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `Name:value` lines separated by CRLF (`httpCors.generateHttpHeadersOverwriteParam`).
    static func headerLines(_ text: String) -> [String: String] {
        var headers: [String: String] = [:]
        for line in text.split(whereSeparator: { $0 == "\r\n" || $0 == "\n" || $0 == "\r" }) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            guard !name.isEmpty else { continue }
            headers[name] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return headers
    }

    /// One answer: `LENGTH\nTEXT`, the length in UTF-16 code units.
    static func frame(_ json: String) -> String { "\(json.utf16.count)\n\(json)" }

    /// The back channel's arrays, each already `[id,[message]]`, as one JSON array.
    static func arrays(_ texts: some Sequence<String>) -> String { "[" + texts.joined(separator: ",") + "]" }

    /// `[id, payload]`: the payload is `[message]` for a stream's message, or WebChannel's own array.
    static func array(id: Int, payload: String) -> String { "[\(id),\(payload)]" }

    /// The handshake's answer, array 0: `["c", SID, host prefix, VER, server version, keep-alive ms]`,
    /// as Google's emulator sends it.
    static func handshake(session: String) -> String {
        arrays([array(id: 0, payload: #"["c","\#(session)","",8,12,30000]"#)])
    }

    static let noop = #"["noop"]"#
}

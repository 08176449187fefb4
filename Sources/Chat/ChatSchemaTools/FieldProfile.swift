import ChatFunctions
import FirestoreModel
import PushTokens

/// What one top-level field holds across a group of documents: in how many, and as which kinds.
struct FieldProfile {
    var name: String
    var present = 0
    var kinds: [String: Int] = [:]
    var stringLength = 0
    var distinct: Set<String> = []
    /// Documents where it is a non-empty array of strings.
    var stringArrays = 0

    static let distinctKept = 64

    mutating func add(_ value: FirestoreValue) {
        present += 1
        kinds[Self.kind(value), default: 0] += 1
        switch value {
        case .string(let text):
            stringLength += text.count
            if distinct.count < Self.distinctKept { distinct.insert(text) }
        case .array(let items):
            if !items.isEmpty, items.allSatisfy({ $0.stringValue != nil }) { stringArrays += 1 }
        default: break
        }
    }

    func count(_ kind: String) -> Int { kinds[kind] ?? 0 }

    /// The kind most documents hold, when nearly all (80 %) hold it.
    var dominantKind: String? {
        guard let (kind, count) = kinds.max(by: { $0.value < $1.value }), count * 5 >= present * 4 else { return nil }
        return kind
    }

    static func kind(_ value: FirestoreValue) -> String {
        switch value {
        case .null: "null"
        case .boolean: "boolean"
        case .integer(let number): epochKind(Double(number)) ?? "integer"
        case .double(let number): epochKind(number) ?? "number"
        case .timestamp: "timestamp"
        case .string: "string"
        case .bytes: "bytes"
        case .reference: "reference"
        case .geoPoint: "geo point"
        case .array: "array"
        case .map: "map"
        }
    }

    /// A number the size of a time since 1970 in milliseconds or seconds (1973 to 5138): no count is that large.
    static func epochKind(_ number: Double) -> String? {
        if (1e11..<1e14).contains(number) { return Schema.TimeFormat.epochMilliseconds.kind }
        if (1e8..<1e11).contains(number) { return Schema.TimeFormat.epochSeconds.kind }
        return nil
    }

    /// Each top-level field of the documents, by name.
    static func profiles(of documents: [FirestoreDocument]) -> [String: FieldProfile] {
        var profiles: [String: FieldProfile] = [:]
        for document in documents {
            for (name, value) in document.fields {
                profiles[name, default: FieldProfile(name: name)].add(value)
            }
        }
        return profiles
    }
}

/// How names and values look: the hints inference uses beside what the data proves.
enum Looks {
    /// The kinds of push tokens in `tokens`, for a report: " (12 FCM, 3 Expo, 1 APNs)", with what delivers
    /// Expo's and APNs's, and how many are no token at all.
    static func kinds(_ tokens: [String]) -> String {
        var counts: [PushTokenKind: Int] = [:]
        var malformed = 0
        for token in Set(tokens) {
            if let kind = PushToken.classify(token).kind { counts[kind, default: 0] += 1 } else { malformed += 1 }
        }
        var parts = counts.keys.sorted().map { "\(counts[$0]!) \($0.serviceName)" }
        if malformed > 0 { parts.append("\(malformed) malformed") }
        guard !parts.isEmpty else { return "" }
        let others = counts.keys.filter { $0 != .fcm }.sorted()
        let note =
            others.isEmpty
            ? "" : "; \(others.map(\.serviceName).joined(separator: " and ")) tokens are sent by their own services (docs/configuration.md, push services)"
        return " (\(parts.joined(separator: ", "))\(note))"
    }

    /// How much a field's name says it holds a message's sender: 2 for sender, author or from; 1 for a
    /// user or owner; -1 for a recipient (to…, recipient, receiver); 0 otherwise.
    static func senderLikeness(_ name: String) -> Int {
        let lower = name.lowercased()
        let toSomeone = lower.hasPrefix("to") && name.dropFirst(2).first.map { $0.isUppercase || $0 == "_" } == true
        if toSomeone || named(name, "recipient", "receiver", "target") { return -1 }
        if named(name, "sender", "author", "from") { return 2 }
        return named(name, "user", "owner", "creator", "by") ? 1 : 0
    }

    /// A generated id (a Firestore auto-id, a Firebase uid, a UUID): 16 to 64 letters, digits, - or _, one word.
    static func likeID(_ text: String) -> Bool {
        (16...64).contains(text.utf8.count) && text.utf8.allSatisfy { $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || isAlphanumeric($0) }
            && text.utf8.contains { (48...57).contains($0) }
    }

    /// A date or time written as text: ISO 8601 (`2026-11-01T10:51:51.000Z`) or its date alone.
    static func likeTime(_ text: String) -> Bool {
        let bytes = Array(text.utf8.prefix(10))
        guard bytes.count == 10 else { return false }
        return bytes.enumerated().allSatisfy { index, byte in [4, 7].contains(index) ? byte == UInt8(ascii: "-") : (48...57).contains(byte) }
    }

    static func isAlphanumeric(_ byte: UInt8) -> Bool { (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte) }

    /// Whether a name mentions any of `words` (case-insensitively).
    static func named(_ name: String, _ words: String...) -> Bool {
        let lower = name.lowercased()
        return words.contains { lower.contains($0) }
    }

    /// A field for the first part of a person's name: firstName, first_name, givenName, forename.
    static func givenName(_ name: String) -> Bool { ["firstname", "givenname", "forename"].contains(name.lowercased().filter { $0 != "_" }) }
    /// A field for the last part: lastName, last_name, familyName, surname.
    static func familyName(_ name: String) -> Bool { ["lastname", "familyname", "surname"].contains(name.lowercased().filter { $0 != "_" }) }
    /// A user's given and family names joined as alerts show them, when the document keeps both.
    static func twoPartName(of user: FirestoreDocument) -> String? {
        let keys = user.fields.keys.sorted()
        guard let given = keys.first(where: givenName), let family = keys.first(where: familyName) else { return nil }
        return name(of: user, given: given, family: family)
    }

    /// The name alerts show for `user` with its name in the fields `given` and `family`.
    static func name(of user: FirestoreDocument, given: String, family: String) -> String? {
        var schema = Schema.presets["default"]!
        (schema.displayNameField, schema.familyNameField) = (given, family)
        return schema.displayName(of: user)
    }

    static let messageTypes: Set<String> = [
        "text", "image", "photo", "video", "audio", "voice", "file", "document", "location", "sticker", "gif", "system",
    ]
    static let statuses: Set<String> = ["pending", "sending", "sent", "delivered", "read"]

    /// `roomId` for `rooms`, `messageId` for `messages`.
    static func wildcard(for collection: String) -> String {
        var stem = collection
        if stem.hasSuffix("ies") && stem.count > 3 {
            stem = String(stem.dropLast(3)) + "y"
        } else if stem.hasSuffix("s") && !stem.hasSuffix("ss") && stem.count > 1 {
            stem.removeLast()
        }
        let cleaned = String(stem.unicodeScalars.filter { $0.isASCII && (isAlphanumeric(UInt8($0.value)) || $0 == "_") })
        return (cleaned.isEmpty ? "doc" : cleaned) + "Id"
    }
}

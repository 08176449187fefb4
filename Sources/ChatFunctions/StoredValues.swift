import FirestoreModel
import HeraldCore

/// Values the functions read from documents that any client may have written: counts that could be
/// any 64-bit integer (or not a number at all) and texts of any length. Reading them through here
/// means no arithmetic can overflow and no notification can outgrow FCM's 4 KiB payload; what was out
/// of range is reported, so the runtime logs it as a WARNING.
struct StoredValues {
    /// Badges and unread counts: FCM's `notification_count` is an int32, and no inbox holds more.
    static let countRange: ClosedRange<Int64> = 0...Int64(Int32.max)

    var warnings: [String] = []

    /// A count held in `field` of `document`, clamped to `countRange` (a double: its whole part, as the
    /// push's badge takes it; absent or not a number: 0).
    mutating func count(_ field: String, of document: FirestoreDocument) -> Int {
        guard let value = document[field], value != .null else { return 0 }
        guard let stored = CountSource.wholeNumber(value) else {
            warnings.append("\(document.name.path) \(field) is not a number; taken as 0")
            return 0
        }
        if value.integerValue == nil { warnings.append("\(document.name.path) \(field) holds a double; taken as \(stored)") }
        let clamped = min(max(stored, Self.countRange.lowerBound), Self.countRange.upperBound)
        if clamped != stored { warnings.append("\(document.name.path) \(field) holds \(stored), outside \(Self.countRange); taken as \(clamped)") }
        return Int(clamped)
    }

    /// `text` if it is at most `characters` user-perceived characters and `bytes` of UTF-8; else its
    /// first `characters` characters (fewer if they outgrow `bytes`), whole characters only, then "…".
    static func bounded(_ text: String, characters: Int, bytes: Int) -> String {
        // Never more characters than bytes: a short text is counted without walking its clusters.
        if text.utf8.count <= min(bytes, characters) || (text.utf8.count <= bytes && text.count <= characters) { return text }
        var result = ""
        var size = 0
        let ellipsis = "…"
        for character in text.prefix(characters) {
            let length = character.utf8.count
            guard size + length + ellipsis.utf8.count <= bytes else { break }
            result.append(character)
            size += length
        }
        return result + ellipsis
    }
}

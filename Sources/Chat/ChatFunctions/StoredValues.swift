import FirestoreModel
import HeraldCore

/// Counts the functions read from documents that any client may have written: any 64-bit integer, a
/// double, or not a number at all. Reading them through here means no arithmetic can overflow; what
/// was out of range is reported, so the runtime logs it as a WARNING. (Texts of any length are bounded
/// by `DisplayedText.bounded`.)
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
}

/// What Firestore accepts as a field name (a map key, a segment of a field path) and as a document or
/// collection id, as production Firestore and Google's emulator refuse them. Any client can store any
/// string where an id belongs; a function that makes it a field path or a document id checks it here
/// first, or its whole commit is refused.
public enum FirestoreNames {
    /// Firestore's limit on a field name and on a document or collection id, in bytes of UTF-8.
    public static let maximumBytes = 1500

    /// Why `name` cannot be a field name or map key, or nil if it can: empty, reserved (`__…__`), or
    /// longer than `maximumBytes`.
    public static func fieldNameProblem(_ name: String) -> String? {
        if name.isEmpty { return "an empty field name" }
        if isReserved(name) { return "field name \(quoted(name)) is reserved" }
        if name.utf8.count > maximumBytes { return "a field name of \(name.utf8.count) bytes; Firestore's limit is \(maximumBytes)" }
        return nil
    }

    /// Why `id` cannot be a document or collection id, or nil if it can: empty, `.` or `..`, holding a
    /// slash, reserved (`__…__`), or longer than `maximumBytes`.
    public static func idProblem(_ id: String) -> String? {
        if id.isEmpty || id == "." || id == ".." { return "id \(quoted(id)) is invalid" }
        if id.utf8.contains(UInt8(ascii: "/")) { return "id \(quoted(id)) holds a slash" }
        if isReserved(id) { return "id \(quoted(id)) is reserved" }
        if id.utf8.count > maximumBytes { return "an id of \(id.utf8.count) bytes; Firestore's limit is \(maximumBytes)" }
        return nil
    }

    /// Whether `text` can be both: a user's id is a document id (`users/{id}`) and a map key (`unreadCount.{id}`).
    public static func isUsableAsIDAndFieldName(_ text: String) -> Bool { idProblem(text) == nil && fieldNameProblem(text) == nil }

    /// `__…__` with something between: Firestore keeps such names for itself (`____` itself is not reserved).
    public static func isReserved(_ name: String) -> Bool {
        let bytes = name.utf8
        return bytes.count > 4 && name.hasPrefix("__") && name.hasSuffix("__")
    }

    /// A name for a message: at most 40 characters of it, quoted.
    public static func quoted(_ name: String) -> String {
        name.count <= 40 ? "\"\(name)\"" : "\"\(name.prefix(40))…\" (\(name.utf8.count) bytes)"
    }
}

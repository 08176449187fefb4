import ChatFunctions
import FirestoreModel
import GoogleClients
import WireFormats

extension Schema {
    /// A user's badge as stored: the field of their badge document when the badge is kept apart (every
    /// preset), or, before its first count there, what the user document still holds (it moves with that
    /// count), else 0; without `badgeCollection`, the user document's field.
    public func storedBadge(badgeDocument: FirestoreDocument?, userDocument: FirestoreDocument?) -> FirestoreValue? {
        let kept = badgeDocument?[badgeField]
        guard badgeCollection != nil, kept == nil else { return kept }
        return userDocument?[badgeField] ?? .integer(0)
    }

    /// A user's badge as stored, reading the documents it needs.
    /// - get: the document at a path, or nil.
    public func storedBadge(of user: String, get: (String) async throws -> FirestoreDocument?) async throws -> FirestoreValue? {
        let badgeDocument = try await get(badgePath(of: user))
        // The user document is read only when the badge is kept apart and not counted there yet.
        let needsUser = badgeCollection != nil && badgeDocument?[badgeField] == nil
        return storedBadge(badgeDocument: badgeDocument, userDocument: needsUser ? try await get("\(userCollection)/\(user)") : nil)
    }
}

extension FirestoreClient {
    /// A user's badge as stored (`Schema.storedBadge(of:get:)`).
    public func storedBadge(of user: String, schema: Schema) async throws -> FirestoreValue? {
        try await schema.storedBadge(of: user) { try await get(name($0)) }
    }
}

/// What each device's badge shows in the end.
public enum DeviceBadges {
    /// The badge of the last push each token got, from push records (`{"message": {...}}`, in the order
    /// FCM took them; herald dev's `/herald/fcm/messages`).
    public static func last(in records: [JSONValue]) -> [String: Int64] {
        var last: [String: Int64] = [:]
        for record in records {
            guard let token = record["message"]?["token"]?.stringValue, let badge = record["message"]?["apns"]?["payload"]?["aps"]?["badge"]?.int64Value
            else { continue }
            last[token] = badge
        }
        return last
    }
}

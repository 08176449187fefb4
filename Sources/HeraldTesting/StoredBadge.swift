import ChatFunctions
import FirestoreModel
import GoogleClients

extension Schema {
    /// A user's badge as stored: the field of their badge document when the badge is kept apart (every
    /// preset), or, before its first count there, what the user document still holds (it moves with that
    /// count), else 0; without `badgeCollection`, the user document's field.
    /// - get: the document at a path, or nil.
    public func storedBadge(of user: String, get: (String) async throws -> FirestoreDocument?) async throws -> FirestoreValue? {
        let kept = try await get(badgePath(of: user))?[badgeField]
        guard badgeCollection != nil, kept == nil else { return kept }
        return try await get("\(userCollection)/\(user)")?[badgeField] ?? .integer(0)
    }
}

extension FirestoreClient {
    /// A user's badge as stored (`Schema.storedBadge(of:get:)`).
    public func storedBadge(of user: String, schema: Schema) async throws -> FirestoreValue? {
        try await schema.storedBadge(of: user) { try await get(name($0)) }
    }
}

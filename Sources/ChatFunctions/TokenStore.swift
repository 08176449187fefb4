import FirestoreModel
import HeraldCore
import PushTokens
import WireFormats

extension Schema.TokenStorage {
    /// A user's token document, when each user has one in a top-level collection (`fcmTokens/{uid}`).
    public func document(of user: DocumentName) -> DocumentName? {
        guard case .documentPerUser(let collection) = self else { return nil }
        return try? user.sibling(path: "\(collection)/\(user.documentID)")
    }

    /// A device's token document's token: its `token` field, else its id (`users/{uid}/tokens/{token}`).
    public static func token(ofDevice device: FirestoreDocument) -> String { device["token"]?.stringValue ?? device.name.documentID }

    /// The query for a user's token documents, when each device has one keyed by its token (`fcmTokens/{token}` `{uid}`).
    public func lookup(of userID: String) -> ValueLookup? {
        guard case .documentPerToken(let collection, let userField) = self else { return nil }
        return ValueLookup(collectionID: collection, field: FieldPath(userField), .equals, .string(userID))
    }
}

/// Reads and removes push tokens however the schema stores them.
struct TokenStore {
    let storage: Schema.TokenStorage
    /// What was read, for tokens kept in a subcollection (one document per token).
    let documents: DocumentsRead
    init(_ storage: Schema.TokenStorage, documents: DocumentsRead = DocumentsRead()) {
        self.storage = storage
        self.documents = documents
    }

    /// The user document's field that holds the tokens (nil for a subcollection or a document per user).
    var field: String? {
        switch storage {
        case .single(let field), .array(let field), .mapKeys(let field): field
        case .subcollection, .documentPerUser, .documentPerToken: nil
        }
    }

    func document(of user: DocumentName) -> DocumentName? { storage.document(of: user) }

    /// The collection to list for a user's tokens, when they are kept in a subcollection.
    func collection(of user: DocumentName) -> CollectionPath? {
        guard case .subcollection(let collection) = storage else { return nil }
        return CollectionPath(parent: user, collectionID: collection)
    }

    /// The user's tokens, deduplicated, without empty ones. A subcollection token is its document's
    /// `token` field, or else its id (`users/{uid}/tokens/{token}`).
    func tokens(of user: FirestoreDocument) -> [String] {
        let raw: [String]
        switch storage {
        case .single(let field): raw = user[field]?.stringValue.map { [$0] } ?? []
        case .array(let field): raw = user[field]?.arrayValue?.compactMap(\.stringValue) ?? []
        case .mapKeys(let field): raw = user[field]?.mapValue.map(Self.keysOldestFirst) ?? []
        case .subcollection:
            let listed = collection(of: user.name).flatMap { documents.collections[$0] } ?? []
            raw = Self.oldestFirst(listed).map(Schema.TokenStorage.token(ofDevice:))
        case .documentPerUser:
            raw = document(of: user.name).flatMap { documents.found[$0]?["token"]?.stringValue }.map { [$0] } ?? []
        case .documentPerToken:
            raw = Self.oldestFirst(devices(of: user.name)).map(Schema.TokenStorage.token(ofDevice:))
        }
        return raw.filter { !$0.isBlank }.firstOccurrences { $0 }
    }

    /// Token documents by when they were written, oldest first.
    static func oldestFirst(_ documents: [FirestoreDocument]) -> [FirestoreDocument] {
        documents.sorted { ($0.updateTime ?? .distantPast, $0.name.path) < ($1.updateTime ?? .distantPast, $1.name.path) }
    }

    /// The user's token documents found by their user field, when each device has one keyed by its token.
    func devices(of user: DocumentName) -> [FirestoreDocument] {
        guard let lookup = storage.lookup(of: user.documentID) else { return [] }
        return (documents.lookups[lookup] ?? []).filter(lookup.matches)
    }

    /// A map's keys, oldest first: by the time each value holds (a timestamp, or a number such as epoch
    /// milliseconds, as apps writing `{token: serverTimestamp()}` keep), keys without one first; then by key.
    static func keysOldestFirst(_ map: [String: FirestoreValue]) -> [String] {
        map.map { (key: $0.key, time: time(of: $0.value) ?? -.infinity) }.sorted { ($0.time, $0.key) < ($1.time, $1.key) }.map(\.key)
    }

    /// The time a token map's value holds, if any.
    static func time(of value: FirestoreValue) -> Double? {
        switch value {
        case .timestamp(let time): Double(time.seconds) + Double(time.nanos) / 1e9
        case .integer(let number): Double(number)
        case .double(let number) where number.isFinite: number
        default: nil
        }
    }

    /// One push to each of the user's devices, all with the same message: `message` is built once
    /// (with the first token) because only the token differs. At most `TokenCleanup.maximumTokensPerUser`
    /// devices, the newest (the last in an array, by their time in a map or by their documents' update
    /// time in a subcollection): the tokens are any client's to write, and one
    /// user with thousands must not make every message to them thousands of sends.
    /// - count: where the badge the message carries is stored, so the executor sends the committed value.
    func pushes(to user: FirestoreDocument, userID: String, count: CountSource?, message: (_ token: String) -> FCMMessage) -> [PushMessage] {
        // A malformed token reaches no service (tokenCleanup removes it): sent to FCM, it would only be refused.
        let tokens = tokens(of: user).filter(PushToken.isWellFormed).suffix(TokenCleanup.maximumTokensPerUser)
        guard let first = tokens.first else { return [] }
        let fcm = message(first)
        return tokens.map { PushMessage(userID: userID, token: $0, fcm: fcm, removal: removal(of: $0, from: user), count: count) }
    }

    /// The users (documents of `userCollection`) who hold `token`; nil for a subcollection, whose token
    /// documents a query on the users cannot find.
    func holders(of token: String, in userCollection: String) -> ValueLookup? {
        switch storage {
        case .single(let field): ValueLookup(collectionID: userCollection, field: FieldPath(field), .equals, .string(token))
        case .array(let field): ValueLookup(collectionID: userCollection, field: FieldPath(field), .arrayContains, .string(token))
        case .mapKeys(let field): ValueLookup(collectionID: userCollection, field: FieldPath(field, token), .present)
        case .subcollection, .documentPerUser, .documentPerToken: nil
        }
    }

    /// The write that removes a dead token, only if it is still there as it was read.
    func removal(of token: String, from user: FirestoreDocument) -> Write? {
        switch storage {
        case .single(let field):
            // Only clear the field if the user document has not changed since it was read.
            guard let updated = user.updateTime else { return nil }
            return Write(.update(user.name, fields: [:], mask: [FieldPath(field)]), precondition: .updateTime(updated))
        case .array(let field):
            return Write(
                .transform(user.name), transforms: [FieldTransform(FieldPath(field), .removeAllFromArray([.string(token)]))],
                precondition: .exists(true))
        case .mapKeys(let field):
            return Write(.update(user.name, fields: [:], mask: [FieldPath(field, token)]), precondition: .exists(true))
        case .subcollection:
            // The document that holds the token, as it was listed.
            let holder = collection(of: user.name).flatMap { documents.collections[$0] }?
                .first { Schema.TokenStorage.token(ofDevice: $0) == token }
            return holder.map { Write(.delete($0.name), precondition: $0.updateTime.map { .updateTime($0) }) }
        case .documentPerUser:
            // The user's token document, only as it was read: a token written since stays.
            guard let holder = document(of: user.name).flatMap({ documents.found[$0] }), holder["token"]?.stringValue == token,
                let version = holder.updateTime
            else { return nil }
            return Write(.delete(holder.name), precondition: .updateTime(version))
        case .documentPerToken:
            // The device's document as it was found: one written since (another account's sign-in) stays.
            let holder = devices(of: user.name).first { Schema.TokenStorage.token(ofDevice: $0) == token }
            return holder.flatMap { holder in holder.updateTime.map { Write(.delete(holder.name), precondition: .updateTime($0)) } }
        }
    }
}

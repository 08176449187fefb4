import FirestoreModel
import HeraldCore
import PushTokens
import WireFormats

/// Documents `users/{uid}/{collection}/{token}`, the token in a `token` field or as the document id.
public struct TokenSubcollection: TokenCollectionLayout, Hashable {
    public static let key = "subcollection"
    public static let valueForm = "NAME"
    public static let underUsers = true
    public let collection: String
    public init(collection: String) { self.collection = collection }
    public var summary: String { "subcollection `\(collection)`" }
    public func place(in schema: Schema) -> String { "\(schema.userCollection)/*/\(collection)" }

    /// The user's subcollection, listed.
    public func reads(for user: DocumentName) -> TokenReads { TokenReads(collections: [CollectionPath(parent: user, collectionID: collection)]) }

    public func tokens(of user: FirestoreDocument, in read: DocumentsRead) -> [String] {
        Self.oldestFirst(listed(for: user.name, in: read)).map(TokenDocuments.token(of:))
    }

    /// Deletes the document that holds the token, as it was listed.
    public func removal(of token: String, from user: FirestoreDocument, in read: DocumentsRead) -> Write? {
        let holder = listed(for: user.name, in: read).first { TokenDocuments.token(of: $0) == token }
        return holder.map { Write(.delete($0.name), precondition: $0.updateTime.map { .updateTime($0) }) }
    }

    func listed(for user: DocumentName, in read: DocumentsRead) -> [FirestoreDocument] {
        read.collections[CollectionPath(parent: user, collectionID: collection)] ?? []
    }

    public func triggerPattern(in schema: Schema) -> String { "\(schema.userPattern)/\(collection)/{tokenId}" }
    public func owner(ofWritten document: FirestoreDocument) -> String { document.name.parent?.documentID ?? "" }

    /// Notes the token documents that keep the token only as their id.
    public func notes(onAll tokenDocuments: [FirestoreDocument], userIDs: Set<String>) -> [String] {
        let idOnly = tokenDocuments.filter { $0["token"] == nil && PushToken.looksLikeToken($0.name.documentID) }.count
        guard idOnly > 0 else { return [] }
        return [
            "\(idOnly) of \(tokenDocuments.count) token documents keep the token only as their id: after a change of accounts the first account keeps sending its alerts to the phone until the token goes stale, or for good without a time beside it (a query finds a token by a field, not by a name); write it in a token field too"
        ]
    }

    public func seed(_ tokens: [String], of user: DocumentName, stamp: String?) throws -> TokenSeed {
        TokenSeed(writes: try tokens.map { try signIn($0, of: user, stamp: stamp) })
    }

    /// A document named by the token, holding it, under the user.
    public func signIn(_ token: String, of user: DocumentName, stamp: String?) throws -> Write {
        Self.tokenDocument(try user.sibling(path: "\(user.path)/\(collection)/\(token)"), fields: ["token": .string(token)], stamp: stamp)
    }
}

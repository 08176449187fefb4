import FirestoreModel
import HeraldCore
import WireFormats

/// One document per user in a top-level collection, `{collection}/{uid}`, the token in its `token`
/// field: Firebase's guide to managing tokens keeps `fcmTokens/{uid}` `{token, timestamp}`.
public struct TokenDocumentPerUser: TokenCollectionLayout, Hashable {
    public static let key = "documentPerUser"
    public static let valueForm = "NAME"
    public static let underUsers = false
    public let collection: String
    public init(collection: String) { self.collection = collection }
    public var summary: String { "a document per user in `\(collection)`" }
    public func place(in schema: Schema) -> String { "\(collection)/{userId}" }

    /// The user's token document.
    public func document(of user: DocumentName) -> DocumentName? { try? user.sibling(path: "\(collection)/\(user.documentID)") }

    public func reads(for user: DocumentName) -> TokenReads { TokenReads(documents: document(of: user).map { [$0] } ?? []) }

    public func tokens(of user: FirestoreDocument, in read: DocumentsRead) -> [String] {
        document(of: user.name).flatMap { read.found[$0]?["token"]?.stringValue }.map { [$0] } ?? []
    }

    /// Deletes the user's token document, only as it was read: a token written since stays.
    public func removal(of token: String, from user: FirestoreDocument, in read: DocumentsRead) -> Write? {
        guard let holder = document(of: user.name).flatMap({ read.found[$0] }), holder["token"]?.stringValue == token,
            let version = holder.updateTime
        else { return nil }
        return Write(.delete(holder.name), precondition: .updateTime(version))
    }

    public func triggerPattern(in schema: Schema) -> String { "\(collection)/{userId}" }
    /// Only the `token` field: the document's id is the user's.
    public func tokens(inWritten document: FirestoreDocument) -> [String] { document["token"]?.stringValue.map { [$0] } ?? [] }
    public func owner(ofWritten document: FirestoreDocument) -> String { document.name.documentID }

    public func misfits(of user: FirestoreDocument, tokenDocuments: [FirestoreDocument], kind: (FirestoreValue) -> String) -> [TokenMisfit] {
        tokenDocuments.compactMap { device in
            device["token"].flatMap { $0.stringValue == nil ? TokenMisfit(device, "token is \(kind($0)), not a token string") : nil }
        }
    }

    public func seed(_ tokens: [String], of user: DocumentName, stamp: String?) throws -> TokenSeed {
        // One device a user: the last to sign in.
        TokenSeed(writes: try tokens.last.map { [try signIn($0, of: user, stamp: stamp)] } ?? [])
    }

    public func signIn(_ token: String, of user: DocumentName, stamp: String?) throws -> Write {
        Self.tokenDocument(try user.sibling(path: "\(collection)/\(user.documentID)"), fields: ["token": .string(token)], stamp: stamp)
    }
}

import FirestoreModel
import HeraldCore
import WireFormats

/// One string field of the user document, e.g. `fcmToken`: one device a user, the last to sign in.
public struct SingleTokenField: TokenFieldLayout, Hashable {
    public static let key = "single"
    public static let summaryPrefix = "one string"
    public let field: String
    public init(field: String) { self.field = field }

    public func tokens(of user: FirestoreDocument, in read: DocumentsRead) -> [String] { user[field]?.stringValue.map { [$0] } ?? [] }

    /// Clears the field, only if the user document has not changed since it was read.
    public func removal(of token: String, from user: FirestoreDocument, in read: DocumentsRead) -> Write? {
        guard let updated = user.updateTime else { return nil }
        return Write(.update(user.name, fields: [:], mask: [FieldPath(field)]), precondition: .updateTime(updated))
    }

    public func holders(of token: String, in schema: Schema) -> ValueLookup? {
        ValueLookup(collectionID: schema.userCollection, field: FieldPath(field), .equals, .string(token))
    }

    public func normalization(of document: FirestoreDocument, dropping superseded: Set<String>) -> TokenFix? {
        guard let value = document[field], value != .null,
            !(value.stringValue.map { TokenCleanup.isWellFormed($0) && !superseded.contains($0) } ?? false)
        else { return nil }
        return .update(fields: [:], mask: [FieldPath(field)])
    }

    public func misfits(of user: FirestoreDocument, tokenDocuments: [FirestoreDocument], kind: (FirestoreValue) -> String) -> [TokenMisfit] {
        misfit(user, expected: "a token string", kind: kind) { $0.stringValue != nil }
    }

    public func seed(_ tokens: [String], of user: DocumentName, stamp: String?) throws -> TokenSeed {
        TokenSeed(userFields: tokens.first.map { [field: .string($0)] } ?? [:])
    }

    /// The new device's token replaces the field.
    public func signIn(_ token: String, of user: DocumentName, stamp: String?) throws -> Write {
        Write(.update(user, fields: [field: .string(token)], mask: [FieldPath(field)]), precondition: .exists(true))
    }
}

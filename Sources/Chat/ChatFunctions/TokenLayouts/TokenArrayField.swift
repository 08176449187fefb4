import FirestoreModel
import HeraldCore
import WireFormats

/// An array of strings in the user document, e.g. `fcmTokens`, the newest last.
public struct TokenArrayField: TokenFieldLayout, Hashable {
    public static let key = "array"
    public static let summaryPrefix = "array"
    public let field: String
    public init(field: String) { self.field = field }

    public func tokens(of user: FirestoreDocument, in read: DocumentsRead) -> [String] { user[field]?.arrayValue?.compactMap(\.stringValue) ?? [] }

    /// Removes the token from the array (`arrayRemove`), wherever it is now.
    public func removal(of token: String, from user: FirestoreDocument, in read: DocumentsRead) -> Write? {
        Write(.transform(user.name), transforms: [FieldTransform(FieldPath(field), .removeAllFromArray([.string(token)]))], precondition: .exists(true))
    }

    public func holders(of token: String, in schema: Schema) -> ValueLookup? {
        ValueLookup(collectionID: schema.userCollection, field: FieldPath(field), .arrayContains, .string(token))
    }

    public func normalization(of document: FirestoreDocument, dropping superseded: Set<String>) -> TokenFix? {
        guard let values = document[field]?.arrayValue else { return nil }
        let normal = TokenCleanup.normalized(values.compactMap(\.stringValue).filter { !superseded.contains($0) }).map(FirestoreValue.string)
        return normal == values ? nil : .update(fields: [field: .array(normal)], mask: [FieldPath(field)])
    }

    public func misfits(of user: FirestoreDocument, tokenDocuments: [FirestoreDocument], kind: (FirestoreValue) -> String) -> [TokenMisfit] {
        misfit(user, expected: "an array of token strings", kind: kind) { $0.arrayValue?.allSatisfy { $0.stringValue != nil } == true }
    }

    public func seed(_ tokens: [String], of user: DocumentName, stamp: String?) throws -> TokenSeed {
        TokenSeed(userFields: [field: .array(tokens.map(FirestoreValue.string))])
    }

    /// The new device's token joins the array (`arrayUnion`).
    public func signIn(_ token: String, of user: DocumentName, stamp: String?) throws -> Write {
        Write(.transform(user), transforms: [FieldTransform(FieldPath(field), .appendMissingElements([.string(token)]))], precondition: .exists(true))
    }
}

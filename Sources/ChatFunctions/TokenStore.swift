import Foundation
import FirestoreModel

/// Reads and removes push tokens however the schema stores them.
struct TokenStore {
    let storage: Schema.TokenStorage
    init(_ storage: Schema.TokenStorage) { self.storage = storage }

    /// The user's tokens, deduplicated, without empty ones. (Subcollection tokens need a query;
    /// planning from the user document alone finds none.)
    func tokens(of user: FirestoreDocument) -> [String] {
        let raw: [String]
        switch storage {
        case .single(let field): raw = user[field]?.stringValue.map { [$0] } ?? []
        case .array(let field): raw = user[field]?.arrayValue?.compactMap(\.stringValue) ?? []
        case .mapKeys(let field): raw = user[field]?.mapValue?.keys.sorted() ?? []
        case .subcollection: raw = []
        }
        var seen = Set<String>()
        return raw.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty && seen.insert($0).inserted }
    }

    /// The write that removes a dead token, only if it is still there as it was read.
    func removal(of token: String, from user: FirestoreDocument) -> Write? {
        switch storage {
        case .single(let field):
            // Only clear the field if the user document has not changed since it was read.
            guard let updated = user.updateTime else { return nil }
            return Write(.update(user.name, fields: [:], mask: [FieldPath(field)]), precondition: .updateTime(updated))
        case .array(let field):
            return Write(.transform(user.name), transforms: [FieldTransform(FieldPath(field), .removeAllFromArray([.string(token)]))],
                         precondition: .exists(true))
        case .mapKeys(let field):
            return Write(.update(user.name, fields: [:], mask: [FieldPath(field, token)]), precondition: .exists(true))
        case .subcollection(let collection):
            return (try? user.name.sibling(path: "\(user.name.path)/\(collection)/\(token)")).map { Write(.delete($0)) }
        }
    }
}

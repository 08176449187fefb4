import FirestoreModel
import HeraldCore
import PushTokens
import WireFormats

/// A message's view of its recipients' push tokens: the schema's layout over what was read.
struct TokenStore {
    let layout: any TokenLayout
    /// What was read, for tokens kept in documents of their own.
    let documents: DocumentsRead
    init(_ storage: Schema.TokenStorage, documents: DocumentsRead = DocumentsRead()) {
        self.layout = storage.layout
        self.documents = documents
    }

    /// The user's tokens, oldest first, each once, without empty ones.
    func tokens(of user: FirestoreDocument) -> [String] {
        layout.tokens(of: user, in: documents).filter { !$0.isBlank }.firstOccurrences { $0 }
    }

    /// One push to each of the user's devices, all with the same message: `message` is built once
    /// (with the first token) because only the token differs. At most `TokenCleanup.maximumTokensPerUser`
    /// devices, the newest (the last in an array, by their time in a map or by their documents' update
    /// time): the tokens are any client's to write, and one user with thousands must not make every
    /// message to them thousands of sends.
    /// - count: where the badge the message carries is stored, so the executor sends the committed value.
    func pushes(to user: FirestoreDocument, userID: String, count: CountSource?, message: (_ token: String) -> FCMMessage) -> [PushMessage] {
        // A malformed token reaches no service (tokenCleanup removes it): sent to FCM, it would only be refused.
        let tokens = tokens(of: user).filter(PushToken.isWellFormed).suffix(TokenCleanup.maximumTokensPerUser)
        guard let first = tokens.first else { return [] }
        let fcm = message(first)
        return tokens.map {
            PushMessage(userID: userID, token: $0, fcm: fcm, removal: layout.removal(of: $0, from: user, in: documents), count: count)
        }
    }
}

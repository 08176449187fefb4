import FirestoreModel
import GoogleClients

/// A failure downstream, classified by what the trigger should do about it.
public enum DownstreamError: Error, Sendable, CustomStringConvertible {
    /// Try again later: the event gets 503 (or 429 when `throttled`) so the trigger retries.
    case unavailable(String, retryAfterSeconds: Int? = nil)
    case throttled(String, retryAfterSeconds: Int? = nil)
    /// Can never succeed as it stands (e.g. a permission or a document that is not what it should be).
    case rejected(String)
    /// A document the plan relied on changed between the read and the commit; nothing was written.
    /// The runtime reads and plans again at once, a few times, before handing the event back.
    case changedDuringPlanning(String)

    public var description: String {
        switch self {
        case .unavailable(let reason, _), .throttled(let reason, _), .rejected(let reason), .changedDuringPlanning(let reason): reason
        }
    }
}

extension DownstreamError {
    /// Google's answers, as what the trigger should do (`FailureKind`): retried later, throttled, or refused.
    static func from(firestore error: any Error) -> any Error {
        if let downstream = error as? DownstreamError { return downstream }
        if let json = error as? FirestoreJSONError { return DownstreamError.rejected("unreadable answer from Firestore: \(json)") }
        let api = error as? GoogleAPIError
        let transport = error as? TransportError
        let what = transport.map { "Firestore unreachable: \($0)" } ?? api.map { "Firestore: \($0)" } ?? "\(error)"
        let retryAfter = api?.retryAfterSeconds ?? transport?.retryAfterSeconds
        switch FailureKind(error) {
        case .throttled: return DownstreamError.throttled(what, retryAfterSeconds: retryAfter)
        case .unavailable, .outcomeUnknown, .contention, .notSent: return DownstreamError.unavailable(what, retryAfterSeconds: retryAfter)
        case .credentialsRefused:
            // Usually an IAM change away from working: let the trigger retry rather than drop the event.
            guard let api else { return DownstreamError.unavailable(what) }
            let fix = api.credentialsFix(api: "firestore.googleapis.com", role: "roles/datastore.user")
            return DownstreamError.unavailable("Firestore refused the credentials (\(api)): \(fix)")
        case .rejected: return api.map { DownstreamError.rejected("Firestore: \($0)") } ?? error
        }
    }
}

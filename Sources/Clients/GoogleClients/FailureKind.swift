/// What a failed call to a Google API means for calling it again: the one classification the clients'
/// retries and the event executor's answer to the trigger share. As Google's guidance has it,
/// UNAVAILABLE and RESOURCE_EXHAUSTED were not carried out and any call may be made again (the second
/// after a backoff); DEADLINE_EXCEEDED, INTERNAL, UNKNOWN, a 5xx or a lost connection may have been
/// carried out, so only a call whose repetition is harmless is repeated; ABORTED lost a race and is
/// repeated by reading again.
public enum FailureKind: Sendable, Hashable {
    /// No request was sent: no access token could be had for now (`AuthError.unavailable`).
    case notSent
    /// The service did not do it and asks to try again (UNAVAILABLE).
    case unavailable
    /// The service is over a rate or quota (RESOURCE_EXHAUSTED, HTTP 429).
    case throttled
    /// It may or may not have been carried out (a lost connection, DEADLINE_EXCEEDED, INTERNAL, UNKNOWN, 5xx).
    case outcomeUnknown
    /// A transaction or a condition lost a race with another writer (ABORTED).
    case contention
    /// The credentials: refused (UNAUTHENTICATED, PERMISSION_DENIED), or none to be had. An IAM change
    /// or a setting away from working.
    case credentialsRefused
    /// Refused for what was asked, or no Google failure at all: asked again, the answer is the same.
    case rejected

    public init(_ error: any Error) {
        switch error {
        case let auth as AuthError:
            self = if case .unavailable = auth { .notSent } else { .credentialsRefused }
        case is TransportError:
            self = .outcomeUnknown
        case let api as GoogleAPIError:
            switch api.status {
            case .unavailable: self = .unavailable
            case .resourceExhausted: self = .throttled
            case .deadlineExceeded, .internal, .unknown: self = .outcomeUnknown
            case .aborted: self = .contention
            case .unauthenticated, .permissionDenied: self = .credentialsRefused
            case .invalidArgument, .notFound, .alreadyExists, .failedPrecondition: self = api.httpStatus >= 500 ? .outcomeUnknown : .rejected
            }
        default:
            self = .rejected
        }
    }

    /// A call that changes nothing (a read) may be made again.
    public var allowsRead: Bool { [.notSent, .unavailable, .throttled, .outcomeUnknown].contains(self) }
    /// A write whose repetition is harmless (conditional on what it read, or the same blind write) may be made again.
    public var allowsIdempotentWrite: Bool { allowsRead || self == .contention }
    /// Any call, even one that must not happen twice, may be made again: it was not carried out.
    public var allowsAnyCall: Bool { [.notSent, .unavailable, .throttled].contains(self) }
}

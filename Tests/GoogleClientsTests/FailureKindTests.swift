import GoogleClients
import Testing

/// The one retry classification: what each failure means for a read, an idempotent write, a write that
/// must not happen twice, and an FCM send.
@Suite struct FailureKindTests {
    static func api(_ status: GoogleAPIError.Status, _ http: Int) -> GoogleAPIError { GoogleAPIError(httpStatus: http, status: status, message: "x") }

    @Test func eachFailureIsRetriedOnlyWhereRepeatingIsHarmless() {
        // (error, kind, read, idempotent write, any call)
        let cases: [(any Error, FailureKind, Bool, Bool, Bool)] = [
            (AuthError.unavailable("token service down"), .notSent, true, true, true),
            (AuthError.refused("revoked"), .credentialsRefused, false, false, false),
            (TransportError("reset"), .outcomeUnknown, true, true, false),
            (Self.api(.unavailable, 503), .unavailable, true, true, true),
            (Self.api(.resourceExhausted, 429), .throttled, true, true, true),
            (Self.api(.deadlineExceeded, 504), .outcomeUnknown, true, true, false),
            (Self.api(.internal, 500), .outcomeUnknown, true, true, false),
            (Self.api(.aborted, 409), .contention, false, true, false),
            (Self.api(.permissionDenied, 403), .credentialsRefused, false, false, false),
            (Self.api(.failedPrecondition, 400), .rejected, false, false, false),
            (Self.api(.invalidArgument, 502), .outcomeUnknown, true, true, false),
            (CancellationError(), .rejected, false, false, false),
        ]
        for (error, kind, read, idempotent, any) in cases {
            let found = FailureKind(error)
            #expect(found == kind, "\(error)")
            #expect(found.allowsRead == read && found.allowsIdempotentWrite == idempotent && found.allowsAnyCall == any, "\(error)")
        }
    }
}

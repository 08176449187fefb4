import FirestoreModel
import WireFormats

/// An error answer from a Google API, from its JSON body `{"error": {"code", "status", "message", "details"}}`.
public struct GoogleAPIError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Google's canonical codes (google.rpc.Code) that Herald treats differently.
    public enum Status: String, Sendable {
        case invalidArgument = "INVALID_ARGUMENT"
        case notFound = "NOT_FOUND"
        case alreadyExists = "ALREADY_EXISTS"
        case failedPrecondition = "FAILED_PRECONDITION"
        case aborted = "ABORTED"
        case resourceExhausted = "RESOURCE_EXHAUSTED"
        case unavailable = "UNAVAILABLE"
        case deadlineExceeded = "DEADLINE_EXCEEDED"
        case permissionDenied = "PERMISSION_DENIED"
        case unauthenticated = "UNAUTHENTICATED"
        case `internal` = "INTERNAL"
        case unknown = "UNKNOWN"

        public static func named(grpcCode: Int) -> Status { GoogleAPIError.grpcCodes[grpcCode] ?? .unknown }
    }

    /// google.rpc.Code numbers, as `batchWrite` and streamed answers report them.
    static let grpcCodes: [Int: Status] = [
        2: .unknown, 3: .invalidArgument, 4: .deadlineExceeded, 5: .notFound, 6: .alreadyExists, 7: .permissionDenied,
        8: .resourceExhausted, 9: .failedPrecondition, 10: .aborted, 13: .internal, 14: .unavailable, 16: .unauthenticated,
    ]

    public var httpStatus: Int
    public var status: Status
    public var message: String
    /// FCM's `google.firebase.fcm.v1.FcmError` errorCode, e.g. `UNREGISTERED`.
    public var fcmErrorCode: String?
    /// The `reason` of a `google.rpc.ErrorInfo` detail, e.g. `SERVICE_DISABLED` or `IAM_PERMISSION_DENIED`.
    public var reason: String?
    /// Seconds from a `Retry-After` header.
    public var retryAfterSeconds: Int?
    /// Whether the answer was Google's JSON error body (`{"error": {...}}`), not a proxy's page or a bare status.
    public var hasGoogleErrorBody: Bool

    public init(
        httpStatus: Int, status: Status, message: String, fcmErrorCode: String? = nil, reason: String? = nil,
        retryAfterSeconds: Int? = nil, hasGoogleErrorBody: Bool = true
    ) {
        self.httpStatus = httpStatus
        self.reason = reason
        self.hasGoogleErrorBody = hasGoogleErrorBody
        self.status = status
        self.message = message
        self.fcmErrorCode = fcmErrorCode
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// Reads Google's error body; a body that is not one (a proxy's HTML page) falls back on the HTTP status.
    public init(httpStatus: Int, body: [UInt8], retryAfter: String?) {
        let error = (try? JSONValue(parsing: body))?["error"]
        // The emulator and some APIs answer with an array of one error object.
        let object = error ?? (try? JSONValue(parsing: body))?.arrayValue?.first?["error"]
        var status = object?["status"]?.stringValue.flatMap(Status.init(rawValue:))
        if status == nil {
            switch httpStatus {
            case 400: status = .invalidArgument
            case 401: status = .unauthenticated
            case 403: status = .permissionDenied
            case 404: status = .notFound
            case 409: status = .aborted
            case 429: status = .resourceExhausted
            case 503: status = .unavailable
            case 504: status = .deadlineExceeded
            case 500...: status = .internal
            default: status = .unknown
            }
        }
        func detail(_ type: String) -> JSONValue? {
            object?["details"]?.arrayValue?.first { $0["@type"]?.stringValue?.hasSuffix(type) == true }
        }
        self.init(
            httpStatus: httpStatus, status: status ?? .unknown,
            message: String((object?["message"]?.stringValue ?? "HTTP \(httpStatus)").prefix(500)),
            fcmErrorCode: detail("google.firebase.fcm.v1.FcmError")?["errorCode"]?.stringValue,
            reason: detail("google.rpc.ErrorInfo")?["reason"]?.stringValue.map { String($0.prefix(100)) },
            retryAfterSeconds: retryAfter.flatMap { Int($0.trimmingWhitespace) }.map { min(max($0, 0), 3600) },
            hasGoogleErrorBody: object?.objectValue != nil)
    }

    public var description: String {
        "\(httpStatus) \(status.rawValue)\(fcmErrorCode.map { " (\($0))" } ?? ""): \(message)"
    }
}

extension GoogleAPIError {
    /// What to change when an API refuses the credentials (PERMISSION_DENIED or UNAUTHENTICATED), by the
    /// cause Google's `ErrorInfo` names: the API turned off in the project, or the account without the role.
    public func credentialsFix(api: String, role: String) -> String {
        if status == .unauthenticated { return "the credentials are not valid (a revoked key, another account's file)" }
        switch reason {
        case "SERVICE_DISABLED": return "enable the API \(api) in the project (it is turned off)"
        case "IAM_PERMISSION_DENIED": return "grant the service account \(role)"
        default: return "grant the service account \(role) and enable the API \(api) in the project"
        }
    }
}

/// A request that never got an HTTP answer: connection refused or reset, a timeout, or not sent at all
/// because the service has been unreachable lately (the circuit breaker is open).
public struct TransportError: Error, Sendable, CustomStringConvertible {
    public var description: String
    /// When the breaker lets requests through again (for a breaker that is open).
    public var retryAfterSeconds: Int?
    /// The caller's time limit passed while the request was out: it may have been carried out.
    public var timedOut: Bool
    public init(_ description: String, retryAfterSeconds: Int? = nil, timedOut: Bool = false) {
        self.description = description
        self.retryAfterSeconds = retryAfterSeconds
        self.timedOut = timedOut
    }
}

/// The errors Firestore answers a write whose precondition failed: for a commit that left a write out
/// because it could not have gone (a shared commit answering each of its callers as a commit of its own would).
extension GoogleAPIError {
    /// The write's `updateTime` condition is older than the stored version.
    public static func stale(_ document: DocumentName) -> GoogleAPIError {
        GoogleAPIError(httpStatus: 400, status: .failedPrecondition, message: "the stored version of \(document.path) is newer than the one read")
    }

    /// The write's document was to be created and exists.
    public static func exists(_ document: DocumentName) -> GoogleAPIError {
        GoogleAPIError(httpStatus: 409, status: .alreadyExists, message: "Document already exists: \(document.resourceName)")
    }

    /// The write's document was to exist and does not.
    public static func missing(_ document: DocumentName) -> GoogleAPIError {
        GoogleAPIError(httpStatus: 404, status: .notFound, message: "No document to update: \(document.resourceName)")
    }
}

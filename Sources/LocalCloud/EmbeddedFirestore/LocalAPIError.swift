import FirestoreModel
import WireFormats

/// A failure answered the way Google's APIs answer: an HTTP status, a canonical status name and a
/// message, as the JSON body `{"error": {"code", "message", "status"}}`.
public struct LocalAPIError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: Int
    public var status: String
    public var message: String
    /// Extra `error.details` entries (FCM's `FcmError` error code).
    public var details: [JSONValue]
    public var retryAfterSeconds: Int?

    public init(code: Int, status: String, message: String, details: [JSONValue] = [], retryAfterSeconds: Int? = nil) {
        self.code = code
        self.status = status
        self.message = message
        self.details = details
        self.retryAfterSeconds = retryAfterSeconds
    }

    public static func invalidArgument(_ message: String) -> Self { Self(code: 400, status: "INVALID_ARGUMENT", message: message) }
    public static func failedPrecondition(_ message: String) -> Self { Self(code: 400, status: "FAILED_PRECONDITION", message: message) }
    public static func unauthenticated(_ message: String) -> Self { Self(code: 401, status: "UNAUTHENTICATED", message: message) }
    public static func notFound(_ message: String) -> Self { Self(code: 404, status: "NOT_FOUND", message: message) }
    public static func alreadyExists(_ message: String) -> Self { Self(code: 409, status: "ALREADY_EXISTS", message: message) }
    public static func aborted(_ message: String) -> Self { Self(code: 409, status: "ABORTED", message: message) }
    public static func internalError(_ message: String) -> Self { Self(code: 500, status: "INTERNAL", message: message) }
    public static func unavailable(_ message: String) -> Self { Self(code: 503, status: "UNAVAILABLE", message: message) }

    public static func invalid(_ error: FirestoreJSONError) -> Self { .invalidArgument(error.description) }

    public var json: JSONValue {
        var error: [String: JSONValue] = ["code": .integer(code), "message": .string(message), "status": .string(status)]
        if !details.isEmpty { error["details"] = .array(details) }
        return ["error": .object(error)]
    }

    public var description: String { "\(status): \(message)" }
}

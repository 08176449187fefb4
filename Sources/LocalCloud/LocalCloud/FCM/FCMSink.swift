import EmbeddedFirestore
import FirestoreModel
import Foundation
import PushTokens
import Synchronization
import WireFormats

/// FCM HTTP v1's `messages:send`, locally: validates each request as FCM does, answers as FCM
/// does (`UNREGISTERED` for tokens marked dead, injected 429/503), and records what it accepted.
public final class FCMSink: Sendable {
    /// Failures to answer the next requests with, in order, before normal service resumes.
    public enum InjectedFailure: String, Sendable { case unavailable, quotaExceeded, internalError }

    public struct Recorded: Sendable, Hashable {
        public var id: Int64
        public var name: String
        public var token: String?
        public var receivedAt: Double
        public var message: JSONValue
        /// The trace of the event whose function sent it (its `traceparent`), if it sent one.
        public var traceID: String? = nil

        public var json: JSONValue {
            [
                "id": .integer(id), "name": .string(name), "token": token.map { .string($0) } ?? .null,
                "receivedAt": .number(String(receivedAt)), "message": message, "traceId": traceID.map { .string($0) } ?? .null,
            ]
        }
    }

    let database: LocalDatabase
    let pendingFailures = Mutex<[InjectedFailure]>([])
    /// Probability that any send is answered 503 (or 429), with Retry-After.
    let failureRate = Mutex(0.0)
    public static let maximumPayloadBytes = 4096
    static let messageFields: Set<String> = [
        "name", "data", "notification", "android", "webpush", "apns", "fcm_options", "fcmOptions", "token", "topic", "condition",
    ]
    static let notificationFields: Set<String> = ["title", "body", "image"]

    let onRecord: @Sendable (Recorded) -> Void

    init(database: LocalDatabase, onRecord: @escaping @Sendable (Recorded) -> Void = { _ in }) {
        self.database = database
        self.onRecord = onRecord
    }

    public func inject(_ failures: [InjectedFailure]) { pendingFailures.withLock { $0 += failures } }
    public func setFailureRate(_ rate: Double) { failureRate.withLock { $0 = rate } }
    public var currentFailureRate: Double { failureRate.withLock { $0 } }

    public func markDead(_ token: String) async throws(LocalAPIError) {
        try await database.write { db in
            try db.execute(sql: "INSERT OR IGNORE INTO fcm_dead_tokens (token, since) VALUES (?, ?)", arguments: [token, Date().timeIntervalSince1970])
        }
    }

    /// Handles one `messages:send` body; returns FCM's answer or throws its error.
    public func send(project: String, body: JSONValue, trace: String? = nil) async throws(LocalAPIError) -> JSONValue {
        if let failure = pendingFailures.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { throw Self.error(for: failure) }
        let rate = failureRate.withLock { $0 }
        if rate > 0, Double.random(in: 0..<1) < rate { throw Self.error(for: Bool.random() ? .unavailable : .quotaExceeded) }

        guard case .object(let request) = body else { throw .invalidArgument("Invalid JSON payload received. Expected an object.") }
        for key in request.keys where !["message", "validate_only", "validateOnly"].contains(key) {
            throw .invalidArgument("Invalid JSON payload received. Unknown name \"\(key.prefix(80))\": Cannot find field.")
        }
        guard case .object(let message)? = request["message"] else { throw .invalidArgument("Request contains an invalid argument: message is required.") }
        try Self.validate(message)
        let token = message["token"]?.stringValue
        if let token {
            let dead = try await database.read { db in try Bool.fetchOne(db, sql: "SELECT 1 FROM fcm_dead_tokens WHERE token = ?", arguments: [token]) ?? false
            }
            if dead {
                throw LocalAPIError(
                    code: 404, status: "NOT_FOUND", message: "Requested entity was not found.",
                    details: [["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "UNREGISTERED"]])
            }
        }
        // A validate-only send checks the message and the token, as FCM does, and delivers nothing.
        let validateOnly = (request["validate_only"] ?? request["validateOnly"])?.boolValue ?? false
        if validateOnly { return ["name": .string("projects/\(project)/messages/fake_message_id")] }
        let name = "projects/\(project)/messages/0:\(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased())"
        let now = Date().timeIntervalSince1970
        let id = try await database.write { db in
            try db.execute(
                sql: """
                    INSERT INTO fcm_messages (project, name, token, topic, condition, message, received_at, trace_id)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    project, name, token, message["topic"]?.stringValue, message["condition"]?.stringValue,
                    JSONValue.object(message).serialized(), now, trace,
                ])
            return db.lastInsertedRowID
        }
        onRecord(Recorded(id: id, name: name, token: token, receivedAt: now, message: .object(message), traceID: trace))
        return ["name": .string(name)]
    }

    static func validate(_ message: [String: JSONValue]) throws(LocalAPIError) {
        for key in message.keys where !messageFields.contains(key) {
            throw .invalidArgument("Invalid JSON payload received. Unknown name \"\(key.prefix(80))\" at 'message': Cannot find field.")
        }
        let targets = ["token", "topic", "condition"].filter { message[$0] != nil }
        guard targets.count == 1 else {
            throw .invalidArgument(
                "Request contains an invalid argument: exactly one of token, topic or condition must be set (got \(targets.isEmpty ? "none" : targets.joined(separator: ", ")))."
            )
        }
        if let token = message["token"] {
            // A token another service issued (Expo's, a raw APNs device token) is none of FCM's: FCM refuses it so.
            guard let text = token.stringValue, PushToken.classify(text) == .token(.fcm) else {
                throw LocalAPIError(
                    code: 400, status: "INVALID_ARGUMENT", message: "The registration token is not a valid FCM registration token",
                    details: [["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "INVALID_ARGUMENT"]])
            }
        }
        if let data = message["data"] {
            guard case .object(let entries) = data else { throw .invalidArgument("Invalid value at 'message.data': must be a map of strings.") }
            for (key, value) in entries {
                guard value.stringValue != nil else {
                    throw .invalidArgument("Invalid value at 'message.data[\(key.prefix(80))]' (TYPE_STRING): data values must be strings.")
                }
                let lower = key.lowercased()
                if ["from", "message_type", "notification"].contains(lower) || lower.hasPrefix("google.") || lower.hasPrefix("gcm.") {
                    throw .invalidArgument("Invalid data payload key: \(key.prefix(80)) is reserved.")
                }
            }
        }
        if let notification = message["notification"] {
            guard case .object(let fields) = notification else { throw .invalidArgument("Invalid value at 'message.notification': must be an object.") }
            for (key, value) in fields {
                guard notificationFields.contains(key) else {
                    throw .invalidArgument("Invalid JSON payload received. Unknown name \"\(key.prefix(80))\" at 'message.notification': Cannot find field.")
                }
                guard value.stringValue != nil else { throw .invalidArgument("Invalid value at 'message.notification.\(key)' (TYPE_STRING).") }
            }
        }
        for section in ["android", "apns", "webpush", "fcm_options", "fcmOptions"] {
            if let value = message[section], value.objectValue == nil { throw .invalidArgument("Invalid value at 'message.\(section)': must be an object.") }
        }
        if let badge = message["apns"]?["payload"]?["aps"]?["badge"], badge.int64Value == nil {
            throw .invalidArgument("Invalid value at 'message.apns.payload.aps.badge': must be an integer.")
        }
        let size = JSONValue.object(message.filter { ["data", "notification"].contains($0.key) }).serialized().utf8.count
        guard size <= maximumPayloadBytes else { throw .invalidArgument("Message is too big: \(size) bytes of payload, the limit is \(maximumPayloadBytes).") }
    }

    static func error(for failure: InjectedFailure) -> LocalAPIError {
        let code: (Int, String, String) =
            switch failure {
            case .unavailable: (503, "UNAVAILABLE", "UNAVAILABLE")
            case .quotaExceeded: (429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED")
            case .internalError: (500, "INTERNAL", "INTERNAL")
            }
        return LocalAPIError(
            code: code.0, status: code.1, message: "injected failure (\(failure.rawValue))",
            details: [["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": .string(code.2)]],
            retryAfterSeconds: failure == .internalError ? nil : 1)
    }

    /// Recorded messages, oldest first, optionally for one token and after a given id.
    /// Recorded messages after `afterID`, oldest first: all, to one token, or sent for the events of `traces`.
    public func messages(token: String? = nil, afterID: Int64 = 0, traces: [String]? = nil) async throws(LocalAPIError) -> [Recorded] {
        try await database.read { db in
            var sql = "SELECT * FROM fcm_messages WHERE id > ?"
            var arguments: StatementArguments = [afterID]
            if let token {
                sql += " AND token = ?"
                arguments += [token]
            }
            if let traces {
                sql += " AND trace_id IN (\(traces.map { _ in "?" }.joined(separator: ", ")))"
                arguments += StatementArguments(traces)
            }
            return try Row.fetchAll(db, sql: sql + " ORDER BY id", arguments: arguments).map { row in
                let text: String = row["message"]
                return Recorded(
                    id: row["id"], name: row["name"], token: row["token"], receivedAt: row["received_at"],
                    message: (try? JSONValue(parsing: text)) ?? .null, traceID: row["trace_id"])
            }
        }
    }
}

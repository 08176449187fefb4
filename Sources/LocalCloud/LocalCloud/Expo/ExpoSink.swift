import EmbeddedFirestore
import Foundation
import PushTokens
import Synchronization
import WireFormats

/// Expo's push service, locally (`POST /--/api/v2/push/send`, `POST /--/api/v2/push/getReceipts`),
/// checking requests as Expo does: at most 100 notifications a request, one project's tokens a
/// request (`PUSH_TOO_MANY_EXPERIENCE_IDS`, naming each project's tokens), gzip bodies, the access
/// token when the project requires one, the message's fields and their types, 4,096 bytes of payload
/// (`MessageTooBig`). Tokens marked dead answer `DeviceNotRegistered` in the ticket or in the receipt.
/// Receipts are ready at once (Expo's take up to half an hour).
public final class ExpoSink: Sendable {
    let records: PushStandInRecords
    /// The push access token requests must carry (Expo's "enhanced security"); nil: none needed.
    let requiredAccessToken = Mutex<String?>(nil)
    /// The project each token belongs to, where it is not `defaultProject`.
    let projects = Mutex<[String: String]>([:])
    public static let defaultProject = "@herald/app"
    public static let maximumNotifications = 100
    public static let maximumReceipts = 1000
    public static let maximumPayloadBytes = 4096
    static let maximumBodyBytes = 4 << 20

    static let stringFields: Set<String> = [
        "title", "subtitle", "body", "channelId", "categoryId", "threadId", "collapseId", "tag", "interruptionLevel", "priority",
    ]
    static let flagFields: Set<String> = ["mutableContent", "_contentAvailable", "contentAvailable", "_displayInForeground"]
    static let numberFields: Set<String> = ["ttl", "expiration", "badge"]
    static let otherFields: Set<String> = ["to", "data", "sound", "richContent"]

    init(records: PushStandInRecords) { self.records = records }

    public func requireAccessToken(_ token: String?) { requiredAccessToken.withLock { $0 = token } }
    public func assign(_ token: String, toProject project: String) { projects.withLock { $0[token] = project } }

    static func errors(_ status: Int, _ code: String, _ message: String, details: JSONValue? = nil, retryAfter: Int? = nil) -> LocalResponse {
        var error: [String: JSONValue] = ["code": .string(code), "message": .string(message)]
        if let details { error["details"] = details }
        var response = LocalResponse(status: status, json: ["errors": [.object(error)]])
        if let retryAfter { response.headers["retry-after"] = String(retryAfter) }
        return response
    }

    public func handle(_ request: LocalRequest) async -> LocalResponse {
        let path = request.segments.joined(separator: "/")
        guard request.method == "POST", ["--/api/v2/push/send", "--/api/v2/push/getReceipts"].contains(path) else {
            return Self.errors(404, "NOT_FOUND", "Expo's push API is POST /--/api/v2/push/send and POST /--/api/v2/push/getReceipts")
        }
        var failure = records.drawFailure(for: .expo)
        switch failure {
        case .tooManyRequests?: return Self.errors(429, "TOO_MANY_REQUESTS", "injected: the project is over 600 notifications a second", retryAfter: 1)
        case .unavailable?: return Self.errors(503, "SERVICE_UNAVAILABLE", "injected: the push service is unavailable", retryAfter: 1)
        case .lostAnswer?, nil: break
        }
        if let required = requiredAccessToken.withLock({ $0 }), request.headers["authorization"] != "Bearer \(required)" {
            return Self.errors(
                401, "UNAUTHORIZED", "This project requires a push access token: send it as \"Authorization: Bearer …\" (Expo's enhanced push security)")
        }
        var body = request.body
        if request.headers["content-encoding"]?.lowercased() == "gzip" {
            do { body = try Gzip.decompress(body, limit: Self.maximumBodyBytes) } catch {
                return Self.errors(400, "VALIDATION_ERROR", "The gzip-encoded body could not be read: \(error)")
            }
        } else if let encoding = request.headers["content-encoding"], encoding.lowercased() != "identity" {
            return Self.errors(415, "UNSUPPORTED_ENCODING", "Content-Encoding \(encoding.prefix(40)) is not supported (gzip or none)")
        }
        guard let json = try? JSONValue(parsing: body) else { return Self.errors(400, "VALIDATION_ERROR", "The request body is not JSON.") }
        let response = path.hasSuffix("getReceipts") ? await receipts(json) : await send(json, trace: TraceParent.traceID(request.headers["traceparent"]))
        if failure == .lostAnswer {
            // Taken and recorded; the answer never comes in time.
            try? await Task.sleep(for: records.hangFor.withLock { $0 })
            failure = nil
        }
        return response
    }

    func send(_ json: JSONValue, trace: String?) async -> LocalResponse {
        let messages: [JSONValue] = json.arrayValue ?? (json.objectValue != nil ? [json] : [])
        guard !messages.isEmpty else { return Self.errors(400, "VALIDATION_ERROR", "The body must be a message or an array of messages.") }
        var recipients: [(message: [String: JSONValue], token: String)] = []
        for (index, item) in messages.enumerated() {
            guard let message = item.objectValue else { return Self.errors(400, "VALIDATION_ERROR", "Message \(index) is not an object.") }
            if let problem = Self.problem(message) { return Self.errors(400, "VALIDATION_ERROR", "Message \(index): \(problem)") }
            let to = message["to"]?.arrayValue ?? [message["to"] ?? .null]
            for token in to {
                guard let token = token.stringValue else { return Self.errors(400, "VALIDATION_ERROR", "Message \(index): \"to\" must be push tokens") }
                recipients.append((message, token))
            }
        }
        guard recipients.count <= Self.maximumNotifications else {
            return Self.errors(
                400, "PUSH_TOO_MANY_NOTIFICATIONS",
                "You are trying to send more than \(Self.maximumNotifications) push notifications in one request (\(recipients.count)).")
        }
        let assigned = projects.withLock { $0 }
        let byProject = Dictionary(grouping: recipients.map(\.token), by: { assigned[$0] ?? Self.defaultProject })
        guard byProject.count <= 1 else {
            return Self.errors(
                400, "PUSH_TOO_MANY_EXPERIENCE_IDS",
                "All push notification messages in the same request must be for the same project; separate your push tokens by project.",
                details: .object(byProject.mapValues { .array($0.map { .string($0) }) }))
        }
        var tickets: [JSONValue] = []
        var accepted: [(token: String, ticket: String, receipt: JSONValue?, message: JSONValue, headers: JSONValue)] = []
        for (message, token) in recipients {
            var single = message
            single["to"] = .string(token)
            guard PushToken.classify(token) == .token(.expo) else {
                tickets.append(Self.errorTicket("\"\(token.prefix(80))\" is not a valid Expo push token", "DeviceNotRegistered", token: token))
                continue
            }
            let stage: String?
            do { stage = try await records.deadStage(of: token, service: .expo) } catch { return Self.errors(500, "INTERNAL_SERVER_ERROR", "\(error)") }
            if stage == "send" {
                tickets.append(Self.errorTicket("\"\(token)\" is not a registered push notification recipient", "DeviceNotRegistered", token: token))
                continue
            }
            let payload = JSONValue.object(message.filter { $0.key != "to" }).serialized().utf8.count
            guard payload <= Self.maximumPayloadBytes else {
                tickets.append(Self.errorTicket("Message too big: \(payload) bytes, the limit is \(Self.maximumPayloadBytes)", "MessageTooBig", token: nil))
                continue
            }
            let id = UUID().uuidString.lowercased()
            let receipt: JSONValue =
                stage == "receipt"
                ? [
                    "status": "error", "message": .string("\"\(token)\" is not a registered push notification recipient"),
                    "details": ["error": "DeviceNotRegistered"],
                ]
                : ["status": "ok"]
            tickets.append(["status": "ok", "id": .string(id)])
            accepted.append((token, id, receipt, .object(single), .null))
        }
        do { try await records.record(accepted, service: .expo, trace: trace) } catch { return Self.errors(500, "INTERNAL_SERVER_ERROR", "\(error)") }
        return LocalResponse(json: ["data": .array(tickets)])
    }

    static func errorTicket(_ message: String, _ error: String, token: String?) -> JSONValue {
        var details: [String: JSONValue] = ["error": .string(error)]
        if let token { details["expoPushToken"] = .string(token) }
        return ["status": "error", "message": .string(message), "details": .object(details)]
    }

    /// What is wrong with a message's fields, as Expo's validation would refuse it.
    static func problem(_ message: [String: JSONValue]) -> String? {
        for (key, value) in message {
            if stringFields.contains(key) {
                guard value.stringValue != nil else { return "\"\(key)\" must be a string" }
            } else if flagFields.contains(key) {
                guard value.boolValue != nil else { return "\"\(key)\" must be a boolean" }
            } else if numberFields.contains(key) {
                guard let number = Double(value.serialized()), number >= 0, number.isFinite else { return "\"\(key)\" must be a number of at least 0" }
            } else if !otherFields.contains(key) {
                return "\"\(key.prefix(80))\" is not allowed"
            }
        }
        if let priority = message["priority"]?.stringValue, !["default", "normal", "high"].contains(priority) {
            return "\"priority\" must be one of default, normal, high"
        }
        if let badge = message["badge"], badge.int64Value == nil { return "\"badge\" must be an integer" }
        if let data = message["data"], data.objectValue == nil { return "\"data\" must be an object" }
        if let sound = message["sound"], sound.stringValue == nil, sound.objectValue == nil, sound != .null { return "\"sound\" must be a string or an object" }
        guard message["to"] != nil else { return "\"to\" is required" }
        return nil
    }

    func receipts(_ json: JSONValue) async -> LocalResponse {
        guard let ids = json["ids"]?.arrayValue, ids.allSatisfy({ $0.stringValue != nil }) else {
            return Self.errors(400, "VALIDATION_ERROR", "\"ids\" must be an array of ticket ids.")
        }
        guard ids.count <= Self.maximumReceipts else {
            return Self.errors(400, "PUSH_TOO_MANY_RECEIPTS", "You are trying to get more than \(Self.maximumReceipts) push receipts in one request.")
        }
        do {
            let found = try await records.receipts(ids.compactMap(\.stringValue))
            return LocalResponse(json: ["data": .object(found)])
        } catch {
            return Self.errors(500, "INTERNAL_SERVER_ERROR", "\(error)")
        }
    }
}

import Crypto
import EmbeddedFirestore
import Foundation
import PushTokens
import Synchronization
import WireFormats

/// Apple's APNs, locally: `POST /3/device/<token>` over HTTP/2 with TLS, as Apple serves it, checking
/// requests as Apple documents: the provider token (an ES256 JWT of a registered key, its team as
/// `iss`, at most an hour old), `apns-topic` among the key's topics, `apns-push-type`, `apns-priority`
/// (5 for background pushes), `apns-collapse-id` (64 bytes), `apns-expiration`, `apns-id`, the device
/// token's form and a payload of at most 4,096 bytes. Answers with Apple's status and `{"reason"}`;
/// tokens marked dead answer 410 `Unregistered` with its timestamp.
public final class APNsSink: Sendable {
    /// A team's key as Apple keeps it: its public half, its team and the bundle ids it may push to.
    public struct Key: Sendable {
        public var teamID: String
        public var publicKey: P256.Signing.PublicKey
        public var topics: Set<String>
        public init(teamID: String, publicKey: P256.Signing.PublicKey, topics: Set<String>) {
            self.teamID = teamID
            self.publicKey = publicKey
            self.topics = topics
        }
    }

    let records: PushStandInRecords
    let keys = Mutex<[String: Key]>([:])
    public static let maximumPayloadBytes = 4096
    static let pushTypes: Set<String> = [
        "alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity", "pushtotalk", "widgets",
    ]

    init(records: PushStandInRecords) { self.records = records }

    /// Registers a key (by its key id), as uploading a `.p8` key's team to Apple's developer account does.
    public func register(keyID: String, _ key: Key) { keys.withLock { $0[keyID] = key } }

    static func reason(_ status: Int, _ reason: String, timestamp: Bool = false, retryAfter: Int? = nil) -> LocalResponse {
        var body: [String: JSONValue] = ["reason": .string(reason)]
        if timestamp { body["timestamp"] = .integer(Int64(Date().timeIntervalSince1970 * 1000)) }
        var response = LocalResponse(status: status, json: .object(body))
        if let retryAfter { response.headers["retry-after"] = String(retryAfter) }
        return response
    }

    /// One request, from an HTTP/2 stream (`APNsServer`). Every answer carries the request's `apns-id`
    /// (one made up when it sent none), as Apple's do: clients match answers to requests by it.
    public func handle(_ request: LocalRequest) async -> LocalResponse {
        let id = request.headers["apns-id"].flatMap { UUID(uuidString: $0) != nil ? $0 : nil } ?? UUID().uuidString
        var request = request
        if request.headers["apns-id"] == nil { request.headers["apns-id"] = id }
        var answer = await answer(request)
        answer.headers["apns-id"] = id
        return answer
    }

    func answer(_ request: LocalRequest) async -> LocalResponse {
        let s = request.segments
        guard s.count == 3, s[0] == "3", s[1] == "device" else { return Self.reason(404, "BadPath") }
        guard request.method == "POST" else { return Self.reason(405, "MethodNotAllowed") }
        let token = s[2]
        guard !token.isEmpty else { return Self.reason(400, "MissingDeviceToken") }
        switch records.drawFailure(for: .apns) {
        case .tooManyRequests?: return Self.reason(429, "TooManyRequests", retryAfter: 1)
        case .unavailable?: return Self.reason(503, "ServiceUnavailable", retryAfter: 1)
        case .lostAnswer?:
            let answer = await deliver(request, token: token)
            try? await Task.sleep(for: records.hangFor.withLock { $0 })
            return answer
        case nil: return await deliver(request, token: token)
        }
    }

    func deliver(_ request: LocalRequest, token: String) async -> LocalResponse {
        let headers = request.headers
        guard let authorization = headers["authorization"], authorization.lowercased().hasPrefix("bearer ") else {
            return Self.reason(403, "MissingProviderToken")
        }
        let key: Key
        switch verify(String(authorization.dropFirst("bearer ".count))) {
        case .success(let found): key = found
        case .failure(let refusal): return Self.reason(403, refusal.reason)
        }
        guard let topic = headers["apns-topic"], !topic.isEmpty else { return Self.reason(400, "MissingTopic") }
        guard key.topics.contains(topic) else { return Self.reason(400, "TopicDisallowed") }
        let pushType = headers["apns-push-type"] ?? "alert"
        guard Self.pushTypes.contains(pushType) else { return Self.reason(400, "InvalidPushType") }
        let priority = headers["apns-priority"] ?? "10"
        guard ["1", "5", "10"].contains(priority), !(pushType == "background" && priority == "10") else { return Self.reason(400, "BadPriority") }
        if let collapse = headers["apns-collapse-id"], collapse.utf8.count > 64 { return Self.reason(400, "BadCollapseId") }
        if let expiration = headers["apns-expiration"], Int64(expiration).map({ $0 < 0 }) ?? true { return Self.reason(400, "BadExpirationDate") }
        if let id = headers["apns-id"], UUID(uuidString: id) == nil { return Self.reason(400, "BadMessageId") }
        guard PushToken.classify(token) == .token(.apns) else { return Self.reason(400, "BadDeviceToken") }
        guard !request.body.isEmpty else { return Self.reason(400, "PayloadEmpty") }
        guard request.body.count <= Self.maximumPayloadBytes else { return Self.reason(413, "PayloadTooLarge") }
        guard let payload = try? JSONValue(parsing: request.body), payload["aps"]?.objectValue != nil else {
            // APNs names no reason for a payload that is not JSON with an `aps` dictionary; PayloadEmpty is the nearest.
            return Self.reason(400, "PayloadEmpty")
        }
        do {
            if try await records.deadStage(of: token, service: .apns) != nil { return Self.reason(410, "Unregistered", timestamp: true) }
        } catch {
            return Self.reason(500, "InternalServerError")
        }
        let id = headers["apns-id"] ?? ""
        var recorded: [String: JSONValue] = ["apns-topic": .string(topic), "apns-push-type": .string(pushType), "apns-priority": .string(priority)]
        for name in ["apns-collapse-id", "apns-expiration"] { if let value = headers[name] { recorded[name] = .string(value) } }
        do {
            try await records.record(
                [(token, id, nil, payload, .object(recorded))], service: .apns, trace: TraceParent.traceID(headers["traceparent"]))
        } catch {
            return Self.reason(500, "InternalServerError")
        }
        return LocalResponse(status: 200, text: "", contentType: "application/json")
    }

    struct Refusal: Error {
        let reason: String
    }

    /// The key that signed `token`, if it is a provider token APNs takes.
    func verify(_ token: String) -> Result<Key, Refusal> {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, token.utf8.count <= 4096, let headerBytes = Base64.decode(parts[0]), let header = try? JSONValue(parsing: headerBytes),
            let claimsBytes = Base64.decode(parts[1]), let claims = try? JSONValue(parsing: claimsBytes), let signature = Base64.decode(parts[2])
        else { return .failure(Refusal(reason: "InvalidProviderToken")) }
        guard header["alg"]?.stringValue == "ES256", let keyID = header["kid"]?.stringValue else { return .failure(Refusal(reason: "InvalidProviderToken")) }
        guard let key = keys.withLock({ $0[keyID] }) else { return .failure(Refusal(reason: "InvalidProviderToken")) }
        guard claims["iss"]?.stringValue == key.teamID else { return .failure(Refusal(reason: "UnrelatedKeyIdInToken")) }
        guard let signed = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
            key.publicKey.isValidSignature(signed, for: Data(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count)))
        else { return .failure(Refusal(reason: "InvalidProviderToken")) }
        guard let issued = claims["iat"]?.int64Value else { return .failure(Refusal(reason: "InvalidProviderToken")) }
        let now = Int64(Date().timeIntervalSince1970)
        if issued > now + 300 { return .failure(Refusal(reason: "InvalidProviderToken")) }
        if now - issued > 3600 { return .failure(Refusal(reason: "ExpiredProviderToken")) }
        return .success(key)
    }
}

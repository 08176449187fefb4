import AsyncHTTPClient
import Foundation
import FirestoreModel
import NIOCore
import NIOHTTP1

/// What became of one message to one device.
public enum SendResult: Sendable, Equatable {
    /// Accepted; `name` is FCM's message id (`projects/P/messages/ID`).
    case sent(name: String)
    /// The token will never work again (UNREGISTERED, SENDER_ID_MISMATCH, or reported invalid): remove it.
    case dead(reason: String)
    /// Not sent. `retryable` failures should hand the event back to the trigger; the others are
    /// payload or configuration bugs, reported loudly and not retried.
    case failed(reason: String, retryable: Bool, retryAfterSeconds: Int?)

    public var isSent: Bool { if case .sent = self { true } else { false } }
}

/// FCM HTTP v1: `POST /v1/projects/{project}/messages:send`, one message per request, many in flight
/// over HTTP/2. Sends are spread over several connections so no connection carries more than
/// `streamsPerConnection` at once (FCM allows 100 concurrent streams per connection).
public struct FCMClient: Sendable {
    public static let productionEndpoint = "https://fcm.googleapis.com"

    public let project: String
    let endpoint: String
    let lanes: [GoogleHTTP]
    public let maximumInFlight: Int
    public var retry: RetryPolicy

    /// - httpClients: one per connection lane; `FCMClient.makeHTTPClients` makes as many as
    ///   `maximumInFlight` needs. The caller shuts them down.
    public init(project: String, endpoint: String = productionEndpoint, credentials: any AccessTokenProvider,
                httpClients: [HTTPClient], maximumInFlight: Int = 256, retry: RetryPolicy = RetryPolicy(maximumAttempts: 4, totalBudget: .seconds(15)),
                requestTimeout: Duration = .seconds(20)) {
        precondition(!httpClients.isEmpty, "FCMClient needs at least one HTTP client")
        self.project = project
        self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        self.lanes = httpClients.map { GoogleHTTP(httpClient: $0, credentials: credentials, requestTimeout: .init(requestTimeout)) }
        self.maximumInFlight = max(1, maximumInFlight)
        self.retry = retry
    }

    public static let streamsPerConnection = 90

    /// HTTP clients for `maximumInFlight` concurrent sends: one connection lane per 90 streams.
    public static func makeHTTPClients(maximumInFlight: Int) -> [HTTPClient] {
        let count = max(1, (maximumInFlight + streamsPerConnection - 1) / streamsPerConnection)
        return (0..<count).map { _ in
            var configuration = HTTPClient.Configuration()
            configuration.httpVersion = .automatic
            configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = streamsPerConnection
            return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        }
    }

    var sendURL: String { "\(endpoint)/v1/projects/\(project)/messages:send" }

    /// Sends one message. `message` is FCM's `message` object including `token`.
    public func send(_ message: JSONValue, validateOnly: Bool = false, lane: Int = 0) async -> SendResult {
        var body: [String: JSONValue] = ["message": message]
        if validateOnly { body["validate_only"] = true }
        let request = JSONValue.object(body)
        let http = lanes[lane % lanes.count]
        do {
            let bytes = try await GoogleHTTP.withRetries(retry, isRetryable: Self.isRetryable) {
                try await http.send(.POST, sendURL, body: request)
            }
            let name = (try? JSONValue(parsing: bytes))?["name"]?.stringValue ?? ""
            return .sent(name: name)
        } catch let error as GoogleAPIError {
            return Self.classify(error)
        } catch let error as AuthError {
            if case .refused = error { return .failed(reason: error.description, retryable: false, retryAfterSeconds: nil) }
            return .failed(reason: error.description, retryable: true, retryAfterSeconds: nil)
        } catch {
            return .failed(reason: "\(error)", retryable: true, retryAfterSeconds: nil)
        }
    }

    /// Sends every message with at most `maximumInFlight` in flight; results in the same order.
    public func sendAll(_ messages: [JSONValue], validateOnly: Bool = false) async -> [SendResult] {
        await withTaskGroup(of: (Int, SendResult).self) { group in
            var results = [SendResult?](repeating: nil, count: messages.count)
            var next = 0
            func start(_ index: Int) {
                group.addTask { (index, await send(messages[index], validateOnly: validateOnly, lane: index % lanes.count)) }
            }
            while next < min(maximumInFlight, messages.count) { start(next); next += 1 }
            for await (index, result) in group {
                results[index] = result
                if next < messages.count { start(next); next += 1 }
            }
            return results.map { $0! }
        }
    }

    /// QUOTA_EXCEEDED is not retried here (FCM wants a minute at least): the event goes back to the trigger.
    static func isRetryable(_ error: any Error) -> Bool {
        if error is TransportError || AuthError.isTransient(error) { return true }
        guard let api = error as? GoogleAPIError else { return false }
        if api.fcmErrorCode == "QUOTA_EXCEEDED" || api.status == .resourceExhausted { return false }
        return api.httpStatus >= 500
    }

    static func classify(_ error: GoogleAPIError) -> SendResult {
        switch error.fcmErrorCode ?? "" {
        case "UNREGISTERED", "SENDER_ID_MISMATCH":
            return .dead(reason: error.fcmErrorCode!)
        case "QUOTA_EXCEEDED":
            return .failed(reason: error.description, retryable: true, retryAfterSeconds: max(60, error.retryAfterSeconds ?? 60))
        case "THIRD_PARTY_AUTH_ERROR":
            return .failed(reason: "APNs or web push credentials are misconfigured: \(error.message)", retryable: false, retryAfterSeconds: nil)
        default:
            break
        }
        if error.status == .invalidArgument {
            // Dead only when FCM says the token itself is invalid; otherwise the payload is wrong.
            let text = error.message.lowercased()
            if text.contains("registration token") && (text.contains("not a valid") || text.contains("invalid")) {
                return .dead(reason: "INVALID_ARGUMENT: invalid registration token")
            }
            return .failed(reason: "FCM rejected the message: \(error.message)", retryable: false, retryAfterSeconds: nil)
        }
        if error.status == .notFound { return .dead(reason: "UNREGISTERED") }
        if error.status == .resourceExhausted {
            return .failed(reason: error.description, retryable: true, retryAfterSeconds: max(60, error.retryAfterSeconds ?? 60))
        }
        let retryable = error.httpStatus >= 500 || error.status == .unavailable || error.status == .internal
        return .failed(reason: error.description, retryable: retryable, retryAfterSeconds: error.retryAfterSeconds)
    }
}

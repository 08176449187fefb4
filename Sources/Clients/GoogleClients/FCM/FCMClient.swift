import FirestoreModel
import HeraldHTTPClient
import NIOCore
import NIOHTTP1
import WireFormats

/// What became of one message to one device.
public enum SendResult: Sendable, Equatable {
    /// Accepted; `name` is FCM's message id (`projects/P/messages/ID`).
    case sent(name: String)
    /// FCM's own error body says the token will never work again (UNREGISTERED, or INVALID_ARGUMENT
    /// naming the registration token): remove it.
    case dead(reason: String)
    /// Not sent. `retryable` failures should hand the event back to the trigger; the others are
    /// payload or configuration bugs, reported loudly and not retried.
    case failed(reason: String, retryable: Bool, retryAfterSeconds: Int?)
    /// Sent, but FCM had not answered when the caller's deadline came: it may well have been delivered,
    /// so it is not sent again (a duplicate notification is the worse outcome for a message this late).
    case unanswered(reason: String)
    /// Not sent, and not to be: the token is of a service this deployment has no credentials for. The
    /// token is kept (it works once the service is configured) and the push is not retried.
    case skipped(reason: String)

    public var isSent: Bool { if case .sent = self { true } else { false } }

    /// Whether a failure's reason is a push service refusing this deployment's credentials (FCM's,
    /// Expo's access token or the keys uploaded to Expo, APNs's provider token): worth an ERROR, since
    /// every push of that service waits on it.
    public static func isCredentialsRefusal(_ reason: String) -> Bool {
        reason.hasPrefix(FCMClient.credentialsRefused) || reason.hasPrefix(credentialsRefusedElsewhere)
    }

    /// How the reason of a push refused for another service's credentials begins.
    public static let credentialsRefusedElsewhere = "the push service refused the credentials"
}

/// FCM HTTP v1: `POST /v1/projects/{project}/messages:send`, one message per request, many in flight
/// over HTTP/2. The transport spreads them over connections so none carries more than its
/// `streamsPerConnection` at once (FCM allows 100 concurrent streams per connection).
public struct FCMClient: Sendable {
    public static let productionEndpoint = "https://fcm.googleapis.com"

    public let project: String
    let endpoint: String
    let http: GoogleHTTP
    public let maximumInFlight: Int
    public var retry: RetryPolicy

    /// - httpClient: the transport (the caller shuts it down).
    /// - requestTimeout: how long a send may take when the caller gives no deadline. A send that is slow
    ///   to answer may still have been delivered, so callers that record pushes give a later deadline.
    public init(
        project: String, endpoint: String = productionEndpoint, credentials: any AccessTokenProvider,
        httpClient: HTTPTransport, maximumInFlight: Int = 256, retry: RetryPolicy = RetryPolicy(),
        requestTimeout: Duration = .seconds(20), observer: RequestObserver? = nil
    ) {
        self.project = project
        self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        self.http = GoogleHTTP(
            httpClient: httpClient, credentials: credentials, requestTimeout: requestTimeout, observer: observer,
            breaker: CircuitBreaker(name: "FCM"))
        self.maximumInFlight = max(1, maximumInFlight)
        self.retry = retry
    }

    /// When sends may start, and when every send must be over.
    public struct Deadlines: Sendable {
        /// No send (or retry of one) starts after this: the message stays unsent, for a later attempt.
        public var lastStart: ContinuousClock.Instant
        /// Every request is over by this, answered or not.
        public var finish: ContinuousClock.Instant
        public init(lastStart: ContinuousClock.Instant, finish: ContinuousClock.Instant) {
            self.lastStart = lastStart
            self.finish = finish
        }
    }

    var sendURL: String { "\(endpoint)/v1/projects/\(project)/messages:send" }

    /// Sends one message. `message` is FCM's `message` object including `token`.
    public func send(_ message: JSONValue, validateOnly: Bool = false, deadlines: Deadlines? = nil) async -> SendResult {
        await send(text: message.serialized(), validateOnly: validateOnly, deadlines: deadlines)
    }

    /// Sends one message given as the JSON text of FCM's `message` object, `token` included (written
    /// straight from a typed message, without a tree of values).
    public func send(text message: String, validateOnly: Bool = false, deadlines: Deadlines? = nil) async -> SendResult {
        let request = #"{"message":"# + message + (validateOnly ? #","validate_only":true}"# : "}")
        if let deadlines, ContinuousClock.now >= deadlines.lastStart {
            return .failed(reason: "not sent: the send phase's deadline passed first", retryable: true, retryAfterSeconds: nil)
        }
        do {
            // With deadlines, an attempt may take until the finish: a late answer may still be a delivery.
            let bytes = try await http.call(
                .POST, sendURL, text: request, retry: retry, isRetryable: Self.isRetryable, deadline: deadlines?.finish,
                retryUntil: deadlines?.lastStart, attemptTimeout: deadlines.map { $0.finish - .now })
            let name = (try? JSONValue(parsing: bytes))?["name"]?.stringValue ?? ""
            return .sent(name: name)
        } catch let error as GoogleAPIError {
            return Self.classify(error)
        } catch let error as AuthError {
            if case .refused = error { return .failed(reason: error.description, retryable: false, retryAfterSeconds: nil) }
            return .failed(reason: error.description, retryable: true, retryAfterSeconds: nil)
        } catch let error as TransportError {
            // With deadlines, a timeout is the finish reached with the request out: no attempt ends sooner.
            if deadlines != nil, error.timedOut { return .unanswered(reason: error.description) }
            return .failed(reason: error.description, retryable: true, retryAfterSeconds: error.retryAfterSeconds)
        } catch {
            return .failed(reason: "\(error)", retryable: true, retryAfterSeconds: nil)
        }
    }

    /// Sends every message with at most `maximumInFlight` in flight; results in the same order.
    public func sendAll(_ messages: [JSONValue], validateOnly: Bool = false, deadlines: Deadlines? = nil) async -> [SendResult] {
        await sendAll(texts: messages.map { $0.serialized() }, validateOnly: validateOnly, deadlines: deadlines)
    }

    /// `sendAll` for messages given as the JSON text of FCM's `message` objects.
    public func sendAll(texts messages: [String], validateOnly: Bool = false, deadlines: Deadlines? = nil) async -> [SendResult] {
        await boundedFanOut(messages.count, maximumInFlight: maximumInFlight) { index in
            await send(text: messages[index], validateOnly: validateOnly, deadlines: deadlines)
        }
    }

    /// A send is retried here unless throttled: QUOTA_EXCEEDED wants a minute at least, and the event
    /// goes back to the trigger instead. One whose outcome is unknown is sent again, as FCM advises.
    static func isRetryable(_ error: any Error) -> Bool { [.notSent, .unavailable, .outcomeUnknown].contains(FailureKind(error)) }

    /// How the reason of a push refused for the credentials begins (retried, and worth an ERROR).
    public static let credentialsRefused = "FCM refused the credentials"

    /// FCM's answer, as what to do about the token. A token is dead only when FCM's own error body says
    /// so: a 404 from a wrong `FCM_ENDPOINT` or a proxy's page must not remove every token, and
    /// SENDER_ID_MISMATCH (the token belongs to another Firebase project) is, for most tokens at once,
    /// the wrong project's credentials.
    static func classify(_ error: GoogleAPIError) -> SendResult {
        switch error.fcmErrorCode ?? "" {
        case "UNREGISTERED":
            return .dead(reason: "UNREGISTERED")
        case "SENDER_ID_MISMATCH":
            return .failed(
                reason:
                    "SENDER_ID_MISMATCH: the token belongs to another Firebase project (if every token says so, the credentials are the wrong project's); the token is kept",
                retryable: false, retryAfterSeconds: nil)
        case "QUOTA_EXCEEDED":
            return .failed(reason: error.description, retryable: true, retryAfterSeconds: max(60, error.retryAfterSeconds ?? 60))
        case "THIRD_PARTY_AUTH_ERROR":
            return .failed(reason: "APNs or web push credentials are misconfigured: \(error.message)", retryable: false, retryAfterSeconds: nil)
        default:
            break
        }
        guard error.hasGoogleErrorBody else {
            // Not FCM speaking: a wrong endpoint, a proxy or a load balancer. Retried, so nothing is lost once it is fixed.
            return .failed(
                reason: "FCM's endpoint answered HTTP \(error.httpStatus) without FCM's error body: check FCM_ENDPOINT and any proxy",
                retryable: true, retryAfterSeconds: error.retryAfterSeconds)
        }
        if error.fcmErrorCode == nil, error.status == .permissionDenied || error.status == .unauthenticated {
            // The credentials, not the token (whose refusals FCM names with a code): the service account
            // lacks FCM's role, the project has the API turned off, or the key is not valid. An IAM change
            // away from working, as for Firestore: retried, so no push is lost once it is fixed.
            let fix = error.credentialsFix(api: "fcm.googleapis.com", role: "roles/firebasecloudmessaging.admin")
            return .failed(reason: "\(Self.credentialsRefused) (\(error.description)): \(fix)", retryable: true, retryAfterSeconds: error.retryAfterSeconds)
        }
        if error.status == .invalidArgument {
            // Dead only when FCM says the token itself is invalid; otherwise the payload is wrong.
            let text = error.message.lowercased()
            if error.fcmErrorCode == "INVALID_ARGUMENT" || error.fcmErrorCode == nil,
                text.containsBytes(of: "registration token") && (text.containsBytes(of: "not a valid") || text.containsBytes(of: "invalid"))
            {
                return .dead(reason: "INVALID_ARGUMENT: invalid registration token")
            }
            return .failed(reason: "FCM rejected the message: \(error.message)", retryable: false, retryAfterSeconds: nil)
        }
        if error.status == .resourceExhausted {
            return .failed(reason: error.description, retryable: true, retryAfterSeconds: max(60, error.retryAfterSeconds ?? 60))
        }
        if error.status == .notFound {
            return .failed(
                reason: "FCM answered NOT_FOUND without naming the token (\(error.message)): check the project id and FCM_ENDPOINT",
                retryable: true, retryAfterSeconds: error.retryAfterSeconds)
        }
        let retryable = error.httpStatus >= 500 || error.status == .unavailable || error.status == .internal
        return .failed(reason: error.description, retryable: retryable, retryAfterSeconds: error.retryAfterSeconds)
    }
}

import GoogleClients
import HeraldCore
import HeraldHTTPClient
import NIOCore
import NIOHTTP1
import PushTokens
import Telemetry
import Tracing
import WireFormats

/// Apple's APNs over HTTP/2 with token-based authentication, for raw APNs device tokens: `POST
/// {endpoint}/3/device/<token>` with the provider token, `apns-topic` (the app's bundle id) and the
/// notification's own headers. Answers as what to do about the token: 410 `Unregistered` and 400
/// `BadDeviceToken` dead; 403 provider-token errors renew the token once, else the credentials alert;
/// 429 and 5xx retried with backoff while the caller's deadlines allow; a request still out at the
/// finish is unanswered.
public struct APNsClient: Sendable {
    public static let productionEndpoint = "https://api.push.apple.com"
    public static let sandboxEndpoint = "https://api.sandbox.push.apple.com"

    let endpoint: String
    /// The app's bundle id (`apns-topic`).
    public let topic: String
    let providerToken: APNsProviderToken
    let http: HTTPTransport
    let retry: RetryPolicy
    let requestTimeout: Duration
    /// How long APNs keeps trying to deliver to a device that is off (`apns-expiration`).
    let lifetime: Int64
    let maximumInFlight: Int
    let observer: RequestObserver?
    let breaker = CircuitBreaker(name: "APNs")

    public init(
        endpoint: String = productionEndpoint, topic: String, providerToken: APNsProviderToken, httpClient: HTTPTransport,
        retry: RetryPolicy = RetryPolicy(), requestTimeout: Duration = .seconds(20), lifetime: Int64 = 86_400, maximumInFlight: Int = 100,
        observer: RequestObserver? = nil
    ) {
        self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        self.topic = topic
        self.providerToken = providerToken
        self.http = httpClient
        self.retry = retry
        self.requestTimeout = requestTimeout
        self.lifetime = lifetime
        self.maximumInFlight = max(1, maximumInFlight)
        self.observer = observer
    }

    /// Sends each notification to its device, at most `maximumInFlight` at once; results in the same order.
    public func sendAll(_ notifications: [(token: String, notification: APNsNotification)], deadlines: FCMClient.Deadlines?) async -> [SendResult] {
        await boundedFanOut(notifications.count, maximumInFlight: maximumInFlight) { index in
            await send(notifications[index].notification, to: notifications[index].token, deadlines: deadlines)
        }
    }

    /// Sends one notification, retrying what may be retried.
    public func send(_ notification: APNsNotification, to token: String, deadlines: FCMClient.Deadlines?) async -> SendResult {
        // The token goes into the path: only hex, as APNs issues it.
        guard PushToken.classify(token) == .token(.apns) else { return .dead(reason: "BadDeviceToken: not an APNs device token") }
        let started = ContinuousClock.now
        var attempt = 1
        var renewed = false
        while true {
            if let deadlines, ContinuousClock.now >= deadlines.lastStart {
                return .failed(reason: "not sent: the send phase's deadline passed first", retryable: true, retryAfterSeconds: nil)
            }
            let result = await attemptSend(notification, to: token, deadlines: deadlines, renewing: &renewed)
            guard case .failed(let reason, true, let after) = result, !SendResult.isCredentialsRefusal(reason) || reason.hasPrefix(Self.renewedPrefix)
            else { return result }
            let delay = retry.delay(afterAttempt: attempt, retryAfterSeconds: after)
            let resumes = ContinuousClock.now + delay
            guard attempt < retry.maximumAttempts, resumes - started <= retry.totalBudget, deadlines.map({ resumes + .milliseconds(50) < $0.lastStart }) ?? true
            else { return result }
            if !reason.hasPrefix(Self.renewedPrefix) { try? await Task.sleep(for: delay) }
            attempt += 1
        }
    }

    static let renewedPrefix = "\(SendResult.credentialsRefusedElsewhere): APNs expired the provider token; sent again with a new one"

    func attemptSend(_ notification: APNsNotification, to token: String, deadlines: FCMClient.Deadlines?, renewing renewed: inout Bool) async -> SendResult {
        do {
            try breaker.admit()
        } catch {
            return .failed(reason: error.description, retryable: true, retryAfterSeconds: error.retryAfterSeconds)
        }
        var outcome = CircuitBreaker.Outcome.neutral
        defer { breaker.record(outcome) }
        let bearer: String
        do { bearer = try providerToken.token() } catch {
            return .failed(reason: "\(SendResult.credentialsRefusedElsewhere): the APNs key could not sign: \(error)", retryable: true, retryAfterSeconds: nil)
        }
        let (span, traceparent) = OutboundTrace.call("POST /3/device")
        defer { span?.end() }
        var request = HTTPRequest(method: .POST, url: "\(endpoint)/3/device/\(token)")
        request.headers.add(name: "authorization", value: "bearer \(bearer)")
        if let traceparent { request.headers.add(name: "traceparent", value: traceparent) }
        request.headers.add(name: "apns-topic", value: topic)
        request.headers.add(name: "apns-push-type", value: notification.pushType)
        request.headers.add(name: "apns-priority", value: String(notification.priority))
        request.headers.add(name: "apns-expiration", value: String(providerToken.now() + lifetime))
        if let collapseID = notification.collapseID { request.headers.add(name: "apns-collapse-id", value: collapseID) }
        request.headers.add(name: "content-type", value: "application/json")
        request.body = ByteBuffer(string: notification.payload)
        let timeout = deadlines.map { max(.milliseconds(1), $0.finish - .now) } ?? requestTimeout
        let started = ContinuousClock.now
        let response: HTTPResponse
        do {
            response = try await http.execute(request, timeout: timeout, maximumBodySize: 64 << 10)
        } catch {
            outcome = Task.isCancelled ? .neutral : .unreachable
            observer?(RequestRecord(method: .POST, url: "\(endpoint)/3/device/…", status: nil, duration: .now - started))
            let reason = "APNs did not answer: \(error)"
            if deadlines != nil, (error as? HTTPTransportError)?.timedOut == true { return .unanswered(reason: reason) }
            return .failed(reason: reason, retryable: true, retryAfterSeconds: nil)
        }
        observer?(RequestRecord(method: .POST, url: "\(endpoint)/3/device/…", status: Int(response.status.code), duration: .now - started))
        outcome = (502...504).contains(response.status.code) ? .unreachable : .answered
        let status = Int(response.status.code)
        if status == 200 { return .sent(name: response.headers.first(name: "apns-id") ?? "") }
        let reason = (try? JSONValue(parsing: Array(buffer: response.body)))?["reason"]?.stringValue.map { String($0.prefix(100)) } ?? ""
        let after = response.headers.first(name: "retry-after").flatMap { Int($0.trimmingWhitespace) }
        return classify(status: status, reason: reason, retryAfter: after, refused: bearer, renewed: &renewed)
    }

    /// APNs's answer (its status and `reason`), as what to do about the token.
    func classify(status: Int, reason: String, retryAfter: Int?, refused bearer: String, renewed: inout Bool) -> SendResult {
        switch (status, reason) {
        case (410, _), (400, "BadDeviceToken"):
            return .dead(reason: reason.isEmpty ? "Unregistered" : reason)
        case (403, "ExpiredProviderToken"), (403, "InvalidProviderToken"):
            if !renewed, (try? providerToken.renew(after: bearer)) != nil {
                renewed = true
                return .failed(reason: Self.renewedPrefix, retryable: true, retryAfterSeconds: nil)
            }
            return .failed(
                reason:
                    "\(SendResult.credentialsRefusedElsewhere): APNs answered \(reason): check HERALD_APNS_KEY_ID, HERALD_APNS_TEAM_ID and the key, and the machine's clock",
                retryable: true, retryAfterSeconds: nil)
        case (403, _), (400, "TopicDisallowed"), (400, "BadTopic"), (429, "TooManyProviderTokenUpdates"):
            return .failed(
                reason:
                    "\(SendResult.credentialsRefusedElsewhere): APNs answered HTTP \(status) \(reason): check the key's team, HERALD_APNS_TOPIC (the bundle id) and the environment (sandbox or production)",
                retryable: true, retryAfterSeconds: retryAfter)
        case (400, "DeviceTokenNotForTopic"):
            return .failed(reason: "APNs: DeviceTokenNotForTopic: the token is another app's (the token is kept)", retryable: false, retryAfterSeconds: nil)
        case (429, _), (500...599, _):
            return .failed(reason: "APNs answered HTTP \(status) \(reason)", retryable: true, retryAfterSeconds: retryAfter)
        default:
            // PayloadTooLarge, BadCollapseId, BadExpirationDate, …: the request is wrong, and would be again.
            return .failed(reason: "APNs refused the notification: HTTP \(status) \(reason)", retryable: false, retryAfterSeconds: nil)
        }
    }
}

import GoogleClients
import HeraldHTTPClient
import NIOCore
import NIOHTTP1
import Telemetry
import Tracing
import WireFormats

/// Expo's push service (`POST {endpoint}/--/api/v2/push/send`), for Expo push tokens: at most 100
/// notifications a request and 6 requests at once, as Expo asks; one project's tokens a request (a
/// request Expo refuses for mixing projects is sent again split as Expo's answer groups them); the
/// access token, when the project requires one, as `Authorization: Bearer` (never logged). Each
/// ticket becomes a `SendResult`: `ok` is sent (its id kept for the receipt), `DeviceNotRegistered`
/// dead, `MessageTooBig` failed for good; 429, 5xx and `MessageRateExceeded` are retried with backoff
/// while the caller's deadlines allow, and a request still out at the finish is unanswered.
public struct ExpoPushClient: Sendable {
    public static let productionEndpoint = "https://exp.host"
    public static let maximumBatch = 100
    public static let maximumRequestsAtOnce = 6
    /// Bodies above this are sent gzip-compressed (`content-encoding: gzip`), as Expo's SDKs do.
    public static let compressionThreshold = 1024
    /// Receipts asked for in one request, at most (Expo's limit).
    public static let maximumReceiptsPerRequest = 1000

    let endpoint: String
    let accessToken: String?
    let http: HTTPTransport
    let retry: RetryPolicy
    let requestTimeout: Duration
    let observer: RequestObserver?
    let breaker = CircuitBreaker(name: "Expo's push service")

    /// - accessToken: the project's push security token, when "enhanced security" is on; a secret.
    public init(
        endpoint: String = productionEndpoint, accessToken: String?, httpClient: HTTPTransport, retry: RetryPolicy = RetryPolicy(),
        requestTimeout: Duration = .seconds(20), observer: RequestObserver? = nil
    ) {
        self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        self.accessToken = accessToken
        self.http = httpClient
        self.retry = retry
        self.requestTimeout = requestTimeout
        self.observer = observer
    }

    /// One notification: its token and the JSON text of Expo's message object, `to` included.
    public struct Message: Sendable {
        public var token: String
        public var text: String
        public init(token: String, text: String) {
            self.token = token
            self.text = text
        }
    }

    /// Sends every message in batches of at most 100, 6 batches at once; results in the same order.
    public func sendAll(_ messages: [Message], deadlines: FCMClient.Deadlines?) async -> [SendResult] {
        let batches = stride(from: 0, to: messages.count, by: Self.maximumBatch).map { Array(messages[$0..<min($0 + Self.maximumBatch, messages.count)]) }
        // Each batch answers one result per notification, in order.
        return await boundedFanOut(batches.count, maximumInFlight: Self.maximumRequestsAtOnce) { index in
            await send(batches[index], deadlines: deadlines)
        }.flatMap { $0 }
    }

    /// One request of at most 100 notifications, retried while that is allowed.
    func send(_ batch: [Message], deadlines: FCMClient.Deadlines?) async -> [SendResult] {
        let started = ContinuousClock.now
        var attempt = 1
        while true {
            if let deadlines, ContinuousClock.now >= deadlines.lastStart {
                return batch.map { _ in .failed(reason: "not sent: the send phase's deadline passed first", retryable: true, retryAfterSeconds: nil) }
            }
            let outcome = await attemptSend(batch, deadlines: deadlines)
            switch outcome {
            case .results(let results):
                return results
            case .split(let groups):
                // Expo refused the request for mixing projects: each project's tokens in a request of its own.
                var results = [SendResult?](repeating: nil, count: batch.count)
                for indices in groups {
                    let part = await send(indices.map { batch[$0] }, deadlines: deadlines)
                    for (index, result) in zip(indices, part) { results[index] = result }
                }
                return results.map { $0 ?? .failed(reason: "Expo named no project for this token", retryable: false, retryAfterSeconds: nil) }
            case .retry(let reason, let after):
                let delay = retry.delay(afterAttempt: attempt, retryAfterSeconds: after)
                let resumes = ContinuousClock.now + delay
                let allowed =
                    attempt < retry.maximumAttempts && resumes - started <= retry.totalBudget
                    && (deadlines.map { resumes + .milliseconds(50) < $0.lastStart } ?? true)
                guard allowed else { return batch.map { _ in .failed(reason: reason, retryable: true, retryAfterSeconds: after) } }
                try? await Task.sleep(for: delay)
                attempt += 1
            }
        }
    }

    enum Attempt {
        case results([SendResult])
        case retry(String, after: Int?)
        /// Indices of the batch, one group per project.
        case split([[Int]])
    }

    func attemptSend(_ batch: [Message], deadlines: FCMClient.Deadlines?) async -> Attempt {
        do {
            try breaker.admit()
        } catch {
            return .retry(error.description, after: error.retryAfterSeconds)
        }
        var outcome = CircuitBreaker.Outcome.neutral
        defer { breaker.record(outcome) }
        let body = "[" + batch.map(\.text).joined(separator: ",") + "]"
        let (span, traceparent) = OutboundTrace.call("POST push/send")
        defer { span?.end() }
        var request = HTTPRequest(method: .POST, url: "\(endpoint)/--/api/v2/push/send")
        request.headers.add(name: "accept", value: "application/json")
        request.headers.add(name: "content-type", value: "application/json")
        request.headers.add(name: "user-agent", value: "herald")
        if let traceparent { request.headers.add(name: "traceparent", value: traceparent) }
        if let accessToken { request.headers.add(name: "authorization", value: "Bearer \(accessToken)") }
        if body.utf8.count > Self.compressionThreshold {
            request.headers.add(name: "content-encoding", value: "gzip")
            request.body = ByteBuffer(bytes: Gzip.compress(Array(body.utf8)))
        } else {
            request.body = ByteBuffer(string: body)
        }
        let timeout = deadlines.map { max(.milliseconds(1), $0.finish - .now) } ?? requestTimeout
        let started = ContinuousClock.now
        let response: HTTPResponse
        do {
            response = try await http.execute(request, timeout: timeout, maximumBodySize: 4 << 20)
        } catch {
            outcome = Task.isCancelled ? .neutral : .unreachable
            observer?(RequestRecord(method: .POST, url: request.url, status: nil, duration: .now - started))
            let reason = "Expo's push service did not answer: \(error)"
            // With deadlines, a timeout is the finish reached with the request out: it may have been delivered.
            if deadlines != nil, (error as? HTTPTransportError)?.timedOut == true { return .results(batch.map { _ in .unanswered(reason: reason) }) }
            return .retry(reason, after: nil)
        }
        observer?(RequestRecord(method: .POST, url: request.url, status: Int(response.status.code), duration: .now - started))
        outcome = (502...504).contains(response.status.code) ? .unreachable : .answered
        let json = try? JSONValue(parsing: Array(buffer: response.body))
        let after = response.headers.first(name: "retry-after").flatMap { Int($0.trimmingWhitespace) }
        switch response.status.code {
        case 200..<300:
            guard let tickets = json?["data"]?.arrayValue, tickets.count == batch.count else {
                return .retry("Expo answered HTTP \(response.status.code) without a ticket for each notification", after: after)
            }
            return .results(tickets.map(Self.result(of:)))
        case 429:
            return .retry("Expo's push service is rate limiting this project (HTTP 429)", after: after)
        case 500...:
            return .retry("Expo's push service answered HTTP \(response.status.code)", after: after)
        default:
            let error = json?["errors"]?.arrayValue?.first
            let code = error?["code"]?.stringValue ?? ""
            if code == "PUSH_TOO_MANY_EXPERIENCE_IDS", let groups = Self.projectGroups(error?["details"], batch: batch), groups.count > 1 {
                return .split(groups)
            }
            let message = error?["message"]?.stringValue.map { String($0.prefix(300)) } ?? "no message"
            if response.status.code == 401 || response.status.code == 403 {
                // The access token: missing where the project requires one, or not valid. Retried, so no push is lost once it is fixed.
                let reason =
                    "\(SendResult.credentialsRefusedElsewhere): Expo answered HTTP \(response.status.code) \(code) (\(message)); set HERALD_EXPO_ACCESS_TOKEN to the project's push access token"
                return .results(batch.map { _ in .failed(reason: reason, retryable: true, retryAfterSeconds: after) })
            }
            let reason = "Expo refused the request: HTTP \(response.status.code) \(code) (\(message))"
            return .results(batch.map { _ in .failed(reason: reason, retryable: false, retryAfterSeconds: nil) })
        }
    }

    /// A ticket of Expo's answer, as what to do about its token.
    static func result(of ticket: JSONValue) -> SendResult {
        if ticket["status"]?.stringValue == "ok" { return .sent(name: ticket["id"]?.stringValue ?? "") }
        let error = ticket["details"]?["error"]?.stringValue ?? ""
        let message = ticket["message"]?.stringValue.map { String($0.prefix(300)) } ?? ""
        return result(error: error, message: message)
    }

    /// An error Expo reports in a ticket or a receipt.
    static func result(error: String, message: String) -> SendResult {
        switch error {
        case "DeviceNotRegistered": return .dead(reason: "DeviceNotRegistered")
        case "MessageTooBig":
            // A bug of Herald's (its messages are fitted to 4,096 bytes): logged, not retried.
            return .failed(reason: "Expo: MessageTooBig (\(message)); the message is over Expo's 4,096 bytes", retryable: false, retryAfterSeconds: nil)
        case "MessageRateExceeded": return .failed(reason: "Expo: MessageRateExceeded for this device", retryable: true, retryAfterSeconds: 2)
        case "InvalidCredentials", "MismatchSenderId":
            return .failed(
                reason:
                    "\(SendResult.credentialsRefusedElsewhere): Expo \(error): the FCM or APNs credentials uploaded to Expo for this project are wrong (\(message))",
                retryable: true, retryAfterSeconds: nil)
        default:
            return .failed(reason: "Expo: \(error.isEmpty ? "an error" : error) (\(message))", retryable: true, retryAfterSeconds: nil)
        }
    }

    /// For `PUSH_TOO_MANY_EXPERIENCE_IDS`: the batch's indices grouped by the project Expo names for
    /// each token (`details: {"@owner/project": ["ExponentPushToken[…]", …]}`); tokens it names in no
    /// group form one more.
    static func projectGroups(_ details: JSONValue?, batch: [Message]) -> [[Int]]? {
        guard let projects = details?.objectValue, !projects.isEmpty else { return nil }
        var projectOf: [String: String] = [:]
        for (project, tokens) in projects {
            for token in tokens.arrayValue ?? [] { if let token = token.stringValue { projectOf[token] = project } }
        }
        var groups: [String: [Int]] = [:]
        for (index, message) in batch.enumerated() { groups[projectOf[message.token] ?? "", default: []].append(index) }
        return groups.keys.sorted().map { groups[$0]! }
    }

    /// What became of sent notifications, by ticket id (`POST {endpoint}/--/api/v2/push/getReceipts`,
    /// at most 1,000 ids a request). Ids Expo has no receipt for (not ready yet, or forgotten after a
    /// day) are not in the answer.
    public func receipts(_ ids: [String], timeout: Duration = .seconds(20)) async throws -> [String: SendResult] {
        var found: [String: SendResult] = [:]
        for start in stride(from: 0, to: ids.count, by: Self.maximumReceiptsPerRequest) {
            let chunk = ids[start..<min(start + Self.maximumReceiptsPerRequest, ids.count)]
            var request = HTTPRequest(method: .POST, url: "\(endpoint)/--/api/v2/push/getReceipts")
            request.headers.add(name: "accept", value: "application/json")
            request.headers.add(name: "content-type", value: "application/json")
            if let accessToken { request.headers.add(name: "authorization", value: "Bearer \(accessToken)") }
            request.body = ByteBuffer(string: JSONValue.object(["ids": .array(chunk.map { .string($0) })]).serialized())
            let started = ContinuousClock.now
            let response: HTTPResponse
            do {
                response = try await http.execute(request, timeout: timeout, maximumBodySize: 8 << 20)
            } catch {
                observer?(RequestRecord(method: .POST, url: request.url, status: nil, duration: .now - started))
                throw TransportError("Expo's receipts did not come: \(error)")
            }
            observer?(RequestRecord(method: .POST, url: request.url, status: Int(response.status.code), duration: .now - started))
            guard (200..<300).contains(response.status.code), let receipts = (try? JSONValue(parsing: Array(buffer: response.body)))?["data"]?.objectValue
            else {
                throw TransportError(
                    "Expo answered the receipts with HTTP \(response.status.code)",
                    retryAfterSeconds: response.headers.first(name: "retry-after").flatMap { Int($0.trimmingWhitespace) })
            }
            for id in chunk {
                guard let receipt = receipts[id] else { continue }
                found[id] = receipt["status"]?.stringValue == "ok" ? .sent(name: id) : Self.result(of: receipt)
            }
        }
        return found
    }
}

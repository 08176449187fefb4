import AsyncHTTPClient
import Foundation
import FirestoreModel
import Logging
import NIOCore
import NIOHTTP1

/// How long and how often to retry a request that failed transiently.
public struct RetryPolicy: Sendable {
    public var maximumAttempts: Int
    public var initialDelay: Duration
    public var maximumDelay: Duration
    /// No retry starts after this much time has passed since the first attempt.
    public var totalBudget: Duration

    public init(maximumAttempts: Int = 5, initialDelay: Duration = .milliseconds(100), maximumDelay: Duration = .seconds(5), totalBudget: Duration = .seconds(20)) {
        self.maximumAttempts = maximumAttempts
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.totalBudget = totalBudget
    }

    public static let none = RetryPolicy(maximumAttempts: 1)

    /// Full jitter: a random delay up to the exponential bound, but never less than Retry-After.
    func delay(afterAttempt attempt: Int, retryAfterSeconds: Int?) -> Duration {
        let cap = min(maximumDelay, initialDelay * (1 << min(attempt - 1, 20)))
        let jittered = cap * Double.random(in: 0.5...1.0)
        if let after = retryAfterSeconds { return max(jittered, .seconds(after)) }
        return jittered
    }
}

/// Told of every HTTP request a client sends (method and URL), e.g. to count requests per event.
public typealias RequestObserver = @Sendable (HTTPMethod, String) -> Void

/// One JSON request to a Google API with auth, Google's error body and retries, shared by the clients.
struct GoogleHTTP: Sendable {
    let httpClient: HTTPClient
    let credentials: any AccessTokenProvider
    let requestTimeout: TimeAmount
    let observer: RequestObserver?
    let userAgent: String

    init(httpClient: HTTPClient, credentials: any AccessTokenProvider, requestTimeout: TimeAmount = .seconds(30), observer: RequestObserver? = nil,
         userAgent: String = "herald") {
        self.httpClient = httpClient
        self.credentials = credentials
        self.requestTimeout = requestTimeout
        self.observer = observer
        self.userAgent = userAgent
    }

    /// Sends once; on 401 refreshes the token and sends once more. Returns the 2xx body or throws
    /// `GoogleAPIError` / `TransportError` / `AuthError`.
    func send(_ method: HTTPMethod, _ url: String, body: JSONValue?) async throws -> [UInt8] {
        var lastToken: String?
        for attempt in 1...2 {
            let token = try await credentials.token()
            lastToken = token
            var request = HTTPClientRequest(url: url)
            request.method = method
            request.headers.add(name: "authorization", value: "Bearer \(token)")
            request.headers.add(name: "user-agent", value: userAgent)
            if let body {
                request.headers.add(name: "content-type", value: "application/json")
                request.body = .bytes(ByteBuffer(string: body.serialized()))
            }
            observer?(method, url)
            let response: HTTPClientResponse
            let bytes: ByteBuffer
            do {
                response = try await httpClient.execute(request, timeout: requestTimeout)
                bytes = try await response.body.collect(upTo: 64 << 20)
            } catch {
                throw TransportError("\(method) \(Self.redacted(url)): \(error)")
            }
            if (200..<300).contains(response.status.code) { return Array(buffer: bytes) }
            if response.status.code == 401, attempt == 1 {
                await credentials.invalidate(token)
                continue
            }
            throw GoogleAPIError(httpStatus: Int(response.status.code), body: Array(buffer: bytes), retryAfter: response.headers.first(name: "retry-after"))
        }
        _ = lastToken
        throw GoogleAPIError(httpStatus: 401, status: .unauthenticated, message: "refused after a token refresh")
    }

    /// Retries `operation` while `isRetryable` says so, within the policy's attempts and time budget.
    static func withRetries<T: Sendable>(
        _ policy: RetryPolicy, isRetryable: (any Error) -> Bool, _ operation: () async throws -> T
    ) async throws -> T {
        let clock = ContinuousClock()
        let start = clock.now
        var attempt = 1
        while true {
            do {
                return try await operation()
            } catch {
                let retryAfter = (error as? GoogleAPIError)?.retryAfterSeconds
                let delay = policy.delay(afterAttempt: attempt, retryAfterSeconds: retryAfter)
                guard isRetryable(error), attempt < policy.maximumAttempts, clock.now - start + delay <= policy.totalBudget else { throw error }
                try await Task.sleep(for: delay)
                attempt += 1
            }
        }
    }

    /// URLs carry no secrets today, but keep query strings out of error messages anyway.
    static func redacted(_ url: String) -> String { String(url.split(separator: "?", maxSplits: 1).first ?? "") }
}

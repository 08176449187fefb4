import GoogleClients
import HeraldCore
import Logging
import PushClients
import PushTokens
import Synchronization

/// The push services a function sends through: each token goes to the service that issued it
/// (`PushToken.classify`), FCM's, Expo's and Apple's requests in flight at once. A token of a service
/// this deployment has no credentials for is skipped: kept where the app stored it, not retried, and
/// counted (`SkippedTokens`), so the log and `/metrics` say which setting would deliver it.
public struct PushServices: Sendable {
    public let fcm: FCMClient?
    public let expo: ExpoPushClient?
    public let apns: APNsClient?
    let skipped: SkippedTokens

    public init(fcm: FCMClient?, expo: ExpoPushClient? = nil, apns: APNsClient? = nil, logger: Logger, metrics: RuntimeMetrics? = nil) {
        self.fcm = fcm
        self.expo = expo
        self.apns = apns
        self.skipped = SkippedTokens(logger: logger, metrics: metrics)
    }

    /// Whether pushes of this kind can be sent.
    public func sends(_ kind: PushTokenKind) -> Bool {
        switch kind {
        case .fcm: fcm != nil
        case .expo: expo != nil
        case .apns: apns != nil
        }
    }

    /// Sends each push to its device's service; results in the same order.
    func send(_ pushes: [PushMessage], deadlines: FCMClient.Deadlines?) async -> [SendResult] {
        let kinds = pushes.map { PushToken.kind(of: $0.token) }
        func indices(_ kind: PushTokenKind) -> [Int] { kinds.indices.filter { kinds[$0] == kind } }
        let (fcmIndices, expoIndices, apnsIndices) = (indices(.fcm), indices(.expo), indices(.apns))
        async let fcmResults: [SendResult] = {
            guard let fcm, !fcmIndices.isEmpty else { return [] }
            return await fcm.sendAll(texts: fcmIndices.map { pushes[$0].messageText }, validateOnly: false, deadlines: deadlines)
        }()
        async let expoResults: [SendResult] = {
            guard let expo, !expoIndices.isEmpty else { return [] }
            let messages = expoIndices.map { pushes[$0] }.map {
                ExpoPushClient.Message(token: $0.token, text: $0.fcm.fittedForExpo().expoMessageText(to: $0.token))
            }
            return await expo.sendAll(messages, deadlines: deadlines)
        }()
        async let apnsResults: [SendResult] = {
            guard let apns, !apnsIndices.isEmpty else { return [] }
            return await apns.sendAll(apnsIndices.map { (pushes[$0].token, pushes[$0].fcm.apnsNotification) }, deadlines: deadlines)
        }()
        var results = [SendResult](repeating: .skipped(reason: ""), count: pushes.count)
        for (kind, kindIndices, sent) in [
            (PushTokenKind.fcm, fcmIndices, await fcmResults), (.expo, expoIndices, await expoResults), (.apns, apnsIndices, await apnsResults),
        ] {
            guard sent.count == kindIndices.count else {
                skipped.record(kind, count: kindIndices.count)
                for index in kindIndices { results[index] = .skipped(reason: SkippedTokens.remedy(kind)) }
                continue
            }
            for (index, result) in zip(kindIndices, sent) { results[index] = result }
        }
        return results
    }

    /// The daily pass's checks of doubtful tokens: FCM's with a validate-only send; Expo's and APNs's
    /// have none (Expo's are judged by their receipts, APNs's by the next send's answer), so they are
    /// left as they are.
    func validate(_ checks: [PushMessage]) async -> [SendResult] {
        let fcmIndices = checks.indices.filter { PushToken.kind(of: checks[$0].token) == .fcm }
        var results = [SendResult](repeating: .skipped(reason: "no validate-only send for this kind of token"), count: checks.count)
        guard let fcm, !fcmIndices.isEmpty else { return results }
        let sent = await fcm.sendAll(texts: fcmIndices.map { checks[$0].messageText }, validateOnly: true, deadlines: nil)
        for (index, result) in zip(fcmIndices, sent) { results[index] = result }
        return results
    }
}

/// Tokens of services this deployment cannot send to: counted at `/metrics`
/// (`herald_push_tokens_skipped_total{kind}`) and named in the log, at once the first time and then at
/// most once a minute with the count since, each kind with the settings that would deliver it.
final class SkippedTokens: Sendable {
    let logger: Logger
    let metrics: RuntimeMetrics?
    let now: @Sendable () -> ContinuousClock.Instant
    let state = Mutex<[PushTokenKind: (count: Int, lastLog: ContinuousClock.Instant?)]>([:])

    init(logger: Logger, metrics: RuntimeMetrics?, now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.logger = logger
        self.metrics = metrics
        self.now = now
    }

    /// What a deployment sets to deliver this kind of token.
    static func remedy(_ kind: PushTokenKind) -> String {
        switch kind {
        case .fcm: "no FCM client is configured"
        case .expo: "configure HERALD_EXPO_PUSH=on (and HERALD_EXPO_ACCESS_TOKEN if the Expo project requires one)"
        case .apns: "configure HERALD_APNS_KEY, HERALD_APNS_KEY_ID, HERALD_APNS_TEAM_ID and HERALD_APNS_TOPIC"
        }
    }

    func record(_ kind: PushTokenKind, count: Int) {
        guard count > 0 else { return }
        metrics?.tokensSkipped(kind: kind.rawValue, count: count)
        let time = now()
        let due: Int? = state.withLock { state in
            var entry = state[kind] ?? (0, nil)
            entry.count += count
            defer { state[kind] = entry }
            if let last = entry.lastLog, time - last < .seconds(60) { return nil }
            let total = entry.count
            entry = (0, time)
            return total
        }
        if let due {
            logger.warning("\(due) \(kind.serviceName) token\(due == 1 ? "" : "s") skipped: \(Self.remedy(kind)); the tokens are kept")
        }
    }
}

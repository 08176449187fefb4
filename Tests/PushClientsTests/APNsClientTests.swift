import Crypto
import Foundation
import GoogleClients
import HeraldCore
import HeraldHTTPClient
import HeraldTesting
import NIOSSL
import P256Signatures
import PushClients
import Testing
import WireFormats

/// APNsClient against the local cloud's APNs stand-in: HTTP/2 over TLS, provider tokens checked.
@Suite struct APNsClientTests {
    static let token = String(repeating: "0b0b1bad", count: 8)

    /// A client of the stand-in, its provider token on `clock` (Unix seconds), trusting the stand-in's authority.
    static func client(_ cloud: TestLocalCloud, topic: String? = nil, clock: Shared<Int64>, requests: Shared<[Int?]>? = nil) throws -> (
        APNsClient, HTTPTransport
    ) {
        let credentials = cloud.apnsCredentials
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(credentials.authorityFile)]
        let transport = HTTPTransport(tls: tls)
        let key = try P256.PrivateKey(pem: try String(contentsOfFile: credentials.keyFile, encoding: .utf8))
        let provider = APNsProviderToken(key: key, keyID: credentials.keyID, teamID: credentials.teamID, now: { clock.value })
        let client = APNsClient(
            endpoint: cloud.apnsURL, topic: topic ?? credentials.topic, providerToken: provider, httpClient: transport,
            retry: RetryPolicy(maximumAttempts: 4, totalBudget: .seconds(5)), observer: { record in requests?.change { $0.append(record.status) } })
        return (client, transport)
    }

    static var now: Int64 { Int64(Date().timeIntervalSince1970) }

    @Test func anAlertReachesTheDeviceWithItsHeadersAndPayload() async throws {
        try await withLocalCloud { cloud in
            let (client, transport) = try Self.client(cloud, clock: Shared<Int64>(Self.now))
            defer { Task { await transport.shutdown() } }
            let result = await client.send(PushMessageFixtures.alert.apnsNotification, to: Self.token, deadlines: nil)
            #expect(result.isSent, "\(result)")
            let records = try await cloud.pushRecords(.apns)
            let record = try #require(records.first)
            #expect(record.token == Self.token)
            #expect(record.headers["apns-topic"]?.stringValue == cloud.apnsCredentials.topic)
            #expect(record.headers["apns-push-type"]?.stringValue == "alert")
            #expect(record.headers["apns-priority"]?.stringValue == "10")
            #expect(record.headers["apns-collapse-id"]?.stringValue == "m1")
            #expect(record.message["aps"]?["alert"]?["body"]?.stringValue == "Alice: Dinner at 6pm")
            #expect(record.message["aps"]?["badge"]?.int64Value == 3)
        }
    }

    @Test func anUnregisteredDeviceIsDeadAndAnotherAppsTopicIsTheCredentials() async throws {
        try await withLocalCloud { cloud in
            try await cloud.markDead(Self.token, at: .apns)
            let (client, transport) = try Self.client(cloud, clock: Shared<Int64>(Self.now))
            defer { Task { await transport.shutdown() } }
            let dead = await client.send(PushMessageFixtures.alert.apnsNotification, to: Self.token, deadlines: nil)
            #expect(dead == .dead(reason: "Unregistered"))
            let (other, _) = try Self.client(cloud, topic: "com.example.not-this-app", clock: Shared<Int64>(Self.now))
            let refused = await other.send(PushMessageFixtures.alert.apnsNotification, to: String(repeating: "ab", count: 32), deadlines: nil)
            guard case .failed(let reason, true, _) = refused else { throw Failure("\(refused)") }
            #expect(SendResult.isCredentialsRefusal(reason) && reason.contains("TopicDisallowed"), "\(reason)")
            // A string that is no APNs token never reaches the path of a request.
            let forged = await client.send(PushMessageFixtures.alert.apnsNotification, to: "../../3/device/x", deadlines: nil)
            #expect(forged == .dead(reason: "BadDeviceToken: not an APNs device token"))
        }
    }

    /// APNs refuses a provider token over an hour old; the client makes a new one, but not within 20
    /// minutes of the last (Apple refuses updates more often): then it is the credentials or the clock.
    @Test func anExpiredProviderTokenIsRenewedOnlyWhenOldEnough() async throws {
        try await withLocalCloud { cloud in
            // A token made 62 minutes ago: APNs's hour is over.
            let clock = Shared<Int64>(Self.now - 3_720)
            let requests = Shared<[Int?]>([])
            let (client, transport) = try Self.client(cloud, clock: clock, requests: requests)
            defer { Task { await transport.shutdown() } }
            // Made at this clock's "now": too young to renew, however old APNs finds it.
            let refused = await client.send(PushMessageFixtures.alert.apnsNotification, to: Self.token, deadlines: nil)
            guard case .failed(let reason, true, _) = refused else { throw Failure("\(refused)") }
            #expect(reason.contains("ExpiredProviderToken"), "\(reason)")
            #expect(requests.value == [403])
            // 25 minutes on, the kept token is refused again and old enough to renew: a new one (37 minutes before APNs's now) goes.
            clock.change { $0 += 25 * 60 }
            let sent = await client.send(PushMessageFixtures.alert.apnsNotification, to: Self.token, deadlines: nil)
            #expect(sent.isSent, "\(sent)")
            #expect(requests.value == [403, 403, 200])
        }
    }

    @Test func aRateLimitIsWaitedOutAndALostAnswerIsUnanswered() async throws {
        try await withLocalCloud { cloud in
            cloud.injectFailures(["tooManyRequests", "unavailable"], at: .apns)
            let requests = Shared<[Int?]>([])
            let (client, transport) = try Self.client(cloud, clock: Shared<Int64>(Self.now), requests: requests)
            defer { Task { await transport.shutdown() } }
            let sent = await client.send(PushMessageFixtures.alert.apnsNotification, to: Self.token, deadlines: nil)
            #expect(sent.isSent)
            #expect(requests.value == [429, 503, 200])
            cloud.injectFailures(["lostAnswer"], at: .apns, hangFor: .seconds(5))
            let now = ContinuousClock.now
            let lost = await client.send(
                PushMessageFixtures.alert.apnsNotification, to: Self.token, deadlines: .init(lastStart: now + .milliseconds(500), finish: now + .seconds(1)))
            guard case .unanswered = lost else { throw Failure("\(lost)") }
            let recordedNow = try await cloud.pushRecords(.apns)
            #expect(recordedNow.count == 2)
        }
    }
}

enum PushMessageFixtures {
    static let alert = FCMMessage(
        token: "t", notification: .init(title: "Family", body: "Alice: Dinner at 6pm"), data: ["conversationId": "family", "messageId": "m1"],
        apns: .init(
            priority: 10, pushType: .alert, collapseID: "m1", alert: .init(title: "Family", body: "Alice: Dinner at 6pm"), badge: 3, sound: "default",
            threadID: "family"))
}

extension APNsClientTests {
    /// A connection carries a day's pushes: 300, 50 at a time, each taken once and answered at the first
    /// request. (Every stream ended in a reset, the stand-in's HTTP/2 server answered GOAWAY after 200,
    /// and the requests that followed on that connection failed.)
    @Test func aConnectionCarriesThreeHundredPushesEachTakenOnce() async throws {
        try await withLocalCloud { cloud in
            let requests = Shared<[Int?]>([])
            let (client, transport) = try Self.client(cloud, clock: Shared<Int64>(Self.now), requests: requests)
            defer { Task { await transport.shutdown() } }
            var failures: [String] = []
            for round in 0..<6 {
                let results = await client.sendAll(
                    (0..<50).map { _ in (Self.token, PushMessageFixtures.alert.apnsNotification) }, deadlines: nil)
                failures += results.filter { !$0.isSent }.map { "round \(round): \($0)" }
            }
            #expect(failures.isEmpty, "\(failures.prefix(5))")
            #expect(try await cloud.pushRecords(.apns).count == 300)
            #expect(requests.value.count == 300 && requests.value.allSatisfy { $0 == 200 }, "\(requests.value.filter { $0 != 200 }.prefix(5))")
        }
    }
}

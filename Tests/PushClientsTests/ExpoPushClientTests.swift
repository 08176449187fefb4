import GoogleClients
import HeraldHTTPClient
import HeraldTesting
import PushClients
import Testing
import WireFormats

/// ExpoPushClient against the local cloud's Expo stand-in, which checks requests as Expo does.
@Suite struct ExpoPushClientTests {
    static func messages(_ count: Int, prefix: String = "T") -> [ExpoPushClient.Message] {
        (0..<count).map { index in
            let token = "ExponentPushToken[\(prefix)\(index)]"
            return ExpoPushClient.Message(
                token: token, text: #"{"to":"\#(token)","title":"Family","body":"Alice: Dinner at 6pm","badge":1,"collapseId":"m\#(index)"}"#)
        }
    }

    /// A client of the stand-in that counts its requests.
    static func client(_ cloud: TestLocalCloud, accessToken: String? = nil, requests: Shared<[Int?]>) -> (ExpoPushClient, HTTPTransport) {
        let transport = HTTPTransport()
        let client = ExpoPushClient(
            endpoint: cloud.expoURL, accessToken: accessToken, httpClient: transport, retry: RetryPolicy(maximumAttempts: 4, totalBudget: .seconds(5)),
            observer: { record in requests.change { $0.append(record.status) } })
        return (client, transport)
    }

    @Test func twoHundredFiftyNotificationsGoInThreeRequestsOfAtMostAHundred() async throws {
        try await withLocalCloud { cloud in
            let requests = Shared<[Int?]>([])
            let (client, transport) = Self.client(cloud, requests: requests)
            defer { Task { await transport.shutdown() } }
            let results = await client.sendAll(Self.messages(250), deadlines: nil)
            #expect(results.filter { !$0.isSent }.isEmpty)
            #expect(requests.value == [200, 200, 200])
            // The bodies were over 1 KiB, so gzip-compressed: the stand-in read every notification from them.
            let recorded = try await cloud.pushRecords(.expo)
            #expect(recorded.count == 250)
            #expect(Set(recorded.map(\.token)).count == 250)
        }
    }

    @Test func aRateLimitIsWaitedOutAndEachNotificationGoesOnce() async throws {
        try await withLocalCloud { cloud in
            cloud.injectFailures(["tooManyRequests", "unavailable"], at: .expo)
            let requests = Shared<[Int?]>([])
            let (client, transport) = Self.client(cloud, requests: requests)
            defer { Task { await transport.shutdown() } }
            let results = await client.sendAll(Self.messages(5), deadlines: nil)
            #expect(results.filter { !$0.isSent }.isEmpty, "\(results)")
            #expect(requests.value == [429, 503, 200])
            let recordedNow = try await cloud.pushRecords(.expo)
            #expect(recordedNow.count == 5)
        }
    }

    @Test func anUnansweredRequestIsUnansweredAndTheNextSendCarriesTheSameCollapseId() async throws {
        try await withLocalCloud { cloud in
            cloud.injectFailures(["lostAnswer"], at: .expo, hangFor: .seconds(5))
            let requests = Shared<[Int?]>([])
            let (client, transport) = Self.client(cloud, requests: requests)
            defer { Task { await transport.shutdown() } }
            let now = ContinuousClock.now
            let first = await client.sendAll(Self.messages(1), deadlines: .init(lastStart: now + .milliseconds(500), finish: now + .seconds(1)))
            guard case .unanswered = first[0] else { throw Failure("an answer that never came was \(first[0])") }
            let again = await client.sendAll(Self.messages(1), deadlines: nil)
            #expect(again[0].isSent)
            let recorded = try await cloud.pushRecords(.expo)
            #expect(recorded.count == 2)
            #expect(Set(recorded.compactMap { $0.message["collapseId"]?.stringValue }) == ["m0"])
        }
    }

    @Test func deadTokensAreDeadInTheTicketOrInTheReceipt() async throws {
        try await withLocalCloud { cloud in
            try await cloud.markDead("ExponentPushToken[T0]", at: .expo)
            try await cloud.markDead("ExponentPushToken[T1]", at: .expo, when: "receipt")
            let requests = Shared<[Int?]>([])
            let (client, transport) = Self.client(cloud, requests: requests)
            defer { Task { await transport.shutdown() } }
            let results = await client.sendAll(Self.messages(3), deadlines: nil)
            #expect(results[0] == .dead(reason: "DeviceNotRegistered"))
            guard case .sent(let second) = results[1], case .sent(let third) = results[2] else { throw Failure("\(results)") }
            let receipts = try await client.receipts([second, third, "no-such-ticket"])
            #expect(receipts[second] == .dead(reason: "DeviceNotRegistered"))
            #expect(receipts[third]?.isSent == true)
            #expect(receipts["no-such-ticket"] == nil)
        }
    }

    @Test func aProjectThatRequiresAnAccessTokenRefusesTheCredentialsUntilItIsSent() async throws {
        try await withLocalCloud { cloud in
            cloud.requireExpoAccessToken("s3cret-push-token")
            let requests = Shared<[Int?]>([])
            let (without, transport) = Self.client(cloud, requests: requests)
            defer { Task { await transport.shutdown() } }
            let refused = await without.sendAll(Self.messages(1), deadlines: nil)
            guard case .failed(let reason, let retryable, _) = refused[0] else { throw Failure("\(refused)") }
            #expect(SendResult.isCredentialsRefusal(reason) && retryable, "\(reason)")
            #expect(reason.contains("HERALD_EXPO_ACCESS_TOKEN"))
            let with = ExpoPushClient(endpoint: cloud.expoURL, accessToken: "s3cret-push-token", httpClient: transport)
            let sent = await with.sendAll(Self.messages(1), deadlines: nil)
            #expect(sent[0].isSent)
            #expect(!reason.contains("s3cret"))
        }
    }

    @Test func tokensOfTwoProjectsAreSentInARequestEach() async throws {
        try await withLocalCloud { cloud in
            let messages = Self.messages(6)
            for message in messages.prefix(2) { cloud.assignExpoToken(message.token, toProject: "@team/other-app") }
            let requests = Shared<[Int?]>([])
            let (client, transport) = Self.client(cloud, requests: requests)
            defer { Task { await transport.shutdown() } }
            let results = await client.sendAll(messages, deadlines: nil)
            #expect(results.filter { !$0.isSent }.isEmpty)
            #expect(requests.value == [400, 200, 200])
            let recordedNow = try await cloud.pushRecords(.expo)
            #expect(recordedNow.count == 6)
        }
    }

    @Test func aMessageOverExposLimitIsRefusedForGoodNotRetried() async throws {
        try await withLocalCloud { cloud in
            let requests = Shared<[Int?]>([])
            let (client, transport) = Self.client(cloud, requests: requests)
            defer { Task { await transport.shutdown() } }
            let body = String(repeating: "x", count: 5_000)
            let message = ExpoPushClient.Message(token: "ExponentPushToken[Big]", text: #"{"to":"ExponentPushToken[Big]","body":"\#(body)"}"#)
            let results = await client.sendAll([message], deadlines: nil)
            guard case .failed(let reason, false, _) = results[0] else { throw Failure("\(results)") }
            #expect(reason.contains("MessageTooBig"))
            #expect(requests.value.count == 1)
        }
    }
}

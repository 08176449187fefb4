import AsyncHTTPClient
import ChatDemo
import ChatFunctions
import FirestoreModel
import Foundation
import GoogleClients
import HeraldTesting
import Testing
import WireFormats

/// Every token an app holds reaches its phone, on `herald dev` with every function: the family chat's
/// members hold between them an FCM token (Bob's phone), a raw APNs token (Bob's iPad) and an Expo push
/// token (Carol's phone, in Expo Go). Each device gets its push from its own service's stand-in, the
/// same text and badge; a read clears each with a silent push; a token its service calls dead is
/// removed by the next message, and only it.
@Suite(.serialized) struct PushServicesEndToEndTests {
    static let schema = Schema.presets["default"]!

    func tokens(_ db: FirestoreClient, of user: String) async throws -> [String] {
        try await db.get(try db.name("users/\(user)"))?["fcmTokens"]?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    @Test func oneMessageReachesEachDeviceThroughItsOwnServiceAndAReadClearsEach() async throws {
        let dev = try await RunningDev.start(["--seed", "demo"])
        defer { dev.kill() }
        let db = dev.app
        let world = DemoWorld(schema: Self.schema, project: "e2e")
        _ = try await db.commit([try world.message(from: "alice", in: "family", text: "Dinner at 6pm", id: "m1", at: .now())])
        try await dev.waitUntilIdle()
        let pushes = try await DevicePush.all(at: dev.base)
        let alerts = pushes.filter { !$0.isSilent }
        let byToken = Dictionary(alerts.map { ($0.token, $0) }, uniquingKeysWith: { first, _ in first })
        #expect(alerts.count == 3, "\(alerts)")
        #expect(byToken["tok-bob-phone"]?.service == .fcm)
        #expect(byToken[DemoWorld.bobsIPad]?.service == .apns)
        #expect(byToken[DemoWorld.carolsPhone]?.service == .expo)
        for push in alerts {
            #expect([push.title, push.body].compactMap { $0 }.joined(separator: ": ").contains("Dinner at 6pm"), "\(push.service)")
            #expect(push.badge == 1, "\(push.service): \(push.record)")
            #expect(push.data["messageId"] == "m1" && push.data["conversationId"] == "family", "\(push.service): \(push.data)")
        }
        // The same words on every device, whatever carried them.
        #expect(Set(alerts.map { [$0.title ?? "", $0.body ?? ""] }).count == 1, "\(alerts.map { ($0.title, $0.body) })")
        // APNs and Expo carry the message id as the collapse identifier, as FCM's alert does.
        let apns = try await HTTPClient.shared.get("\(dev.base)/herald/apns/messages").body
        #expect(apns.contains("\"apns-collapse-id\":\"m1\""), "\(apns)")
        #expect(byToken[DemoWorld.carolsPhone]?.record["message"]?["collapseId"]?.stringValue == "m1")

        // Bob reads on one device: both of his get a silent badge update; then Carol reads on hers.
        for reader in ["bob", "carol"] {
            let (parent, query) = try world.messagesQuery(in: "family")
            _ = try await db.commit(world.reads(by: reader, of: try await db.runQuery(query, parent: parent)))
            try await dev.waitUntilIdle()
        }
        let silent = try await DevicePush.all(at: dev.base).filter(\.isSilent)
        #expect(Set(silent.map(\.token)) == ["tok-bob-phone", DemoWorld.bobsIPad, DemoWorld.carolsPhone], "\(silent)")
        #expect(silent.allSatisfy { $0.badge == 0 }, "\(silent)")
        let carols = try #require(silent.first { $0.token == DemoWorld.carolsPhone })
        #expect(carols.record["message"]?["_contentAvailable"]?.boolValue == true)
        let bobsIPad = try #require(silent.first { $0.token == DemoWorld.bobsIPad })
        #expect(bobsIPad.record["headers"]?["apns-push-type"]?.stringValue == "background")
        #expect(bobsIPad.record["headers"]?["apns-priority"]?.stringValue == "5")
        #expect(try await dev.deadLetters().isEmpty)
        #expect(try await dev.stop() == 0, "\(dev.output.suffix(2000))")
    }

    @Test func aTokenItsServiceCallsDeadIsRemovedByTheNextMessageAndOnlyIt() async throws {
        let dev = try await RunningDev.start(["--seed", "demo"])
        defer { dev.kill() }
        let db = dev.app
        let world = DemoWorld(schema: Self.schema, project: "e2e")
        func post(_ path: String, _ body: JSONValue) async throws {
            let answer = try await HTTPClient.shared.post(
                "\(dev.base)/herald/\(path)", headers: ["content-type": "application/json"], body: Array(body.serialized().utf8))
            try #require(answer.status == 200, "\(path): \(answer.body)")
        }
        try await post("expo/dead-tokens", ["token": .string(DemoWorld.carolsPhone)])
        try await post("apns/dead-tokens", ["token": .string(DemoWorld.bobsIPad)])
        _ = try await db.commit([try world.message(from: "alice", in: "family", text: "Dinner at 6pm", id: "m1", at: .now())])
        try await dev.waitUntilIdle()
        #expect(try await tokens(db, of: "bob") == ["tok-bob-phone"])
        #expect(try await tokens(db, of: "carol") == [])
        #expect(try await tokens(db, of: "alice") == ["tok-alice-phone"])
        // Then FCM's: Bob's phone, alone in a direct chat.
        try await post("fcm/dead-tokens", ["token": "tok-bob-phone"])
        _ = try await db.commit([try world.message(from: "alice", in: "alice-bob", text: "Still there?", id: "m2", at: .now())])
        try await dev.waitUntilIdle()
        #expect(try await tokens(db, of: "bob") == [])
        #expect(try await tokens(db, of: "alice") == ["tok-alice-phone"])
        #expect(try await dev.stop() == 0, "\(dev.output.suffix(2000))")
    }
}

import ChatDemo
import ChatFunctions
import FirestoreEvents
import FirestoreModel
import Foundation
import GoogleClients
import HeraldCore
import HeraldHTTPClient
import HeraldRuntime
import HeraldTesting
import Logging
import PushClients
import Testing

/// Expo's receipts, read by tokenCleanup's daily pass: a device Expo took the push for and then found
/// gone is removed then, and only it; each ticket is asked for once.
@Suite struct ExpoReceiptsTests {
    let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

    @Test func aReceiptNamingTheDeviceGoneRemovesItsTokenAtTheDailyPass() async throws {
        try await withLocalCloud { cloud in
            let firestore = cloud.firestore(project: "herald-test")
            let world = DemoWorld(schema: Schema.presets["default"]!, project: "herald-test")
            _ = try await firestore.commit(try world.seed())
            try await cloud.markDead(DemoWorld.carolsPhone, at: .expo, when: "receipt")
            let transport = HTTPTransport()
            defer { Task { await transport.shutdown() } }
            let fcm = FCMClient(project: "herald-test", endpoint: cloud.baseURL, credentials: EmulatorCredentials(), httpClient: transport)
            let expo = ExpoPushClient(endpoint: cloud.expoURL, accessToken: nil, httpClient: transport)
            let gateway = ExactlyOnceExecutor(firestore: firestore, fcm: fcm, expo: expo, functionName: OnMessageCreated.name, dryRun: false, logger: logger)
            let processor = EventProcessor(function: OnMessageCreated(schema: world.schema), gateway: gateway)
            _ = try await firestore.commit([try world.message(from: "alice", in: "family", text: "Dinner at 6pm", id: "m1", at: .now())])
            let message = try #require(try await firestore.get(try world.name("conversations/family/messages/m1")))
            let request = try EventarcRequest.make(id: "e1", kind: .created, document: message, name: message.name)
            #expect(await processor.process(request, logger: logger).report?.outcome == .applied)
            // Expo took it: the token stays until the receipt says otherwise.
            #expect(try await cloud.pushRecords(.expo).map(\.token) == [DemoWorld.carolsPhone])
            #expect(try await tokens(firestore, world, of: "carol") == [DemoWorld.carolsPhone])

            let runner = SweepRunner(
                function: TokenCleanup(schema: world.schema), firestore: firestore, pushes: gateway.services, dryRun: false, logger: logger)
            // Receipts are asked for a quarter of an hour on: none yet.
            let early = try await runner.run(at: Timestamp.now().adding(.seconds(60)), logger: logger)
            #expect(early["expo receipts"].checked == 0)
            let later = try await runner.run(at: Timestamp.now().adding(.seconds(20 * 60)), logger: logger)
            #expect(later["expo receipts"].checked == 1)
            #expect(later["expo receipts"].dead == 1)
            #expect(try await tokens(firestore, world, of: "carol") == [])
            #expect(try await tokens(firestore, world, of: "bob") == ["tok-bob-phone", DemoWorld.bobsIPad])
            // Each ticket once: the entry forgot it.
            let again = try await runner.run(at: Timestamp.now().adding(.seconds(25 * 60)), logger: logger)
            #expect(again["expo receipts"].checked == 0)
        }
    }

    func tokens(_ firestore: FirestoreClient, _ world: DemoWorld, of user: String) async throws -> [String] {
        try await firestore.get(try world.name("users/\(user)"))?["fcmTokens"]?.arrayValue?.compactMap(\.stringValue) ?? []
    }
}

import ChatDemo
import ChatFunctions
import FirestoreModel
import Foundation
import GoogleClients
import HeraldHTTPClient
import HeraldTesting
import Testing
import WireFormats

/// Tokens kept as Firebase's guide keeps them (`fcmTokens/{uid}` `{token, timestamp}`) on `herald dev`
/// with every function: a phone that changes accounts stops getting the first account's messages.
@Suite struct TokenDocumentsEndToEndTests {
    @Test func aPhoneSignedInAsAnotherUserLeavesTheFirstUsersTokenDocument() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("guide-\(UUID().uuidString).json")
        try Data(#"{"extends": "default", "tokens": {"documentPerUser": "fcmTokens"}, "tokensUpdatedAtField": "timestamp"}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let schema = try Schema.load(file.path, file: try JSONValue(parsing: Array(try Data(contentsOf: file))))
        let dev = try await RunningDev.start(["--schema", file.path, "--seed", "demo"])
        defer { dev.kill() }
        try await dev.waitUntilIdle()
        let db = FirestoreClient(project: "e2e", endpoint: dev.base, credentials: EmulatorCredentials(), httpClient: .shared)
        let world = DemoWorld(schema: schema, project: "e2e")
        let device = { (user: String) in try await db.get(try db.name("fcmTokens/\(user)")) }
        let alicesPhone = try #require(try await device("alice"))
        #expect(alicesPhone["timestamp"]?.timestampValue != nil, "the demo writes the time beside the token, as the guide does")

        // Carol signs in on Alice's phone: the app writes the phone's token to Carol's document only.
        _ = try await db.commit([try world.signIn("carol", onDeviceWith: alicesPhone["token"]?.stringValue ?? "")])
        try await dev.waitUntilIdle()
        #expect(try await device("alice") == nil, "Alice's document no longer names the phone")
        #expect(try await device("carol")?["token"] == alicesPhone["token"])

        _ = try await db.commit([try world.message(from: "bob", in: "family", text: "On my way", id: "m2", at: .now())])
        try await dev.waitUntilIdle()
        // Alice has no device left, Carol has the phone.
        let sent = try await dev.pushes().filter { $0["message"]?["notification"]?["body"]?.stringValue?.hasSuffix("On my way") == true }
        #expect(sent.compactMap { $0["message"]?["token"]?.stringValue } == [alicesPhone["token"]?.stringValue], "\(sent.map { $0.serialized() })")
        let dead = try await dev.deadLetters()
        #expect(dead.isEmpty, "\(dead.map { $0.serialized() }.joined(separator: "\n"))")
        #expect(try await dev.stop() == 0, "\(dev.output.suffix(2000))")
    }
}

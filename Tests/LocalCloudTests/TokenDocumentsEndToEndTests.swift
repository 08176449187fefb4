import ChatDemo
import ChatFunctions
import FirestoreModel
import Foundation
import GoogleClients
import HeraldHTTPClient
import HeraldTesting
import Testing
import WireFormats

/// Tokens kept in documents of their own, on `herald dev` with every function: as Firebase's guide
/// keeps them (`fcmTokens/{uid}` `{token, timestamp}`, one device a user), in a subcollection
/// (`users/{uid}/devices/{token}`), and as Friendly Chat keeps them (`fcmTokens/{token}` `{uid}`). A phone that changes accounts stops getting the first account's
/// messages. On the embedded store and on Google's emulator, whose collection-group query is the
/// oracle for the one tokenCleanup asks.
@Suite struct TokenDocumentsEndToEndTests {
    static let layouts = [
        #"{"extends": "default", "tokens": {"documentPerUser": "fcmTokens"}, "tokensUpdatedAtField": "timestamp"}"#,
        #"{"extends": "default", "tokens": {"subcollection": "devices"}}"#,
        #"{"extends": "default", "tokens": {"documentPerToken": {"collection": "fcmTokens", "userField": "uid"}}, "tokensUpdatedAtField": "timestamp"}"#,
    ]

    @Test(arguments: layouts, ["embedded", "google"])
    func aPhoneSignedInAsAnotherUserLeavesTheFirstUsersTokenDocument(layout: String, store: String) async throws {
        if store == "google", !GoogleFirestoreEmulator.isInstalled { try skipTest("Google's Firestore emulator is not installed") }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("layout-\(UUID().uuidString).json")
        try Data(layout.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let schema = try Schema.load(file.path, file: try JSONValue(parsing: Array(layout.utf8)))
        let dev = try await RunningDev.start(["--schema", file.path, "--seed", "demo"] + (store == "google" ? ["--firestore", "google"] : []))
        defer { dev.kill() }
        try await dev.waitUntilIdle()
        let endpoint = try #require(store == "google" ? Self.firestore(in: dev.output) : dev.base, "\(dev.output.suffix(3000))")
        let db = FirestoreClient(project: "e2e", endpoint: endpoint, credentials: EmulatorCredentials(), httpClient: .shared)
        let world = DemoWorld(schema: schema, project: "e2e")
        let phone = "tok-alice-phone"
        let perUser = schema.tokens.layout is TokenDocumentPerUser
        // The phone's document under a user, or (one document per token) the phone's if it names them.
        let device = { (user: String) -> FirestoreDocument? in
            switch schema.tokens.layout {
            case is TokenDocumentPerUser: return try await db.get(try db.name("fcmTokens/\(user)"))
            case is TokenDocumentPerToken: return try await db.get(try db.name("fcmTokens/\(phone)")).flatMap { $0["uid"] == .string(user) ? $0 : nil }
            default: return try await db.get(try db.name("users/\(user)/devices/\(phone)"))
            }
        }
        let alicesPhone = try #require(try await device("alice"))
        if schema.tokens.layout is TokenDocumentPerToken {
            #expect(alicesPhone.name.documentID == phone && alicesPhone["token"] == nil, "keyed by the token, as the codelab writes it")
        } else {
            #expect(alicesPhone["token"] == .string(phone))
        }
        #expect(alicesPhone[schema.tokensUpdatedAtField ?? ""]?.timestampValue != nil, "the demo writes the time beside the token, as the guide does")

        // Carol signs in on Alice's phone: the app writes the phone's token under Carol only.
        _ = try await db.commit([try world.signIn("carol", onDeviceWith: phone)])
        try await dev.waitUntilIdle()
        #expect(try await device("alice") == nil, "Alice's document no longer names the phone")
        #expect(try await device("carol").map(TokenDocuments.token(of:)) == phone, "Carol's document holds the phone")

        _ = try await db.commit([try world.message(from: "bob", in: "family", text: "On my way", id: "m2", at: .now())])
        try await dev.waitUntilIdle()
        // Alice has no device left; Carol has the phone (and, but for one device a user, her own phone too).
        let sent = try await dev.pushes().filter { $0["message"]?["notification"]?["body"]?.stringValue?.hasSuffix("On my way") == true }
        #expect(
            sent.compactMap { $0["message"]?["token"]?.stringValue }.sorted() == (perUser ? [phone] : [phone, DemoWorld.carolsPhone].sorted()),
            "\(sent.map { $0.serialized() })")
        let dead = try await dev.deadLetters()
        #expect(dead.isEmpty, "\(dead.map { $0.serialized() }.joined(separator: "\n"))")
        #expect(try await dev.stop() == 0, "\(dev.output.suffix(2000))")
    }

    /// Where herald dev said it started Google's emulator.
    static func firestore(in output: String) -> String? {
        output.firstMatch(of: /starting Google.s Firestore emulator on (127\.0\.0\.1:\d+)/).map { "http://\($0.output.1)" }
    }
}

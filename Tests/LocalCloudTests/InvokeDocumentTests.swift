import FirestoreModel
import Foundation
import GoogleClients
import HeraldTesting
import LocalCloud
import Testing
import WireFormats

/// `invoke --document PATH`, Herald's `functions:shell`: the event is built from a document as it is
/// now, in a documents file or in the Firestore the function is configured for (here, the local cloud
/// as `herald dev` serves it).
@Suite struct InvokeDocumentTests {
    static let snapshot = TestPaths.packageRoot.appendingPathComponent("Tests/Fixtures/default/documents.json").path
    static let message = "conversations/c-family/messages/m-1001"

    static func invoke(_ function: String, _ arguments: [String], environment: [String: String] = [:]) async throws -> (
        status: Int32, report: JSONValue?, stderr: String
    ) {
        let result = try await ProcessRunner.run(TestPaths.executable(function), ["invoke"] + arguments, environment: environment)
        return (result.status, try? JSONValue(parsing: result.stdout), result.stderr)
    }

    @Test func aDocumentInAFileBecomesItsCreatedEvent() async throws {
        let run = try await Self.invoke("onMessageCreated", ["--document", Self.message, "--documents", Self.snapshot])
        #expect(run.status == 0, "\(run.stderr)")
        let report = try #require(run.report)
        #expect(report["outcome"]?["status"] == "applied", "\(report)")
        #expect(report["event"]?["kind"] == "created", "\(report["event"] ?? .null)")
        #expect(report["event"]?["id"]?.stringValue?.hasPrefix("invoke-") == true, "\(report["event"] ?? .null)")
        let tokens = report["pushes"]?.arrayValue?.compactMap { $0["message"]?["token"]?.stringValue }.sorted()
        #expect(tokens == ["tok-bob-ipad", "tok-bob-phone", "tok-carol-phone"])
    }

    @Test func anUpdateFromAGivenBeforeAndADeletion() async throws {
        let fixtures = TestPaths.packageRoot.appendingPathComponent("Tests/Fixtures/default").path
        // Bob's new phone token, which Dave's document still lists: tokenCleanup takes it from Dave.
        let update = try await Self.invoke(
            "tokenCleanup",
            ["--document", "users/bob", "--before", "\(fixtures)/bob-before-new-phone.json", "--documents", "\(fixtures)/account-change.json"])
        #expect(update.status == 0, "\(update.stderr)")
        #expect(update.report?["outcome"]?["status"] == "applied", "\(update.report ?? .null)")
        #expect(update.report?["event"]?["kind"] == "updated")
        #expect(update.report?["event"]?["updateMask"] == ["fcmTokens"], "the mask Eventarc would send")
        let written = update.report?["writes"]?.arrayValue?.compactMap { ($0["update"]?["name"] ?? $0["transform"]?["document"])?.stringValue } ?? []
        #expect(written.contains { $0.hasSuffix("/users/dave") }, "\(written)")
        // The same document as it is (no change): nothing to do, and the report says why.
        let same = try await Self.invoke(
            "tokenCleanup",
            ["--document", "users/dave", "--change", "deleted", "--documents", "\(fixtures)/account-change.json"])
        #expect(same.status == 0, "\(same.stderr)")
        #expect(same.report?["event"]?["kind"] == "deleted", "\(same.report ?? .null)")
        let unsent = try await Self.invoke("onReadReceipt", ["--document", Self.message, "--change", "deleted", "--documents", Self.snapshot])
        #expect(unsent.report?["outcome"]?["status"] == "skipped", "\(unsent.report ?? .null)")
        #expect(unsent.report?["outcome"]?["reason"] == "the deleted message counted nobody as unread")
    }

    @Test(arguments: [
        (["--document", "conversations/c-family/messages/nope"], Int32(2), "no document conversations/c-family/messages/nope in the documents file"),
        (["--document", message, "--change", "updated"], 64, "--change updated needs --before"),
        (["--document", message, "--change", "moved"], 64, "--change must be one of created, updated, deleted"),
        (["--document", message, "--event", "x.json"], 64, "either --event <file> or --document <path>"),
        (["--change", "deleted"], 64, "--change and --before go with --document"),
        (["--document", message, "--before", "/nonexistent.json"], 2, "--before /nonexistent.json"),
    ])
    func aWrongDocumentOrChangeIsNamed(arguments: [String], status: Int32, message: String) async throws {
        let run = try await Self.invoke("onMessageCreated", arguments + ["--documents", Self.snapshot])
        #expect(run.status == status, "\(run.stderr)")
        #expect(run.stderr.contains(message), "\(run.stderr)")
    }

    /// Against the local cloud (as against `herald dev`): the message as stored is the event, its effects
    /// are written and pushed, and a second invoke of the same creation is a duplicate.
    @Test func aDocumentInTheLocalCloudIsInvokedAndAppliedOnce() async throws {
        try await withLocalCloud { cloud in
            let db = cloud.firestore()
            let conversation = try db.name("conversations/c1")
            let message = try db.name("conversations/c1/messages/m1")
            _ = try await db.commit([
                Write(.update(conversation, fields: ["members": .array([.string("alice"), .string("bob")]), "isGroup": .boolean(false)], mask: nil)),
                Write(.update(try db.name("users/alice"), fields: ["displayName": .string("Alice")], mask: nil)),
                Write(.update(try db.name("users/bob"), fields: ["displayName": .string("Bob"), "fcmTokens": .array([.string("tok-bob")])], mask: nil)),
                Write(.update(message, fields: ["senderId": .string("alice"), "text": .string("Hey, how are you?")], mask: nil)),
            ])
            let environment = cloud.functionEnvironment()
            let first = try await Self.invoke("onMessageCreated", ["--document", "conversations/c1/messages/m1"], environment: environment)
            #expect(first.status == 0, "\(first.stderr)")
            #expect(first.report?["outcome"]?["status"] == "applied", "\(first.report ?? .null)")
            #expect(try await db.get(conversation)?["unreadCount"] == .map(["bob": .integer(1)]))
            let pushes = try await cloud.cloud.fcm.messages(token: "tok-bob")
            #expect(pushes.map { $0.message["notification"]?["body"]?.stringValue } == ["Alice: Hey, how are you?"])

            let second = try await Self.invoke("onMessageCreated", ["--document", "/conversations/c1/messages/m1"], environment: environment)
            #expect(second.report?["outcome"]?["status"] == "duplicate", "one creation, one effect: \(second.report ?? .null)")
            #expect(try await db.get(conversation)?["unreadCount"] == .map(["bob": .integer(1)]))
        }
    }
}

import AsyncHTTPClient
import Foundation
import HeraldTesting
import Testing

/// The documented security rules for the default schema (docs/your-app.md), as written there, in
/// Google's Firestore emulator: members read their conversations and write messages as themselves,
/// never Herald's fields; each user writes only their own documents and reads only their own badge; no
/// client reaches the ledger; the functions' credentials are not subject to rules.
@Suite struct AppRulesTests {
    struct NoRulesBlock: Error, CustomStringConvertible {
        var description: String { "no page of README.md or docs/ has a block fenced `rules` for conversations (docs/your-app.md had it)" }
    }

    /// Every block fenced `rules` in `text`.
    static func rulesBlocks(in text: String) -> [String] {
        var blocks: [String] = []
        var rest = text[...]
        while let start = rest.range(of: "```rules\n"), let end = rest.range(of: "\n```", range: start.upperBound..<rest.endIndex) {
            blocks.append(String(rest[start.upperBound..<end.lowerBound]))
            rest = rest[end.upperBound...]
        }
        return blocks
    }

    /// The app's rules: the first block fenced `rules` that governs conversations, in docs/your-app.md or,
    /// should the page move, in any other page of docs/ or README.md (docs/deploying.md's ledger-only
    /// rules govern none). Fails only when no page has them.
    static func documentedRules() throws -> (page: String, rules: String) {
        let root = TestPaths.packageRoot
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.map { "docs/\($0)" }.sorted()
        for page in ["docs/your-app.md"] + docs + ["README.md"] {
            guard let text = try? String(contentsOf: root.appendingPathComponent(page), encoding: .utf8) else { continue }
            if let rules = rulesBlocks(in: text).first(where: { $0.contains("match /conversations/") }) { return (page, rules) }
        }
        throw NoRulesBlock()
    }

    /// A document's fields in Firestore's JSON, each value already in that form.
    static func fields(_ fields: KeyValuePairs<String, String>) -> String {
        "{" + fields.map { #""\#($0.key)":\#($0.value)"# }.joined(separator: ",") + "}"
    }
    static func string(_ text: String) -> String { #"{"stringValue":"\#(text)"}"# }
    static func integer(_ number: Int) -> String { #"{"integerValue":"\#(number)"}"# }
    static func boolean(_ value: Bool) -> String { #"{"booleanValue":\#(value)}"# }
    static func array(_ items: String...) -> String { #"{"arrayValue":{"values":[\#(items.map(string).joined(separator: ","))]}}"# }
    static func map(_ entries: KeyValuePairs<String, String>) -> String { #"{"mapValue":{"fields":\#(fields(entries))}}"# }

    @Test func theDocumentedRulesKeepHeraldsFieldsToHerald() async throws {
        guard GoogleFirestoreEmulator.isInstalled else {
            try skipTest("Google's Firestore emulator is not installed at \(GoogleFirestoreEmulator.launcher)")
        }
        let rules = FileManager.default.temporaryDirectory.appendingPathComponent("herald-app-\(UUID().uuidString).rules")
        let documented = try Self.documentedRules()
        try documented.rules.write(to: rules, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: rules) }
        let project = "herald-app-rules"
        try await GoogleFirestoreEmulator.run(arguments: ["--rules=\(rules.path)"]) { host in
            let base = "http://\(host)/v1/projects/\(project)/databases/(default)/documents"
            /// A PATCH: the whole document, or with `mask` only those fields (as `updateDoc` and a merge
            /// send them); `create` only if the document does not exist yet.
            func write(_ path: String, _ fields: String, as authorization: String?, mask: [String] = [], create: Bool = false) async throws -> Int {
                let query = mask.map { "updateMask.fieldPaths=\($0)" } + (create ? ["currentDocument.exists=false"] : [])
                var headers = ["content-type": "application/json"]
                if let authorization { headers["authorization"] = authorization }
                let url = "\(base)/\(path)" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
                return try await HTTPClient.shared.send("PATCH", url, headers: headers, body: Array(#"{"fields":\#(fields)}"#.utf8)).status
            }
            func read(_ path: String, as authorization: String) async throws -> Int {
                try await HTTPClient.shared.send("GET", "\(base)/\(path)", headers: ["authorization": authorization]).status
            }
            let owner = "Bearer owner"
            let alice = "Bearer \(LedgerRulesTests.idToken(user: "alice", project: project))"
            let bob = "Bearer \(LedgerRulesTests.idToken(user: "bob", project: project))"
            let mallory = "Bearer \(LedgerRulesTests.idToken(user: "mallory", project: project))"

            // The world, written with the functions' credentials.
            let seeded = try await [
                write("users/alice", Self.fields(["displayName": Self.string("Alice"), "fcmTokens": Self.array("tokenA")]), as: owner),
                write("users/bob", Self.fields(["displayName": Self.string("Bob"), "fcmTokens": Self.array("tokenB")]), as: owner),
                write(
                    "conversations/c1",
                    Self.fields([
                        "members": Self.array("alice", "bob"), "isGroup": Self.boolean(false), "unreadCount": Self.map(["bob": Self.integer(1)]),
                        "lastMessage": Self.map(["text": Self.string("hi"), "senderId": Self.string("alice"), "messageId": Self.string("m0")]),
                    ]), as: owner),
                write("badges/alice", Self.fields(["unreadTotal": Self.integer(2)]), as: owner),
                write("badges/bob", Self.fields(["unreadTotal": Self.integer(1)]), as: owner),
                write("_herald/events/ledger/x", Self.fields(["n": Self.integer(1)]), as: owner),
            ]
            #expect(seeded == [200, 200, 200, 200, 200, 200], "the functions' credentials write the app's documents, badges and the ledger")

            // Conversations and messages.
            let sent = ["senderName": Self.string("Alice"), "text": Self.string("Dinner at 6"), "type": Self.string("text")]
            /// A new message's fields, from `sender`, with `more`.
            func message(from sender: String, _ more: KeyValuePairs<String, String> = [:]) -> String {
                var fields = sent
                fields["senderId"] = Self.string(sender)
                for (key, value) in more { fields[key] = value }
                return "{" + fields.sorted { $0.key < $1.key }.map { #""\#($0.key)":\#($0.value)"# }.joined(separator: ",") + "}"
            }
            #expect(try await read("conversations/c1", as: alice) == 200, "a member reads her conversation (the rules of \(documented.page))")
            #expect(try await read("conversations/c1", as: mallory) == 403, "a non-member does not read it")
            #expect(
                try await write("conversations/c1/messages/m1", message(from: "alice"), as: alice, create: true) == 200,
                "a member sends a message as herself")
            #expect(try await read("conversations/c1/messages/m1", as: bob) == 200, "another member reads it")
            #expect(try await read("conversations/c1/messages/m1", as: mallory) == 403, "a non-member does not")
            #expect(
                try await write("conversations/c1/messages/m2", message(from: "bob"), as: alice, create: true) == 403,
                "a member does not send as someone else")
            #expect(
                try await write("conversations/c1/messages/m3", message(from: "mallory"), as: mallory, create: true) == 403,
                "a non-member does not write a message")
            let marked = message(from: "alice", ["heraldUnread": Self.map(["bob": Self.boolean(true)])])
            #expect(
                try await write("conversations/c1/messages/m4", marked, as: alice, create: true) == 403, "a message carrying Herald's unread marks is refused")
            #expect(
                try await write("conversations/c1/messages/m1", Self.fields(["readBy": Self.array("bob")]), as: bob, mask: ["readBy"]) == 200,
                "a member adds himself to readBy")
            #expect(
                try await write("conversations/c1/messages/m1", Self.fields(["readBy": Self.array("bob", "alice")]), as: bob, mask: ["readBy"]) == 403,
                "but no one else")
            #expect(
                try await write("conversations/c1/messages/m1", Self.fields(["status": Self.string("read")]), as: bob, mask: ["status"]) == 403,
                "a member does not write a message's status: Herald moves it")
            #expect(try await read("conversations/c1/messages/m1/heraldReads/bob", as: bob) == 403, "no client reads Herald's read receipts")
            #expect(
                try await write("conversations/c1/messages/m1/heraldReads/bob", Self.fields([:]), as: bob) == 403, "nor writes them")
            #expect(
                try await write("conversations/c1", Self.fields(["unreadCount": Self.map(["bob": Self.integer(0)])]), as: bob, mask: ["unreadCount"]) == 403,
                "a member does not write unreadCount")
            #expect(
                try await write("conversations/c1", Self.fields(["lastMessage": Self.map(["text": Self.string("forged")])]), as: alice, mask: ["lastMessage"])
                    == 403, "nor lastMessage")
            #expect(
                try await write("conversations/c1", Self.fields(["name": Self.string("Family")]), as: alice, mask: ["name"]) == 200,
                "a member edits the conversation's own fields")
            #expect(
                try await write("conversations/c1", Self.fields(["name": Self.string("pwned")]), as: mallory, mask: ["name"]) == 403,
                "a non-member does not")
            #expect(
                try await write("conversations/c2", Self.fields(["members": Self.array("bob", "mallory")]), as: mallory, create: true) == 200,
                "a user creates a conversation he is a member of")
            #expect(
                try await write("conversations/c3", Self.fields(["members": Self.array("alice", "bob")]), as: mallory, create: true) == 403,
                "and none he is not in")

            // Users and badges.
            #expect(try await read("users/bob", as: alice) == 200, "a signed-in user reads another's profile (names, presence)")
            #expect(
                try await write("users/alice", Self.fields(["online": Self.boolean(true)]), as: alice, mask: ["online"]) == 200,
                "a user writes her own document")
            #expect(
                try await write("users/bob", Self.fields(["displayName": Self.string("Bobby")]), as: alice, mask: ["displayName"]) == 403,
                "but not another user's")
            #expect(
                try await write("users/bob", Self.fields(["fcmTokens": Self.array("tokenA")]), as: alice, mask: ["fcmTokens"]) == 403,
                "nor another user's fcmTokens")
            #expect(
                try await write("users/alice", Self.fields(["tokensUpdatedAt": Self.string("now")]), as: alice, mask: ["tokensUpdatedAt"]) == 403,
                "nor the tokensUpdatedAt Herald stamps")
            #expect(try await read("badges/alice", as: alice) == 200, "a user reads her own badge")
            #expect(try await read("badges/bob", as: alice) == 403, "not another user's")
            #expect(try await write("badges/alice", Self.fields(["unreadTotal": Self.integer(0)]), as: alice) == 403, "and writes no badge")

            // The ledger.
            #expect(try await read("_herald/events/ledger/x", as: alice) == 403, "no client reads the ledger")
            #expect(try await write("_herald/events/ledger/x", Self.fields(["n": Self.integer(2)]), as: alice) == 403, "nor writes it")

            // The functions' credentials write Herald's fields.
            let functions = try await [
                write(
                    "conversations/c1", Self.fields(["unreadCount": Self.map(["bob": Self.integer(0)]), "lastMessage": Self.map(["text": Self.string("y")])]),
                    as: owner, mask: ["unreadCount", "lastMessage"]),
                write(
                    "conversations/c1/messages/m1", Self.fields(["heraldUnread": Self.map(["bob": Self.boolean(true)]), "status": Self.string("read")]),
                    as: owner, mask: ["heraldUnread", "status"]),
                write("conversations/c1/messages/m1/heraldReads/bob", Self.fields([:]), as: owner),
                write("users/bob", Self.fields(["fcmTokens": Self.array(), "tokensUpdatedAt": Self.string("now")]), as: owner),
                write("badges/bob", Self.fields(["unreadTotal": Self.integer(0)]), as: owner),
                write("_herald/events/ledger/x", Self.fields(["n": Self.integer(3)]), as: owner),
            ]
            #expect(functions == [200, 200, 200, 200, 200, 200], "the functions' credentials are not subject to rules")
        }
    }
}

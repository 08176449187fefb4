import ChatDemo
import ChatFunctions
import ChatSchemaTools
import FirestoreModel
import HeraldCore
import Testing
import WireFormats

/// `herald schema infer` and `check` say which kinds of push tokens the data holds: the demo world's
/// users hold FCM, Expo and APNs tokens between them; a token no service issues is a misfit by name.
@Suite struct SchemaTokenKindsTests {
    /// The demo world as its apps write it, a message in each conversation, Erin's fields changed by `extra`.
    static func demo(_ schema: Schema, extra: [String: FirestoreValue] = [:]) throws -> [FirestoreDocument] {
        let world = DemoWorld(schema: schema, project: "p")
        var writes = try world.seed()
        for (index, conversation) in DemoWorld.conversations.enumerated() {
            for (n, sender) in conversation.members.enumerated() {
                writes.append(
                    try world.message(
                        from: sender, in: conversation.id, text: "message \(n) from \(sender)", id: "m\(index)-\(n)",
                        at: Timestamp(seconds: 1_790_000_000 + Int64(index * 10 + n))))
            }
        }
        return writes.compactMap { write -> FirestoreDocument? in
            guard case .update(let name, var fields, _) = write.operation else { return nil }
            if name.path == "users/erin" { fields.merge(extra) { _, new in new } }
            return FirestoreDocument(name: name, fields: fields)
        }
    }

    @Test func inferNamesTheKindsOfTokensItFound() throws {
        let proposal = try SchemaInference.propose(from: AppData(try Self.demo(Schema.presets["default"]!)))
        let evidence = try #require(proposal.entries.first { $0.key == "tokens" }?.evidence)
        #expect(evidence.contains("(4 FCM, 1 Expo, 1 APNs; Expo and APNs tokens are sent by their own services"), "\(evidence)")
        #expect(proposal["tokens"] == ["array": "fcmTokens"])
    }

    @Test func checkCountsTheKindsAndNamesAMalformedToken() throws {
        let schema = Schema.presets["default"]!
        let data = AppData(try Self.demo(schema, extra: ["fcmTokens": .array([.string("tok-erin-phone"), .string("ExponentPushToken[bad/token]")])]))
        let report = SchemaFit.check(schema, against: data, newestMessages: 0)
        #expect(report.notes.contains { $0.contains("push tokens held by the users: (4 FCM, 1 Expo, 1 APNs, 1 malformed;") }, "\(report.text)")
        #expect(
            report.misfits.contains { $0.path == "users/erin" && $0.problem.contains("an Expo push token that is not ExponentPushToken[…]") },
            "\(report.text)")
        #expect(!report.text.contains("bad/token"), "the report names the problem, not the token")
    }
}

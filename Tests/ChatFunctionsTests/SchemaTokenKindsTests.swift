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
    @Test func inferNamesTheKindsOfTokensItFound() throws {
        let proposal = try SchemaInference.propose(from: AppData(try DemoWorldDocuments.make(Schema.presets["default"]!)))
        let evidence = try #require(proposal.entries.first { $0.key == "tokens" }?.evidence)
        #expect(evidence.contains("(4 FCM, 1 Expo, 1 APNs; Expo and APNs tokens are sent by their own services"), "\(evidence)")
        #expect(proposal["tokens"] == ["array": "fcmTokens"])
    }

    @Test func checkCountsTheKindsAndNamesAMalformedToken() throws {
        let schema = Schema.presets["default"]!
        let data = AppData(
            try DemoWorldDocuments.make(schema, extra: ["fcmTokens": .array([.string("tok-erin-phone"), .string("ExponentPushToken[bad/token]")])]))
        let report = SchemaFit.check(schema, against: data, newestMessages: 0)
        #expect(report.notes.contains { $0.contains("push tokens held by the users: (4 FCM, 1 Expo, 1 APNs, 1 malformed;") }, "\(report.text)")
        #expect(
            report.misfits.contains { $0.path == "users/erin" && $0.problem.contains("an Expo push token that is not ExponentPushToken[…]") },
            "\(report.text)")
        #expect(!report.text.contains("bad/token"), "the report names the problem, not the token")
    }
}

import PushTokens
import Testing

/// One place decides what a stored token is: its service, or why it is none (what tokenCleanup removes).
@Suite struct PushTokenTests {
    static let fcm = "fV0bN3xYQk2-abc:APA91bH" + String(repeating: "x7_Q-", count: 28)
    static let apns = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"

    @Test func eachServiceTokenIsKnownByItsShape() {
        #expect(PushToken.classify(Self.fcm) == .token(.fcm))
        #expect(PushToken.classify("tok-bob-phone") == .token(.fcm))  // a test's own token: FCM judges it
        #expect(PushToken.classify("ExponentPushToken[xxxxxxxxxxxxxxxxxxxxxx]") == .token(.expo))
        #expect(PushToken.classify("ExpoPushToken[AbC-d_9]") == .token(.expo))
        #expect(PushToken.classify("1a2b3c4d-1a2b-1a2b-1a2b-1a2b3c4d5e6f") == .token(.expo))  // Expo's older form
        #expect(PushToken.classify(Self.apns) == .token(.apns))
        #expect(PushToken.classify(Self.apns.uppercased()) == .token(.apns))
        #expect(PushToken.classify(Self.apns + "00112233") == .token(.apns))  // Apple warns they may grow
        #expect(PushToken.classify("deadbeef") == .token(.fcm))  // short hex is no APNs token
    }

    @Test func whatNoServiceIssuesIsMalformedByName() {
        let cases: [(String, String)] = [
            ("", "empty"), (String(repeating: "a", count: 10_000), "10000 bytes"), ("tok with space", "space"),
            ("ExponentPushToken[\u{7}bell]", "control"), ("ExponentPushToken[abc", "ExponentPushToken["), ("ExponentPushToken[]", "ExponentPushToken["),
            ("ExpoPushToken[a b]", "space"), ("ExponentPushToken[a/b]", "ExponentPushToken["), (String(Self.apns.dropLast()), "65"),
            (String(repeating: "ab", count: 101), "202 hex digits"), ("tökén", "non-ASCII"),
        ]
        for (token, named) in cases {
            guard case .malformed(let reason) = PushToken.classify(token) else {
                Issue.record("\(token.prefix(40)) was taken for a token")
                continue
            }
            #expect(reason.contains(named) || reason.contains(String(token.utf8.count)), "\(token.prefix(40)): \(reason)")
            #expect(!reason.contains(token) || token.isEmpty, "the reason repeats the token")
        }
    }

    @Test func aMalformedTokenIsNeverAnotherServicesToken() {
        // Expo's and APNs's shapes are exact: a damaged one is not sent to FCM as if it were FCM's.
        #expect(PushToken.kind(of: "ExponentPushToken[\u{0}]") == .fcm)
        #expect(PushToken.isWellFormed("ExponentPushToken[\u{0}]") == false)
        #expect(PushToken.isWellFormed(String(Self.apns.dropLast())) == false)
    }
}

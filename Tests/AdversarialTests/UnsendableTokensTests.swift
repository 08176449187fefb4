import AsyncHTTPClient
import ChatDemo
import FirestoreModel
import Foundation
import HeraldTesting
import NIOCore
import Testing
import WireFormats

/// A deployment without Expo or APNs credentials: FCM's pushes still go, and the Expo and APNs tokens
/// stay where the app stored them, named in the log and counted at /metrics, never taken for dead.
@Suite struct UnsendableTokensTests {
    @Test func withoutExpoOrAPNsCredentialsFCMPushesGoAndTheOtherTokensStay() async throws {
        let world = try await DevWorld.start()
        defer { world.dev.kill() }
        let environment = world.dev.functionEnvironment().filter { !$0.key.hasPrefix("HERALD_EXPO") && !$0.key.hasPrefix("HERALD_APNS") }
        let function = try await FunctionUnderTest.start("onMessageCreated", environment: environment)
        defer { function.stop() }
        for index in 0..<2 {
            let message = try await world.message("m-unsendable-\(index)")
            let answer = try await function.post(try world.created(message, id: "evt-unsendable-\(index)"))
            #expect(answer.status == 200, "\(answer.body)")
        }
        #expect(try await world.pushedTokens() == ["tok-bob-phone", "tok-bob-phone"])
        #expect(try await DevicePush.all(at: world.dev.base).allSatisfy { $0.service == .fcm })
        #expect(try await world.tokens(of: "bob") == ["tok-bob-phone", DemoWorld.bobsIPad])
        #expect(try await world.tokens(of: "carol") == [DemoWorld.carolsPhone])
        // Named once a minute, with the settings that would deliver them: two messages, one line each.
        let said = function.output
        #expect(said.components(separatedBy: "1 Expo token skipped: configure HERALD_EXPO_PUSH=on").count == 2, "\(said.suffix(3000))")
        #expect(said.components(separatedBy: "1 APNs token skipped: configure HERALD_APNS_KEY").count == 2, "\(said.suffix(3000))")
        let metrics = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(function.port)/metrics"), timeout: .seconds(10))
        let text = String(buffer: try await metrics.body.collect(upTo: 1 << 20))
        #expect(text.contains(#"herald_push_tokens_skipped_total{function="onMessageCreated",kind="expo"} 2"#), "\(text)")
        #expect(text.contains(#"herald_push_tokens_skipped_total{function="onMessageCreated",kind="apns"} 2"#), "\(text)")
    }

    /// A `.p8` that is no P-256 key, or APNs half configured, stops the function at start, naming the
    /// setting and never the key.
    @Test func aDamagedAPNsKeyOrAHalfConfigurationIsRefusedAtStart() async throws {
        let key = FileManager.default.temporaryDirectory.appendingPathComponent("AuthKey-\(UUID().uuidString).p8")
        let secret = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg"
        try "-----BEGIN PRIVATE KEY-----\n\(secret)AAAA\n-----END PRIVATE KEY-----\n".write(to: key, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: key) }
        let cases: [([String: String], String)] = [
            (
                ["HERALD_APNS_KEY_FILE": key.path, "HERALD_APNS_KEY_ID": "ABCDE12345", "HERALD_APNS_TEAM_ID": "TEAM123456", "HERALD_APNS_TOPIC": "app.x"],
                "HERALD_APNS_KEY is not an APNs key"
            ),
            (["HERALD_APNS_KEY_ID": "ABCDE12345"], "APNs needs HERALD_APNS_KEY (or HERALD_APNS_KEY_FILE), HERALD_APNS_TEAM_ID, HERALD_APNS_TOPIC"),
            (["HERALD_EXPO_PUSH": "sometimes"], "HERALD_EXPO_PUSH must be on or off"),
            (["HERALD_EXPO_ACCESS_TOKEN": "a b"], "HERALD_EXPO_ACCESS_TOKEN is not an access token"),
        ]
        for (settings, named) in cases {
            do {
                let function = try await FunctionUnderTest.start(
                    "onMessageCreated",
                    environment: ["GOOGLE_CLOUD_PROJECT": "p", "FIRESTORE_EMULATOR_HOST": "127.0.0.1:9"].merging(settings) { _, new in new })
                function.stop()
                Issue.record("started with \(settings)")
            } catch {
                #expect("\(error)".contains(named), "\(error)")
                #expect(!"\(error)".contains(secret) && !"\(error)".contains("a b\""), "\(error)")
            }
        }
    }
}

import FirestoreModel
import GoogleClients
import HeraldCore
import Logging
import Testing

@testable import HeraldRuntime

/// When FCM calls tokens dead, they are removed, unless so many are at once that the cause is more
/// likely a misconfiguration than people uninstalling the app.
@Suite struct DeadTokenGuardTests {
    static let project = "p"

    static func push(_ user: String, _ token: String) throws -> PushMessage {
        let document = try DocumentName(project: project, path: "users/\(user)")
        return PushMessage(
            userID: user, token: token, fcm: FCMMessage(token: token, notification: .init(title: "t", body: "b")),
            removal: Write(.update(document, fields: [:], mask: [FieldPath("fcmTokens", token)]), precondition: .exists(true)))
    }

    func judge(_ answers: [(String, String, Bool)]) throws -> DeadTokenGuard.Outcome {
        let guardian = DeadTokenGuard(logger: Logger(label: "test"))
        return guardian.judge(
            try answers.map { user, token, dead in (try Self.push(user, token), dead ? SendResult.dead(reason: "UNREGISTERED") : .sent(name: token)) })
    }

    /// Bob uninstalled the app from his phone and his iPad; Carol's phone is live. Two of three devices,
    /// but one person of two: his tokens go (judged by devices they were kept, an ERROR every message).
    @Test func onePersonWhoUninstalledFromMostDevicesLosesTheirTokens() throws {
        let outcome = try judge([("bob", "bob-phone", true), ("bob", "bob-ipad", true), ("carol", "carol-phone", false)])
        #expect(outcome.refusedRemovals == 0)
        #expect(outcome.removals.count == 2)
        #expect(outcome.marks == ["bob-phone": .dead, "bob-ipad": .dead, "carol-phone": .sent])
    }

    /// Every device of everyone dead at once: an endpoint that is not FCM, most likely. Nothing removed.
    @Test func everyoneDeadAtOnceRemovesNothing() throws {
        let outcome = try judge([("bob", "bob-phone", true), ("bob", "bob-ipad", true), ("carol", "carol-phone", true)])
        #expect(outcome.refusedRemovals == 3)
        #expect(outcome.removals.isEmpty)
    }

    /// One person's three devices all dead, and nobody else in the batch: that person uninstalled.
    @Test func onePersonAloneWithEveryDeviceDeadLosesTheirTokens() throws {
        let outcome = try judge([("bob", "bob-phone", true), ("bob", "bob-ipad", true), ("bob", "bob-laptop", true)])
        #expect(outcome.refusedRemovals == 0)
        #expect(outcome.removals.count == 3)
    }
}

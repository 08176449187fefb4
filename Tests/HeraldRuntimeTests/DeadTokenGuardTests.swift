import FirestoreModel
import GoogleClients
import HeraldCore
import HeraldTesting
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

    func judge(_ answers: [(String, String, Bool)], after healthy: Int = 0) throws -> DeadTokenGuard.Outcome {
        let guardian = DeadTokenGuard(logger: Logger(label: "test"))
        // Earlier sends that all went out: the window of recent answers.
        _ = guardian.judge(try (0..<healthy).map { (try Self.push("u\($0)", "tok-\($0)"), SendResult.sent(name: "m\($0)")) })
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

    /// FCM refusing the credentials and a crowd of dead tokens are two problems, each with an ERROR
    /// (a minute's silence after the first must not hide the second), and neither twice in a minute.
    @Test func eachKindOfComplaintIsRaisedOnItsOwn() throws {
        let log = RecordedLog()
        let guardian = DeadTokenGuard(logger: log.logger("guard"))
        let refused = SendResult.failed(reason: "\(FCMClient.credentialsRefused) (403 PERMISSION_DENIED): grant", retryable: true, retryAfterSeconds: nil)
        let everyoneDead = try ["a", "b", "c"].map { (try Self.push($0, "tok-\($0)"), SendResult.dead(reason: "UNREGISTERED")) }
        for _ in 0..<2 {
            _ = guardian.judge([(try Self.push("a", "tok-a"), refused)])
            _ = guardian.judge(everyoneDead)
        }
        let errors = log.text.split(separator: "\n").filter { $0.contains("ERROR") }
        #expect(errors.filter { $0.contains(FCMClient.credentialsRefused) }.count == 1, "\(log.text)")
        #expect(errors.filter { $0.contains("No token removed") }.count == 1, "\(log.text)")
    }

    /// One person's three devices all dead, nobody else in the batch: on an instance that has seen
    /// nothing else, as likely an endpoint that is not FCM, so nothing is removed; after sends that went
    /// out, that person uninstalled.
    @Test func onePersonAloneIsJudgedByDevicesUntilTheWindowCanJudge() throws {
        let bob = [("bob", "bob-phone", true), ("bob", "bob-ipad", true), ("bob", "bob-laptop", true)]
        let fresh = try judge(bob)
        #expect(fresh.refusedRemovals == 3)
        #expect(fresh.removals.isEmpty)
        let warm = try judge(bob, after: 20)
        #expect(warm.refusedRemovals == 0)
        #expect(warm.removals.count == 3)
    }

    /// One of a person's devices dead among their live ones, with others reached: that token goes.
    @Test func oneDeadDeviceAmongLiveOnesIsRemoved() throws {
        let outcome = try judge([("bob", "bob-phone", false), ("bob", "bob-ipad", true), ("carol", "carol-phone", false)])
        #expect(outcome.refusedRemovals == 0)
        #expect(outcome.removals.count == 1)
        #expect(outcome.marks["bob-ipad"] == .dead)
    }

    /// The token sweep's page: nineteen dormant people's dead tokens and one active person's ten live
    /// ones. By devices (19 of 29) it is no misconfiguration, and the dead tokens go; judged by people
    /// (19 of 20) it was refused.
    @Test func theSweepsPageIsJudgedByDevices() throws {
        let sweep = DeadTokenGuard(threshold: 0.9, minimumBatch: 20, judgesPeople: false, logger: Logger(label: "test"))
        let dormant = try (0..<19).map { (try Self.push("d\($0)", "dead-\($0)"), SendResult.dead(reason: "UNREGISTERED")) }
        let active = try (0..<10).map { (try Self.push("active", "live-\($0)"), SendResult.sent(name: "m\($0)")) }
        let outcome = sweep.judge(dormant + active)
        #expect(outcome.refusedRemovals == 0)
        #expect(outcome.removals.count == 19)
    }
}

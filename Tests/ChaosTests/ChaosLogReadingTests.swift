import Testing

@testable import HeraldTesting

/// The chaos truth reads `herald dev`'s log for what the store cannot say: which alert a function
/// recorded unanswered: sent once more (a device may show both sends under one collapse id), and, when
/// unanswered again, not sent a third time.
@Suite struct ChaosLogReadingTests {
    @Test func anUnansweredPushIsTracedToItsMessageAndUser() {
        let log = """
            onMessageCreated  WARNING FCM had not answered a push to a device of u37 when the lease's deadline came; it may have been delivered and is sent once more on the next delivery, with the same collapse identifiers (POST http://127.0.0.1:34551/v1/projects/e2e/messages:send: no answer within 2.797050196 seconds)  (event 665311f4)
            onMessageCreated  WARNING throttled, the trigger will retry: 1 of 8 pushes failed transiently (503 UNAVAILABLE: injected fault: unavailable)  (event 665311f4)
            event   created conversations/c55/messages/m386 → onMessageCreated: 429 (attempt 1, will retry): {"error":{"code":429}}  (event 665311f4)
            onMessageCreated  WARNING FCM had not answered a push to a device of u3 when the lease's deadline came; it may have been delivered and is sent once more on the next delivery, with the same collapse identifiers (POST …)
            event   created conversations/c4/messages/m394 → onMessageCreated: 200 applied (3 writes, 2 pushes)  (event 0badcafe)
            onMessageCreated  WARNING FCM had not answered a push to a device of u9 when the lease's deadline came; it may have been delivered and is sent once more on the next delivery, with the same collapse identifiers (POST …)  (event 0badcafe)
            onMessageCreated  WARNING FCM had not answered a push to a device of u9 when the lease's deadline came, a second time; it may have been delivered and is not sent a third time (POST …)  (event 0badcafe)
            """
        // The line without its event (as functions logged it before) names no message.
        #expect(ChaosRun.unansweredPushes(in: log).once == ["m386/u37", "m394/u9"])
        #expect(ChaosRun.unansweredPushes(in: log).twice == ["m394/u9"])
    }

    /// APNs's and Expo's unanswered pushes are sent once more as FCM's are, and the truth allows their
    /// second send as it allows FCM's (it read FCM's lines only, and would call APNs's a duplicate).
    @Test func everyPushServicesUnansweredPushIsTraced() {
        let log = """
            event   created conversations/c1/messages/m12 → onMessageCreated: 429 (attempt 1, will retry): {"error":{"code":429}}  (event 0000abcd)
            onMessageCreated  WARNING APNs had not answered a push to a device of u4 when the lease's deadline came; it may have been delivered and is sent once more on the next delivery, with the same collapse identifiers (APNs did not answer: …)  (event 0000abcd)
            onMessageCreated  WARNING Expo had not answered a push to a device of u5 when the lease's deadline came; it may have been delivered and is sent once more on the next delivery, with the same collapse identifiers (…)  (event 0000abcd)
            """
        #expect(ChaosRun.unansweredPushes(in: log).once == ["m12/u4", "m12/u5"])
    }
}

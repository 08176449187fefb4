import FirestoreModel
import HeraldCore
import HeraldTesting
import Testing
import WireFormats

@Suite struct FCMMessageSizeTests {
    /// `fitted()` skips writing the JSON when the bound says it fits, so the bound must never be lower.
    @Test func theBoundIsNeverBelowTheSizeFCMCounts() {
        var rng = SeededRandom(seed: 5)
        let pieces = ["a", "é", "🍝", "\"", "\\", "\n", "\u{1}", "\u{2028}", "Family", " ", "👩‍👩‍👧"]
        func text() -> String { (0..<Int.random(in: 0...40, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined() }
        for _ in 0..<2_000 {
            let data = Dictionary((0..<Int.random(in: 0...6, using: &rng)).map { _ in (text(), text()) }, uniquingKeysWith: { $1 })
            let notification = Bool.random(using: &rng) ? FCMMessage.Notification(title: Bool.random(using: &rng) ? text() : nil, body: text()) : nil
            let message = FCMMessage(token: "t", notification: notification, data: data)
            #expect(message.payloadBytesBound >= message.payloadBytes)
            #expect(message.cheapPayloadBytesBound >= message.payloadBytesBound)
        }
    }

    @Test func anOversizedMessageLosesItsLargestDataUntilItFits() {
        let message = FCMMessage(
            token: "t", notification: .init(title: "Alice", body: "Hi"),
            data: ["small": "x", "large": String(repeating: "\"", count: 3_000), "medium": String(repeating: "é", count: 400)])
        let fitted = message.fitted()
        #expect(message.payloadBytes > FCMMessage.maximumPayloadBytes)
        #expect(fitted.payloadBytes <= FCMMessage.maximumPayloadBytes)
        #expect(fitted.data.keys.sorted() == ["medium", "small"])
        let small = FCMMessage(token: "t", notification: .init(title: "Alice", body: "Hi"), data: ["a": "b"])
        #expect(small.fitted() == small)
    }

    /// What is sent is written straight into JSON text; it must say exactly what the message's values say.
    /// A template that repeats the preview (accepted: each template is short) can make an alert longer than
    /// FCM takes: the longer text loses its end, whole characters, and the alert still goes.
    @Test func anAlertTooLongForFCMLosesTheEndOfItsText() {
        let family = "👨‍👩‍👧‍👦"
        let preview = String(repeating: family, count: 80)
        let message = FCMMessage(
            token: "t", notification: .init(title: "Alice", body: "\(preview) \(preview) \(preview)"), data: ["conversationId": "c1"]
        ).fitted()
        #expect(message.payloadBytes <= FCMMessage.maximumPayloadBytes)
        #expect(message.payloadBytes > FCMMessage.maximumPayloadBytes - 200, "no more is cut than it takes")
        let body = message.notification?.body ?? ""
        #expect(body.hasSuffix("…") && body.dropLast().allSatisfy { $0 == Character(family) || $0 == " " })
        #expect(message.notification?.title == "Alice")
    }

    @Test func theTextSentIsTheMessageAsValues() throws {
        var rng = SeededRandom(seed: 11)
        let pieces = ["a", "é", "🍝", "\"", "\\", "\n", "\u{1}", "Family", " "]
        func text() -> String { (0..<Int.random(in: 0...12, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined() }
        func maybe<T>(_ value: @autoclosure () -> T) -> T? { Bool.random(using: &rng) ? value() : nil }
        for _ in 0..<1_000 {
            let localization = maybe(
                FCMMessage.Localization(
                    titleKey: maybe(text()), titleArguments: Bool.random(using: &rng) ? [text(), text()] : [], bodyKey: maybe(text()),
                    bodyArguments: Bool.random(using: &rng) ? [text()] : []))
            let message = FCMMessage(
                token: text(), notification: maybe(FCMMessage.Notification(title: maybe(text()), body: maybe(text()))),
                data: Dictionary((0..<Int.random(in: 0...4, using: &rng)).map { _ in (text(), text()) }, uniquingKeysWith: { $1 }),
                android: maybe(
                    FCMMessage.Android(
                        priority: maybe(.high), collapseKey: maybe(text()), tag: maybe(text()), channelID: maybe(text()),
                        notificationCount: maybe(Int.random(in: 0...99, using: &rng)), clickAction: maybe(text()), localization: localization)),
                apns: maybe(
                    FCMMessage.APNs(
                        priority: maybe(10), pushType: maybe(.alert), collapseID: maybe(text()), alert: maybe(FCMMessage.Notification(title: maybe(text()))),
                        badge: maybe(3), sound: maybe("default"), threadID: maybe(text()), category: maybe(text()), localization: localization,
                        mutableContent: Bool.random(using: &rng), contentAvailable: Bool.random(using: &rng))),
                analyticsLabel: maybe(text()))
            #expect(try JSONValue(parsing: message.messageText(token: message.token)) == message.json, "\(message)")
        }
    }
}

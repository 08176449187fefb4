import FirestoreModel
import HeraldCore
import HeraldTesting
import Testing

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
}

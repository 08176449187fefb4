import HeraldCore
import Testing
import WireFormats

/// The same alert in each service's form: the same title, body, badge and data everywhere, FCM's
/// collapse identifiers in each service's names, and each form within its service's 4,096 bytes.
@Suite struct PushMessageFormsTests {
    static let alert = FCMMessage(
        token: "t", notification: .init(title: "Family", body: "Alice: Dinner at 6pm"),
        data: ["conversationId": "family", "messageId": "m1", "threadId": "family", "type": "text"],
        android: .init(priority: .high, collapseKey: "m1", tag: "family", channelID: "messages", notificationCount: 3),
        apns: .init(
            priority: 10, pushType: .alert, collapseID: "m1", alert: .init(title: "Family", body: "Alice: Dinner at 6pm"), badge: 3, sound: "default",
            threadID: "family", category: "HERALD_MESSAGE"))

    @Test func anAlertForExpoCarriesWhatFCMsCarries() throws {
        let expo = try JSONValue(parsing: Array(Self.alert.expoMessageText(to: "ExponentPushToken[abc]").utf8))
        #expect(expo["to"]?.stringValue == "ExponentPushToken[abc]")
        #expect(expo["title"]?.stringValue == "Family")
        #expect(expo["body"]?.stringValue == "Alice: Dinner at 6pm")
        #expect(expo["badge"]?.int64Value == 3)
        #expect(expo["sound"]?.stringValue == "default")
        #expect(expo["threadId"]?.stringValue == "family")
        #expect(expo["collapseId"]?.stringValue == "m1")
        #expect(expo["channelId"]?.stringValue == "messages")
        #expect(expo["categoryId"]?.stringValue == "HERALD_MESSAGE")
        #expect(expo["priority"]?.stringValue == "high")
        #expect(expo["data"]?["messageId"]?.stringValue == "m1")
        #expect(expo["_contentAvailable"] == nil)
    }

    @Test func aBadgeUpdateIsSilentInEveryForm() throws {
        let badge = FCMMessage.badgeOnly(token: "t", badge: 0, data: ["conversationId": "family", "reason": "read"])
        let expo = try JSONValue(parsing: Array(badge.expoMessageText(to: "ExponentPushToken[abc]").utf8))
        #expect(expo["title"] == nil && expo["body"] == nil)
        #expect(expo["badge"]?.int64Value == 0)
        #expect(expo["_contentAvailable"]?.boolValue == true)
        #expect(expo["priority"]?.stringValue == "normal")
        let apns = badge.apnsNotification
        #expect(apns.pushType == "background")
        #expect(apns.priority == 5)
        let payload = try JSONValue(parsing: Array(apns.payload.utf8))
        #expect(payload["aps"]?["alert"] == nil)
        #expect(payload["aps"]?["content-available"]?.int64Value == 1)
        #expect(payload["aps"]?["badge"]?.int64Value == 0)
        #expect(payload["reason"]?.stringValue == "read")
    }

    @Test func anAlertForAPNsIsTheApnsBlockWithTheDataBesideIt() throws {
        let apns = Self.alert.apnsNotification
        #expect(apns.pushType == "alert")
        #expect(apns.priority == 10)
        #expect(apns.collapseID == "m1")
        let payload = try JSONValue(parsing: Array(apns.payload.utf8))
        #expect(payload["aps"]?["alert"]?["title"]?.stringValue == "Family")
        #expect(payload["aps"]?["badge"]?.int64Value == 3)
        #expect(payload["aps"]?["thread-id"]?.stringValue == "family")
        #expect(payload["aps"]?["category"]?.stringValue == "HERALD_MESSAGE")
        #expect(payload["aps"]?["content-available"] == nil)
        #expect(payload["conversationId"]?.stringValue == "family")
        // FCM's own form of the same block: the same aps.
        let fcm = Self.alert.json["apns"]?["payload"]?["aps"]
        #expect(payload["aps"] == fcm)
    }

    @Test func aLongAlertFitsEachServicesLimit() throws {
        var long = Self.alert
        long.notification?.body = String(repeating: "🍝 pasta ", count: 600)
        long.apns?.alert?.body = long.notification?.body
        long.data["preview"] = String(repeating: "x", count: 2_000)
        let expo = long.fittedForExpo().expoMessageText(to: "ExponentPushToken[abc]")
        #expect(long.expoPayloadBytes > FCMMessage.maximumExpoPayloadBytes)
        #expect(long.fittedForExpo().expoPayloadBytes <= FCMMessage.maximumExpoPayloadBytes)
        #expect((try JSONValue(parsing: Array(expo.utf8)))["body"]?.stringValue?.hasSuffix("…") == true)
        let apns = long.apnsNotification
        #expect(apns.payload.utf8.count <= APNsNotification.maximumPayloadBytes)
        #expect((try JSONValue(parsing: Array(apns.payload.utf8)))["aps"]?["alert"]?["title"]?.stringValue == "Family")
    }
}

import FirestoreModel
import WireFormats

/// An FCM HTTP v1 `Message` to one device token, with the Android and APNs options Herald uses.
public struct FCMMessage: Sendable, Hashable {
    public struct Notification: Sendable, Hashable {
        public var title: String?
        public var body: String?
        public init(title: String? = nil, body: String? = nil) {
            self.title = title
            self.body = body
        }
    }

    /// Keys of strings the app ships in its own languages, with their arguments, so each device shows
    /// the notification in its language; the plain title and body stay as the fallback.
    public struct Localization: Sendable, Hashable {
        public var titleKey: String?
        public var titleArguments: [String]
        public var bodyKey: String?
        public var bodyArguments: [String]
        public init(titleKey: String? = nil, titleArguments: [String] = [], bodyKey: String? = nil, bodyArguments: [String] = []) {
            self.titleKey = titleKey
            self.titleArguments = titleArguments
            self.bodyKey = bodyKey
            self.bodyArguments = bodyArguments
        }

        /// The keys and their arguments under Android's or APNs's member names (arguments only when there are some).
        func add(to object: inout [String: JSONValue], titleKey: String, titleArguments: String, bodyKey: String, bodyArguments: String) {
            if let key = self.titleKey {
                object[titleKey] = .string(key)
                if !self.titleArguments.isEmpty { object[titleArguments] = .array(self.titleArguments.map { .string($0) }) }
            }
            if let key = self.bodyKey {
                object[bodyKey] = .string(key)
                if !self.bodyArguments.isEmpty { object[bodyArguments] = .array(self.bodyArguments.map { .string($0) }) }
            }
        }
    }

    public struct Android: Sendable, Hashable {
        public enum Priority: String, Sendable { case normal, high }
        public var priority: Priority?
        public var collapseKey: String?
        public var tag: String?
        public var channelID: String?
        public var notificationCount: Int?
        public var clickAction: String?
        public var localization: Localization?
        public init(
            priority: Priority? = nil, collapseKey: String? = nil, tag: String? = nil, channelID: String? = nil,
            notificationCount: Int? = nil, clickAction: String? = nil, localization: Localization? = nil
        ) {
            self.priority = priority
            self.collapseKey = collapseKey
            self.tag = tag
            self.channelID = channelID
            self.notificationCount = notificationCount
            self.clickAction = clickAction
            self.localization = localization
        }
    }

    public struct APNs: Sendable, Hashable {
        public enum PushType: String, Sendable { case alert, background }
        /// `apns-priority`: 10 immediate, 5 power-saving (required for background pushes).
        public var priority: Int?
        public var pushType: PushType?
        public var collapseID: String?
        public var alert: Notification?
        public var badge: Int?
        public var sound: String?
        public var threadID: String?
        /// The notification category the app registered (its actions: reply, mark as read).
        public var category: String?
        public var localization: Localization?
        public var mutableContent: Bool
        public var contentAvailable: Bool
        public init(
            priority: Int? = nil, pushType: PushType? = nil, collapseID: String? = nil, alert: Notification? = nil, badge: Int? = nil,
            sound: String? = nil, threadID: String? = nil, category: String? = nil, localization: Localization? = nil,
            mutableContent: Bool = false, contentAvailable: Bool = false
        ) {
            self.priority = priority
            self.pushType = pushType
            self.collapseID = collapseID
            self.alert = alert
            self.badge = badge
            self.sound = sound
            self.threadID = threadID
            self.category = category
            self.localization = localization
            self.mutableContent = mutableContent
            self.contentAvailable = contentAvailable
        }
    }

    public var token: String
    public var notification: Notification?
    /// FCM data values are strings only.
    public var data: [String: String]
    public var android: Android?
    public var apns: APNs?
    public var analyticsLabel: String?

    public init(
        token: String, notification: Notification? = nil, data: [String: String] = [:], android: Android? = nil,
        apns: APNs? = nil, analyticsLabel: String? = nil
    ) {
        self.token = token
        self.notification = notification
        self.data = data
        self.android = android
        self.apns = apns
        self.analyticsLabel = analyticsLabel
    }

    /// A push that only sets the app's badge: nothing shown, no sound, delivered in the background.
    /// `data` carries `type: badge` and `badge`, beside what the caller adds (why, which conversation).
    public static func badgeOnly(token: String, badge: Int, data: [String: String] = [:]) -> FCMMessage {
        var data = data
        data["type"] = "badge"
        data["badge"] = String(badge)
        return FCMMessage(
            token: token, data: data, android: .init(priority: .normal),
            apns: .init(priority: 5, pushType: .background, badge: badge, contentAvailable: true)
        ).fitted()
    }

    /// The badge this message carries (APNs `badge`, Android `notification_count`), if any.
    public var badge: Int? { apns?.badge ?? android?.notificationCount }

    /// The same message carrying `badge` wherever it carries one (APNs, Android, a `badge` data value).
    public func withBadge(_ badge: Int) -> FCMMessage {
        var message = self
        if message.apns?.badge != nil { message.apns?.badge = badge }
        if message.android?.notificationCount != nil { message.android?.notificationCount = badge }
        if message.data["badge"] != nil { message.data["badge"] = String(badge) }
        return message.fitted()
    }

    /// FCM refuses a message whose `data` and `notification` together exceed this (as JSON).
    public static let maximumPayloadBytes = 4096

    /// The size FCM counts against `maximumPayloadBytes`.
    public var payloadBytes: Int { JSONValue.object(countedMembers).serialized().utf8.count }

    /// At least `payloadBytes`, without writing the JSON: every byte counted as escaped at its worst.
    public var payloadBytesBound: Int {
        func bound(_ text: String) -> Int {
            var text = text
            return text.withUTF8 { bytes in
                var length = 2
                for byte in bytes { length += byte < 0x20 ? 6 : (byte == 0x22 || byte == 0x5C || byte >= 0x80 ? 2 : 1) }
                return length
            }
        }
        var total = 64  // {"data":{},"notification":{"body":,"title":}} and more
        for (key, value) in data { total += bound(key) + bound(value) + 2 }
        if let notification { total += (notification.title.map(bound) ?? 0) + (notification.body.map(bound) ?? 0) }
        return total
    }

    /// A looser bound than `payloadBytesBound` that reads no text (UTF-8 counts of native strings are
    /// stored): every byte as if escaped to six.
    public var cheapPayloadBytesBound: Int {
        func bound(_ text: String) -> Int { 2 + 6 * text.utf8.count }
        var total = 64
        for (key, value) in data { total += bound(key) + bound(value) + 2 }
        if let notification { total += (notification.title.map(bound) ?? 0) + (notification.body.map(bound) ?? 0) }
        return total
    }

    /// `notification` and `data`, the members FCM counts.
    var countedMembers: [String: JSONValue] {
        var members: [String: JSONValue] = [:]
        if let notification { members["notification"] = Self.json(notification) }
        if !data.isEmpty { members["data"] = .object(data.mapValues { .string($0) }) }
        return members
    }

    /// The message fitted to FCM's payload limit, the largest piece giving way first: a data value is
    /// dropped (ids a client chose can be long), a notification text loses its end (a template that
    /// repeats the preview). A notification that FCM refuses reaches nobody.
    public func fitted() -> FCMMessage {
        guard cheapPayloadBytesBound > Self.maximumPayloadBytes, payloadBytesBound > Self.maximumPayloadBytes else { return self }
        return fitted(within: Self.maximumPayloadBytes, size: \.payloadBytes)
    }

    /// The message cut as `fitted()` cuts it until `size` of it is at most `limit` bytes (another
    /// service's payload: APNs counts its `aps` and the data, Expo its whole message).
    public func fitted(within limit: Int, size: (FCMMessage) -> Int) -> FCMMessage {
        var message = self
        while case let excess = size(message) - limit, excess > 0 {
            let largest = message.data.max { $0.value.utf8.count < $1.value.utf8.count }
            let body = message.notification?.body ?? ""
            let title = message.notification?.title ?? ""
            let longestText = max(body.utf8.count, title.utf8.count)
            if let largest, largest.value.utf8.count >= longestText || longestText <= DisplayedText.ellipsis.utf8.count {
                message.data[largest.key] = nil
            } else if longestText > DisplayedText.ellipsis.utf8.count {
                // Whole characters cut, each at least its UTF-8 bytes in the JSON, until `excess` is gone.
                if body.utf8.count >= title.utf8.count {
                    message.notification?.body = DisplayedText.bounded(body, characters: .max, bytes: body.utf8.count - excess)
                } else {
                    message.notification?.title = DisplayedText.bounded(title, characters: .max, bytes: title.utf8.count - excess)
                }
            } else {
                break
            }
        }
        return message
    }

    /// The `message` object of `projects.messages.send`, field for field as Google documents it.
    public var json: JSONValue {
        var message = contentMembers
        message["token"] = .string(token)
        return .object(message)
    }

    /// The message object without its `token`: the same for every device of one user.
    public var content: JSONValue { .object(contentMembers) }

    var contentMembers: [String: JSONValue] {
        var message = countedMembers
        if let android {
            var a: [String: JSONValue] = [:]
            if let p = android.priority { a["priority"] = .string(p.rawValue) }
            if let c = android.collapseKey { a["collapse_key"] = .string(c) }
            var n: [String: JSONValue] = [:]
            if let t = android.tag { n["tag"] = .string(t) }
            if let c = android.channelID { n["channel_id"] = .string(c) }
            if let c = android.notificationCount { n["notification_count"] = .integer(c) }
            if let c = android.clickAction { n["click_action"] = .string(c) }
            if let l = android.localization {
                l.add(to: &n, titleKey: "title_loc_key", titleArguments: "title_loc_args", bodyKey: "body_loc_key", bodyArguments: "body_loc_args")
            }
            if !n.isEmpty { a["notification"] = .object(n) }
            message["android"] = .object(a)
        }
        if let apns {
            var headers: [String: JSONValue] = [:]
            if let p = apns.priority { headers["apns-priority"] = .string(String(p)) }
            if let t = apns.pushType { headers["apns-push-type"] = .string(t.rawValue) }
            if let c = apns.collapseID { headers["apns-collapse-id"] = .string(c) }
            var aps: [String: JSONValue] = [:]
            if var alert = apns.alert.map(Self.json)?.objectValue {
                apns.localization?.add(to: &alert, titleKey: "title-loc-key", titleArguments: "title-loc-args", bodyKey: "loc-key", bodyArguments: "loc-args")
                aps["alert"] = .object(alert)
            }
            if let b = apns.badge { aps["badge"] = .integer(b) }
            if let s = apns.sound { aps["sound"] = .string(s) }
            if let t = apns.threadID { aps["thread-id"] = .string(t) }
            if let c = apns.category { aps["category"] = .string(c) }
            if apns.mutableContent { aps["mutable-content"] = 1 }
            if apns.contentAvailable { aps["content-available"] = 1 }
            var a: [String: JSONValue] = [:]
            if !headers.isEmpty { a["headers"] = .object(headers) }
            if !aps.isEmpty { a["payload"] = ["aps": .object(aps)] }
            message["apns"] = .object(a)
        }
        if let label = analyticsLabel { message["fcm_options"] = ["analytics_label": .string(label)] }
        return message
    }

    static func json(_ n: Notification) -> JSONValue {
        var o: [String: JSONValue] = [:]
        if let t = n.title { o["title"] = .string(t) }
        if let b = n.body { o["body"] = .string(b) }
        return .object(o)
    }
}

import WireFormats

/// One notification as Apple's APNs takes it over HTTP/2 (`POST /3/device/<token>`): the headers that
/// say what it is and the JSON payload. The provider token and `apns-topic` are the sender's.
public struct APNsNotification: Sendable, Hashable {
    /// `apns-push-type`: `alert` or `background`.
    public var pushType: String
    /// `apns-priority`: 10 delivers at once, 5 when the device saves power (background pushes must be 5).
    public var priority: Int
    /// `apns-collapse-id`: at most 64 bytes; a device shows one notification per id.
    public var collapseID: String?
    /// `{"aps": {…}, …data}`, at most `maximumPayloadBytes`.
    public var payload: String

    /// APNs refuses a larger payload (`PayloadTooLarge`).
    public static let maximumPayloadBytes = 4096

    public init(pushType: String, priority: Int, collapseID: String?, payload: String) {
        self.pushType = pushType
        self.priority = priority
        self.collapseID = collapseID
        self.payload = payload
    }
}

extension FCMMessage {
    /// The same notification as APNs takes it from a provider: the `aps` dictionary FCM's `apns` block
    /// carries (alert, localization keys, badge, sound, thread, category, content flags) and the data
    /// values beside it at the top level, as FCM delivers them to an iOS app. Fitted to APNs's limit.
    public var apnsNotification: APNsNotification {
        let message =
            cheapPayloadBytesBound + 512 > APNsNotification.maximumPayloadBytes
            ? fitted(within: APNsNotification.maximumPayloadBytes, size: { $0.apnsPayloadText.utf8.count }) : self
        let silent = message.notification == nil && message.apns?.alert == nil
        return APNsNotification(
            pushType: message.apns?.pushType?.rawValue ?? (silent ? "background" : "alert"),
            priority: silent ? 5 : message.apns?.priority ?? 10,
            collapseID: message.apns?.collapseID, payload: message.apnsPayloadText)
    }

    var apnsPayloadText: String {
        var payload = JSONObjectWriter()
        payload.key("aps")
        var aps = JSONObjectWriter()
        // The text `fitted` cuts is the notification's; the `apns` block's alert repeats it for FCM.
        if let alert = notification ?? apns?.alert {
            aps.key("alert")
            var object = JSONObjectWriter()
            Self.write(alert, to: &object)
            apns?.localization?.write(
                to: &object, titleKey: "title-loc-key", titleArguments: "title-loc-args", bodyKey: "loc-key", bodyArguments: "loc-args")
            aps.out += object.finished
        }
        aps.integer("badge", badge)
        aps.string("sound", apns?.sound)
        aps.string("thread-id", apns?.threadID)
        aps.string("category", apns?.category)
        if apns?.mutableContent == true { aps.integer("mutable-content", 1) }
        if apns?.contentAvailable == true || (notification == nil && apns?.alert == nil) { aps.integer("content-available", 1) }
        payload.out += aps.finished
        for key in data.keys.sorted() where key != "aps" { payload.string(key, data[key]) }
        return payload.finished
    }
}

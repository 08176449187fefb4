import FirestoreModel
import WireFormats

/// JSON text written member by member, for messages sent often: no tree of values in between.
struct JSONObjectWriter {
    var out: String
    var first = true

    init(into out: String = "") { self.out = out + "{" }

    mutating func key(_ name: String) {
        if !first { out += "," }
        first = false
        JSONValue.writeString(name, to: &out)
        out += ":"
    }

    mutating func string(_ name: String, _ value: String?) {
        guard let value else { return }
        key(name)
        JSONValue.writeString(value, to: &out)
    }

    mutating func integer(_ name: String, _ value: Int?) {
        guard let value else { return }
        key(name)
        out += String(value)
    }

    mutating func strings(_ name: String, _ values: [String]) {
        key(name)
        out += "["
        for (index, value) in values.enumerated() {
            if index > 0 { out += "," }
            JSONValue.writeString(value, to: &out)
        }
        out += "]"
    }

    /// A member whose value is an object `body` writes; left out when `body` writes nothing.
    mutating func object(_ name: String, _ body: (inout JSONObjectWriter) -> Void) {
        var nested = JSONObjectWriter()
        body(&nested)
        guard !nested.first else { return }
        key(name)
        out += nested.finished
    }

    var finished: String { out + "}" }
}

extension FCMMessage {
    /// The `message` object of `projects.messages.send` for `token`, as JSON text: the same members as
    /// `json` (which builds them as values, for reports and tests), written straight into the text.
    public func messageText(token: String) -> String {
        var message = JSONObjectWriter()
        message.string("token", token)
        if let notification {
            message.key("notification")
            var object = JSONObjectWriter()
            Self.write(notification, to: &object)
            message.out += object.finished
        }
        if !data.isEmpty {
            message.object("data") { object in
                for key in data.keys.sorted() { object.string(key, data[key]) }
            }
        }
        if let android {
            message.key("android")
            var a = JSONObjectWriter()
            a.string("priority", android.priority?.rawValue)
            a.string("collapse_key", android.collapseKey)
            a.object("notification") { n in
                n.string("tag", android.tag)
                n.string("channel_id", android.channelID)
                n.integer("notification_count", android.notificationCount)
                n.string("click_action", android.clickAction)
                android.localization?.write(
                    to: &n, titleKey: "title_loc_key", titleArguments: "title_loc_args", bodyKey: "body_loc_key", bodyArguments: "body_loc_args")
            }
            message.out += a.finished
        }
        if let apns {
            message.key("apns")
            var a = JSONObjectWriter()
            a.object("headers") { headers in
                headers.string("apns-priority", apns.priority.map(String.init))
                headers.string("apns-push-type", apns.pushType?.rawValue)
                headers.string("apns-collapse-id", apns.collapseID)
            }
            a.object("payload") { payload in
                payload.object("aps") { aps in
                    if let alert = apns.alert {
                        aps.key("alert")
                        var object = JSONObjectWriter()
                        Self.write(alert, to: &object)
                        apns.localization?.write(
                            to: &object, titleKey: "title-loc-key", titleArguments: "title-loc-args", bodyKey: "loc-key", bodyArguments: "loc-args")
                        aps.out += object.finished
                    }
                    aps.integer("badge", apns.badge)
                    aps.string("sound", apns.sound)
                    aps.string("thread-id", apns.threadID)
                    aps.string("category", apns.category)
                    if apns.mutableContent { aps.integer("mutable-content", 1) }
                    if apns.contentAvailable { aps.integer("content-available", 1) }
                }
            }
            message.out += a.finished
        }
        if let analyticsLabel { message.object("fcm_options") { $0.string("analytics_label", analyticsLabel) } }
        return message.finished
    }

    static func write(_ notification: Notification?, to object: inout JSONObjectWriter) {
        object.string("title", notification?.title)
        object.string("body", notification?.body)
    }
}

extension FCMMessage.Localization {
    func write(to object: inout JSONObjectWriter, titleKey: String, titleArguments: String, bodyKey: String, bodyArguments: String) {
        if let key = self.titleKey {
            object.string(titleKey, key)
            if !self.titleArguments.isEmpty { object.strings(titleArguments, self.titleArguments) }
        }
        if let key = self.bodyKey {
            object.string(bodyKey, key)
            if !self.bodyArguments.isEmpty { object.strings(bodyArguments, self.bodyArguments) }
        }
    }
}

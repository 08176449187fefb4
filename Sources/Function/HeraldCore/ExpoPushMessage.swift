import WireFormats

extension FCMMessage {
    /// Expo counts a message's payload against this, as FCM and APNs do theirs.
    public static let maximumExpoPayloadBytes = 4096

    /// The same notification as Expo's push service takes it (`POST /--/api/v2/push/send`, one element
    /// of its array), to `token`: the title and body, the data, and what FCM's Android and APNs blocks
    /// say in Expo's names (`badge`, `sound`, `threadId`, `collapseId`, `channelId`, `categoryId`,
    /// `priority`, `mutableContent`). A badge-only push is a background one (`_contentAvailable`), with
    /// no title or body. Localization keys have no Expo field: the plain title and body are what shows.
    public func expoMessageText(to token: String) -> String {
        var message = JSONObjectWriter()
        message.string("to", token)
        writeExpoMembers(to: &message)
        return message.finished
    }

    /// The members but `to`: what Expo counts against `maximumExpoPayloadBytes`.
    public var expoPayloadBytes: Int {
        var message = JSONObjectWriter()
        writeExpoMembers(to: &message)
        return message.finished.utf8.count
    }

    /// Fitted to Expo's payload limit, as `fitted()` fits FCM's.
    public func fittedForExpo() -> FCMMessage {
        guard cheapPayloadBytesBound + 512 > Self.maximumExpoPayloadBytes else { return self }
        return fitted(within: Self.maximumExpoPayloadBytes, size: \.expoPayloadBytes)
    }

    func writeExpoMembers(to message: inout JSONObjectWriter) {
        let shown = notification ?? apns?.alert
        message.string("title", shown?.title)
        message.string("body", shown?.body)
        if !data.isEmpty {
            message.object("data") { object in
                for key in data.keys.sorted() { object.string(key, data[key]) }
            }
        }
        message.integer("badge", badge)
        message.string("sound", apns?.sound)
        message.string("threadId", apns?.threadID)
        message.string("collapseId", apns?.collapseID ?? android?.collapseKey)
        message.string("channelId", android?.channelID)
        message.string("categoryId", apns?.category)
        let silent = shown == nil
        // Expo's `priority`: `high` wakes the device (an alert), `normal` does not (a badge update).
        let high = android?.priority == .high || (apns?.priority ?? 0) >= 10
        message.string("priority", silent ? "normal" : high ? "high" : "default")
        if apns?.mutableContent == true { message.boolean("mutableContent", true) }
        if silent || apns?.contentAvailable == true { message.boolean("_contentAvailable", true) }
    }
}

extension JSONObjectWriter {
    mutating func boolean(_ name: String, _ value: Bool?) {
        guard let value else { return }
        key(name)
        out += value ? "true" : "false"
    }
}

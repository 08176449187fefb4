import FirestoreModel
import HeraldCore
import WireFormats
import ZoneInfo

/// Whether a recipient hears a message (an alert) or only sees their badge change (a silent update),
/// from what they set: a mute on the conversation (for good or until a time), a level for it (`all`,
/// `mentions`, `none`), a snooze, quiet hours in their own time zone; and whether the message
/// mentions them. All of it is stored by clients, so anything unreadable counts as not set.
struct NotificationPreferences {
    enum Level: String { case all, mentions, none }

    enum Decision: Equatable {
        case alert(mentioned: Bool)
        /// Badge only; the reason is what the app is told (`data.reason`) and what tests check.
        case silent(reason: String)
    }

    /// How many `@` marks and mention ids of one message are looked at: a message cannot make the plan slow.
    static let maximumMentionMarks = 64

    let schema: Schema
    let timeZones: TimeZones

    /// The order is the product's: `none` silences everything; a mute or the `mentions` level lets
    /// only mentions through; do-not-disturb lets mentions through only if the user said so.
    func decision(
        for recipient: String, user: FirestoreDocument, conversation: FirestoreDocument, isGroup: Bool, mentioned: Bool,
        at now: Timestamp, warnings: inout [String]
    ) -> Decision {
        let level = level(of: recipient, in: conversation)
        if level == .none { return .silent(reason: "level-none") }
        if isMuted(recipient, conversation: conversation, at: now), !mentioned { return .silent(reason: "muted") }
        if isGroup, level == .mentions, !mentioned { return .silent(reason: "level-mentions") }
        if let doNotDisturb = doNotDisturb(user, at: now, warnings: &warnings), !(mentioned && doNotDisturb.allowsMentions) {
            return .silent(reason: doNotDisturb.reason)
        }
        return .alert(mentioned: mentioned)
    }

    func level(of user: String, in conversation: FirestoreDocument) -> Level {
        guard let field = schema.notificationLevelField, let text = conversation.value(at: [field, user])?.stringValue else { return .all }
        return Level(rawValue: text.lowercased()) ?? .all
    }

    func isMuted(_ user: String, conversation: FirestoreDocument, at now: Timestamp) -> Bool {
        if let field = schema.mutedByField, conversation[field]?.arrayValue?.contains(.string(user)) == true { return true }
        guard let field = schema.mutedUntilField, let until = conversation.value(at: [field, user]) else { return false }
        if until == .boolean(true) { return true }
        return schema.time(until).map { now < $0 } ?? false
    }

    /// Snoozed, or inside quiet hours now: why, and whether mentions still alert.
    func doNotDisturb(_ user: FirestoreDocument, at now: Timestamp, warnings: inout [String]) -> (reason: String, allowsMentions: Bool)? {
        let quietHours = schema.quietHoursField.flatMap { user[$0]?.mapValue }
        let allowsMentions = quietHours?["allowMentions"]?.booleanValue ?? false
        if let field = schema.snoozedUntilField, let until = schema.time(user[field]), now < until {
            return ("snoozed", allowsMentions)
        }
        guard let quietHours else { return nil }
        guard let start = Self.minuteOfDay(quietHours["start"]), let end = Self.minuteOfDay(quietHours["end"]) else {
            warnings.append("\(user.name.path) quietHours needs start and end as \"HH:mm\"; not applied")
            return nil
        }
        let zoneName = quietHours["timeZone"]?.stringValue ?? schema.timeZoneField.flatMap { user[$0]?.stringValue } ?? "UTC"
        guard let zone = timeZones.rules(named: zoneName) else {
            warnings.append("\(user.name.path) names an unknown time zone \"\(zoneName.prefix(64))\"; quiet hours not applied")
            return nil
        }
        let minute = zone.secondOfDay(at: now.seconds) / 60
        let isQuiet = start <= end ? (start <= minute && minute < end) : (minute >= start || minute < end)
        return isQuiet ? ("quiet-hours", allowsMentions) : nil
    }

    /// `"22:00"` or `"7:30"` as minutes after midnight; `"24:00"` is the end of the day.
    static func minuteOfDay(_ value: FirestoreValue?) -> Int? {
        guard let text = value?.stringValue, text.utf8.count <= 5 else { return nil }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[1].count == 2, let hours = Int(parts[0]), let minutes = Int(parts[1]),
            (0...24).contains(hours), (0..<60).contains(minutes), hours * 60 + minutes <= 1440
        else { return nil }
        return hours * 60 + minutes
    }

    /// The recipients the message mentions: by id in its mentions field, or as `@DisplayName` in its text
    /// (any case, ended by a non-letter), against the names their user documents hold.
    func mentioned(by message: FirestoreDocument, text: String?, recipients: [String], users: [String: User]) -> Set<String> {
        let isRecipient = Set(recipients)
        var found = Set<String>()
        if let field = schema.mentionsField, let ids = message[field]?.arrayValue {
            for id in ids.prefix(Self.maximumMentionMarks) {
                if let id = id.stringValue, isRecipient.contains(id) { found.insert(id) }
            }
        }
        guard let text, text.utf8.contains(UInt8(ascii: "@")) else { return found }
        let names: [(id: String, name: Substring)] = recipients.compactMap { id in
            guard !found.contains(id), let name = users[id]?.displayName?.trimmingWhitespace, !name.isEmpty,
                name.count <= 64
            else { return nil }
            return (id, Substring(name.lowercased()))
        }
        guard !names.isEmpty else { return found }
        var marks = 0
        var rest = Substring(text)
        while let at = rest.firstIndex(of: "@"), marks < Self.maximumMentionMarks {
            marks += 1
            rest = rest[rest.index(after: at)...]
            let candidate = rest.prefix(65).lowercased()
            for (id, name) in names where candidate.hasPrefix(name) {
                let after = candidate.dropFirst(name.count).first
                if after.map({ !$0.isLetter && !$0.isNumber }) ?? true { found.insert(id) }
            }
        }
        return found
    }
}

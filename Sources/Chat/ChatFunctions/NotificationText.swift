import HeraldCore

/// What a message's alert says: a title and a body for each kind of chat, with `{sender}`, `{group}`
/// and `{preview}` in them. Each preset has the text its product document fixes (docs/notifications.md);
/// a schema file can change any of it (`notificationText`).
public struct NotificationText: Sendable, Hashable {
    public var direct: Template
    public var group: Template
    /// A group message that mentions the recipient.
    public var mention: Template

    /// One kind's title (none: the device shows the app's name) and body, with the keys of their strings
    /// in the app's languages.
    public struct Template: Sendable, Hashable {
        public var title: Pattern?
        public var body: Pattern
    }

    /// A text with placeholders, and the key of its string in the app's languages (the placeholders'
    /// values are the key's arguments, in order). No key: devices show the English text.
    public struct Pattern: Sendable, Hashable {
        public enum Part: Sendable, Hashable {
            case text(String)
            case sender, group, preview
        }
        public var parts: [Part]
        public var key: String?

        public init(_ template: String, key: String? = nil) throws(SchemaError) {
            var parts: [Part] = []
            var rest = Substring(template)
            while let open = rest.firstIndex(of: "{") {
                if open > rest.startIndex { parts.append(.text(String(rest[..<open]))) }
                guard let close = rest[open...].firstIndex(of: "}") else { throw SchemaError("\"\(template)\": a \"{\" is not closed") }
                switch rest[rest.index(after: open)..<close] {
                case "sender": parts.append(.sender)
                case "group": parts.append(.group)
                case "preview": parts.append(.preview)
                case let name: throw SchemaError("\"\(template)\": unknown placeholder {\(name)}; use {sender}, {group} or {preview}")
                }
                rest = rest[rest.index(after: close)...]
            }
            if !rest.isEmpty { parts.append(.text(String(rest))) }
            self.parts = parts
            self.key = key
        }

        var placeholders: [Part] { parts.filter { if case .text = $0 { false } else { true } } }
    }

    /// The WhatsApp-style document's format (PRD 003): one line, "John: Hey, how are you?" and
    /// "Family • Alice: Dinner at 6pm"; no title, so the phone shows the app's name above it.
    public static let oneLine = NotificationText(
        direct: .init(title: nil, body: try! Pattern("{sender}: {preview}", key: "herald_direct_body")),
        group: .init(title: nil, body: try! Pattern("{group} • {sender}: {preview}", key: "herald_group_body")),
        mention: .init(title: nil, body: try! Pattern("{group} • {sender} mentioned you: {preview}", key: "herald_mention_body")))

    /// "Sender name and message preview" (PRDs 000, 001, 004): the sender (and the group) as the title,
    /// the preview as the body.
    public static let senderTitle = NotificationText(
        direct: .init(title: try! Pattern("{sender}"), body: try! Pattern("{preview}")),
        group: .init(title: try! Pattern("{sender} in {group}", key: "herald_group_message_title"), body: try! Pattern("{preview}")),
        mention: .init(title: try! Pattern("{sender} mentioned you in {group}", key: "herald_mention_title"), body: try! Pattern("{preview}")))

    func template(isGroup: Bool, mentioned: Bool) -> Template { isGroup ? (mentioned ? mention : group) : direct }
}

/// One alert's text, filled in.
struct FilledNotification {
    var title: String?
    var body: String
    var localization: FCMMessage.Localization?
    /// The whole alert on one line (`data.summary`): the body, after the title when there is one.
    var summary: String { title.map { "\($0): \(body)" } ?? body }

    /// `previewKey` is the key of a media label ("📷 Photo"); a message's own text has none.
    init(_ template: NotificationText.Template, sender: String, group: String?, preview: String, previewKey: String?) {
        func fill(_ pattern: NotificationText.Pattern) -> (text: String, key: String?, arguments: [String]) {
            var text = ""
            var arguments: [String] = []
            for part in pattern.parts {
                let value: String
                switch part {
                case .text(let literal):
                    text += literal
                    continue
                case .sender: value = sender
                case .group: value = group ?? ""
                case .preview: value = preview
                }
                text += value
                arguments.append(value)
            }
            // A part that is the preview alone is the preview's string: a media label's key, none for a text.
            if pattern.parts == [.preview] { return (text, previewKey, []) }
            return (text, pattern.key, pattern.key == nil ? [] : arguments)
        }
        let title = template.title.map(fill)
        let body = fill(template.body)
        self.title = title?.text
        self.body = body.text
        localization =
            title?.key == nil && body.key == nil
            ? nil
            : FCMMessage.Localization(
                titleKey: title?.key, titleArguments: title?.arguments ?? [], bodyKey: body.key, bodyArguments: body.arguments)
    }
}

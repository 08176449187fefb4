import FirestoreModel

/// Reads a schema JSON file over a preset, refusing unknown keys and wrong types by name.
enum SchemaFile {
    static var strings: [String: WritableKeyPath<Schema, String>] {
        [
            "messagePattern": \.messagePattern, "conversationCollection": \.conversationCollection, "groupNameField": \.groupNameField,
            "senderIDField": \.senderIDField, "textField": \.textField, "typeField": \.typeField, "timestampField": \.timestampField,
            "statusField": \.statusField, "unreadCountField": \.unreadCountField, "userCollection": \.userCollection,
            "displayNameField": \.displayNameField, "badgeField": \.badgeField, "readByField": \.readByField,
            "unreadMarkField": \.unreadMarkField, "onlineField": \.onlineField, "heartbeatField": \.heartbeatField,
        ]
    }
    static var optionalStrings: [String: WritableKeyPath<Schema, String?>] {
        [
            "conversationIDField": \.conversationIDField, "groupFlagField": \.groupFlagField, "groupTypeField": \.groupTypeField,
            "groupTypeValue": \.groupTypeValue, "senderNameField": \.senderNameField, "updatedAtField": \.updatedAtField,
            "viewingField": \.viewingField, "viewingAtField": \.viewingAtField, "mutedByField": \.mutedByField,
            "deliveredToField": \.deliveredToField, "readCountField": \.readCountField, "onlineStatusValue": \.onlineStatusValue,
            "offlineStatusValue": \.offlineStatusValue, "lastSeenField": \.lastSeenField, "typingField": \.typingField,
            "typingAtField": \.typingAtField, "tokensUpdatedAtField": \.tokensUpdatedAtField, "mutedUntilField": \.mutedUntilField,
            "notificationLevelField": \.notificationLevelField, "mentionsField": \.mentionsField, "quietHoursField": \.quietHoursField,
            "snoozedUntilField": \.snoozedUntilField, "timeZoneField": \.timeZoneField,
        ]
    }

    static func decode(_ json: JSONValue, name: String) throws(SchemaError) -> Schema {
        guard case .object(let members) = json else { throw SchemaError("must be a JSON object") }
        var schema = Schema.presets["default"]!
        if let base = members["extends"] {
            guard let baseName = base.stringValue, let preset = Schema.presets[baseName] else {
                throw SchemaError("key \"extends\" must name a preset (\(Schema.presets.keys.sorted().joined(separator: ", ")))")
            }
            schema = preset
        }
        schema.name = name
        for (key, value) in members.sorted(by: { $0.key < $1.key }) where key != "extends" {
            if let path = strings[key] {
                guard let text = value.stringValue, !text.isEmpty else { throw SchemaError("key \"\(key)\" must be a non-empty string") }
                schema[keyPath: path] = text
            } else if let path = optionalStrings[key] {
                guard value == .null || value.stringValue?.isEmpty == false else { throw SchemaError("key \"\(key)\" must be a non-empty string or null") }
                schema[keyPath: path] = value.stringValue
            } else if key == "memberFields" {
                guard let list = value.arrayValue?.compactMap(\.stringValue), !list.isEmpty, list.count == value.arrayValue?.count else {
                    throw SchemaError("key \"memberFields\" must be a non-empty array of strings")
                }
                schema.memberFields = list
            } else if key == "lastMessage" {
                schema.lastMessage = try lastMessage(value)
            } else if key == "tokens" {
                schema.tokens = try tokens(value)
            } else if key == "notificationText" {
                schema.notificationText = try notificationText(value, over: schema.notificationText)
            } else {
                throw SchemaError("unknown key \"\(key)\"")
            }
        }
        let segments = schema.messagePattern.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count % 2 == 0, segments.allSatisfy({ !$0.isEmpty }), segments.last?.hasPrefix("{") == true else {
            throw SchemaError("key \"messagePattern\" must be a document pattern like coll/{id}")
        }
        if segments.count == 2 && schema.conversationIDField == nil {
            throw SchemaError("key \"conversationIDField\" is needed when messages are a top-level collection")
        }
        if (schema.onlineStatusValue == nil) != (schema.offlineStatusValue == nil) {
            throw SchemaError("keys \"onlineStatusValue\" and \"offlineStatusValue\" go together: set both for a string status field, or neither for a boolean")
        }
        for (key, value) in [("conversationCollection", schema.conversationCollection), ("userCollection", schema.userCollection)] where value.contains("/") {
            throw SchemaError("key \"\(key)\" must be a top-level collection id")
        }
        return schema
    }

    static func lastMessage(_ value: JSONValue) throws(SchemaError) -> Schema.LastMessageShape {
        if let field = value["map"]?.stringValue { return .map(field: field) }
        guard case .object(let flat) = value["flat"] ?? .null else {
            throw SchemaError("key \"lastMessage\" must be {\"map\": FIELD} or {\"flat\": {text, senderID, senderName, timestamp}}")
        }
        return .flat(
            text: flat["text"]?.stringValue, senderID: flat["senderID"]?.stringValue,
            senderName: flat["senderName"]?.stringValue, timestamp: flat["timestamp"]?.stringValue)
    }

    static func tokens(_ value: JSONValue) throws(SchemaError) -> Schema.TokenStorage {
        if let field = value["single"]?.stringValue { return .single(field: field) }
        if let field = value["array"]?.stringValue { return .array(field: field) }
        if let field = value["mapKeys"]?.stringValue { return .mapKeys(field: field) }
        if let collection = value["subcollection"]?.stringValue { return .subcollection(collection: collection) }
        throw SchemaError("key \"tokens\" must be {\"single\"|\"array\"|\"mapKeys\"|\"subcollection\": NAME}")
    }

    /// `{"direct"|"group"|"mention": {"title": TEXT|null, "body": TEXT, "titleKey": KEY, "bodyKey": KEY}}`, each
    /// member over the preset's; a text given without its key is shown as it is (no localization key).
    static func notificationText(_ value: JSONValue, over preset: NotificationText) throws(SchemaError) -> NotificationText {
        let usage = "key \"notificationText\" must be {\"direct\"|\"group\"|\"mention\": {\"title\": TEXT or null, \"body\": TEXT, \"titleKey\", \"bodyKey\"}}"
        guard case .object(let kinds) = value else { throw SchemaError(usage) }
        var text = preset
        for (kind, members) in kinds.sorted(by: { $0.key < $1.key }) {
            let path: WritableKeyPath<NotificationText, NotificationText.Template>
            switch kind {
            case "direct": path = \.direct
            case "group": path = \.group
            case "mention": path = \.mention
            default: throw SchemaError("\(usage); not \"\(kind)\"")
            }
            guard case .object(let members) = members else { throw SchemaError(usage) }
            var template = text[keyPath: path]
            for name in members.keys where !["title", "body", "titleKey", "bodyKey"].contains(name) {
                throw SchemaError("key \"notificationText.\(kind)\" has an unknown member \"\(name)\"")
            }
            func pattern(_ name: String, key: String) throws(SchemaError) -> NotificationText.Pattern? {
                guard let value = members[name] else { return nil }
                guard let template = value.stringValue, (1...500).contains(template.utf8.count) else {
                    throw SchemaError("key \"notificationText.\(kind).\(name)\" must be a string of 1 to 500 bytes")
                }
                let key = members[key]?.stringValue
                let pattern: NotificationText.Pattern
                do { pattern = try NotificationText.Pattern(template, key: key) } catch {
                    throw SchemaError("key \"notificationText.\(kind).\(name)\": \(error)")
                }
                if kind == "direct" && pattern.parts.contains(.group) {
                    throw SchemaError("key \"notificationText.direct.\(name)\": a 1:1 chat has no {group}")
                }
                return pattern
            }
            if members["title"] == .null {
                template.title = nil
            } else if let title = try pattern("title", key: "titleKey") {
                template.title = title
            } else if let key = members["titleKey"] {
                template.title?.key = key.stringValue
            }
            if let body = try pattern("body", key: "bodyKey") {
                template.body = body
            } else if let key = members["bodyKey"] {
                template.body.key = key.stringValue
            }
            text[keyPath: path] = template
        }
        return text
    }
}

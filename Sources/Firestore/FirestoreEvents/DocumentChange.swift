import FirestoreModel

/// One Firestore change notification, whichever encoding it arrived in.
public struct DocumentChange: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case created, updated, deleted, written
    }

    public var eventID: String
    /// The trigger's kind. A `written` trigger fires for all three; see `effectiveKind`.
    public var kind: Kind
    public var time: Timestamp
    /// The changed document's full name (project, database and path relative to `documents/`).
    public var document: DocumentName
    public var oldDocument: FirestoreDocument?
    public var newDocument: FirestoreDocument?
    /// Field paths the update changed (updates only), in Firestore's canonical form.
    public var updateMask: [String]?
    /// The event came without its data, and the runtime read the document as it is now: what the
    /// write itself changed is unknown (the old document is not known).
    public var dataWasOmitted = false

    public init(
        eventID: String, kind: Kind, time: Timestamp, document: DocumentName,
        oldDocument: FirestoreDocument? = nil, newDocument: FirestoreDocument? = nil, updateMask: [String]? = nil
    ) {
        self.eventID = eventID
        self.kind = kind
        self.time = time
        self.document = document
        self.oldDocument = oldDocument
        self.newDocument = newDocument
        self.updateMask = updateMask
    }

    /// True when the event carried neither document: Eventarc leaves `data` empty when the document is
    /// too large for the event, and the function must read the document itself.
    public var isDataMissing: Bool { oldDocument == nil && newDocument == nil }

    /// The field paths an update changed, as an event's `updateMask` lists them: leaves inside maps
    /// that both versions hold, whole fields otherwise.
    public static func updateMask(_ old: [String: FirestoreValue], _ new: [String: FirestoreValue], prefix: [String] = []) -> [String] {
        var result: [String] = []
        for key in Set(old.keys).union(new.keys).sorted(by: ValueOrder.utf8Less) {
            let (a, b) = (old[key], new[key])
            if a == b { continue }
            if case .map(let x)? = a, case .map(let y)? = b {
                result += updateMask(x, y, prefix: prefix + [key])
            } else {
                result.append(FieldPath(prefix + [key]).description)
            }
        }
        return result
    }

    /// What actually happened to the document, also for `written` triggers.
    public var effectiveKind: Kind {
        switch (oldDocument, newDocument) {
        case (nil, .some): .created
        case (.some, nil): .deleted
        case (.some, .some): .updated
        case (nil, nil): kind
        }
    }
}

/// How an event reached Herald, and the envelope attributes that are not part of the change itself.
public struct EventEnvelope: Sendable, Hashable {
    public enum Encoding: String, Sendable, Hashable {
        case binaryProtobuf = "cloudevent-binary-protobuf"
        case binaryJSON = "cloudevent-binary-json"
        case structured = "cloudevent-structured"
        case legacy = "legacy"
    }

    public var encoding: Encoding
    /// The CloudEvent `type` or the legacy `eventType`.
    public var type: String
    public var source: String?
    public var location: String?
    public var namespace: String?
    /// `authtype` and `authid` of `.withAuthContext` events.
    public var authType: String?
    public var authID: String?

    public init(
        encoding: Encoding, type: String, source: String? = nil, location: String? = nil,
        namespace: String? = nil, authType: String? = nil, authID: String? = nil
    ) {
        self.encoding = encoding
        self.type = type
        self.source = source
        self.location = location
        self.namespace = namespace
        self.authType = authType
        self.authID = authID
    }
}

public struct DecodedEvent: Sendable, Hashable {
    public var change: DocumentChange
    public var envelope: EventEnvelope

    public init(change: DocumentChange, envelope: EventEnvelope) {
        self.change = change
        self.envelope = envelope
    }
}

/// Why a request is not a Firestore change notification Herald can act on. Never retried.
public struct EventDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    public var reason: String
    /// The event id, when the request got far enough to say it.
    public var eventID: String?
    public init(_ reason: String, eventID: String? = nil) {
        self.reason = reason
        self.eventID = eventID
    }
    public var description: String { reason }
}

import FirestoreModel
import WireFormats

/// What a function decided to do about one event. Built by a pure function; carried out by an executor.
public struct Plan: Sendable, Hashable {
    public enum Decision: Sendable, Hashable {
        case apply
        /// Nothing to do; the reason is logged and reported.
        case skip(reason: String)
        /// Nothing to do as the documents read stand, but they may stand so because this event's own
        /// earlier delivery made its first commit (onReadReceipt finds the receipts that commit made; a
        /// message onMessageCreated counted was deleted since). The executor then finishes what this
        /// event's ledger entry holds pending: its parts, and those of the plan's pushes still due.
        /// Without an entry it is a skip with the reason.
        case skipUnlessStarted(reason: String)
    }

    public var decision: Decision
    /// Committed atomically, in order, with the ledger entry that makes the event exactly once.
    public var writes: [Write]
    /// What grows with the audience, one group per recipient (their unread count, badge and mark). Each
    /// group is applied atomically and exactly once, with `writes` in one commit when everything fits,
    /// else in further commits that the ledger keeps until they are done. Their writes may only require
    /// that a document exists: a group whose document was deleted since is applied without that write.
    public var groups: [[Write]] = []
    /// Sent after the writes are durable; at most one per device token.
    public var pushes: [PushMessage]
    /// What the plan found wrong in the documents it read and worked around (a badge out of range,
    /// clamped): the runtime logs each as a WARNING.
    public var warnings: [String] = []

    /// A device token named twice (two users who both still hold a phone that changed accounts) gets
    /// the first push only: a device gets one notification per event, and the ledger counts by token.
    public init(writes: [Write], groups: [[Write]] = [], pushes: [PushMessage] = [], warnings: [String] = []) {
        self.decision = .apply
        self.writes = writes
        self.groups = groups.filter { !$0.isEmpty }
        self.warnings = warnings
        self.pushes = pushes.firstOccurrences { $0.token }
    }

    /// Everything the plan writes, as one commit would carry it: the groups merged into `writes`.
    public var allWrites: [Write] { groups.isEmpty ? writes : Write.merging(writes + groups.joined()) }

    /// How many writes `allWrites` holds, counted without merging them.
    public var allWritesCount: Int { groups.isEmpty ? writes.count : Write.mergedCount([writes] + groups) }

    public static func skip(_ reason: String) -> Plan {
        var plan = Plan(writes: [])
        plan.decision = .skip(reason: reason)
        return plan
    }

    /// See `Decision.skipUnlessStarted`: `pushes` are sent only where this event's ledger entry says they are due.
    public static func skipUnlessStarted(_ reason: String, pushes: [PushMessage] = [], warnings: [String] = []) -> Plan {
        var plan = Plan(writes: [], pushes: pushes, warnings: warnings)
        plan.decision = .skipUnlessStarted(reason: reason)
        return plan
    }
}

/// One FCM HTTP v1 message to one device token.
public struct PushMessage: Sendable, Hashable {
    /// The user the device belongs to (for removing the token if FCM reports it dead).
    public var userID: String
    public var token: String
    /// What the device is sent (its own `token` aside: one message serves all of a user's devices).
    public var fcm: FCMMessage
    /// How to remove this token from the user's storage if FCM reports it dead.
    public var removal: Write?
    /// Where the count this push carries (its badge) is stored. The plan's badge is what it read; the
    /// executor sends the value its commit produced there instead, and corrects the device when a later
    /// commit changed it before the push went out.
    public var count: CountSource?

    public init(userID: String, token: String, fcm: FCMMessage, removal: Write? = nil, count: CountSource? = nil) {
        self.userID = userID
        self.token = token
        self.fcm = fcm
        self.removal = removal
        self.count = count
    }

    /// The FCM v1 `message` object without `token` (notification, data, android, apns, fcm_options), as values.
    public var content: JSONValue { fcm.content }

    /// The FCM v1 `message` object, addressed to this device, as values (for reports).
    public var message: JSONValue {
        var members = fcm.contentMembers
        members["token"] = .string(token)
        return .object(members)
    }

    /// The same as JSON text, as it is sent.
    public var messageText: String { fcm.messageText(token: token) }

    /// The request body for `projects.messages.send`.
    public var requestBody: JSONValue { ["message": message] }
}

/// A stored count a push shows: a field of a document (a user's unread total).
public struct CountSource: Sendable, Hashable {
    public var document: DocumentName
    public var field: FieldPath

    public init(document: DocumentName, field: FieldPath) {
        self.document = document
        self.field = field
    }

    /// The count as a badge shows it: an integer clamped to what FCM and APNs take (a client may have
    /// stored anything); absent or not a number, 0.
    public static func badge(_ value: FirestoreValue?) -> Int {
        guard let stored = wholeNumber(value) else { return 0 }
        return Int(min(max(stored, 0), Int64(Int32.max)))
    }

    /// A count as stored: an integer, or the whole part of a finite double a client wrote (2.5 counts
    /// 2; increments keep a double a double, so it would never be an integer again); else nil.
    public static func wholeNumber(_ value: FirestoreValue?) -> Int64? {
        switch value {
        case .integer(let stored)?: return stored
        case .double(let stored)? where stored.isFinite:
            let whole = stored.rounded(.down)
            return whole >= 0x1p63 ? .max : whole < -0x1p63 ? .min : Int64(whole)
        default: return nil
        }
    }
}

import FirestoreModel

extension Schema {
    /// How the app keeps the times Herald reads and writes in its documents: message times, the last
    /// message's, `updatedAtField`, heartbeats and last seen, typing and viewing marks, mutes and snoozes.
    /// Firestore timestamps by default; apps that write `Date.now()` keep epoch milliseconds. Herald
    /// writes what the app does: Firestore orders a field's values by type first, so a list ordered by
    /// `updatedAt` would sort Herald's timestamps apart from the app's numbers, and a client reading a
    /// number would find a timestamp. Herald's own records (ledger, receipts, the `tokensUpdatedAtField`
    /// it stamps on a user document) stay timestamps, which a TTL policy needs; the time the app writes on
    /// a token document of its own may be either.
    public enum TimeFormat: String, Sendable, Hashable, CaseIterable {
        case timestamp
        case epochMilliseconds
        case epochSeconds
    }

    /// A time the app stored: a timestamp always (an app moving from timestamps to numbers keeps both for
    /// a while), a number in the schema's unit. A number under `timestamp`, anything else, and a time
    /// outside Firestore's range (years 1 to 9999) are no time.
    public func time(_ value: FirestoreValue?) -> Timestamp? {
        switch (value, timeFormat) {
        case (.timestamp(let time)?, _): return time
        case (.integer(let number)?, .epochSeconds): return Self.time(epoch: number, perSecond: 1)
        case (.integer(let number)?, .epochMilliseconds): return Self.time(epoch: number, perSecond: 1000)
        case (.double(let number)?, .epochSeconds): return Self.time(epoch: number, perSecond: 1)
        case (.double(let number)?, .epochMilliseconds): return Self.time(epoch: number, perSecond: 1000)
        default: return nil
        }
    }

    /// How far ahead of Firestore's clock a client's may run. Every time Herald orders or ages by is
    /// written by a client, and a client can write any time: one is trusted up to the time Firestore
    /// recorded the write that holds it plus this, and taken as that bound beyond it.
    public static let clockSkew = Duration.seconds(60)

    /// The time `field` of `document` holds, bounded by when Firestore recorded the document's last
    /// write plus `clockSkew` (a document without an update time is not bounded).
    func clientTime(_ field: String?, of document: FirestoreDocument) -> Timestamp? {
        guard let field, let written = time(document[field]) else { return nil }
        guard let bound = document.updateTime?.adding(Self.clockSkew) else { return written }
        return min(written, bound)
    }

    /// Whether a time lies beyond what any client's clock may claim at `now`.
    static func isFromTheFuture(_ time: Timestamp, at now: Timestamp) -> Bool { time > now.adding(clockSkew) }

    /// `number` units since 1970, `perSecond` of them a second; outside Firestore's range: nil.
    static func time(epoch number: Int64, perSecond: Int64, extraNanos: Int64 = 0) -> Timestamp? {
        // Floored, so a time before 1970 is a second earlier plus what is left of it.
        let (seconds, units) = (number.floorDivided(by: perSecond), number.floorRemainder(by: perSecond))
        return Timestamp(validSeconds: seconds, nanos: Int32(units * (1_000_000_000 / perSecond) + extraNanos))
    }

    static func time(epoch number: Double, perSecond: Int64) -> Timestamp? {
        // Checked before converting: a hostile 1e300 would trap in Int64(_:).
        guard number.isFinite, abs(number / Double(perSecond)) < Double(Timestamp.maximumSeconds + 1) else { return nil }
        let whole = number.rounded(.down)
        // What is left below one unit, in nanoseconds (under a million for milliseconds).
        let extra = min(Int64((number - whole) * Double(1_000_000_000 / perSecond)), 1_000_000_000 / perSecond - 1)
        return time(epoch: Int64(whole), perSecond: perSecond, extraNanos: extra)
    }

    /// `time` as the app keeps it (a number is cut to its unit).
    public func stored(_ time: Timestamp) -> FirestoreValue {
        switch timeFormat {
        case .timestamp: .timestamp(time)
        case .epochSeconds: .integer(time.seconds)
        case .epochMilliseconds: .integer(time.seconds * 1000 + Int64(time.nanos / 1_000_000))
        }
    }
}

extension Int64 {
    fileprivate func floorDivided(by divisor: Int64) -> Int64 {
        let (quotient, remainder) = quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? quotient - 1 : quotient
    }

    fileprivate func floorRemainder(by divisor: Int64) -> Int64 {
        let remainder = self % divisor
        return remainder < 0 ? remainder + divisor : remainder
    }
}

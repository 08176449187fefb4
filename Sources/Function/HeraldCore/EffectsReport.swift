import FirestoreEvents
import FirestoreModel
import WireFormats

/// What handling one event did (or, in a dry run, would do): the `invoke` command's output and the
/// basis of the serve log.
public struct EffectsReport: Sendable, Hashable {
    public enum Outcome: Sendable, Hashable {
        case applied
        case skipped(reason: String)
        /// The event was handled before (a redelivery); nothing was done again.
        case duplicate
    }

    public var function: String
    public var event: DecodedEvent
    public var outcome: Outcome
    public var documentsRead: DocumentsRead
    public var plan: Plan
    public var dryRun: Bool

    public init(function: String, event: DecodedEvent, outcome: Outcome, documentsRead: DocumentsRead, plan: Plan, dryRun: Bool) {
        self.function = function
        self.event = event
        self.outcome = outcome
        self.documentsRead = documentsRead
        self.plan = plan
        self.dryRun = dryRun
    }

    public var json: JSONValue {
        let change = event.change
        var outcomeJSON: JSONValue
        switch outcome {
        case .applied: outcomeJSON = ["status": "applied"]
        case .skipped(let reason): outcomeJSON = ["status": "skipped", "reason": .string(reason)]
        case .duplicate: outcomeJSON = ["status": "duplicate"]
        }
        var eventJSON: [String: JSONValue] = [
            "id": .string(change.eventID),
            "kind": .string(change.kind.rawValue),
            "effectiveKind": .string(change.effectiveKind.rawValue),
            "time": .string(change.time.rfc3339),
            "document": .string(change.document.resourceName),
            "path": .string(change.document.path),
            "encoding": .string(event.envelope.encoding.rawValue),
            "type": .string(event.envelope.type),
        ]
        if let mask = change.updateMask { eventJSON["updateMask"] = .array(mask.map { .string($0) }) }
        if change.isDataMissing || change.dataWasOmitted { eventJSON["dataMissing"] = true }
        let documents: [JSONValue] = documentsRead.names.map { name in
            if let doc = documentsRead[name] { return ["name": .string(name.resourceName), "found": true, "document": FirestoreJSON.json(doc)] }
            return ["name": .string(name.resourceName), "found": false]
        }
        return [
            "function": .string(function),
            "event": .object(eventJSON),
            "outcome": outcomeJSON,
            "dryRun": .bool(dryRun),
            "documentsRead": .array(documents),
            "writes": .array(plan.allWrites.map(\.json)),
            "pushes": .array(plan.pushes.map(\.requestBody)),
        ]
    }
}

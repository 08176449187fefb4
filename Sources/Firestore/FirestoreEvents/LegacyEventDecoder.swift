import FirestoreModel
import WireFormats

/// 1st-gen (legacy) Cloud Functions Firestore events:
/// `{"data": {value, oldValue, updateMask}, "context": {eventId, timestamp, eventType, resource}}`,
/// and the older shape with the context fields beside `data` (plus `params`).
enum LegacyEventDecoder {
    static let typePrefix = "providers/cloud.firestore/eventTypes/document."
    static let kinds: [String: DocumentChange.Kind] = ["create": .created, "update": .updated, "delete": .deleted, "write": .written]

    static func decode(_ json: JSONValue) throws(EventDecodingError) -> DecodedEvent {
        guard case .object(let top) = json else { throw EventDecodingError("event must be a JSON object") }
        let context = top["context"]?.objectValue ?? top
        let id = context["eventId"]?.stringValue ?? context["event_id"]?.stringValue
        guard let id, !id.isEmpty else {
            throw EventDecodingError(
                top["context"] == nil && top["eventType"] == nil
                    ? "not a Firestore event: no CloudEvents headers, no specversion, no legacy context"
                    : "missing eventId")
        }
        guard let type = context["eventType"]?.stringValue ?? context["event_type"]?.stringValue else {
            throw EventDecodingError("missing eventType", eventID: id)
        }
        guard type.hasPrefix(typePrefix), let kind = kinds[String(type.dropFirst(typePrefix.count))] else {
            throw EventDecodingError("unknown event type \"\(type.prefix(200))\"", eventID: id)
        }
        guard let timeText = context["timestamp"]?.stringValue else { throw EventDecodingError("missing timestamp", eventID: id) }
        guard let time = Timestamp(rfc3339: timeText) else { throw EventDecodingError("timestamp \"\(timeText.prefix(60))\" is not RFC 3339", eventID: id) }
        // `resource` is the document's resource name, or an object {service, name, type} in some runtimes.
        guard let resource = context["resource"]?.stringValue ?? context["resource"]?["name"]?.stringValue else {
            throw EventDecodingError("missing resource", eventID: id)
        }
        let name: DocumentName
        do { name = try DocumentName(resourceName: resource) } catch { throw EventDecodingError("bad resource: \(error)", eventID: id) }
        let data =
            try (top["data"]).map { payload throws(EventDecodingError) in
                payload == .null ? EventData() : try EventData(json: payload, eventID: id)
            } ?? EventData()
        let change = try data.change(id: id, kind: kind, time: time, document: name)
        return DecodedEvent(change: change, envelope: EventEnvelope(encoding: .legacy, type: type))
    }
}

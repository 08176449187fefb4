import FirestoreModel
import WireFormats

/// An HTTP request as far as event decoding cares: header names lowercased, and the body.
public struct EventRequest: Sendable {
    public var headers: [String: String]
    public var body: [UInt8]

    public init(headers: [String: String], body: [UInt8]) {
        // The server hands them over lowercased already: kept as they are then.
        let lowercase = headers.keys.allSatisfy(\.isLowercaseASCII)
        self.headers = lowercase ? headers : Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
        self.body = body
    }

    /// The media type of the body, lowercased and without parameters.
    public var contentType: String? {
        guard let raw = headers["content-type"] else { return nil }
        let mediaType = raw.utf8.firstIndex(of: UInt8(ascii: ";")).map { String(raw[..<$0]) } ?? raw
        return mediaType.trimmingSpacesAndTabs.asciiLowercased
    }
}

/// Decodes every encoding of a Firestore change notification into one `DocumentChange`:
/// CloudEvents binary mode (protobuf or JSON data), CloudEvents structured mode, and 1st-gen events.
public enum EventDecoder {
    public static func decode(_ request: EventRequest) throws(EventDecodingError) -> DecodedEvent {
        if request.headers["ce-specversion"] != nil || request.headers["ce-type"] != nil {
            return try decodeBinary(request)
        }
        switch request.contentType {
        case "application/cloudevents+json":
            return try decodeStructured(try parseJSON(request.body))
        case "application/cloudevents-batch+json":
            throw EventDecodingError("batched CloudEvents are not supported: send one event per request")
        case "application/json", "text/json", nil:
            let json = try parseJSON(request.body)
            if json["specversion"] != nil { return try decodeStructured(json) }
            return try LegacyEventDecoder.decode(json)
        case let other?:
            throw EventDecodingError("unsupported content-type \"\(other.prefix(100))\" without CloudEvents headers")
        }
    }

    static func parseJSON(_ bytes: [UInt8]) throws(EventDecodingError) -> JSONValue {
        guard !bytes.isEmpty else { throw EventDecodingError("empty body") }
        do { return try JSONValue(parsing: bytes) } catch { throw EventDecodingError("body is not JSON: \(error)") }
    }

    // MARK: CloudEvents

    /// The CloudEvent attributes Herald reads, from `ce-` headers or a structured event's members.
    struct Attributes {
        var get: (String) -> String?
        func required(_ name: String, id: String?) throws(EventDecodingError) -> String {
            guard let value = get(name), !value.isEmpty else { throw EventDecodingError("missing CloudEvent attribute \"\(name)\"", eventID: id) }
            return value
        }
    }

    static func decodeBinary(_ request: EventRequest) throws(EventDecodingError) -> DecodedEvent {
        let attributes = Attributes { name in
            guard let raw = request.headers[header(of: name)] else { return nil }
            // The CloudEvents HTTP binding percent-encodes non-ASCII and some punctuation in header values.
            return raw.containsByte(UInt8(ascii: "%")) ? (PercentEncoding.decode(raw) ?? raw) : raw
        }
        let dataType = request.contentType ?? attributes.get("datacontenttype")?.lowercased()
        let id = attributes.get("id")
        let data: EventData
        switch dataType {
        case "application/protobuf", "application/x-protobuf", "application/octet-stream":
            data = try EventData(protobuf: request.body, eventID: id)
        case "application/json", "text/json":
            data = request.body.isEmpty ? EventData() : try EventData(json: try parseJSON(request.body), eventID: id)
        case nil:
            throw EventDecodingError("binary-mode CloudEvent without content-type", eventID: id)
        case let other?:
            throw EventDecodingError("unsupported data content-type \"\(other.prefix(100))\"", eventID: id)
        }
        return try assemble(attributes, data: data, encoding: dataType?.hasSuffix("json") == true ? .binaryJSON : .binaryProtobuf)
    }

    /// The `ce-` header that carries an attribute (spelled out for those Herald reads: joining two
    /// strings costs more than finding one of these).
    static func header(of attribute: String) -> String {
        switch attribute {
        case "id": "ce-id"
        case "specversion": "ce-specversion"
        case "type": "ce-type"
        case "source": "ce-source"
        case "time": "ce-time"
        case "subject": "ce-subject"
        case "project": "ce-project"
        case "database": "ce-database"
        case "document": "ce-document"
        case "location": "ce-location"
        case "namespace": "ce-namespace"
        case "authtype": "ce-authtype"
        case "authid": "ce-authid"
        case "datacontenttype": "ce-datacontenttype"
        default: "ce-" + attribute
        }
    }

    static func decodeStructured(_ json: JSONValue) throws(EventDecodingError) -> DecodedEvent {
        guard case .object(let members) = json else { throw EventDecodingError("a structured CloudEvent must be a JSON object") }
        let attributes = Attributes { members[$0]?.stringValue }
        let id = attributes.get("id")
        let dataType = attributes.get("datacontenttype")?.lowercased() ?? "application/json"
        let data: EventData
        if let encoded = members["data_base64"], encoded != .null {
            guard let text = encoded.stringValue, let bytes = Base64.decode(text) else {
                throw EventDecodingError("data_base64 is not base64", eventID: id)
            }
            if dataType.hasSuffix("json") {
                data = try EventData(json: try parseJSON(Array(bytes)), eventID: id)
            } else {
                data = try EventData(protobuf: Array(bytes), eventID: id)
            }
        } else if let inline = members["data"], inline != .null {
            if case .string(let text) = inline, !dataType.hasSuffix("json") {
                // Non-JSON data inline is a string; for protobuf that is its base64 text.
                guard let bytes = Base64.decode(text) else { throw EventDecodingError("data is not base64 protobuf", eventID: id) }
                data = try EventData(protobuf: Array(bytes), eventID: id)
            } else {
                data = try EventData(json: inline, eventID: id)
            }
        } else {
            data = EventData()
        }
        return try assemble(attributes, data: data, encoding: .structured)
    }

    static let typePrefix = "google.cloud.firestore.document.v1."

    static func assemble(_ attributes: Attributes, data: EventData, encoding: EventEnvelope.Encoding) throws(EventDecodingError) -> DecodedEvent {
        let id = try attributes.required("id", id: nil)
        let specVersion = try attributes.required("specversion", id: id)
        guard specVersion == "1.0" else { throw EventDecodingError("unsupported CloudEvents specversion \"\(specVersion.prefix(20))\"", eventID: id) }
        let type = try attributes.required("type", id: id)
        let source = try attributes.required("source", id: id)
        var withAuthContext = false
        var kindName = type.hasPrefix(typePrefix) ? String(type.utf8.dropFirst(typePrefix.utf8.count)) ?? "" : ""
        if kindName.hasSuffix(".withAuthContext") {
            kindName = String(kindName.dropLast(".withAuthContext".count))
            withAuthContext = true
        }
        guard let kind = DocumentChange.Kind(rawValue: kindName) else {
            throw EventDecodingError("unknown event type \"\(type.prefix(200))\"", eventID: id)
        }
        guard let timeText = attributes.get("time") else { throw EventDecodingError("missing CloudEvent attribute \"time\"", eventID: id) }
        guard let time = Timestamp(rfc3339: timeText) else { throw EventDecodingError("time \"\(timeText.prefix(60))\" is not RFC 3339", eventID: id) }

        // Project and database come from the source, `//firestore.googleapis.com/projects/P/databases/D`.
        let sourceParts = source.parts(splitAt: "/").filter { !$0.isEmpty }
        guard let databasesIndex = sourceParts.lastIndex(of: "databases"), databasesIndex >= 2,
            sourceParts.contains("projects"), databasesIndex + 1 < sourceParts.count
        else { throw EventDecodingError("source \"\(source.prefix(200))\" does not name a Firestore database", eventID: id) }
        let project = attributes.get("project") ?? sourceParts[databasesIndex - 1]
        let database = attributes.get("database") ?? sourceParts[databasesIndex + 1]

        let path: String
        if let document = attributes.get("document") {
            path = document
        } else if let subject = attributes.get("subject"), subject.hasPrefix("documents/") {
            path = String(subject.dropFirst("documents/".count))
        } else if let name = data.newDocument?.name ?? data.oldDocument?.name {
            path = name.path
        } else {
            throw EventDecodingError("the event names no document (no document or subject attribute, no data)", eventID: id)
        }
        let name: DocumentName
        do { name = try DocumentName(project: project, database: database, path: path) } catch {
            throw EventDecodingError("bad document: \(error)", eventID: id)
        }
        let change = try data.change(id: id, kind: kind, time: time, document: name)
        let envelope = EventEnvelope(
            encoding: encoding, type: type, source: source, location: attributes.get("location"),
            namespace: attributes.get("namespace"),
            authType: withAuthContext ? attributes.get("authtype") : nil, authID: withAuthContext ? attributes.get("authid") : nil
        )
        return DecodedEvent(change: change, envelope: envelope)
    }
}

/// The payload of a change, `DocumentEventData`, before the envelope is known.
struct EventData {
    var newDocument: FirestoreDocument?
    var oldDocument: FirestoreDocument?
    var updateMask: [String]?

    init() {}

    init(protobuf bytes: [UInt8], eventID: String?) throws(EventDecodingError) {
        guard !bytes.isEmpty else { return }
        let decoded: EventDataProtobuf.Decoded
        do {
            decoded = try Self.decoded(bytes)
        } catch {
            switch error {
            case .wire(let reason): throw EventDecodingError("body is not a protobuf DocumentEventData: \(reason)", eventID: eventID)
            case .value(let reason): throw EventDecodingError("invalid document in event data: \(reason)", eventID: eventID)
            }
        }
        newDocument = decoded.newDocument
        oldDocument = decoded.oldDocument
        updateMask = decoded.updateMask
    }

    /// The bytes as protobuf, or (when they are not) as the base64 text of protobuf, which Google's
    /// Firestore emulator sends.
    static func decoded(_ bytes: [UInt8]) throws(EventDataProtobuf.Failure) -> EventDataProtobuf.Decoded {
        do {
            return try EventDataProtobuf.decode(bytes)
        } catch {
            guard case .wire = error, bytes.count % 4 == 0, let text = Base64.decode(String(decoding: bytes, as: UTF8.self)) else { throw error }
            do { return try EventDataProtobuf.decode(text) } catch {
                if case .value = error { throw error }
            }
            throw error
        }
    }

    init(json: JSONValue, eventID: String?) throws(EventDecodingError) {
        guard case .object(let members) = json else { throw EventDecodingError("event data must be a JSON object", eventID: eventID) }
        do {
            newDocument = try FirestoreJSON.document(from: members["value"] ?? .null, path: "value")
            oldDocument = try FirestoreJSON.document(from: members["oldValue"] ?? members["old_value"] ?? .null, path: "oldValue")
        } catch {
            throw EventDecodingError("invalid document in event data: \(error)", eventID: eventID)
        }
        if let mask = members["updateMask"] ?? members["update_mask"], mask != .null {
            guard let paths = (mask["fieldPaths"] ?? mask["field_paths"] ?? .array([])).arrayValue,
                let strings = Optional(paths.compactMap(\.stringValue)), strings.count == paths.count
            else { throw EventDecodingError("updateMask must be {fieldPaths: [strings]}", eventID: eventID) }
            updateMask = strings
        }
    }

    func change(id: String, kind: DocumentChange.Kind, time: Timestamp, document: DocumentName) throws(EventDecodingError) -> DocumentChange {
        for carried in [newDocument, oldDocument].compactMap({ $0 }) where carried.name != document {
            throw EventDecodingError("event data is for \(carried.name.path), but the event names \(document.path)", eventID: id)
        }
        return DocumentChange(
            eventID: id, kind: kind, time: time, document: document,
            oldDocument: oldDocument, newDocument: newDocument,
            // Google's emulator sends an empty mask on updates; no mask and an empty one mean the same to us.
            updateMask: updateMask.flatMap { $0.isEmpty ? nil : $0 }
        )
    }
}

import FirestoreEvents
import FirestoreModel
import WireFormats

/// A request saved in a file, as `invoke --event FILE` takes it: a structured CloudEvent, a legacy
/// event, or `{"headers": {…}, "body": …}` for binary mode (body as JSON, or base64 for protobuf).
public enum Fixture {
    public static func request(from bytes: [UInt8]) throws(FixtureError) -> EventRequest {
        let json: JSONValue
        do { json = try JSONValue(parsing: bytes) } catch { throw FixtureError("the fixture is not JSON: \(error)") }
        guard case .object(let members) = json else { throw FixtureError("the fixture must be a JSON object") }
        if let headersJSON = members["headers"] {
            guard case .object(let headerMembers) = headersJSON else { throw FixtureError("\"headers\" must be an object of strings") }
            var headers: [String: String] = [:]
            for (name, value) in headerMembers {
                guard let text = value.stringValue else { throw FixtureError("header \"\(name)\" must be a string") }
                headers[name] = text
            }
            let request = EventRequest(headers: headers, body: [])
            let body: [UInt8]
            switch members["body"] ?? .null {
            case .null: body = []
            case .string(let text) where request.contentType?.containsBytes(of: "json") != true:
                guard let data = Base64.decode(text) else {
                    throw FixtureError("\"body\" must be base64 for content-type \(request.contentType ?? "(none)")")
                }
                body = data
            case .string(let text): body = Array(text.utf8)
            case let inline: body = Array(inline.serialized().utf8)
            }
            return EventRequest(headers: request.headers, body: body)
        }
        let contentType = members["specversion"] != nil ? "application/cloudevents+json" : "application/json"
        return EventRequest(headers: ["content-type": contentType], body: bytes.map { $0 })
    }

    /// A binary-mode fixture for a change: the `ce-` attributes Eventarc sends, and the body.
    public static func binary(_ event: DecodedEvent, json: Bool) -> JSONValue {
        let change = event.change
        var headers: [String: JSONValue] = [
            "ce-id": .string(change.eventID),
            "ce-source": .string("//firestore.googleapis.com/projects/\(change.document.project)/databases/\(change.document.database)"),
            "ce-type": .string(event.envelope.type),
            "ce-specversion": "1.0",
            "ce-subject": .string("documents/\(change.document.path)"),
            "ce-time": .string(change.time.rfc3339),
            "ce-database": .string(change.document.database),
            "ce-namespace": .string(event.envelope.namespace ?? "(default)"),
            "ce-document": .string(change.document.path),
            "ce-project": .string(change.document.project),
            "content-type": json ? "application/json" : "application/protobuf",
        ]
        if let location = event.envelope.location { headers["ce-location"] = .string(location) }
        if let t = event.envelope.authType { headers["ce-authtype"] = .string(t) }
        if let id = event.envelope.authID { headers["ce-authid"] = .string(id) }
        let body: JSONValue = json ? change.jsonData() : .string(Base64.encode(change.protobufData()))
        return ["headers": .object(headers), "body": body]
    }
}

public struct FixtureError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

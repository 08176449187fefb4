import FirestoreEvents
import FirestoreModel
import HeraldCore
import SystemAccess
import WireFormats

/// `invoke --document PATH`, Herald's `functions:shell`: the event Eventarc would send for a document
/// as it is now (in `--documents`, or in the configured Firestore such as `herald dev`), created,
/// updated from a given before, or deleted. Nobody writes a CloudEvent by hand.
struct DocumentEvent {
    enum Change: String, CaseIterable {
        case created, updated, deleted
    }

    static let options: [CommandLineArguments.Option] = [
        .value("document", "path", "Build the event from this document as it is now (in --documents, or the configured Firestore) instead of --event."),
        .value("change", "kind", "With --document: created (the default), updated (from --before) or deleted (the document as it is now is the one deleted)."),
        .value("before", "file", "With --change updated: the document before the change, in Firestore's REST JSON ({\"fields\": {...}})."),
    ]

    var path: String
    var change: Change
    var before: String?

    /// nil when the command line names no document (then it names an event file).
    init?(_ options: CommandLineArguments) throws(CommandLineArguments.UsageError) {
        guard let path = options["document"] else {
            if options["change"] != nil || options["before"] != nil { throw .init("--change and --before go with --document <path>") }
            return nil
        }
        if options["event"] != nil { throw .init("give either --event <file> or --document <path>, not both") }
        let changeName = options["change"] ?? (options["before"] == nil ? "created" : "updated")
        guard let change = Change(rawValue: changeName) else {
            throw .init("--change must be one of \(Change.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(changeName)\"")
        }
        if change == .updated && options["before"] == nil { throw .init("--change updated needs --before <file>: the document before the change") }
        if change != .updated && options["before"] != nil { throw .init("--before goes with --change updated") }
        self.path = path.hasPrefix("/") ? String(path.dropFirst()) : path
        self.change = change
        before = options["before"]
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The event as Eventarc delivers it (binary mode, protobuf data), for the document as `documents` holds it now.
    func request(reading documents: any DocumentGateway, project: String?, database: String) async throws -> EventRequest {
        let name = try self.name(in: documents, project: project, database: database)
        guard let current = try await documents.read([name]).found[name] else {
            let place = documents.documentsPlace ?? "in project \(name.project)"
            throw Failure(description: "no document \(path) \(place): --document takes one that exists")
        }
        var event = DocumentChange(
            eventID: "invoke-" + String(UInt64.random(in: 1...UInt64.max), radix: 16),
            kind: change == .created ? .created : change == .updated ? .updated : .deleted,
            time: change == .deleted ? .now() : current.updateTime ?? .now(), document: name)
        switch change {
        case .created:
            event.newDocument = current
        case .updated:
            let old = FirestoreDocument(name: name, fields: try beforeFields(), createTime: current.createTime)
            event.oldDocument = old
            event.newDocument = current
            event.updateMask = DocumentChange.updateMask(old.fields, current.fields)
        case .deleted:
            event.oldDocument = current
        }
        let decoded = DecodedEvent(
            change: event, envelope: EventEnvelope(encoding: .binaryProtobuf, type: "google.cloud.firestore.document.v1.\(event.kind.rawValue)"))
        return try Fixture.request(from: Array(Fixture.binary(decoded, json: false).serialized().utf8))
    }

    /// A snapshot's document is named with its own project; Firestore's with the configured one.
    private func name(in documents: any DocumentGateway, project: String?, database: String) throws -> DocumentName {
        if let found = documents.documentName(atPath: path) { return found }
        do {
            return try DocumentName(project: project ?? "local", database: database, path: path)
        } catch {
            throw Failure(description: "--document \(path): \(error)")
        }
    }

    private func beforeFields() throws -> [String: FirestoreValue] {
        guard let before else { return [:] }
        do {
            let json = try JSONValue(parsing: LocalFile.read(before))
            guard case .object = json else { throw Failure(description: "a document must be a JSON object") }
            return try FirestoreJSON.fields(json["fields"] ?? .object([:]), path: "\(before): fields")
        } catch {
            throw Failure(description: "--before \(before): \(error)")
        }
    }
}

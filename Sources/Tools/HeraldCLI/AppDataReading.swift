import ArgumentParser
import AsyncHTTPClient
import ChatSchemaTools
import EmbeddedFirestore
import FirestoreModel
import Foundation
import LocalCloud
import NIOCore
import NIOHTTP1
import WireFormats

/// An app's documents for `herald schema infer` and `check`: from a Herald export, Google's emulator's
/// export, a `.jsonl` or `.json` file of documents, or a running Firestore emulator (or `herald dev`)
/// at HOST:PORT, read over its REST API.
enum AppDataReading {
    static func read(from source: String?, project: String?) async throws -> AppData {
        guard let source = source ?? ProcessInfo.processInfo.environment["FIRESTORE_EMULATOR_HOST"].flatMap({ $0.isEmpty ? nil : $0 }) else {
            throw ValidationError("say where the data is: --from DIRECTORY|FILE|HOST:PORT (or set FIRESTORE_EMULATOR_HOST)")
        }
        var data = AppData()
        if FileManager.default.fileExists(atPath: source) {
            do {
                try await DocumentArchive.forEachBatch(from: source, project: project ?? "herald-local") { data.add($0) }
            } catch let error as DocumentArchive.ArchiveError {
                throw ValidationError("cannot read \(source): \(error.description)")
            }
            return data
        }
        let parts = source.split(separator: ":")
        guard parts.count == 2, let port = Int(parts[1]), (1...65535).contains(port), !parts[0].contains("/") else {
            throw ValidationError(
                "--from takes a directory or file (a herald export, Google's emulator's export, documents as .jsonl or .json) or HOST:PORT of a running Firestore emulator; \"\(source)\" is neither"
            )
        }
        let base = "http://\(source)"
        var chosen = project
        if chosen == nil { chosen = try await EmulatorReader.project(at: base) }
        let reader = EmulatorReader(base: base, project: chosen ?? "herald-local")
        try await reader.readAll(into: &data)
        return data
    }
}

/// Reads a Firestore emulator's documents over REST (as the owner, as emulators allow): the top-level
/// collections, then each collection id as a collection-group query in pages, then the subcollections
/// found under a sample of each group's documents, until no new collection id turns up.
struct EmulatorReader {
    let base: String
    let project: String
    static let pageSize = 1000
    /// Documents whose subcollections are listed, per collection group.
    static let probedPerGroup = 25

    var root: String { "\(base)/v1/projects/\(project)/databases/(default)/documents" }

    /// herald dev says its project at `/`; Google's emulator serves any, so the default one of herald dev.
    static func project(at base: String) async throws -> String {
        let environment = ProcessInfo.processInfo.environment
        if let project = environment["GOOGLE_CLOUD_PROJECT"] ?? environment["GCLOUD_PROJECT"], !project.isEmpty { return project }
        let about = try? await call("GET", base + "/", body: nil)
        return about?["project"]?.stringValue ?? "herald-local"
    }

    static func call(_ method: String, _ url: String, body: JSONValue?) async throws -> JSONValue {
        var request = HTTPClientRequest(url: url)
        request.method = .init(rawValue: method)
        request.headers.add(name: "authorization", value: "Bearer owner")
        if let body {
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body.serializedBytes()))
        }
        let response: HTTPClientResponse
        do { response = try await HTTPClient.shared.execute(request, timeout: .seconds(60)) } catch {
            throw ValidationError("cannot reach \(url): \(error) (is the emulator or herald dev running there?)")
        }
        let bytes = try await response.body.collect(upTo: 64 << 20)
        guard response.status == .ok else {
            throw ValidationError("\(method) \(url) answered \(response.status.code): \(String(buffer: bytes).prefix(300))")
        }
        return (try? JSONValue(parsing: Array(buffer: bytes))) ?? .null
    }

    /// At most this many pages of collection ids under one parent: 300 a page, past any real app's.
    static let maximumPages = 40

    /// The collection ids under `parent`, a page at a time. The server decides when paging ends, so the
    /// loop is bounded by pages as well as ids: a server that keeps answering a next page (empty pages,
    /// or a token it gave before) is named and refused, never followed forever.
    func collectionIDs(under parent: String) async throws -> [String] {
        var ids: [String] = []
        var token: String?
        var tokens: Set<String> = []
        for _ in 0..<Self.maximumPages {
            var body: [String: JSONValue] = ["pageSize": 300]
            if let token { body["pageToken"] = .string(token) }
            let page = try await Self.call("POST", "\(parent):listCollectionIds", body: .object(body))
            ids += page["collectionIds"]?.arrayValue?.compactMap(\.stringValue) ?? []
            token = page["nextPageToken"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
            guard let next = token, ids.count < 10_000 else { return ids }
            guard tokens.insert(next).inserted else {
                throw ValidationError("\(parent):listCollectionIds answered a page token it gave before: its paging goes round in a circle")
            }
        }
        throw ValidationError(
            "\(parent):listCollectionIds answered \(Self.maximumPages) pages (\(ids.count) collection ids) and still a next page: stopped there")
    }

    func readAll(into data: inout AppData) async throws {
        var pending = try await collectionIDs(under: root)
        var seen = Set(pending)
        while let collectionID = pending.first {
            pending.removeFirst()
            let documents = try await group(collectionID, limit: data.maximumPerGroup)
            data.add(documents)
            // Subcollections of a sample of each group's documents.
            var probed: [AppData.GroupPath: Int] = [:]
            for document in documents {
                let path = AppData.groupPath(of: document.name)
                guard probed[path, default: 0] < Self.probedPerGroup, seen.count < data.maximumGroups else { continue }
                probed[path, default: 0] += 1
                // Google's emulator cannot list under an id holding ":" (an FCM token as a document id): such a
                // document is left unprobed; its siblings tell what collections the group has.
                guard let ids = try? await collectionIDs(under: "\(root)/\(Self.escaped(document.name))") else { continue }
                for id in ids where seen.insert(id).inserted { pending.append(id) }
            }
        }
    }

    /// A document's path for a URL: each segment percent-encoded (a token as a document id holds `:`,
    /// which would otherwise read as the start of a custom method such as `:listCollectionIds`).
    static func escaped(_ name: DocumentName) -> String {
        let unreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
        return name.segments.map { $0.addingPercentEncoding(withAllowedCharacters: unreserved) ?? $0 }.joined(separator: "/")
    }

    /// Every document of a collection id, at any depth, in name order, a page at a time.
    func group(_ collectionID: String, limit: Int) async throws -> [FirestoreDocument] {
        var documents: [FirestoreDocument] = []
        while documents.count < limit {
            var query = StructuredQuery(
                collectionID: collectionID, allDescendants: true, orderBy: [StructuredQuery.Order(FieldPath("__name__"))],
                limit: min(Self.pageSize, limit - documents.count))
            if let last = documents.last { query.startAt = .init(values: [.reference(last.name.resourceName)], before: false) }
            let answer = try await Self.call("POST", "\(root):runQuery", body: ["structuredQuery": query.json])
            let page = (answer.arrayValue ?? []).compactMap { item -> FirestoreDocument? in
                guard let json = item["document"] else { return nil }
                return try? FirestoreJSON.document(from: json, path: "runQuery")
            }
            documents += page
            if page.count < Self.pageSize { break }
        }
        return documents
    }
}

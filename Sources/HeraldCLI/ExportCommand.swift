import ArgumentParser
import AsyncHTTPClient
import FirestoreModel
import Foundation
import LocalCloud

/// Writes a running `herald dev`'s documents to a directory, in the format `--import` reads.
struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a running `herald dev`'s documents to DIR (documents.jsonl, one document per line; `herald dev --import DIR` reads it).")

    @Argument(help: "The directory to write.") var directory: String
    @Option(help: "The local cloud's URL.") var url = "http://127.0.0.1:8787"

    func run() async throws {
        let base = url.hasSuffix("/") ? String(url.dropLast()) : url
        let project: String
        do {
            let about = try await HTTPClient.shared.execute(HTTPClientRequest(url: base + "/"), timeout: .seconds(10))
            project = try JSONValue(parsing: Array(buffer: try await about.body.collect(upTo: 1 << 16)))["project"]?.stringValue ?? "herald-local"
        } catch {
            throw ValidationError("cannot reach \(url): is `herald dev` running? (\(error))")
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let target = (directory as NSString).appendingPathComponent(DocumentArchive.documentsFile)
        let partial = target + ".partial"
        guard FileManager.default.createFile(atPath: partial, contents: nil), let file = FileHandle(forWritingAtPath: partial) else {
            throw ValidationError("cannot write \(partial)")
        }
        var lines = 0
        do {
            let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: base + "/herald/export"), timeout: .hours(1))
            guard response.status == .ok else { throw ValidationError("\(url)/herald/export answered \(response.status)") }
            for try await chunk in response.body {
                lines += chunk.readableBytesView.lazy.filter { $0 == UInt8(ascii: "\n") }.count
                try file.write(contentsOf: chunk.readableBytesView)
            }
            try file.close()
        } catch {
            try? file.close()
            try? FileManager.default.removeItem(atPath: partial)
            throw error
        }
        _ = try? FileManager.default.removeItem(atPath: target)
        try FileManager.default.moveItem(atPath: partial, toPath: target)
        try DocumentArchive.writeMetadata(in: directory, project: project, documents: lines)
        print("exported \(lines) documents to \(target)")
    }
}

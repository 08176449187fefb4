import ArgumentParser
import AsyncHTTPClient
import EmbeddedFirestore
import FirestoreModel
import Foundation
import LocalCloud
import NIOCore
import NIOHTTP1
import WireFormats

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
        let lines = try await DocumentArchive.writeExport(to: directory, project: project) { write in
            let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: base + "/herald/export"), timeout: .hours(1))
            guard response.status == .ok else { throw ValidationError("\(url)/herald/export answered \(response.status)") }
            var lines = 0
            for try await chunk in response.body {
                lines += chunk.readableBytesView.lazy.filter { $0 == UInt8(ascii: "\n") }.count
                try write(Array(chunk.readableBytesView))
            }
            return lines
        }
        let target = (directory as NSString).appendingPathComponent(DocumentArchive.documentsFile)
        print("exported \(lines) documents to \(target)")
        // Firebase Auth's users beside them, as Google's emulator exports its own.
        let answer = try await HTTPClient.shared.execute(HTTPClientRequest(url: base + "/herald/auth/export"), timeout: .seconds(120))
        guard answer.status == .ok else { throw ValidationError("\(url)/herald/auth/export answered \(answer.status)") }
        let users = try await answer.body.collect(upTo: 256 << 20)
        let file = (directory as NSString).appendingPathComponent(AuthArchive.exportFile)
        try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(Array(buffer: users)).write(to: URL(fileURLWithPath: file))
        let count = (try? JSONValue(parsing: Array(buffer: users)))?["users"]?.arrayValue?.count ?? 0
        print("exported \(count) Firebase Auth users to \(file)")
    }
}

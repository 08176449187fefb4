import FirestoreEvents
import FirestoreEventsProtobuf
import FirestoreModel
import Foundation
import WireFormats

/// Every decoder that takes bytes from outside, on one input: the first byte picks the entry point
/// (the JSON parser, a binary-mode CloudEvent with a protobuf or JSON body, a structured CloudEvent,
/// a 1st-gen event, a Firestore REST document, or protobuf event data read both by FirestoreEvents and
/// by SwiftProtobuf's generated types), the rest is the body. Decoders may refuse; they must never
/// crash, and the two protobuf readers must agree.
enum FuzzTarget {
    static let binaryHeaders = [
        "ce-id": "fuzz", "ce-source": "//firestore.googleapis.com/projects/p/databases/(default)",
        "ce-type": "google.cloud.firestore.document.v1.written", "ce-specversion": "1.0",
        "ce-subject": "documents/users/u1", "ce-time": "2026-11-20T09:00:00Z", "ce-document": "users/u1",
    ]

    static func run(_ input: [UInt8]) {
        guard let selector = input.first else { return }
        let body = Array(input.dropFirst())
        switch selector % 7 {
        case 0: _ = try? JSONValue(parsing: body)
        case 1: _ = try? EventDecoder.decode(EventRequest(headers: binaryHeaders.merging(["content-type": "application/protobuf"]) { $1 }, body: body))
        case 2: _ = try? EventDecoder.decode(EventRequest(headers: binaryHeaders.merging(["content-type": "application/json"]) { $1 }, body: body))
        case 3: _ = try? EventDecoder.decode(EventRequest(headers: ["content-type": "application/cloudevents+json"], body: body))
        case 4: _ = try? EventDecoder.decode(EventRequest(headers: ["content-type": "application/json"], body: body))
        case 6: compareProtobufReaders(body)
        default:
            if let json = try? JSONValue(parsing: body) {
                _ = try? FirestoreJSON.document(from: json, path: "document")
                if let document = try? FirestoreJSON.document(from: json, path: "document") { _ = FirestoreJSON.json(document) }
            }
        }
    }

    /// FirestoreEvents' own protobuf reader against SwiftProtobuf's: the same bytes taken or refused by
    /// both, and the same documents read. A difference stops the fuzzer as a crash would.
    static func compareProtobufReaders(_ body: [UInt8]) {
        let ours = try? EventDataProtobuf.decode(body)
        let reference = try? SwiftProtobufEventData.decode(body)
        switch (ours, reference) {
        case (nil, nil): return
        case (let a?, let b?):
            if a.newDocument == b.newDocument, a.oldDocument == b.oldDocument, a.updateMask == b.updateMask { return }
        default: break
        }
        fatalError("the protobuf readers disagree on \(body): FirestoreEvents \(String(describing: ours)), SwiftProtobuf \(String(describing: reference))")
    }

    /// Corpus entries from the event fixtures: each fixture's body behind the selector of its encoding.
    static func seeds(fromFixtures root: URL) throws -> [[UInt8]] {
        var seeds: [[UInt8]] = []
        let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []
        for file in files.sorted(by: { $0.path < $1.path }) where file.pathExtension == "json" {
            let bytes = Array(try Data(contentsOf: file))
            seeds.append([0] + bytes)
            seeds.append([5] + bytes)
            guard let json = try? JSONValue(parsing: bytes) else { continue }
            let name = file.lastPathComponent
            if name.contains(".binary-protobuf."), let text = json["body"]?.stringValue, let data = Data(base64Encoded: text) {
                seeds.append([1] + Array(data))
                seeds.append([6] + Array(data))
            } else if name.contains(".binary-json."), let body = json["body"] {
                seeds.append([2] + Array(body.serialized().utf8))
            } else if name.contains(".structured") {
                seeds.append([3] + bytes)
            } else if name.contains(".legacy") {
                seeds.append([4] + bytes)
            }
        }
        return seeds + largeShapes
    }

    /// Shapes no fixture has, which made decoding quadratic before paths were built only on error: a
    /// long field name over a long array, and deep maps. libFuzzer grows them further (`-max_len`).
    static var largeShapes: [[UInt8]] {
        let name = "projects/p/databases/(default)/documents/users/u1"
        let array = "[" + Array(repeating: #"{"integerValue": "7"}"#, count: 20_000).joined(separator: ",") + "]"
        let key = String(repeating: "k", count: 256 << 10)
        let deep = String(repeating: #"{"m": {"mapValue": {"fields": "#, count: 30) + "{}" + String(repeating: "}}}", count: 30)
        return [
            [2] + Array(#"{"value": {"name": "\#(name)", "fields": {"\#(key)": {"arrayValue": {"values": \#(array)}}}}}"#.utf8),
            [2] + Array(#"{"value": {"name": "\#(name)", "fields": \#(deep)}}"#.utf8),
            [5] + Array(#"{"name": "\#(name)", "fields": {"list": {"arrayValue": {"values": \#(array)}}}}"#.utf8),
        ]
    }
}

#if FUZZING
// swift-format-ignore: AlwaysUseLowerCamelCase
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// Built by Scripts/fuzz.sh with coverage instrumentation and libFuzzer's driver: libFuzzer's options apply.
@main struct HeraldFuzz {
    static func main() {
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(
            LLVMFuzzerRunDriver(&argc, &argv) { data, size in
                FuzzTarget.run(Array(UnsafeBufferPointer(start: data, count: size)))
                return 0
            })
    }
}
#else
/// Without the fuzzer: `herald-fuzz seed FIXTURES OUT` writes a corpus from the event fixtures;
/// `herald-fuzz FILE|DIR…` replays inputs (a corpus, a crash libFuzzer found) through the same decoders.
@main struct HeraldFuzz {
    static func main() throws {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "seed", arguments.count == 3 {
            let out = URL(fileURLWithPath: arguments[2])
            try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
            let seeds = try FuzzTarget.seeds(fromFixtures: URL(fileURLWithPath: arguments[1]))
            for (i, seed) in seeds.enumerated() { try Data(seed).write(to: out.appendingPathComponent(String(format: "seed-%04d", i))) }
            print("wrote \(seeds.count) corpus entries to \(out.path)")
            return
        }
        var count = 0
        for path in arguments {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
            let files = isDirectory.boolValue ? try FileManager.default.contentsOfDirectory(atPath: path).sorted().map { "\(path)/\($0)" } : [path]
            for file in files {
                FuzzTarget.run(Array(try Data(contentsOf: URL(fileURLWithPath: file))))
                count += 1
            }
        }
        print("replayed \(count) inputs, no crash")
    }
}
#endif

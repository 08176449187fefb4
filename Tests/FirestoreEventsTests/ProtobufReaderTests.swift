import FirestoreEvents
import FirestoreEventsProtobuf
import FirestoreModel
import Foundation
import HeraldTesting
import Testing

/// FirestoreEvents reads and writes DocumentEventData's protobuf by hand; SwiftProtobuf's generated types
/// are the reference. Both must take and refuse the same bytes and read the same documents from them.
@Suite struct ProtobufReaderTests {
    typealias Outcome = (newDocument: FirestoreDocument?, oldDocument: FirestoreDocument?, updateMask: [String]?)

    static func ours(_ bytes: [UInt8]) -> Outcome? {
        guard let change = try? EventDecoder.decode(EventRequest(headers: DecodingErrorTests.good, body: bytes)).change else { return nil }
        return (change.newDocument, change.oldDocument, change.updateMask)
    }

    static func reference(_ bytes: [UInt8]) -> Outcome? {
        guard let decoded = try? SwiftProtobufEventData.decode(bytes) else { return nil }
        // The event names users/u1 in (default) of project p; data for another document is refused (apart from the bytes).
        for document in [decoded.newDocument, decoded.oldDocument].compactMap({ $0 })
        where document.name.resourceName != "projects/p/databases/(default)/documents/users/u1" { return nil }
        return (decoded.newDocument, decoded.oldDocument, decoded.updateMask.flatMap { $0.isEmpty ? nil : $0 })
    }

    static func same(_ a: Outcome?, _ b: Outcome?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (let a?, let b?): a.newDocument == b.newDocument && a.oldDocument == b.oldDocument && a.updateMask == b.updateMask
        default: false
        }
    }

    static func change(_ rng: inout SeededRandom) throws -> DocumentChange {
        let name = try DocumentName(project: "p", path: "users/u1")
        let document = FirestoreDocument(
            name: name, fields: RandomValues.fields(&rng), createTime: Timestamp(seconds: Int64.random(in: -(1 << 30)...(1 << 33), using: &rng), nanos: 5),
            updateTime: Timestamp(seconds: 1 << 34))
        return DocumentChange(
            eventID: "e1", kind: .updated, time: Timestamp(seconds: 1), document: name, oldDocument: Bool.random(using: &rng) ? document : nil,
            newDocument: document, updateMask: ["a", "`b.c`"])
    }

    @Test func bothWritersWriteWhatBothReadersRead() throws {
        var rng = SeededRandom(seed: 77)
        for _ in 0..<300 {
            let change = try Self.change(&rng)
            for bytes in [Array(change.protobufData()), SwiftProtobufEventData.encode(change)] {
                let ours = try #require(Self.ours(bytes))
                #expect(Self.same(ours, Self.reference(bytes)))
                #expect(ours.newDocument == change.newDocument && ours.oldDocument == change.oldDocument)
            }
        }
    }

    /// Bytes flipped, cut, repeated and spliced from valid events: each is taken by both or refused by both.
    @Test func mutatedBytesAreTakenOrRefusedAsSwiftProtobufDoes() throws {
        var rng = SeededRandom(seed: 2026)
        var taken = 0
        var refused = 0
        for round in 0..<4000 {
            var bytes = Array(try Self.change(&rng).protobufData())
            switch round % 5 {
            case 0:
                for _ in 0..<Int.random(in: 1...4, using: &rng) { bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng) }
            case 1: bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &rng)))
            case 2: bytes += bytes  // every field twice: documents, maps and values merge
            case 3:
                let cut = Int.random(in: 0..<bytes.count, using: &rng)
                let other = Array(try Self.change(&rng).protobufData())
                bytes = Array(bytes[..<cut]) + Array(other[Int.random(in: 0..<other.count, using: &rng)...])
            default:
                let at = Int.random(in: 0...bytes.count, using: &rng)
                bytes.insert(contentsOf: [[0x1B, 0x0C], [0x7A, 0x00], [0xFF, 0x01], [0x0B, 0x0C, 0x08], [0x0A, 0x00]].randomElement(using: &rng)!, at: at)
            }
            let ours = Self.ours(bytes)
            #expect(Self.same(ours, Self.reference(bytes)), "\(Data(bytes).base64EncodedString())")
            if ours == nil { refused += 1 } else { taken += 1 }
        }
        #expect(taken > 500 && refused > 500, "both outcomes are tried: \(taken) taken, \(refused) refused")
    }

    /// What protobuf lets a message say more than once, spelled out: the last scalar wins, a value's
    /// later kind replaces an earlier one, map entries with the same key replace each other (repairing
    /// an invalid value), a timestamp given in two parts merges.
    @Test func repeatedFieldsMergeAsProtobufMerges() throws {
        let name = "projects/p/databases/(default)/documents/users/u1"
        let document = EventsWire.message(1) { d in
            d.string(1, name)
            d.entry(2, "a") { $0.message(10) { $0.varint(1, 99_999_999_999_999) } }  // a timestamp out of range…
            d.entry(2, "a") { $0.string(17, "fixed") }  // …replaced by a later entry
            d.entry(2, "b") { v in
                v.message(6) { $0.entry(1, "x") { $0.varint(2, 1) } }
                v.message(6) { $0.entry(1, "y") { $0.varint(2, 2) } }  // two map values merge
            }
            d.entry(2, "c") { v in
                v.message(10) { $0.varint(1, 100) }
                v.message(10) { $0.varint(2, 7) }  // seconds then nanos
            }
            d.entry(2, "d") { v in
                v.varint(1, 1)
                v.string(17, "last kind wins")
            }
        }
        let bytes = document + EventsWire.message(3) { $0.string(1, "a") } + EventsWire.message(3) { $0.string(1, "b") }
        let ours = try #require(Self.ours(bytes))
        #expect(Self.same(ours, Self.reference(bytes)))
        #expect(ours.newDocument?.fields["a"] == .string("fixed"))
        #expect(ours.newDocument?.fields["b"] == .map(["x": .integer(1), "y": .integer(2)]))
        #expect(ours.newDocument?.fields["c"] == .timestamp(Timestamp(seconds: 100, nanos: 7)))
        #expect(ours.newDocument?.fields["d"] == .string("last kind wins"))
        #expect(ours.updateMask == ["a", "b"])
    }

    @Test func hostileShapesAreRefusedQuicklyAndAlike() throws {
        // 101 messages deep (the limit is 100), a value without a kind, a string that is not UTF-8, a group never closed.
        var deep: [UInt8] = []
        for _ in 0..<60 { deep = EventsWire.message(6) { $0.entry(1, "k") { $0.raw(deep) } } }
        let cases: [(String, [UInt8])] = [
            (
                "too deep",
                EventsWire.message(1) { d in
                    d.string(1, "projects/p/databases/(default)/documents/users/u1")
                    d.entry(2, "m") { $0.raw(deep) }
                }
            ),
            (
                "no kind",
                EventsWire.message(1) { d in
                    d.string(1, "projects/p/databases/(default)/documents/users/u1")
                    d.entry(2, "m") { _ in }
                }
            ),
            (
                "not UTF-8",
                EventsWire.message(1) { d in
                    d.string(1, "projects/p/databases/(default)/documents/users/u1")
                    d.entry(2, "m") { $0.bytes(17, [0xC3, 0x28]) }
                }
            ),
            ("open group", [0x1B, 0x08, 0x01]),
        ]
        for (label, bytes) in cases {
            let started = ContinuousClock.now
            #expect(Self.ours(bytes) == nil, "\(label)")
            #expect(Self.reference(bytes) == nil, "\(label)")
            #expect(ContinuousClock.now - started < .seconds(1))
        }
    }
}

/// Protobuf written by hand for the tests: tags, varints, nested messages, map entries.
struct EventsWire {
    var bytes: [UInt8] = []

    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }
    mutating func varint(_ field: Int, _ value: UInt64) {
        varint(UInt64(field << 3))
        varint(value)
    }
    mutating func bytes(_ field: Int, _ value: [UInt8]) {
        varint(UInt64(field << 3 | 2))
        varint(UInt64(value.count))
        bytes += value
    }
    mutating func string(_ field: Int, _ value: String) { bytes(field, Array(value.utf8)) }
    mutating func raw(_ value: [UInt8]) { bytes += value }
    mutating func message(_ field: Int, _ body: (inout EventsWire) -> Void) {
        var nested = EventsWire()
        body(&nested)
        bytes(field, nested.bytes)
    }
    /// A map entry: key (field 1), value message (field 2).
    mutating func entry(_ field: Int, _ key: String, _ value: (inout EventsWire) -> Void) {
        message(field) { entry in
            entry.string(1, key)
            entry.message(2, value)
        }
    }
    /// A top-level message on its own, for building an event from parts.
    static func message(_ field: Int, _ body: (inout EventsWire) -> Void) -> [UInt8] {
        var wire = EventsWire()
        wire.message(field, body)
        return wire.bytes
    }
}

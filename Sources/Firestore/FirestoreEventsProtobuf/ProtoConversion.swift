import FirestoreEvents
import FirestoreModel
import SwiftProtobuf

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

typealias ProtoEventData = Google_Events_Cloud_Firestore_V1_DocumentEventData
typealias ProtoDocument = Google_Events_Cloud_Firestore_V1_Document
typealias ProtoValue = Google_Events_Cloud_Firestore_V1_Value

/// Converts between the generated protobuf types and FirestoreModel's, in both directions.
enum ProtoConversion {
    /// An error's path is built only when a value is refused: each level puts its own step in front.
    static func value(_ proto: ProtoValue) throws(FirestoreJSONError) -> FirestoreValue {
        switch proto.valueType {
        case nil: throw FirestoreJSONError(path: "", reason: "a value must set one kind")
        case .nullValue: return .null
        case .booleanValue(let b): return .boolean(b)
        case .integerValue(let i): return .integer(i)
        case .doubleValue(let d): return .double(d)
        case .timestampValue(let t): return .timestamp(try timestamp(t, path: ""))
        case .stringValue(let s): return .string(s)
        case .bytesValue(let d): return .bytes(Array(d))
        case .referenceValue(let r): return .reference(r)
        case .geoPointValue(let p): return .geoPoint(latitude: p.latitude, longitude: p.longitude)
        case .arrayValue(let a):
            var values: [FirestoreValue] = []
            values.reserveCapacity(a.values.count)
            for (i, v) in a.values.enumerated() {
                do { values.append(try value(v)) } catch { throw error.under(".values[\(i)]") }
            }
            return .array(values)
        case .mapValue(let m):
            do { return .map(try fields(m.fields)) } catch { throw error.under(".fields") }
        }
    }

    static func fields(_ proto: [String: ProtoValue]) throws(FirestoreJSONError) -> [String: FirestoreValue] {
        var result: [String: FirestoreValue] = [:]
        result.reserveCapacity(proto.count)
        for (key, v) in proto {
            do { result[key] = try value(v) } catch { throw error.under(".\(key)") }
        }
        return result
    }

    static func timestamp(_ proto: Google_Protobuf_Timestamp, path: String) throws(FirestoreJSONError) -> Timestamp {
        guard let t = Timestamp(validSeconds: proto.seconds, nanos: proto.nanos) else {
            throw FirestoreJSONError(path: path, reason: "timestamp out of range")
        }
        return t
    }

    /// Nil for a document that is absent or empty (no name and no fields): events say "none" that way.
    static func document(_ proto: ProtoDocument, present: Bool, path: String) throws(FirestoreJSONError) -> FirestoreDocument? {
        guard present, !(proto.name.isEmpty && proto.fields.isEmpty) else { return nil }
        let name: DocumentName
        do { name = try DocumentName(resourceName: proto.name) } catch {
            throw FirestoreJSONError(path: "\(path).name", reason: error.description)
        }
        let fields: [String: FirestoreValue]
        do { fields = try Self.fields(proto.fields) } catch { throw error.under("\(path).fields") }
        return FirestoreDocument(
            name: name,
            fields: fields,
            createTime: proto.hasCreateTime ? try timestamp(proto.createTime, path: "\(path).createTime") : nil,
            updateTime: proto.hasUpdateTime ? try timestamp(proto.updateTime, path: "\(path).updateTime") : nil
        )
    }

    static func proto(_ value: FirestoreValue) -> ProtoValue {
        var p = ProtoValue()
        switch value {
        case .null: p.nullValue = .nullValue
        case .boolean(let b): p.booleanValue = b
        case .integer(let i): p.integerValue = i
        case .double(let d): p.doubleValue = d
        case .timestamp(let t): p.timestampValue = Google_Protobuf_Timestamp(seconds: t.seconds, nanos: t.nanos)
        case .string(let s): p.stringValue = s
        case .bytes(let d): p.bytesValue = Data(d)
        case .reference(let r): p.referenceValue = r
        case .geoPoint(let lat, let lng):
            var point = Google_Type_LatLng()
            point.latitude = lat
            point.longitude = lng
            p.geoPointValue = point
        case .array(let values):
            var a = Google_Events_Cloud_Firestore_V1_ArrayValue()
            a.values = values.map(proto)
            p.arrayValue = a
        case .map(let fields):
            var m = Google_Events_Cloud_Firestore_V1_MapValue()
            m.fields = fields.mapValues(proto)
            p.mapValue = m
        }
        return p
    }

    static func proto(_ document: FirestoreDocument) -> ProtoDocument {
        var p = ProtoDocument()
        p.name = document.name.resourceName
        p.fields = document.fields.mapValues(proto)
        if let t = document.createTime { p.createTime = Google_Protobuf_Timestamp(seconds: t.seconds, nanos: t.nanos) }
        if let t = document.updateTime { p.updateTime = Google_Protobuf_Timestamp(seconds: t.seconds, nanos: t.nanos) }
        return p
    }
}

/// DocumentEventData read and written through SwiftProtobuf's generated types: the reference that
/// `EventDataProtobuf` (which the functions use) is checked against in tests and by the fuzzer.
public enum SwiftProtobufEventData {
    /// The documents and update mask `bytes` carry; throws as SwiftProtobuf and the conversion do.
    public static func decode(_ bytes: [UInt8]) throws -> (newDocument: FirestoreDocument?, oldDocument: FirestoreDocument?, updateMask: [String]?) {
        let message = try ProtoEventData(serializedBytes: bytes)
        return (
            try ProtoConversion.document(message.value, present: message.hasValue, path: "value"),
            try ProtoConversion.document(message.oldValue, present: message.hasOldValue, path: "oldValue"),
            message.hasUpdateMask ? message.updateMask.fieldPaths : nil
        )
    }

    /// The change's payload as SwiftProtobuf writes it (map entries in key order).
    public static func encode(_ change: DocumentChange) -> [UInt8] {
        var data = ProtoEventData()
        if let d = change.newDocument { data.value = ProtoConversion.proto(d) }
        if let d = change.oldDocument { data.oldValue = ProtoConversion.proto(d) }
        if let mask = change.updateMask {
            var m = Google_Events_Cloud_Firestore_V1_DocumentMask()
            m.fieldPaths = mask
            data.updateMask = m
        }
        var options = BinaryEncodingOptions()
        options.useDeterministicOrdering = true
        return (try? data.serializedBytes(options: options)) ?? []
    }
}

import AsyncHTTPClient
import Foundation
import WireFormats

/// One push as the device sees it, whichever service carried it (FCM, Expo, APNs): what tests compare
/// across the three stand-ins of a local cloud.
public struct DevicePush: Sendable, Hashable {
    public enum Service: String, Sendable, Hashable { case fcm, expo, apns }
    public var service: Service
    public var token: String
    public var title: String?
    public var body: String?
    public var badge: Int?
    /// The data values the app receives (FCM's `data`, Expo's `data`, APNs's keys beside `aps`).
    public var data: [String: String]
    /// The identifier a device shows one notification for (FCM's `apns-collapse-id`, Expo's `collapseId`, APNs's header).
    public var collapseID: String?
    /// A push with no text: a badge update or a background refresh.
    public var isSilent: Bool { title == nil && body == nil }
    /// The record as the stand-in keeps it.
    public var record: JSONValue

    /// What the FCM, Expo and APNs stand-ins of the local cloud at `base` recorded, in that order.
    public static func all(at base: String) async throws -> [DevicePush] {
        var pushes: [DevicePush] = []
        for service in ["fcm", "expo", "apns"] {
            let body = try await HTTPClient.shared.get("\(base)/herald/\(service)/messages").body
            for record in try JSONValue(parsing: Array(body.utf8))["messages"]?.arrayValue ?? [] {
                if let push = DevicePush(service: service, record: record) { pushes.append(push) }
            }
        }
        return pushes
    }

    init?(service: String, record: JSONValue) {
        func strings(_ value: JSONValue?) -> [String: String] { (value?.objectValue ?? [:]).compactMapValues(\.stringValue) }
        switch service {
        case "fcm":
            let message = record["message"]
            guard let token = message?["token"]?.stringValue else { return nil }
            self.service = .fcm
            self.token = token
            title = message?["notification"]?["title"]?.stringValue
            body = message?["notification"]?["body"]?.stringValue
            badge = (message?["apns"]?["payload"]?["aps"]?["badge"] ?? message?["android"]?["notification"]?["notification_count"])?.int64Value
                .map { Int($0) }
            data = strings(message?["data"])
            collapseID = message?["apns"]?["headers"]?["apns-collapse-id"]?.stringValue
        case "expo":
            let message = record["message"]
            guard let token = record["token"]?.stringValue else { return nil }
            self.service = .expo
            self.token = token
            title = message?["title"]?.stringValue
            body = message?["body"]?.stringValue
            badge = message?["badge"]?.int64Value.map { Int($0) }
            data = strings(message?["data"])
            collapseID = message?["collapseId"]?.stringValue
        default:
            let payload = record["message"]
            guard let token = record["token"]?.stringValue else { return nil }
            self.service = .apns
            self.token = token
            title = payload?["aps"]?["alert"]?["title"]?.stringValue
            body = payload?["aps"]?["alert"]?["body"]?.stringValue
            badge = payload?["aps"]?["badge"]?.int64Value.map { Int($0) }
            data = strings(payload).filter { $0.key != "aps" }
            collapseID = record["headers"]?["apns-collapse-id"]?.stringValue
        }
        self.record = record
    }

    /// The push as FCM's sink records one, whichever service carried it: FCM's own record as it is, Expo's
    /// and APNs's as `{"message": {token, notification, data, apns: {payload: {aps: {badge}}}}}`.
    public var fcmShaped: JSONValue {
        if service == .fcm, var members = record.objectValue {
            members["service"] = "fcm"
            return .object(members)
        }
        var message: [String: JSONValue] = ["token": .string(token), "data": .object(data.mapValues { .string($0) })]
        if !isSilent {
            var notification: [String: JSONValue] = [:]
            if let title { notification["title"] = .string(title) }
            if let body { notification["body"] = .string(body) }
            message["notification"] = .object(notification)
        }
        if let badge { message["apns"] = ["payload": ["aps": ["badge": .integer(Int64(badge))]]] }
        return ["message": .object(message), "token": .string(token), "service": .string(service.rawValue)]
    }
}

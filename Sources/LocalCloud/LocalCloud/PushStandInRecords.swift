import EmbeddedFirestore
import Foundation
import Synchronization
import WireFormats

/// What the Expo and APNs stand-ins share: the notifications they accepted (`push_messages`, with
/// Expo's tickets and receipts), the tokens marked dead, and the failures to answer with next.
public final class PushStandInRecords: Sendable {
    /// The two services besides FCM that `herald dev` stands in for.
    public enum Service: String, Sendable, CaseIterable { case expo, apns }

    /// What to answer the next requests with, in order, before normal service resumes.
    public enum InjectedFailure: String, Sendable, CaseIterable {
        /// 429, with Retry-After.
        case tooManyRequests
        /// 503 (Expo) or 503 ServiceUnavailable (APNs).
        case unavailable
        /// Taken and recorded, then no answer until the client gives up: a send that may have been delivered.
        case lostAnswer
    }

    public struct Recorded: Sendable, Hashable {
        public var id: Int64
        public var service: Service
        public var token: String
        /// Expo's ticket id, or APNs's `apns-id`.
        public var ticket: String
        public var receivedAt: Double
        /// Expo's message, or APNs's payload.
        public var message: JSONValue
        /// APNs's request headers (`apns-push-type`, `apns-priority`, `apns-collapse-id`, `apns-topic`, …).
        public var headers: JSONValue
        public var traceID: String?

        public var json: JSONValue {
            [
                "id": .integer(id), "service": .string(service.rawValue), "token": .string(token), "ticket": .string(ticket),
                "receivedAt": .number(String(receivedAt)), "message": message, "headers": headers,
                "traceId": traceID.map { .string($0) } ?? .null,
            ]
        }
    }

    let database: LocalDatabase
    let onRecord: @Sendable (Recorded) -> Void
    let failures = Mutex<[Service: (next: [InjectedFailure], rate: Double)]>([:])
    /// How long a lost answer keeps the client waiting.
    let hangFor = Mutex(Duration.seconds(30))

    init(database: LocalDatabase, onRecord: @escaping @Sendable (Recorded) -> Void) {
        self.database = database
        self.onRecord = onRecord
    }

    public func inject(_ next: [InjectedFailure], rate: Double?, for service: Service, hangFor: Duration? = nil) {
        failures.withLock { all in
            var entry = all[service] ?? ([], 0)
            entry.next += next
            if let rate { entry.rate = min(max(rate, 0), 1) }
            all[service] = entry
        }
        if let hangFor { self.hangFor.withLock { $0 = hangFor } }
    }

    /// The failure to answer this request with, if one is due.
    func drawFailure(for service: Service) -> InjectedFailure? {
        failures.withLock { all in
            guard var entry = all[service] else { return nil }
            defer { all[service] = entry }
            if !entry.next.isEmpty { return entry.next.removeFirst() }
            return entry.rate > 0 && Double.random(in: 0..<1) < entry.rate ? (Bool.random() ? .tooManyRequests : .unavailable) : nil
        }
    }

    /// `when`: `send` (the service refuses the token at once) or `receipt` (it takes the notification,
    /// and the receipt says the device is gone: Expo only).
    public func markDead(_ token: String, service: Service, when: String = "send") async throws(LocalAPIError) {
        try await database.write { db in
            try db.execute(
                sql: "INSERT OR REPLACE INTO push_dead_tokens (service, token, since, stage) VALUES (?, ?, ?, ?)",
                arguments: [service.rawValue, token, Date().timeIntervalSince1970, when == "receipt" ? "receipt" : "send"])
        }
    }

    /// Where the token is dead: `send`, `receipt`, or nil when it is not.
    func deadStage(of token: String, service: Service) async throws(LocalAPIError) -> String? {
        try await database.read { db in
            try String.fetchOne(db, sql: "SELECT stage FROM push_dead_tokens WHERE service = ? AND token = ?", arguments: [service.rawValue, token])
        }
    }

    /// Records accepted notifications, each with its ticket and (Expo) its receipt, in one transaction.
    func record(
        _ items: [(token: String, ticket: String, receipt: JSONValue?, message: JSONValue, headers: JSONValue)], service: Service, trace: String?
    ) async throws(LocalAPIError) {
        let now = Date().timeIntervalSince1970
        let recorded = try await database.write { db in
            try items.map { item in
                try db.execute(
                    sql: """
                        INSERT INTO push_messages (service, token, ticket, receipt, headers, message, received_at, trace_id)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        service.rawValue, item.token, item.ticket, item.receipt?.serialized(), item.headers.serialized(), item.message.serialized(), now,
                        trace,
                    ])
                return Recorded(
                    id: db.lastInsertedRowID, service: service, token: item.token, ticket: item.ticket, receivedAt: now, message: item.message,
                    headers: item.headers, traceID: trace)
            }
        }
        for item in recorded { onRecord(item) }
    }

    /// Expo's receipts of these tickets, those it has.
    func receipts(_ tickets: [String]) async throws(LocalAPIError) -> [String: JSONValue] {
        try await database.read { db in
            var found: [String: JSONValue] = [:]
            for ticket in tickets {
                if let text = try String.fetchOne(
                    db, sql: "SELECT receipt FROM push_messages WHERE service = 'expo' AND ticket = ? AND receipt IS NOT NULL", arguments: [ticket]),
                    let receipt = try? JSONValue(parsing: Array(text.utf8))
                {
                    found[ticket] = receipt
                }
            }
            return found
        }
    }

    /// Recorded notifications after `afterID`, oldest first: of one service or both, to one token, or
    /// sent for the events of `traces`.
    public func messages(service: Service? = nil, token: String? = nil, afterID: Int64 = 0, traces: [String]? = nil) async throws(LocalAPIError)
        -> [Recorded]
    {
        try await database.read { db in
            var sql = "SELECT * FROM push_messages WHERE id > ?"
            var arguments: StatementArguments = [afterID]
            if let service {
                sql += " AND service = ?"
                arguments += [service.rawValue]
            }
            if let token {
                sql += " AND token = ?"
                arguments += [token]
            }
            if let traces {
                sql += " AND trace_id IN (\(traces.map { _ in "?" }.joined(separator: ", ")))"
                arguments += StatementArguments(traces)
            }
            return try Row.fetchAll(db, sql: sql + " ORDER BY id", arguments: arguments).map { row in
                let message: String = row["message"]
                let headers: String? = row["headers"]
                let service: String = row["service"]
                return Recorded(
                    id: row["id"], service: Service(rawValue: service) ?? .expo, token: row["token"], ticket: row["ticket"] ?? "",
                    receivedAt: row["received_at"], message: (try? JSONValue(parsing: Array(message.utf8))) ?? .null,
                    headers: headers.flatMap { try? JSONValue(parsing: Array($0.utf8)) } ?? .null, traceID: row["trace_id"])
            }
        }
    }

    /// The migration that makes the stand-ins' tables.
    static var migration: (identifier: String, apply: (Database) throws -> Void) {
        (
            "v6-push-services",
            { db in
                try db.execute(
                    sql: """
                        CREATE TABLE push_messages (
                            id INTEGER PRIMARY KEY AUTOINCREMENT,
                            service TEXT NOT NULL,
                            token TEXT NOT NULL,
                            ticket TEXT,
                            receipt TEXT,
                            headers TEXT,
                            message TEXT NOT NULL,
                            received_at REAL NOT NULL,
                            trace_id TEXT
                        );
                        CREATE INDEX push_messages_by_token ON push_messages(service, token);
                        CREATE INDEX push_messages_by_ticket ON push_messages(ticket);
                        CREATE INDEX push_messages_by_trace ON push_messages(trace_id);
                        CREATE TABLE push_dead_tokens (
                            service TEXT NOT NULL, token TEXT NOT NULL, since REAL NOT NULL, stage TEXT NOT NULL,
                            PRIMARY KEY (service, token)
                        );
                        """)
            }
        )
    }
}

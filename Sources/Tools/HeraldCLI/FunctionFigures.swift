import AsyncHTTPClient
import FirestoreModel
import Foundation
import HeraldRuntime
import LocalCloud
import NIOCore
import NIOHTTP1
import Telemetry
import WireFormats

/// What `herald dev`'s console shows of each function process: the figures its `/metrics` reports
/// (the same Prometheus text Cloud Run's scraper reads), summed over labels into what a developer
/// asks first: how many events and how they ended, how long they took, what was sent and removed.
struct FunctionFigures: Sendable {
    typealias Sample = PrometheusText.Sample

    static func parse(_ text: String) -> [Sample] { PrometheusText.parse(text).samples }

    /// Rows of (what, how many) for the console, from one function's samples.
    static func summary(_ samples: [Sample]) -> [(String, String)] {
        func total(_ name: String, where label: String? = nil, is value: String? = nil) -> Double {
            samples.filter { $0.name == name && (label == nil || $0.label(label!) == value) }.reduce(0) { $0 + $1.value }
        }
        func by(_ name: String, _ label: String) -> [(String, Double)] {
            Dictionary(grouping: samples.filter { $0.name == name }, by: { $0.label(label) ?? "" })
                .map { ($0.key, $0.value.reduce(0) { $0 + $1.value }) }.filter { $0.1 > 0 }.sorted { $0.0 < $1.0 }
        }
        func number(_ value: Double) -> String { value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value) }
        var rows: [(String, String)] = []
        let events = total("herald_events_total")
        rows.append(("events", number(events)))
        for (outcome, count) in by("herald_events_total", "outcome") { rows.append(("  \(outcome)", number(count))) }
        let count = total("herald_event_duration_seconds_count")
        if count > 0 { rows.append(("mean time per event", String(format: "%.1f ms", total("herald_event_duration_seconds_sum") / count * 1000))) }
        rows.append(("in flight now", number(total("herald_events_in_flight"))))
        let firestore = by("herald_firestore_requests_total", "method")
        if !firestore.isEmpty { rows.append(("Firestore requests", firestore.map { "\($0.0) \(number($0.1))" }.joined(separator: ", "))) }
        let failedFirestore = samples.filter { $0.name == "herald_firestore_requests_total" && !($0.label("status") ?? "").hasPrefix("2") }
            .reduce(0) { $0 + $1.value }
        if failedFirestore > 0 { rows.append(("  not 2xx", number(failedFirestore))) }
        // Pushes by result over every service (FCM, Expo, APNs), then by service.
        let services = ["fcm", "expo", "apns"]
        let pushes = services.flatMap { by("herald_\($0)_sends_total", "result") }.reduce(into: [String: Double]()) { $0[$1.0, default: 0] += $1.1 }
            .sorted { $0.key < $1.key }
        if !pushes.isEmpty { rows.append(("pushes", pushes.map { "\($0.key) \(number($0.value))" }.joined(separator: ", "))) }
        let byService = services.map { ($0, total("herald_\($0)_sends_total")) }.filter { $0.1 > 0 }
        if byService.count > 1 { rows.append(("  by service", byService.map { "\($0.0) \(number($0.1))" }.joined(separator: ", "))) }
        let commits = by("herald_document_commits_total", "outcome")
        if !commits.isEmpty { rows.append(("document commits", commits.map { "\($0.0) \(number($0.1))" }.joined(separator: ", "))) }
        let committed = total("herald_document_commits_total", where: "outcome", is: "committed")
        if committed > 0 {
            rows.append(("  events per commit", String(format: "%.1f", total("herald_document_commit_events_total") / committed)))
        }
        let waits = total("herald_commit_wait_seconds_count")
        if waits > 0 {
            rows.append(
                (
                    "commits that waited for a turn",
                    "\(number(waits)), mean \(String(format: "%.0f ms", total("herald_commit_wait_seconds_sum") / waits * 1000))"
                ))
        }
        for (name, label) in [
            ("herald_tokens_removed_total", "tokens removed"), ("herald_token_removals_refused_total", "token removals refused"),
            ("herald_ledger_lease_takeovers_total", "lease take-overs"), ("herald_replans_total", "re-plans"),
        ] where total(name) > 0 {
            rows.append((label, number(total(name))))
        }
        return rows
    }

    /// Scrapes each function process (with an identity token for its service, the audience every
    /// instance of the function checks, as its callers need) and summarizes.
    static func collect(from functions: [(name: String, port: Int, audience: String, restarts: Int)], identity: LocalIdentity) async -> JSONValue {
        var result: [JSONValue] = []
        for function in functions {
            let service = "http://127.0.0.1:\(function.port)/"
            var entry: [String: JSONValue] = [
                "name": .string(function.name), "url": .string(service), "restarts": .integer(Int64(function.restarts)),
            ]
            do {
                var request = HTTPClientRequest(url: service + "metrics")
                request.headers.add(name: "authorization", value: "Bearer \(try await identity.identityToken(audience: function.audience))")
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(3))
                let text = String(buffer: try await response.body.collect(upTo: 4 << 20))
                guard response.status == .ok else { throw DevError("HTTP \(response.status.code)") }
                entry["figures"] = .array(summary(parse(text)).map { ["label": .string($0.0), "value": .string($0.1)] })
            } catch {
                entry["error"] = .string("cannot read its /metrics: \(error)")
            }
            result.append(.object(entry))
        }
        return ["functions": .array(result)]
    }
}

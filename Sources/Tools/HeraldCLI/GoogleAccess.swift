import ArgumentParser
import AsyncHTTPClient
import FirestoreModel
import Foundation
import GoogleClients
import HeraldHTTPClient
import NIOCore
import NIOHTTP1
import WireFormats

/// Google's REST APIs as the developer tool calls them, with the developer's own credentials
/// (Application Default Credentials: their gcloud login, a key file, or the metadata server). Emulators
/// and stand-ins on plain http get no token: `PUBSUB_EMULATOR_HOST`, and `HERALD_LOGGING_ENDPOINT`,
/// `HERALD_IAM_ENDPOINT`, `HERALD_RUN_ENDPOINT` for tests.
struct GoogleAccess: Sendable {
    let project: String
    let pubsubEndpoint: String
    let loggingEndpoint: String
    let iamEndpoint: String
    let runEndpoint: String
    let credentials: Result<any AccessTokenProvider, AuthError>

    static func make(project: String, environment: [String: String] = ProcessInfo.processInfo.environment) async throws -> GoogleAccess {
        func value(_ key: String) -> String? { environment[key].flatMap { $0.isEmpty ? nil : $0 } }
        let credentials: Result<any AccessTokenProvider, AuthError>
        do {
            var adcEnvironment = environment
            adcEnvironment["FIRESTORE_EMULATOR_HOST"] = nil
            adcEnvironment["GOOGLE_CLOUD_PROJECT"] = project
            credentials = .success(try await ApplicationDefaultCredentials.resolve(environment: adcEnvironment, httpClient: .shared).firestore)
        } catch let error as AuthError {
            credentials = .failure(error)
        }
        return GoogleAccess(
            project: project, pubsubEndpoint: value("PUBSUB_EMULATOR_HOST").map { "http://\($0)" } ?? "https://pubsub.googleapis.com",
            loggingEndpoint: value("HERALD_LOGGING_ENDPOINT") ?? "https://logging.googleapis.com",
            iamEndpoint: value("HERALD_IAM_ENDPOINT") ?? "https://iamcredentials.googleapis.com",
            runEndpoint: value("HERALD_RUN_ENDPOINT") ?? "https://run.googleapis.com", credentials: credentials)
    }

    /// A bearer token for Google's own (https) endpoints; none for an emulator.
    func token(for url: String) async throws -> String? {
        guard url.hasPrefix("https://") else { return nil }
        switch credentials {
        case .success(let provider): return try await provider.token()
        case .failure(let error): throw ValidationError("\(error.description)")
        }
    }

    func call(_ method: HTTPMethod, _ url: String, body: JSONValue? = nil) async throws -> JSONValue {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let token = try await token(for: url) { request.headers.add(name: "authorization", value: "Bearer \(token)") }
        if let body {
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body.serializedBytes()))
        }
        let response: HTTPClientResponse
        do { response = try await HTTPClient.shared.execute(request, timeout: .seconds(60)) } catch {
            throw ValidationError("cannot reach \(url): \(error)")
        }
        let bytes = try await response.body.collect(upTo: 64 << 20)
        let json = (try? JSONValue(parsing: Array(buffer: bytes))) ?? .null
        guard response.status == .ok else {
            let message = json["error"]?["message"]?.stringValue ?? String(buffer: bytes).prefix(300).description
            throw ValidationError("\(method) \(url) answered \(response.status.code): \(message)")
        }
        return json
    }

    /// The first WARNING or worse the function logged about this event (its time and message), from Cloud Logging.
    func firstFailure(eventID: String) async -> (time: String, text: String)? {
        let filter = #"jsonPayload.eventId="\#(eventID.replacingOccurrences(of: "\"", with: "\\\""))" AND severity>=WARNING"#
        let body: JSONValue = ["resourceNames": .array([.string("projects/\(project)")]), "filter": .string(filter), "orderBy": "timestamp asc", "pageSize": 1]
        guard let answer = try? await call(.POST, loggingEndpoint + "/v2/entries:list", body: body), let entry = answer["entries"]?.arrayValue?.first,
            let text = entry["jsonPayload"]?["message"]?.stringValue
        else { return nil }
        return (entry["timestamp"]?.stringValue ?? "?", text)
    }

    /// A Cloud Run service's URL.
    func cloudRunURL(service: String, region: String) async throws -> String {
        let answer = try await call(.GET, "\(runEndpoint)/v2/projects/\(project)/locations/\(region)/services/\(service)")
        guard let uri = answer["uri"]?.stringValue else { throw ValidationError("Cloud Run service \(service) in \(region) has no URL") }
        return uri
    }

    /// An identity token for `audience` as the service account `email` (IAM Credentials'
    /// generateIdToken, with the caller's own credentials); none for a function on this machine.
    func identityToken(audience: String, as email: String) async throws -> String? {
        guard let host = URL(string: audience)?.host, !CleartextPolicy.isLoopback(host) else { return nil }
        let answer = try await call(
            .POST, "\(iamEndpoint)/v1/projects/-/serviceAccounts/\(email):generateIdToken", body: ["audience": .string(audience), "includeEmail": true])
        guard let token = answer["token"]?.stringValue else { throw ValidationError("IAM Credentials gave no identity token for \(email)") }
        return token
    }
}

/// What keeps a web page the developer happens to open from using the local cloud on their laptop.
/// Any page can send a POST to 127.0.0.1 (a form or `text/plain` body needs no preflight) and, through
/// DNS rebinding, read the answers. So a request must name this machine by address, `localhost` or a
/// host name allowed by `--allow-host` (a rebinding page names its own domain); a request from a
/// browser must come from a page on this machine (a loopback origin: Expo web on localhost:8081, Vite
/// on 5173) or on an allowed host; and a write must say it is JSON (as every Google client does),
/// except where Google's own clients send otherwise: the OAuth token endpoint takes a form, WebChannel
/// a form, the web SDK's REST calls are JSON sent as `text/plain` (to spare a preflight), and Google's
/// emulator posts its events as `application/protobuf`.
import Foundation

package struct RequestGuard {
    package let allowedHosts: [String]

    package init(allowedHosts: [String]) { self.allowedHosts = allowedHosts }

    package func refusal(of request: LocalRequest) -> LocalAPIError? {
        if let host = request.headers["host"], !isAllowed(Self.hostName(host)) {
            return LocalAPIError(
                code: 403, status: "PERMISSION_DENIED",
                message: "Host \"\(host.prefix(100))\" is not this local cloud's: name it by address or localhost, or start herald dev with --allow-host NAME.")
        }
        if let origin = request.headers["origin"] {
            // `scheme://authority`; a sandboxed page or a file sends "null", which names no host.
            guard isAllowed(origin: origin) else {
                return LocalAPIError(
                    code: 403, status: "PERMISSION_DENIED",
                    message:
                        "Requests from the web page at \(origin.prefix(100)) are not accepted: only from pages on this machine (localhost, 127.0.0.1, [::1]) or on a host herald dev allows (--allow-host NAME)."
                )
            }
        }
        guard !["GET", "HEAD", "OPTIONS"].contains(request.method), !request.body.isEmpty else { return nil }
        let type = request.headers["content-type"]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        // OAuth's token endpoint and Firebase Auth's token refresh take a form, as Google's do.
        let isTokenEndpoint = request.segments == ["token"] || request.segments == ["securetoken.googleapis.com", "v1", "token"]
        let isForm = type == "application/x-www-form-urlencoded"
        if type == "application/json" || (isTokenEndpoint && isForm) { return nil }
        if isForm, FirestoreWebChannel.stream(of: request) != nil { return nil }
        // Google's emulator posting a trigger's event (a type no page can send without a preflight).
        if type == "application/protobuf", request.segments.first == "functions" { return nil }
        if type == "text/plain", request.segments.count > 4, request.segments[0] == "v1", request.segments[1] == "projects",
            request.segments[3] == "databases"
        {
            return nil
        }
        return LocalAPIError(
            code: 415, status: "INVALID_ARGUMENT",
            message:
                "A request with a body must send Content-Type: application/json\(isTokenEndpoint ? " (or a form, for /token)" : ""), not \"\(type.prefix(80))\"."
        )
    }

    /// A page on this machine (`scheme://host[:port]` with a loopback host) or on an allowed host. A
    /// sandboxed page or a file sends "null", which names no host.
    package func isAllowed(origin: String) -> Bool {
        let authority = origin.split(separator: "/", omittingEmptySubsequences: true).dropFirst().first.map(String.init) ?? ""
        let host = Self.hostName(authority)
        return Self.isLoopback(host) || allowedHosts.contains { $0.lowercased() == host }
    }

    package static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host == "::1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets.allSatisfy { UInt8($0) != nil } && octets[0] == "127"
    }

    package func isAllowed(_ host: String) -> Bool {
        host == "localhost" || Self.isAddress(host) || allowedHosts.contains { $0.lowercased() == host }
    }

    /// The host of a `Host` header or an origin's authority, lowercased, without port or brackets.
    package static func hostName(_ authority: String) -> String {
        let lower = authority.lowercased()
        if lower.hasPrefix("[") { return String(lower.dropFirst().prefix { $0 != "]" }) }
        return String(lower.prefix { $0 != ":" })
    }

    /// An IPv4 or IPv6 literal: no DNS name, so nothing a rebinding page could make point here.
    package static func isAddress(_ host: String) -> Bool {
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        if octets.count == 4, octets.allSatisfy({ UInt8($0) != nil }) { return true }
        return host.contains(":") && host.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
    }
}
